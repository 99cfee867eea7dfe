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
-- squeue's lines end with a job's preference and constraint, which its
-- owner wrote: a line can be forged (a newline in them, where Slurm lets
-- one through) but not taken away, so a job is checked when any line about
-- it says so; a tab in them shifts the fields, which leaves a blank in the
-- constraint read, and xsite.constraint refuses blanks: checked.  Never
-- more than MAX_JOBS a run: first the jobs not yet decided again under the
-- link's state now, then those that were and are picked again (a node list
-- squeue prints that cannot be read, a path xsite did not foresee), each
-- a random choice when there are more, so that jobs whose check fails
-- every time cannot keep the others out.
-- @module xsite.recheck

local constraint = require("xsite.constraint")
local hostlist = require("xsite.hostlist")
local record = require("xsite.record")
local submit = require("xsite.submit")

local M = {}

--- The most jobs checked again in one run (the rest in the next).
M.MAX_JOBS = 500

--- squeue's arguments: pending jobs of every partition, one a line (each
-- task of an array, each component of a heterogeneous job: `123_4`,
-- `19+1`, ids scontrol update takes for that one record), fields separated
-- by tabs in this order (the owner's preference and constraint last; the
-- node list before them holds node names only, which Slurm checks).  A
-- job in a hold has priority 0, whatever its reason says: a job its owner
-- requeued in a hold (`scontrol requeuehold`) keeps "job requeued in held
-- state" as its reason after xsite holds it too.
M.SQUEUE = { "squeue", "-a", "-r", "-h", "-t", "PENDING", "-O",
  "JobArrayID:0\t,Reason:0\t,PriorityLong:0\t,admin_comment:0\t,ReqNodes:0\t,Prefer:0\t,Feature:0" }
--- squeue's environment: an array's pending tasks in full (Slurm cuts
-- them to 64 characters, and -r lists only those, otherwise).
M.SQUEUE_ENV = { SLURM_BITSTR_LEN = "0" }

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

-- A constraint squeue printed, analysed; nil for none (or one xsite
-- cannot read).
local function analysed(text, cfg)
  if none(text) then return nil end
  return constraint.analyse(text, cfg)
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
function M.stale(rec, held, word, prefer, features, down, cfg)
  if rec and rec.override then return false end
  -- kept at one site by its constraint and its preference (Slurm
  -- schedules with the preference where it can)
  local across = word == nil or word:find("+", 1, true) ~= nil
  local fa = analysed(features, cfg)
  local kept = one_site(fa, across) and (none(prefer) or one_site(analysed(prefer, cfg), across))
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

--- The jobs to check again, from squeue's output (see SQUEUE): those that
-- were not decided again under the link's state now first (a job picked
-- run after run, one whose node list cannot be read, cannot keep them
-- out), a random choice when there are more.
-- @return a list of { id, held = "user"|"admin"|nil, rec }, at most MAX_JOBS
-- @param random optional: like math.random(m, n), to choose among more
function M.select(text, cfg, down, random)
  local first, again, seen = {}, {}, {}
  local now = down and "down" or "up"
  for line in text:gmatch("[^\n]+") do
    local raw, reason, priority, comment, nodes, prefer, features =
      line:match("^(%S+)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
    local id = raw and job_id(raw)
    if id and not seen[id] then
      local rec = record.parse(comment)
      local word = nodelist_word(nodes, cfg)
      local held = tonumber(priority) == 0
      local stale, why = M.stale(rec, held, word, prefer, features, down, cfg)
      if stale then
        seen[id] = true
        local list = (rec and rec.recheck == now) and again or first
        list[#list + 1] = { id = id, rec = rec, unkept = why == "unkept", wsites = word,
          held = holder(reason, held) }
      end
    end
  end
  random = random or math.random
  local out = {}
  for _, list in ipairs({ first, again }) do
    local room = M.MAX_JOBS - #out
    if #list <= room then
      for _, job in ipairs(list) do out[#out + 1] = job end
    else
      -- the first of a random order, as many as there is room for
      for i = 1, room do
        local j = random(i, #list)
        list[i], list[j] = list[j], list[i]
        out[#out + 1] = list[i]
      end
    end
  end
  return out
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
