--- Pending jobs decided under another state of the link, or kept at one
-- site and no longer so, decided again.
--
-- "When the link is down, nothing spans" must hold for jobs accepted while
-- it was up and still pending when it goes down; and jobs kept at one site
-- (or held) only because it was down may span once it is back.  slurmctld
-- asks job_submit/lua nothing when a file changes, so `xsite load --write`
-- (root, every few seconds) finds those jobs in squeue and asks slurmctld to
-- decide each again: `scontrol update JobId=ID AdminComment="xsite
-- recheck"` (xsite.submit.job_modify).  A job that may no longer run is held
-- (`hold=` in its record) until a later check allows it.  This module picks
-- the jobs; xsite.cli.load runs the commands.
--
-- With the link down a job is judged by its constraint and preference as
-- they are, never by its record: its owner may have changed them since the
-- record was written (only root may change the record).  A job decided
-- again then is at one site (one-node jobs are pinned too) or held, so it is
-- not picked again unless its owner changes it.  With the link up, so is a
-- job that Mode=enforce kept at one site and whose constraint or preference
-- no longer keeps it there (changed while Mode=advise was in force).
--
-- Two squeue runs read the pending jobs (SQUEUE_JOBS, SQUEUE_ASKS): the
-- first prints nothing a job's owner wrote (its id, its hold, its record,
-- its node list), so that each of its lines is one job record as Slurm has
-- it; the second its constraint and preference, which its owner wrote, with
-- its id.  A newline in them (where Slurm lets one through) forges a line of
-- the second for any job: it is read only for jobs the first printed, and a
-- job whose lines there decide differently is asked about once more on its
-- own (`squeue -j`), where the first line is its own (a forged one follows
-- it); never more than MAX_ASKS of them a run (a random choice; the rest
-- wait for a later run).  A tab in the owner's text shifts the fields, which
-- leaves a blank in the constraint read, and xsite.constraint refuses
-- blanks: checked.  Both are read line by line, at most MAX_BYTES each and
-- MAX_LINE a line (a longer one is read as a constraint xsite cannot read:
-- checked).  Never more than MAX_JOBS checked a run: first the jobs not yet
-- decided again under the link's state now, then those that were and are
-- picked again (a node list squeue prints that cannot be read, a path xsite
-- did not foresee), each a random choice when there are more, so that jobs
-- whose check fails every time cannot keep the others out.
-- @module xsite.recheck

local constraint = require("xsite.constraint")
local hostlist = require("xsite.hostlist")
local record = require("xsite.record")
local submit = require("xsite.submit")

local unpack = table.unpack or unpack

local M = {}

--- The most jobs checked again in one run (the rest in the next).
M.MAX_JOBS = 500

--- The most jobs whose lines disagree asked about again in one run.
M.MAX_ASKS = 50

--- The most bytes read of each squeue run; past them the rest is left
-- unread (and said).
M.MAX_BYTES = 64 * 1024 * 1024

--- The longest line read in full: a job record's fields, or an owner's
-- constraint and preference (xsite.constraint reads no more than
-- MAX_LENGTH of either).
M.MAX_LINE = 8192

-- squeue's arguments for pending jobs of every partition, one a line (each
-- task of an array, each component of a heterogeneous job: `123_4`,
-- `19+1`, ids scontrol update takes for that one record), fields separated
-- by tabs; `fields` after the id.
local function squeue(fields)
  return { "squeue", "-a", "-r", "-h", "-t", "PENDING", "-O", "JobArrayID:0\t," .. fields }
end

--- What a job is in Slurm, nothing its owner wrote: its id, its own job id
-- (what `squeue -j` takes for a component of a heterogeneous job), its
-- hold, xsite's record and its node list (node names only, which Slurm
-- checks).  A job in a hold has priority 0, whatever its reason says: a
-- job its owner requeued in a hold (`scontrol requeuehold`) keeps "job
-- requeued in held state" as its reason after xsite holds it too.
M.SQUEUE_JOBS = squeue("JobID:0\t,Reason:0\t,PriorityLong:0\t,admin_comment:0\t,ReqNodes:0")
--- What a job's owner asks: its preference and constraint.
local ASKS = "Prefer:0\t,Feature:0"
M.SQUEUE_ASKS = squeue(ASKS)
--- squeue's environment: an array's pending tasks in full (Slurm cuts
-- them to 64 characters, and -r lists only those, otherwise).
M.SQUEUE_ENV = { SLURM_BITSTR_LEN = "0" }

--- SQUEUE_ASKS for one job (its `qid` in the view): its own line first.
function M.squeue_asks(qid)
  local argv = squeue(ASKS)
  table.insert(argv, 2, "-j")
  table.insert(argv, 3, qid)
  return argv
