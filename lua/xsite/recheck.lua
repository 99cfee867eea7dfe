--- Pending jobs decided under another state of the link, decided again.
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
-- squeue's lines carry a job's features, which its owner wrote: a line can
-- be forged (a newline in a feature) but not taken away, so a job is checked
-- when any line about it says so, and never more than MAX_JOBS a run.
-- @module xsite.recheck

local constraint = require("xsite.constraint")
local record = require("xsite.record")
local submit = require("xsite.submit")

local M = {}

--- The most jobs checked again in one run (the rest in the next).
M.MAX_JOBS = 500

--- squeue's arguments: pending jobs of every partition, one a line, fields
-- separated by tabs in this order (the owner's features last).
M.SQUEUE = { "squeue", "-a", "-h", "-t", "PENDING", "-O", "JobID:0\t,Reason:0\t,admin_comment:0\t,Feature:0" }

-- The job id scontrol update takes for an id squeue printed: "123_[1-5]"
-- (an array's pending tasks) is 123, which updates them all.
local function job_id(text)
  if text:find("^%d+$") or text:find("^%d+_%d+$") or text:find("^%d+%+%d+$") then return text end
  return text:match("^(%d+)_%[[%d,%-%%]+%]$")
end

--- Whether a job's decision was made under another state of the link than
-- `down` says now.
-- @param rec the job's record (xsite.record.parse), or nil
-- @param features the job's constraint now
-- @param down the link is down now
-- @param cfg the configuration
function M.stale(rec, features, down, cfg)
  if rec and rec.override then return false end
  if down then
    if rec and rec.recheck == "down" then return false end
    -- kept at one site already (a pin, or the user's own site)
    local a = features ~= "" and features ~= "(null)" and constraint.analyse(features, cfg)
    return not (a and a.one_site)
  end
  -- decided again while the link was down, or submitted then; once decided
  -- with the link up (recheck=up), a job xsite still holds stays held
  return rec ~= nil and (rec.recheck == "down" or (rec.recheck == nil and rec.why == "link-down"))
end

--- The jobs to check again, from squeue's output (see SQUEUE).
-- @return a list of { id, held = "user"|"admin"|nil, rec }, at most MAX_JOBS
function M.select(text, cfg, down)
  local out, seen = {}, {}
  for line in text:gmatch("[^\n]+") do
    local raw, reason, comment, features = line:match("^(%S+)\t(%w*)\t([^\t]*)\t?(.*)$")
    local id = raw and job_id(raw)
    if id and not seen[id] then
      local rec = record.parse(comment)
      if M.stale(rec, features, down, cfg) then
        seen[id] = true
        out[#out + 1] = { id = id, rec = rec,
          held = (reason == "JobHeldUser" and "user") or (reason == "JobHeldAdmin" and "admin") or nil }
        if #out >= M.MAX_JOBS then break end
      end
    end
  end
  return out
end

--- The AdminComment that asks slurmctld to decide a job again.
function M.request(job)
  -- a job xsite holds is in an administrator's hold: its own word says why
  local held = not (job.rec and job.rec.hold) and job.held or nil
  return submit.RECHECK .. (held and " held=" .. held or "")
end

return M
