--- `xsite load`: who holds the link's licenses and the sites' nodes, for the policy.  See xsite(1).
-- @module xsite.cli.load

local common = require("xsite.cli.common")
local fs = require("xsite.fs")
local json = require("xsite.json")
local load = require("xsite.load")
local recheck = require("xsite.recheck")
local shell = require("xsite.shell")
local states = require("xsite.state")
local safe = require("xsite.text")
local units = require("xsite.units")

local out, err = common.out, common.err

local M = {
  summary = "who holds the link's licenses and each site's nodes (LinkLoadFile)",
  options = { write = false, json = false, timeout = true },
  usage = [[
Usage: xsite load [--write] [--json] [--timeout SECONDS]

What holds the link and each site's nodes now, from Slurm (squeue, sinfo
and scontrol): the link's licenses in use (License= on the link line of
xsite.conf) and when the running jobs holding them reach their time limits,
and when each site's nodes come free.  With --write, into LinkLoadFile,
where the policy reads it: a job that could span while the link's licenses
are all held is pinned when one site is predicted to finish it sooner.  A
timer runs `xsite load --write` every few seconds (xsite-load.timer); the
policy leaves out a view older than two minutes.

With --write under Mode=enforce it also decides again the pending jobs
decided under another state of the link (LinkStateFile): when the link is
down, every pending job not kept at one site (one that cannot be is held,
`hold=` in its record); when it is back, the jobs decided while it was
down (a job xsite held is released, one its owner had held goes back to
its owner's hold).

  --write            write LinkLoadFile (else print only)
  --json             the view as JSON
  --timeout SECONDS  give up on each Slurm command after this long
                     (default 20)
]],
}