end

-- The id of one job record, as squeue prints it: nil for anything else.
local function job_id(text)
  if text:find("^%d+$") or text:find("^%d+_%d+$") or text:find("^%d+%+%d+$") then return text end
  return nil
end

-- Whether squeue printed no value ("(null)", or nothing).
local function none(text)
  return text == "" or text == "(null)"
end

-- squeue's ReqNodes as the record's word for a job's node list
-- (xsite.record.nodelist_word): "-" for none; nil when it cannot be read.
local function nodelist_word(nodes, cfg)
  if none(nodes) then return "-" end
  local sites, _, counts = hostlist.sites(nodes, cfg)
  if not sites then return nil end
  return record.nodelist_word(cfg, counts) or "-"
end

--- The most constraints a run keeps analysed (many jobs share theirs).
M.MEMO = 4096

-- A constraint squeue printed, analysed; nil for none (or one xsite
-- cannot read).  `memo`: optional, analyses kept by text (at most MEMO).
local function analysed(text, cfg, memo)
  if none(text) then return nil end
  local a = memo and memo[text]
  if a ~= nil then return a or nil end
  a = constraint.analyse(text, cfg)
  if memo and memo.n < M.MEMO then
    memo[text], memo.n = a or false, memo.n + 1
  end
  return a
end

-- A constraint's analysis keeps a job at one site.  With a node list at
-- both sites (`across`), only one site's own feature does: Slurm reads the
-- list as nodes the job must have again after a change that fails half-way,
-- and a choice of sites ([a|b]) does not hold those to one site
-- (xsite.policy keeps such a job at one site by that site's feature; a job
-- accepted before it did still has the choice).
local function one_site(a, across)
  return a ~= nil and a.one_site and (#a.sites == 1 or not across)
end

--- Whether a job's decision was made under another state of the link than
-- `down` says now, or no longer holds it at one site; "unkept" as second
-- value for the latter.
-- @param rec the job's record (xsite.record.parse), or nil
-- @param held the job is in a hold now (priority 0): xsite's, when its
--   record says so (only root may release it)
-- @param word the record's word for the job's node list now (see
--   xsite.record.nodelist_word; "-" for none, nil when unknown)
-- @param prefer the job's --prefer now (squeue's "(null)" for none)
-- @param features the job's constraint now
-- @param down the link is down now
-- @param cfg the configuration
-- @param memo optional: a run's analyses kept (see view)
function M.stale(rec, held, word, prefer, features, down, cfg, memo)
  if rec and rec.override then return false end
  -- kept at one site by its constraint and its preference (Slurm
  -- schedules with the preference where it can)
  local across = word == nil or word:find("+", 1, true) ~= nil
  local fa = analysed(features, cfg, memo)
  local kept = one_site(fa, across) and (none(prefer) or one_site(analysed(prefer, cfg, memo), across))
  if down then
    if rec and rec.hold and held then return false end
    return not kept
  end
  if rec == nil then return false end
  -- decided again while the link was down, or submitted then; once decided
  -- with the link up (recheck=up), a job xsite still holds stays held
  if rec.recheck == "down" or (rec.recheck == nil and rec.why == "link-down") then return true end
  -- held by xsite (one that could no longer be kept at one site, below)
  if rec.hold and held then return false end
  if rec.mode ~= "enforce" then return false end
  -- Pinned under Mode=enforce (or kept at one site by its constraint, with
  -- its preference: keeps=prefer), and no longer kept there; or with
  -- another node list than its record has (every later decision reads the
  -- list's sites from the record: the job record job_submit/lua shows has
  -- none): changed by its owner while another mode was in force (what an
  -- owner changes cannot touch the record), or by a path xsite did not
  -- see.  Decided again, its Features and Prefer are set anew from the
  -- record and the list, or, when it can no longer be kept at one site, it
  -- is held (the request says "unkept").
  if word and word ~= (rec.wsites or "-") then return true, "unkept" end
  if not kept and (rec.action == "pin" or rec.action == "site" or
      (rec.action ~= "span" and one_site(fa, false))) then
    return true, "unkept"
  end
  return false
end

