--- `xsite report`: a job's cross-site report: prediction, measurement, verdict.  See xsite(1).
-- @module xsite.cli.report

local common = require("xsite.cli.common")
local shell = require("xsite.shell")
local fs = require("xsite.fs")
local replay = require("xsite.replay")
local report = require("xsite.report")

local out, err = common.out, common.err

local M = {
  summary = "a job's cross-site report: prediction, measurement, verdict",
  options = { json = false, svg = true, ["report-dir"] = true },
  args = { name = "JOBID", min = 1, max = 1,
    missing = "which job? give its JOBID (usage: xsite report JOBID [--json] [--svg FILE])",
    extra = "one JOBID only (usage: xsite report JOBID [--json] [--svg FILE])" },
  usage = [[
Usage: xsite report JOBID [--json] [--svg FILE] [--report-dir DIR]

The cross-site report of a job: where it ran and why (the decision of
job_submit.lua, from accounting, else from slurmctld), what the model
predicted for the nodes it got, what was measured (elapsed time, and the
bytes and messages that crossed the link when libxsite recorded them), and
a verdict in one line.  Where the nodes the record names are not those
Slurm gave the job (slurmd's list, kept beside the record when the job
ends; before that squeue's, else sacct's), the report says so and gives no
verdict.  Records are in ReportDir/JOBID/report.json; a user
can read the records of their own jobs, an administrator all of them.

  --json            the record, the decision, the assessment and the verdict as JSON
  --svg FILE        also write where the time went as an SVG picture
  --report-dir DIR  read the records from DIR (default: ReportDir of xsite.conf)
]],
}

-- What accounting (sacct), else slurmctld (scontrol), says of a job; nil when neither knows it.
local function job_accounting(id)
  local function run(argv) return (shell.run(argv, { stderr = "drop" })) end
  local a = report.parse_accounting(run({ "sacct", "-j", id, "-X", "-n", "-P", "--delimiter=\t",
    "--format=" .. table.concat(report.SACCT_FIELDS, ",") }), "sacct")
  -- slurmctld keeps an ended job for MinJobAge, as it ended; slurmdbd's row
  -- may lag the end: without the AdminComment yet, or (on the testbed, a
  -- second after the end) with the batch host as the job's node list
  local q = report.parse_squeue(run({ "squeue", "-h", "-t", "all", "-j", id, "-o", report.SQUEUE_FORMAT }))
  local acct = a
  if not (a and a.record) then
    local b = report.parse_accounting(run({ "scontrol", "show", "job", "-o", id }), "scontrol")
    if (b and b.record) or not a then acct = b end
  end
  if acct and q then acct.nodes, acct.het = q.nodes, q.het end
  return acct
end

function M.run(opts, pos, io_, global)
  local id = pos[1]
  if not id:match("^%d+$") then
    err(io_, "xsite report: '%s' is not a job id (digits, as squeue and sacct show it)\n", id)
    return 2
  end
  local cfg = common.load_config(global.config, io_)
  if not cfg then return 1 end
  local dir = opts["report-dir"] or cfg.policy.report_dir
  local path = string.format("%s/%s/%s", dir, id, report.FILE)
  local text, rerr, missing = fs.read_capped(path, report.MAX_RECORD)
  if not text then
    if missing then
      err(io_, "xsite report: job %s: no record in %s (an unknown job, one that ran no step yet, or a"
        .. " node without the xsite SPANK plugin)\n", id, dir)
    elseif rerr:find("Permission denied", 1, true) then
      err(io_, "xsite report: job %s: %s is not readable by you: users read the records of their own"
        .. " jobs only (and %s must let users through: mode 0711 or 0755)\n", id, path, dir)
    else
      err(io_, "xsite report: %s\n", rerr)
    end
    return 1
  end
  local rec, derr = report.decode(text, path)
  if not rec then err(io_, "xsite report: %s\n", derr) return 1 end
  local ok, serr = report.read_slurm_nodes(rec, dir .. "/" .. id)
  if not ok then err(io_, "xsite report: %s (Slurm's node list of the job not believed)\n", serr) end
  local acct = job_accounting(id)
  local slurm_nodes, perr = report.slurm_placement(cfg, rec, acct)
  if slurm_nodes or perr then
    acct = acct or {}
    acct.slurm_nodes, acct.unchecked = slurm_nodes, perr
  end
  if acct and acct.start and rec.spanning then
    -- the other spanning jobs that ran meanwhile, as accounting shows them
    local now = os.time()
    local listing = common.sacct_jobs({ since = os.date("%Y-%m-%dT%H:%M:%S", acct.start),
      until_ = acct.finish and os.date("%Y-%m-%dT%H:%M:%S", acct.finish) or "now" })
    local jobs = listing and replay.parse_sacct(listing)
    if jobs then acct.overlaps = report.overlaps(id, acct.start, acct.finish or now, jobs, now) end
  end
  local max_slowdown = cfg.policy.max_slowdown
  if opts.svg then
    local f, ferr = io.open(opts.svg, "w")
    if not f then err(io_, "xsite report: --svg: %s\n", ferr) return 1 end
    f:write(report.svg(rec, acct, max_slowdown))
    f:close()
  end
  local ex = report.expected_error(rec, common.fidelity(cfg, "report", io_))
  if opts.json then
    out(io_, "%s\n", report.json(rec, acct, max_slowdown, ex))
  else
    out(io_, "%s", report.text(rec, acct, max_slowdown, ex))
  end
  return 0
end

return M