-- Run a Slurm command (`env`: optional, its environment's additions); its
-- output, or nil and why.
local function slurm(argv, timeout, env)
  local text, ok = shell.run(argv, { timeout = timeout, env = env })
  if not ok then return nil, string.format("%s failed: %s", argv[1], text:match("[^\n]*")) end
  return text
end

-- "22 now, 61 in 4 min, 100 in 5 min": a list of { time, count } added up
-- from `have`, as seen at `now`.
local function summary(list, have, now)
  local words = { string.format("%d now", have) }
  for _, g in ipairs(list) do
    have = have + g[2]
    if g[1] <= now then
      words[1] = string.format("%d now", have)
    else
      words[#words + 1] = string.format("%d in %s", have, units.round_time(g[1] - now))
    end
  end
  return table.concat(words, ", ")
end

--- How long (seconds) one run spends deciding jobs again; the rest wait
-- for the next run.
M.RECHECK_BUDGET = 30

-- A seed for which jobs a run takes when there are more than it may: from
-- /dev/urandom, so that no job owner can foresee the choice from the
-- second the run starts (the time when it cannot be read).  Three bytes:
-- Lua 5.1 takes the seed as a C int.
local function seed(now)
  local f = io.open("/dev/urandom", "rb")
  local bytes = f and f:read(3)
  if f then f:close() end
  if not bytes or #bytes ~= 3 then return now end
  local a, b, c = bytes:byte(1, 3)
  return (a * 256 + b) * 256 + c
end

--- Lines read between two full collections of garbage (see pending_lines;
-- 0: none).
M.GC_LINES = 5000

--- Run one of xsite.recheck's squeue commands and hand each line it prints
-- to `each` (see xsite.shell.each_line), at most recheck.MAX_BYTES and
-- recheck.MAX_LINE a line; nil when squeue failed (said on stderr).  Past
-- MAX_BYTES the lines read are taken, and that is said.  Lua 5.1 keeps
-- every string in one hash table until the collector frees it, and hashes
-- a long string from a sample of its characters: lines alike but for a few
-- characters (a job owner can make many) share a chain that every new line
-- walks.  A full collection every GC_LINES lines keeps those chains short:
-- 90 000 such lines of each run cost Lua 5.1 5.2 s of CPU and 48 MiB of
-- heap instead of 29 s and 103 MiB; Lua 5.2 to 5.4, which keep long
-- strings apart, 0.4 to 2.5 s more, and half the heap
-- (tests/bench/hostile --recheck; collecting more often costs more).
function M.pending_lines(argv, timeout, io_, each)
  local first, n = nil, 0
  local how = shell.each_line(argv, { timeout = timeout, env = recheck.SQUEUE_ENV,
    max_bytes = recheck.MAX_BYTES, max_line = recheck.MAX_LINE }, function(line, cut)
    first, n = first or line, n + 1
    if M.GC_LINES > 0 and n % M.GC_LINES == 0 then collectgarbage("collect") end
    return each(line, cut)
  end)
  if how == "cut" then
    err(io_, "xsite load: squeue printed more than %d MiB of pending jobs: the rest was not read\n",
      math.floor(recheck.MAX_BYTES / 1048576))
  elseif how == "failed" then
    err(io_, "xsite load: squeue failed: %s\n", safe.printable(first or "(no output)"))
    return nil
  end
  return true
end

--- Decide again the pending jobs decided under another state of the link
-- (xsite.recheck); a line on stderr for each.  A link state that cannot be
-- read (slurmctld keeps the last good one) skips it.
-- @return true, or nil when Slurm could not be asked
function M.recheck(cfg, timeout, io_)
  local link, lerr
  if cfg.policy.link_state_file then link, lerr = states.load_link(cfg.policy.link_state_file) end
  if lerr then err(io_, "xsite load: %s (no job decided again)\n", lerr) return true end
  local down = link ~= nil and link.state == "down"
  local v = recheck.view(cfg, down)
  for _, q in ipairs({ { recheck.SQUEUE_JOBS, recheck.job_line }, { recheck.SQUEUE_ASKS, recheck.ask_line } }) do
    if not M.pending_lines(q[1], timeout, io_, function(line, cut) q[2](v, line, cut) end) then return nil end
  end
  local start = os.time()
  math.randomseed(seed(start))
  -- one job asked about on its own: its first line (within the budget)
  local function ask(qid)
    local first, cut
    if os.time() - start > M.RECHECK_BUDGET then return nil end
    M.pending_lines(recheck.squeue_asks(qid), timeout, io_, function(line, c)
      first, cut = line, c
      return true
    end)
    return first, cut
  end
  local jobs, left = recheck.select(v, math.random, ask)
  if left > 0 then
    err(io_, "xsite load: %d job(s) whose lines in squeue disagree (an owner's text with a newline) left for a "
      .. "later run (at most %d asked about a run)\n", left, recheck.MAX_ASKS)
  end
  for _, job in ipairs(jobs) do
    if os.time() - start > M.RECHECK_BUDGET then break end
    local _, rerr
    if not down and job.rec and job.rec.hold == "user" then
      -- back to its owner's hold first (which its owner may release), so
      -- that no failure after it leaves the job in an administrator's
      _, rerr = slurm({ "scontrol", "uhold", job.id }, timeout)
    end
    if not rerr then
      _, rerr = slurm({ "scontrol", "update", "JobId=" .. job.id, "AdminComment=" .. recheck.request(job) },
        timeout)
    end
    if rerr then
      err(io_, "xsite load: job %s: %s\n", job.id, rerr)
    else
      err(io_, "xsite load: job %s decided again (link %s)\n", job.id, down and "down" or "up")
    end
  end
  return true
end

function M.run(opts, _, io_, global)
  local timeout = common.timeout(opts, "load", 20, io_)
  if not timeout then return 2 end
  local cfg = common.load_config(global.config, io_)
  if not cfg then return 1 end
  if opts.write and not cfg.policy.link_load_file then
    err(io_, "xsite load: --write: the configuration sets no LinkLoadFile\n")
    return 1
  end
  local now = os.time()
  local got = {}
  local e
  -- -a: the jobs and nodes of hidden partitions too
  got.squeue, e = slurm({ "squeue", "-a", "-h", "-t", "RUNNING", "-o", load.SQUEUE_FORMAT }, timeout)
  if got.squeue then got.sinfo, e = slurm({ "sinfo", "-a", "-h", "-N", "-o", load.SINFO_FORMAT }, timeout) end
  local lic = cfg.link.license
  if got.sinfo and lic then got.license, e = slurm({ "scontrol", "-o", "show", "license", lic.name }, timeout) end
  if e then err(io_, "xsite load: %s\n", e) return 1 end
  local ld
  ld, e = load.gather(cfg, got, now)
  if not ld then
    err(io_, "xsite load: %s\n", e)
    -- the link's load unknown, the jobs pending are decided again for the
    -- link's state all the same
    if opts.write and cfg.policy.mode == "enforce" then M.recheck(cfg, timeout, io_) end
    return 1
  end
  if opts.write then
    local ok, werr = fs.write_atomic(cfg.policy.link_load_file, states.format_load(ld,
      "written by xsite load: the link's licenses and the sites' nodes, as Slurm had them"))
    if not ok then err(io_, "xsite load: %s\n", werr) return 1 end
    if cfg.policy.mode == "enforce" and not M.recheck(cfg, timeout, io_) then return 1 end
  end
  if opts.json then
    local sites = {}
    for _, s in ipairs(cfg.sites) do
      sites[#sites + 1] = { name = s.name, nodes = #s.nodes, free = ld.sites[s.name] }
    end
    out(io_, "%s\n", json.encode({ time = ld.time, license = ld.license, sites = sites }))
    return 0
  end
  if ld.license then
    local l = ld.license
    out(io_, "link's license %s: %d of %d held; free: %s\n", l.name, l.used, l.total,
      summary(l.ends, l.total - l.used, now))
  end
  for _, s in ipairs(cfg.sites) do
    out(io_, "site %s: %d nodes; free: %s\n", s.name, #s.nodes, summary(ld.sites[s.name], 0, now))
  end
  return 0
end

return M
