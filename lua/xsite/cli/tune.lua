--- `xsite tune`: fit a profile's bytes exchanged and steps to the jobs' reports.  See xsite(1).
-- @module xsite.cli.tune

local common = require("xsite.cli.common")
local shell = require("xsite.shell")
local fit = require("xsite.fit")
local fs = require("xsite.fs")
local json = require("xsite.json")
local profile = require("xsite.profile")
local report = require("xsite.report")
local states = require("xsite.state")

local out, err = common.out, common.err

local M = {
  summary = "fit a profile's bytes exchanged and steps to the jobs' reports",
  options = { profile = true, apply = false, json = false, ["report-dir"] = true, ["min-users"] = true },
  usage = [[
Usage: xsite tune --profile NAME [--apply] [--min-users N] [--json]
                  [--report-dir DIR]

Fit an application profile to what the jobs that used it did: from every
record in ReportDir of a job with this profile that spanned the link with
libxsite's traffic count, the bytes exchanged (bytes across / the share the
model puts on the link) and the synchronising steps (messages across / two
per node pair across the link); the fit is the median over the jobs'
owners of each owner's median estimate (one vote a user: a job's owner
writes its traffic record, so its numbers are the owner's).  Prints each
job's estimate, how well the fit predicts each job's traffic, and the
profile line.

  --profile NAME    the profile (a name of xsite.conf, or an explicit spec as jobs gave it)
  --apply           write the fit to ProfileStateFile: the policy's next decisions
                    for this profile use the measured Exchange and Steps
  --min-users N     apply only a fit of the jobs of at least N users
                    (default 2), or of root's jobs alone
  --json            the fit as JSON
  --report-dir DIR  read the records from DIR (default: ReportDir of xsite.conf)
]],
}

