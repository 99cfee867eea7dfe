--- Replay: the placement policy over past jobs, under another threshold or
-- configuration.  This is how an admin tunes MaxSlowdown: how many jobs would
-- have been pinned or allowed to span, the node-hours spanning jobs lose to
-- their slowdown, and the queue time of pinned jobs that spanning might
-- have saved.  Jobs come from accounting (`sacct`), each with the record
-- job_submit.lua wrote into its admin_comment.
-- @module xsite.replay

local policy = require("xsite.policy")
local record = require("xsite.record")
local units = require("xsite.units")

local M = {}

--- The sacct fields `xsite replay` asks for, in this order (AdminComment
-- last: it may hold the delimiter); see M.sacct_fields.
M.FIELDS = { "JobID", "User", "State", "NNodes", "Elapsed", "Reserved", "NodeList", "Start", "End",
  "AdminComment" }
--- The sacct fields to ask for from a Slurm whose `sacct --helpformat` is
-- `helpformat`: M.FIELDS, with the time in the queue as Slurm 23.11 and
-- later name it (Planned; Reserved before, and when `helpformat` is nil).
function M.sacct_fields(helpformat)
  local planned = type(helpformat) == "string" and helpformat:find("%f[%w]Planned%f[%W]") ~= nil
  local out = {}
  for i, f in ipairs(M.FIELDS) do
    out[i] = (f == "Reserved" and planned) and "Planned" or f
  end
  return out
end
--- The field delimiter given to sacct.
M.DELIMITER = "\t"
--- The job states `xsite replay` asks sacct for: every state a job ends in.
-- With states (and --endtime: without it, sacct 22.05 found nothing), sacct
-- selects jobs by the time they ended; without, by the time they became
-- eligible, which slurmdbd may record only some time after a short job has
-- ended (sacct shows Eligible "Unknown"): such jobs were missing from a
-- replay right after they ran.
M.STATES = "BF,CA,CD,DL,F,NF,OOM,PR,TO"

--- Seconds of a Slurm time stamp (2026-11-25T22:10:03), to compare and
-- subtract (as local time); nil for "Unknown", "None" and the like.
function M.timestamp(text)
  if type(text) ~= "string" then return nil end
  local y, mo, d, h, mi, s = text:match("^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)$")
  if not y then return nil end
  return os.time({ year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h),
    min = tonumber(mi), sec = tonumber(s) })
end

