--- `xsite replay`: the policy over past jobs from accounting, under another threshold.  See xsite(1).
-- @module xsite.cli.replay

local common = require("xsite.cli.common")
local config = require("xsite.config")
local hostlist = require("xsite.hostlist")
local json = require("xsite.json")
local replay = require("xsite.replay")
local units = require("xsite.units")

local out, err = common.out, common.err

local M = {
  summary = "the policy over past jobs from accounting, under another threshold",
  options = { since = true, ["max-slowdown"] = true, ["sacct-file"] = true, json = false },
  usage = [[
Usage: xsite replay [--since DATE] [--max-slowdown X] [--sacct-file FILE]
                    [--json]

Run the placement policy over past jobs from accounting (sacct, with each
job's xsite record from its admin_comment), under the configuration of
--config and, with --max-slowdown, another MaxSlowdown: how many jobs would
have been pinned or allowed to span, which jobs change, the node-hours the
jobs allowed to span lose to their slowdown, and the queue time (in
node-hours) of jobs pinned before that may span now: what spanning might
have saved, at most, and the link's license over the jobs allowed to span
(License= on the link line, else in percent of the link): the most units
they held at once and the jobs that would have waited for the link.  Jobs
the users placed themselves are left out.

  --since DATE       jobs that ended since DATE, in sacct's syntax
                     (default: now-7days)
  --max-slowdown X   replay with this MaxSlowdown
  --sacct-file FILE  read sacct's output from FILE instead of running sacct
                     (fields: JobID User State NNodes Elapsed Reserved NodeList
                     Start End AdminComment, tab-separated; Reserved is
                     Planned from Slurm 23.11 on)
  --json             the summary as JSON
]],
}

function M.run(opts, _, io_, global)
  local maxs
  if opts["max-slowdown"] then
    local e
    maxs, e = units.parse(opts["max-slowdown"], "number")
    if not maxs or maxs < 1 then
      err(io_, "xsite replay: --max-slowdown: %s\n", e or "must be at least 1.0")
      return 2
    end
  end
  local since = opts.since or "now-7days"
  if not since:match("^[%w:%-%.]+$") then
    err(io_, "xsite replay: --since: '%s' is not a date sacct knows (e.g. 2026-11-01 or now-7days)\n", since)
    return 2
  end
  local cfg = common.load_config(global.config, io_)
  if not cfg then return 1 end
  local text
  if opts["sacct-file"] then
    local e
    text, e = config.read_file(opts["sacct-file"])
    if not text then err(io_, "xsite replay: --sacct-file: %s\n", e) return 1 end
  else
    local e
    text, e = common.sacct_jobs({ since = since, until_ = "now", states = replay.STATES })
    if not text then err(io_, "xsite replay: %s\n", e) return 1 end
  end
  local jobs, perr = replay.parse_sacct(text)
  if not jobs then err(io_, "xsite replay: %s\n", perr) return 1 end
  local _, measured = common.state_files(cfg, "replay", io_)
  local s = replay.run(cfg, jobs, { max_slowdown = maxs, profile_state = measured, spans = function(job)
    local counts = hostlist.site_counts(job.nodelist, cfg)
    local at = 0
    for _, c in ipairs(counts or {}) do
      if c > 0 then at = at + 1 end
    end
    return at > 1
  end })
  if opts.json then
    out(io_, "%s\n", json.encode({ max_slowdown = maxs or cfg.policy.max_slowdown, jobs = s.jobs,
      replayed = s.replayed, skipped = s.skipped, before = s.before, after = s.after,
      changed = json.array(s.changed), node_hours_lost = s.node_hours_lost,
      queue_node_hours = s.queue_node_hours, link = { license = s.link.license, count = s.link.count,
        jobs = s.link.jobs, peak = s.link.peak, waited = json.array(s.link.over),
        unit_hours = s.link.unit_hours } }))
    return 0
  end
  local function counts(t)
    local w = {}
    for _, k in ipairs({ "span", "pin", "site", "none", "reject" }) do
      if t[k] then w[#w + 1] = string.format("%s %d", k, t[k]) end
    end
    return #w > 0 and table.concat(w, ", ") or "none"
  end
  out(io_, "replay of %d jobs since %s under MaxSlowdown %.2f (%s)\n", s.jobs,
    opts["sacct-file"] and "(file)" or since, maxs or cfg.policy.max_slowdown, cfg.file)
  out(io_, "  replayed: %d (the model decided them)\n", s.replayed)
  for why, n in pairs(s.skipped) do out(io_, "  left out: %d, %s\n", n, why) end
  out(io_, "  as decided then: %s\n  under this policy: %s\n", counts(s.before), counts(s.after))
  for _, c in ipairs(s.changed) do
    out(io_, "  job %s: %s -> %s (slowdown %.2fx)\n", c.id, c.before, c.after, c.slowdown)
  end
  out(io_, "  node-hours lost to slowdown by the jobs allowed to span: %.2f\n", s.node_hours_lost)
  out(io_, "  queue node-hours of pinned jobs now allowed to span (at most saved): %.2f\n", s.queue_node_hours)
  local l = s.link
  out(io_, "  the link's license %s of %d units: %d job%s allowed to span held at most %d at once%s\n",
    l.license, l.count, l.jobs, l.jobs == 1 and "" or "s", l.peak,
    #l.over == 0 and "; none would have waited for the link" or
    string.format("; %d would have waited for the link (job %s)", #l.over, table.concat(l.over, ", job ")))
  return 0
end

return M