-- Every readable record under dir (DIR/JOBID/report.json), read only when
-- it is a regular file of root's (or of this process's user) that nobody
-- else may write: a directory a job's owner may still write, one the
-- pruner moved aside (.stale.*), is not looked in.  The unreadable and
-- broken ones are named on stderr.
local function read_records(dir, io_)
  local found = shell.run({ "find", dir, "-mindepth", "2", "-maxdepth", "2", "-name", report.FILE,
    "-printf", "%y %U %m %p\n" }, { stderr = "drop" })
  local entries = {}
  for kind, uid, mode, path in found:gmatch("(%a) (%d+) (%d+) ([^\n]+)") do
    if not path:match("/%.[^/]*/[^/]*$") then
      entries[#entries + 1] = { path = path, kind = kind, uid = tonumber(uid), mode = tonumber(mode, 8) }
    end
  end
  table.sort(entries, function(a, b) return a.path < b.path end)
  local owners = fs.default_owners()
  local records, bad = {}, 0
  for _, e in ipairs(entries) do
    local path = e.path
    local text, rerr
    if e.kind ~= "f" then
      rerr = path .. ": not a regular file"
    elseif not owners[e.uid] then
      rerr = string.format("%s: owned by uid %d, not by root", path, e.uid)
    elseif fs.writable_by_others(e.mode) then
      rerr = string.format("%s: writable by group or others (mode %03o)", path, e.mode)
    else
      text, rerr = fs.read_capped(path, report.MAX_RECORD)
    end
    local rec, derr
    if text then rec, derr = report.decode(text, path, true) end
    -- Slurm's node lists beside it (none while the job runs): a file there
    -- that cannot be believed leaves the record out with it
    if rec then
      local ok, serr = report.read_slurm_nodes(rec, path:match("^(.*)/[^/]*$"))
      if not ok then rec, derr = nil, serr end
    end
    if rec then
      records[#records + 1] = rec
    else
      bad = bad + 1
      err(io_, "xsite tune: %s (left out)\n", derr or rerr)
    end
  end
  return records, bad
end

function M.run(opts, _, io_, global)
  local min_users = tonumber(opts["min-users"] or "2")
  if not min_users or min_users < 1 or min_users % 1 ~= 0 then
    err(io_, "xsite tune: --min-users: '%s' is not a whole number of at least 1\n", opts["min-users"])
    return 2
  end
  if not opts.profile or opts.profile == "" then
    err(io_, "xsite tune: --profile: which profile? (a name of xsite.conf, or op=…,b=…,x=…)\n")
    return 2
  end
  local cfg = common.load_config(global.config, io_)
  if not cfg then return 1 end
  local name = opts.profile
  local prof = cfg.profile_by_name[name]
  if not prof and not name:find("=") then
    local _, perr = profile.resolve(name, cfg)
    err(io_, "xsite tune: --profile: %s\n", perr)
    return 2
  end
  if prof and prof.template then
    err(io_, "xsite tune: --profile: %s uses Template=%s: its exchange follows the template's size;"
      .. " xsite tune fits profiles given by Ops, Bytes and Exchange\n", name, prof.template)
    return 2
  end
  local dir = opts["report-dir"] or cfg.policy.report_dir
  local records, bad = read_records(dir, io_)
  -- a placement is taken from Slurm's node lists only: the job's steps
  -- read theirs from an environment its owner can change
  local obs, skipped = fit.observations(records, name, function(rec)
    if not rec.slurm_nodes or next(rec.slurm_nodes) == nil then
      return "no node list of Slurm's beside it (the job runs still, or its first node's epilog wrote none)"
    end
    local slurm, perr = report.slurm_placement(cfg, rec)
    if perr then return perr end
    return slurm and string.format("its steps named other nodes than Slurm gave it (%d + %d)", slurm.split[1],
      slurm.split[2]) or nil
  end)
  local r, ferr = fit.fit(obs)
  if not r then
    err(io_, "xsite tune: profile %s: %s (%d records read in %s, %d of this profile, %d unreadable)\n", name,
      ferr, #records, dir, #obs + #skipped, bad)
    return 1
  end
  local line = fit.line(name, r, prof and prof.iterations)
  if opts.json then
    out(io_, "%s\n", json.encode({ profile = name, jobs = r.jobs, exchange = r.exchange, steps = r.steps,
      users = json.array(r.users), ratio_before = r.ratio or json.null, median_error = r.median_error,
      worst_error = r.worst_error,
      errors = json.array(r.errors), skipped = json.array(skipped), line = line }))
  else
    out(io_, "profile %s: %d job(s) spanned the link with an MPI traffic record (%d records read)\n", name,
      r.jobs, #records)
    for i, o in ipairs(obs) do
      local e = r.errors[i]
      out(io_, "  job %-8s %d+%d nodes, %s in %d messages across: exchange %s, steps %.1f;"
        .. " the fit predicts %s (%+.1f %%)\n", o.job, o.nA, o.nB, report.si(o.bytes, "B"), o.messages,
        report.si(o.bytes / o.f, "B"), o.messages / (2 * o.flows), report.si(e.predicted, "B"), e.error * 100)
    end
    for _, s in ipairs(skipped) do out(io_, "  job %-8s left out: %s\n", s.job, s.why) end
    local uids = {}
    for i, u in ipairs(r.users) do uids[i] = "uid " .. tostring(u) end
    out(io_, "  votes: %d user(s), one each: %s\n", #r.users, table.concat(uids, ", "))
    if r.ratio then
      out(io_, "  before: the jobs moved %s the bytes across that the profile predicted (median)\n",
        report.ratio_text(r.ratio))
    end
    out(io_, "  fit: median error %.1f %%, worst %.1f %% over %d job(s)%s\n", r.median_error * 100,
      r.worst_error * 100, r.jobs, r.jobs == 1 and " (one job: no spread to judge the fit by)" or "")
    out(io_, "  suggested: %s\n", line)
  end
  if opts.apply then
    if not prof then
      err(io_, "xsite tune: --apply: %s is not a profile of %s; add it there first\n", name, cfg.file)
      return 1
    end
    if #r.users < min_users and not (#r.users == 1 and r.users[1] == 0) then
      err(io_, "xsite tune: --apply: the fit rests on the jobs of %d user(s) (uid %s), fewer than --min-users %d;"
        .. " a job's owner writes its traffic record: check their jobs, then give --min-users %d to apply it\n",
        #r.users, table.concat(r.users, ", uid "), min_users, #r.users)
      return 1
    end
    local path = cfg.policy.profile_state_file
    if not path then
      err(io_, "xsite tune: --apply: no ProfileStateFile in %s\n", cfg.file)
      return 1
    end
    local ok, werr = states.set_profile(path, name, fit.per_iteration(r, prof.iterations))
    if not ok then err(io_, "xsite tune: --apply: %s\n", werr) return 1 end
    err(io_, "xsite tune: wrote %s: the policy's next decisions for %s use it\n", path, name)
  end
  return 0
end

return M