--- Read sacct's parsable output (fields of M.FIELDS, M.DELIMITER between).
-- @return array of jobs { id, user, state, nodes, elapsed, reserved, nodelist, start, end_, record }
--   (start, end_: seconds, nil when sacct has none)
--   (record: the parsed xsite record, or nil), or nil and a message naming the line
function M.parse_sacct(text)
  local jobs, n = {}, 0
  for line in (text or ""):gmatch("[^\n]+") do
    n = n + 1
    local f, start = {}, 1
    for i = 1, #M.FIELDS - 1 do
      local at = line:find(M.DELIMITER, start, true)
      if not at then
        return nil, string.format("sacct line %d: %d fields expected, got %d", n, #M.FIELDS, i)
      end
      f[i] = line:sub(start, at - 1)
      start = at + #M.DELIMITER
    end
    f[#M.FIELDS] = line:sub(start)
    local nodes = tonumber(f[4])
    if not nodes then return nil, string.format("sacct line %d: NNodes '%s' is not a number", n, f[4]) end
    jobs[#jobs + 1] = {
      id = f[1], user = f[2], state = f[3], nodes = nodes,
      elapsed = units.slurm_duration(f[5]) or 0, reserved = units.slurm_duration(f[6]) or 0,
      nodelist = f[7], start = M.timestamp(f[8]), end_ = M.timestamp(f[9]), record = (record.parse(f[10])),
    }
  end
  return jobs
end

-- Why codes of decisions the model made (the others are the user's own).
local MODEL_WHY = { within = true, slowdown = true, oversize = true, ["link-down"] = true, ["link-busy"] = true }

local function count(t, k) t[k] = (t[k] or 0) + 1 end

--- Replay the policy over past jobs.
-- @param cfg the configuration to replay under (MaxSlowdown may be overridden in opts)
-- @param jobs from parse_sacct
-- @param opts optional: `max_slowdown`, `spans(job)` (whether the job ran at
--   both sites, from its node list), `profile_state` (measured profiles,
--   xsite.state.parse_profiles)
-- @return a summary: jobs, replayed, skipped (with reasons), before/after
--   counts by action, changed (array of { id, before, after, slowdown }),
--   node_hours_lost (by the jobs that may span after), queue_node_hours
--   (waited by jobs pinned before that may span after: what spanning might
--   have saved, at most), link (the link's license over the jobs that may
--   span after, see M.link_load)
function M.run(cfg, jobs, opts)
  opts = opts or {}
  if opts.max_slowdown then
    local copy = {}
    for k, v in pairs(cfg) do copy[k] = v end
    copy.policy = {}
    for k, v in pairs(cfg.policy) do copy.policy[k] = v end
    copy.policy.max_slowdown = opts.max_slowdown
    cfg = copy
  end
  local s = { jobs = #jobs, replayed = 0, skipped = {}, before = {}, after = {}, changed = {},
    node_hours_lost = 0, queue_node_hours = 0 }
  -- the license rule, as configured or (without License=) in percent of the link
  local lic = cfg.link.license or { name = "(percent of the link)", count = 100 }
  local spanning = {}
  for _, job in ipairs(jobs) do
    local rec = job.record
    if not rec then
      count(s.skipped, "no xsite record")
    elseif not MODEL_WHY[rec.why] then
      count(s.skipped, "the user chose the placement (" .. tostring(rec.why) .. ")")
    else
      local d = policy.decide({ cfg = cfg, nodes = tonumber(rec.n) or job.nodes, profile = rec.profile,
        profile_state = opts.profile_state,
        features = rec.constraint, prefer = rec.prefer })
      if d.action == "reject" and d.why == "bad-request" then
        count(s.skipped, "not valid under this configuration")
      else
        s.replayed = s.replayed + 1
        count(s.before, rec.action)
        count(s.after, d.action)
        local slow = d.prediction and d.prediction.slowdown or 1
        if rec.action ~= d.action then
          s.changed[#s.changed + 1] = { id = job.id, before = rec.action, after = d.action, slowdown = slow }
        end
        if d.action == "span" and d.prediction then
          spanning[#spanning + 1] = { id = job.id, start = job.start, end_ = job.end_,
            units = policy.link_units(d.prediction.link_share, lic.count) }
        end
        if d.action == "span" then
          local spanned = opts.spans and opts.spans(job)
          local at_one = spanned and job.elapsed / slow or job.elapsed
          s.node_hours_lost = s.node_hours_lost + job.nodes * at_one * (slow - 1) / 3600
          if rec.action == "pin" then
            s.queue_node_hours = s.queue_node_hours + job.nodes * job.reserved / 3600
          end
        end
      end
    end
  end
  s.link = M.link_load(spanning, lic)
  return s
end

--- What the link's license would have done to jobs that ran: each holds its
-- units from its start to its end; a job that started while the others
-- held more than the license leaves would have waited for the link.
-- @param spanning array of { id, start, end_, units } (jobs without a start
--   or end are left out)
-- @param lic { name, count }
-- @return { license, count, jobs, peak (the most units held at once), over
--   (ids of the jobs that would have waited), unit_hours }
function M.link_load(spanning, lic)
  local events = {}
  local out = { license = lic.name, count = lic.count, jobs = 0, peak = 0, over = {}, unit_hours = 0 }
  for _, j in ipairs(spanning) do
    if j.start and j.end_ and j.end_ >= j.start then
      out.jobs = out.jobs + 1
      out.unit_hours = out.unit_hours + j.units * (j.end_ - j.start) / 3600
      -- at one time, the ends of jobs that started before, then the starts
      -- (a job may start as another ends), then the ends of jobs that
      -- lasted no time (sacct counts in seconds)
      events[#events + 1] = { t = j.start, order = 1, job = j }
      events[#events + 1] = { t = j.end_, order = j.end_ > j.start and 0 or 2, job = j }
    end
  end
  table.sort(events, function(a, b)
    if a.t ~= b.t then return a.t < b.t end
    if a.order ~= b.order then return a.order < b.order end
    return tostring(a.job.id) < tostring(b.job.id)
  end)
  local held = 0
  for _, e in ipairs(events) do
    if e.order == 1 then
      if held + e.job.units > lic.count then out.over[#out.over + 1] = e.job.id end
      held = held + e.job.units
      if held > out.peak then out.peak = held end
    else
      held = held - e.job.units
    end
  end
  return out
end

return M
