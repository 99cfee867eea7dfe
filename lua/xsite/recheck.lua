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
-- more than MAX_JOBS a run (a random choice of them when there are more,
-- so that jobs whose check fails every time cannot keep the others out).
-- @module xsite.recheck

local constraint = require("xsite.constraint")
local record = require("xsite.record")
local submit = require("xsite.submit")

local M = {}

--- The most jobs checked again in one run (the rest in the next).
M.MAX_JOBS = 500

--- squeue's arguments: pending jobs of every partition, one a line (each
-- task of an array, each component of a heterogeneous job: `123_4`,
-- `19+1`, ids scontrol update takes for that one record), fields separated
-- by tabs in this order (the owner's preference and constraint last).
M.SQUEUE = { "squeue", "-a", "-r", "-h", "-t", "PENDING", "-O",
  "JobArrayID:0\t,Reason:0\t,admin_comment:0\t,Prefer:0\t,Feature:0" }
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

-- A constraint squeue printed keeps a job at one site.
local function one_site(text, cfg)
  if none(text) then return false end
  local a = constraint.analyse(text, cfg)
  return a ~= nil and a.one_site
end

--- Whether a job's decision was made under another state of the link than
-- `down` says now, or no longer holds it at one site; "unkept" as second
-- value for the latter.
-- @param rec the job's record (xsite.record.parse), or nil
-- @param reason squeue's reason (JobHeldAdmin: still in xsite's hold)
-- @param prefer the job's --prefer now (squeue's "(null)" for none)
-- @param features the job's constraint now
-- @param down the link is down now
-- @param cfg the configuration
function M.stale(rec, reason, prefer, features, down, cfg)
  if rec and rec.override then return false end
  -- kept at one site by its constraint and its preference (Slurm
  -- schedules with the preference where it can)
  local kept = one_site(features, cfg) and (none(prefer) or one_site(prefer, cfg))
  if down then
    if rec and rec.hold and reason == "JobHeldAdmin" then return false end
    return not kept
  end
  if rec == nil then return false end
  -- decided again while the link was down, or submitted then; once decided
  -- with the link up (recheck=up), a job xsite still holds stays held
  if rec.recheck == "down" or (rec.recheck == nil and rec.why == "link-down") then return true end
  -- held by xsite (one that could no longer be kept at one site, below)
  if rec.hold and reason == "JobHeldAdmin" then return false end
  -- Pinned under Mode=enforce (or kept at one site by its constraint, with
  -- its preference: keeps=prefer), and no longer kept there: changed by
  -- its owner while another mode was in force (what an owner changes cannot
  -- touch the record), or by a path xsite did not see.  Decided again, its
  -- Features and Prefer are set anew from the record, or, when it can no
  -- longer be kept at one site, it is held (the request says "unkept").
  if rec.mode == "enforce" and not kept and
      (rec.action == "pin" or rec.action == "site" or one_site(features, cfg)) then
    return true, "unkept"
  end
  return false
end

--- The jobs to check again, from squeue's output (see SQUEUE).
-- @return a list of { id, held = "user"|"admin"|nil, rec }, at most MAX_JOBS
-- @param random optional: like math.random(m, n), to choose among more
function M.select(text, cfg, down, random)
  local out, seen = {}, {}
  for line in text:gmatch("[^\n]+") do
    local raw, reason, comment, prefer, features = line:match("^(%S+)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
    local id = raw and job_id(raw)
    if id and not seen[id] then
      local rec = record.parse(comment)
      local stale, why = M.stale(rec, reason, prefer, features, down, cfg)
      if stale then
        seen[id] = true
        out[#out + 1] = { id = id, rec = rec, unkept = why == "unkept",
          held = (reason == "JobHeldUser" and "user") or (reason == "JobHeldAdmin" and "admin") or nil }
      end
    end
  end
  if #out <= M.MAX_JOBS then return out end
  -- the first MAX_JOBS of a random order
  random = random or math.random
  for i = 1, M.MAX_JOBS do
    local j = random(i, #out)
    out[i], out[j] = out[j], out[i]
  end
  for i = #out, M.MAX_JOBS + 1, -1 do out[i] = nil end
  return out
end

--- The AdminComment that asks slurmctld to decide a job again: "held=" whose
-- hold it is in, "unkept" when it is no longer kept at one site (what
-- job_modify cannot see: the job's Prefer).
function M.request(job)
  -- a job xsite holds is in an administrator's hold: its own word says why
  local held = not (job.rec and job.rec.hold) and job.held or nil
  return submit.RECHECK .. (held and " held=" .. held or "") .. (job.unkept and " unkept" or "")
end

return M