-- Whose hold a job in a hold is in, from squeue's reason: "user", "admin"
-- or nil (a job its owner or Slurm requeued in a hold is in a user's).
local function holder(reason, held)
  if not held then return nil end
  if reason == "JobHeldUser" or reason:sub(1, 16) == "job requeued in " then return "user" end
  if reason == "JobHeldAdmin" then return "admin" end
  return nil
end

-- The constraint read for a line cut at MAX_LINE: a blank, which
-- xsite.constraint refuses.
local UNREAD = " "

--- A run's view of the pending jobs, fed SQUEUE_JOBS's lines (job_line),
-- then SQUEUE_ASKS's (ask_line); then select.
-- @param down the link is down now
function M.view(cfg, down)
  return { cfg = cfg, down = down, jobs = {}, order = {}, memo = { n = 0 } }
end

--- One line of SQUEUE_JOBS into the view (a line that is not one job
-- record's is passed over).
function M.job_line(v, line)
  local raw, own, reason, priority, comment, nodes =
    line:match("^(%S+)\t(%d+)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)$")
  local id = raw and job_id(raw)
  if not id or v.jobs[id] then return end
  local held = tonumber(priority) == 0
  -- the record kept as text (read again for each line about the job): a
  -- hundred thousand records read once would each be tables the
  -- collector walks at every cycle
  v.jobs[id] = { id = id, qid = id:find("+", 1, true) and own or id, comment = comment,
    word = nodelist_word(nodes, v.cfg), held = held, holder = holder(reason, held) }
  v.order[#v.order + 1] = id
end

-- What a line of SQUEUE_ASKS says of its job: nil when it is not about
-- a job of the view, else the job and false (not to be checked), "stale"
-- or "unkept" (see stale).
local function verdict(v, line, cut)
  local raw, prefer, features = line:match("^(%S+)\t([^\t]*)\t(.*)$")
  local job = raw and v.jobs[raw]
  if not job then return nil end
  if cut then prefer, features = "(null)", UNREAD end
  local stale, why = M.stale(record.parse(job.comment), job.held, job.word, prefer, features, v.down, v.cfg, v.memo)
  return job, stale and (why or "stale")
end

--- One line of SQUEUE_ASKS into the view (`cut`: it was longer than
-- MAX_LINE).  A job of whose lines two decide differently is asked about
-- again (select).
function M.ask_line(v, line, cut)
  local job, says = verdict(v, line, cut)
  if not job then return end
  if job.says == nil then
    job.says = says
  elseif job.says ~= says then
    job.disputed = true
  end
end

-- The first `n` of `list` in a random order (`random` like math.random(m, n)).
local function some(list, n, random)
  if #list <= n then return list end
  for i = 1, n do
    local j = random(i, #list)
    list[i], list[j] = list[j], list[i]
  end
  return { unpack(list, 1, n) }
end

--- The jobs to check again: those that were not decided again under the
-- link's state now first (a job picked run after run, one whose node list
-- cannot be read, cannot keep them out), a random choice when there are
-- more.
-- @param random optional: like math.random(m, n), to choose among more
-- @param ask optional: function(qid): the first line of M.squeue_asks(qid)
--   and whether it was cut, or nil; without it a job whose lines
--   disagree is left for a later run
-- @return a list of { id, held = "user"|"admin"|nil, rec, unkept, wsites },
--   at most MAX_JOBS; and how many jobs whose lines disagree were left
function M.select(v, random, ask)
  random = random or math.random
  local first, again, disputed = {}, {}, {}
  local now = v.down and "down" or "up"
  local function add(job, says)
    if not says then return end
    local rec = record.parse(job.comment)
    local list = (rec and rec.recheck == now) and again or first
    list[#list + 1] = { id = job.id, rec = rec, unkept = says == "unkept", wsites = job.word, held = job.holder }
  end
  for _, id in ipairs(v.order) do
    local job = v.jobs[id]
    if job.disputed then disputed[#disputed + 1] = job else add(job, job.says) end
  end
  local asked = ask and some(disputed, M.MAX_ASKS, random) or {}
  for _, job in ipairs(asked) do
    local line, cut = ask(job.qid)
    local own, says = nil, nil
    if line then own, says = verdict(v, line, cut) end
    -- its own line is about it (a job gone meanwhile: none)
    if own == job then add(job, says) end
  end
  local out = {}
  for _, list in ipairs({ first, again }) do
    for _, job in ipairs(some(list, M.MAX_JOBS - #out, random)) do out[#out + 1] = job end
  end
  return out, #disputed - #asked
end

--- The AdminComment that asks slurmctld to decide a job again: "held=" whose
-- hold it is in, "unkept" when it is no longer kept at one site, "wsites="
-- the sites of its node list (what job_modify cannot see: the job's
-- Prefer and node list; see xsite.submit.recheck_request).
function M.request(job)
  -- a job xsite holds is in an administrator's hold: its own word says why
  local held = not (job.rec and job.rec.hold) and job.held or nil
  return submit.RECHECK .. (held and " held=" .. held or "") .. (job.unkept and " unkept" or "") ..
    (job.wsites and " wsites=" .. job.wsites or "")
end

return M
