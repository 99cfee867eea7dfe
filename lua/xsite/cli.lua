--- The `xsite` command: check a configuration, run the model, explain a decision.
-- `M.main(args, io_)` returns the exit status: 0 success, 1 a failed check or
-- a rejected request, 2 a usage error.  See xsite(1).
-- @module xsite.cli

local config = require("xsite.config")
local model = require("xsite.model")
local profile = require("xsite.profile")
local policy = require("xsite.policy")
local units = require("xsite.units")
local json = require("xsite.json")
local svg = require("xsite.svg")
local hostlist = require("xsite.hostlist")
local mapping = require("xsite.mapping")
local tune = require("xsite.tune")
local calibrate = require("xsite.calibrate")
local replay = require("xsite.replay")
local report = require("xsite.report")
local fit = require("xsite.fit")
local fs = require("xsite.fs")

local M = {}

local USAGE = {
  main = [[
Usage: xsite [--config FILE] COMMAND [OPTIONS]

Placement of Slurm jobs on two sites joined by an extender link.

Commands:
  check [FILE]     validate xsite.conf; print every error as file:line
  model            predicted times and speed-ups over node counts and links
  explain          what the placement policy decides for a job, and why
  map              the site-major rank order of an allocation (for xsite-run)
  tune-mpi         Open MPI settings (MCA) for a job that spans the link
  calibrate        measure the link through Slurm and write the link state file
  replay           the policy over past jobs from accounting, under another threshold
  report JOBID     a job's cross-site report: prediction, measurement, verdict
  tune             fit a profile's bytes exchanged and steps to the jobs' reports

Options:
  --config FILE    xsite.conf to use (default: $XSITE_CONF, else xsite.conf
                   next to $SLURM_CONF, else /etc/slurm/xsite.conf)
  -h, --help       this help; `xsite COMMAND --help` for a command
]],
  check = [[
Usage: xsite check [FILE]

Validate a configuration (default: the one --config or the environment names).
Exit 0 when it is valid, 1 with every error as `file:line: Key: message`.
]],
  model = [[
Usage: xsite model --profile P [--nodes LIST] [--link-bandwidth LIST]
                   [--link-latency LIST] [--json] [--svg FILE]

Predict t_one (all nodes at one site), t_span (split across the link), the
slowdown t_span/t_one and the speed-up of spanning over the largest job one
site can hold, for each node count and link.  Then, per link, the node count
where spanning stops paying and the largest node count within MaxSlowdown.

  --profile P            a profile or class name, or op=…,b=…,x=…[,steps=…][,pattern=…]
  --nodes LIST           node counts, e.g. 2,4,8 or 2-64 (default: powers of two
                         up to both sites' nodes)
  --link-bandwidth LIST  e.g. 930MB/s,2.6GB/s,10GB/s (default: the configured link)
  --link-latency LIST    one-way, e.g. 145us,4.5ms (default: the configured link)
  --json                 the table as JSON
  --svg FILE             a chart of speed-up against nodes, one line per link
]],
  explain = [[
Usage: xsite explain --nodes N|MIN-MAX [--site-affinity A] [--comm-profile P]
                     [--constraint F] [--nodelist HOSTLIST]
                     [--time-limit MINUTES] [--json]

What the placement policy would decide for a job of N nodes (a range is
decided on MAX, as sbatch's), and why, with the link state the policy would
use (LinkStateFile, when present).
]],
  replay = [[
Usage: xsite replay [--since DATE] [--max-slowdown X] [--sacct-file FILE]
                    [--json]

Run the placement policy over past jobs from accounting (sacct, with each
job's xsite record from its admin_comment), under the configuration of
--config and, with --max-slowdown, another MaxSlowdown: how many jobs would
have been pinned or allowed to span, which jobs change, the node-hours the
jobs allowed to span lose to their slowdown, and the queue time (in
node-hours) of jobs pinned before that may span now: what spanning might
have saved, at most.  Jobs the users placed themselves are left out.

  --since DATE       jobs that ended since DATE, in sacct's syntax
                     (default: now-7days)
  --max-slowdown X   replay with this MaxSlowdown
  --sacct-file FILE  read sacct's output from FILE instead of running sacct
                     (fields: JobID User State NNodes Elapsed Reserved NodeList
                     AdminComment, tab-separated; Reserved is Planned from
                     Slurm 23.11 on)
  --json             the summary as JSON
]],
  report = [[
Usage: xsite report JOBID [--json] [--svg FILE] [--report-dir DIR]

The cross-site report of a job: where it ran and why (the decision of
job_submit.lua, from accounting, else from slurmctld), what the model
predicted for the nodes it got, what was measured (elapsed time, and the
bytes and messages that crossed the link when libxsite recorded them), and
a verdict in one line.  Records are in ReportDir/JOBID/report.json; a user
can read the records of their own jobs, an administrator all of them.

  --json            the record, the decision, the assessment and the verdict as JSON
  --svg FILE        also write where the time went as an SVG picture
  --report-dir DIR  read the records from DIR (default: ReportDir of xsite.conf)
]],
  tune = [[
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
  calibrate = [[
Usage: xsite calibrate [--nodes A,B] [--pingpong PATH] [--timeout SECONDS]
                       [--min-bandwidth-share X] [--max-latency-factor Y]
                       [--state-file PATH] [--dry-run] [--json]

Measure the link through Slurm: an MPI ping-pong (srun --mpi=pmix) between
one node of each site, 8-byte messages for the one-way latency and 4 MiB
messages for the bandwidth.  The link is "down" when the ping-pong fails or
times out, "degraded" when the bandwidth is below X (default 0.5) of the
configured one or the latency above Y (default 2) times the configured one,
else "up".  Writes the
state, with the measured figures, to the link state file (LinkStateFile of
xsite.conf), which the policy and the SPANK plugin use from then on.

  --nodes A,B        the two nodes (default: the first node of each site)
  --pingpong PATH    the ping-pong program (default: $XSITE_PINGPONG, else
                     the one installed with xsite)
  --timeout SECONDS  give up on one ping-pong after this long (default 60)
  --state-file PATH  write here instead of LinkStateFile
  --dry-run          measure and print; write nothing
  --json             the result as JSON
]],
  map = [[
Usage: xsite map [--nodelist LIST] [--tasks-per-node SPEC] [--comm-graph FILE]
                 [--format hostfile|rankfile|json] [--verbose]

Order an allocation's task slots site by site, for srun's SLURM_HOSTFILE
(--distribution=arbitrary) or Open MPI's rankfile; with --comm-graph, the
traffic matrix a previous run recorded (libxsite's record), choose which
ranks go to which site so that the fewest bytes cross the link.

  --nodelist LIST        the nodes (default: $SLURM_JOB_NODELIST)
  --tasks-per-node SPEC  e.g. 2(x4) (default: $SLURM_TASKS_PER_NODE)
  --comm-graph FILE      a traffic record with a "matrix" of bytes rank to rank
  --format F             hostfile (default), rankfile or json
  --verbose              the map and the bytes across on stderr
]],
  ["tune-mpi"] = [[
Usage: xsite tune-mpi [--link-bandwidth B] [--link-latency L] [--rules-file PATH]
                      [--format env|shell|rules]
       xsite tune-mpi --check FILE

Open MPI (4.1, 5.0) settings for a job that spans the extender link: TCP
socket buffers and btl/tcp's eager limit from the link's bandwidth-delay
product (btl_tcp_sndbuf, rcvbuf, eager_limit) and a coll/tuned dynamic rules
file whose algorithms cross the link once or twice a call for ranks placed
site by site (coll_tuned_use_dynamic_rules, coll_tuned_dynamic_rules_filename;
coll_han_priority=0, so that Open MPI 5 runs coll/tuned and the rules).
Prints one OMPI_MCA_* setting a line.

  --link-bandwidth B  e.g. 1Gb/s (default: the link of xsite.conf, or its
                      measured state in LinkStateFile)
  --link-latency L    one-way, e.g. 1ms (default: as for the bandwidth)
  --rules-file PATH   write the rules file there (default: a new file in /tmp)
  --format F          env (default): NAME=VALUE; shell: export lines;
                      rules: print the rules file instead, write nothing
  --check FILE        read a coll/tuned rules file (one written by hand too):
                      exit 1 naming FILE:LINE where it is wrong, since Open
                      MPI ignores a file it cannot read without a word
]],
}

local function out(io_, ...) io_.stdout:write(string.format(...)) end
local function err(io_, ...) io_.stderr:write(string.format(...)) end

-- Parse options: `spec` maps option names to true (takes a value) or false (a
-- flag).  Positional arguments are returned in `pos`.
-- @return opts, pos; or nil and a message
local function parse_args(args, spec)
  local opts, pos = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-h" or a == "--help" then
      opts.help = true
    elseif a:sub(1, 2) == "--" then
      local name, value = a:match("^%-%-([^=]+)=(.*)$")
      name = name or a:sub(3)
      if spec[name] == nil then return nil, "unknown option --" .. name end
      if spec[name] then
        if value == nil then
          i = i + 1
          value = args[i]
          if value == nil then return nil, "--" .. name .. " needs a value" end
        end
        opts[name] = value
      else
        if value ~= nil then return nil, "--" .. name .. " takes no value" end
        opts[name] = true
      end
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return opts, pos
end

-- Parse a command's options: its --help, bad options and stray arguments
-- end the command here.
-- @return opts, or nil and the exit status
local function command_options(name, args, spec, io_)
  local opts, pos = parse_args(args, spec)
  if not opts then
    err(io_, "xsite %s: %s\n", name, pos)
    return nil, 2
  end
  if opts.help then
    out(io_, "%s", USAGE[name])
    return nil, 0
  end
  if #pos > 0 then
    err(io_, "xsite %s: unexpected argument '%s'\n", name, pos[1])
    return nil, 2
  end
  return opts
end

-- A --format value: the given one, else the first of formats; nil after
-- naming the bad value on stderr.
local function output_format(cmd, value, formats, io_)
  if value == nil then return formats[1] end
  for _, f in ipairs(formats) do
    if value == f then return f end
  end
  err(io_, "xsite %s: --format: '%s' is not %s or %s\n", cmd, value,
    table.concat(formats, ", ", 1, #formats - 1), formats[#formats])
  return nil
end

local function load_config(path, io_)
  path = path or config.locate()
  local cfg, msg = config.load(path)
  if not cfg then
    err(io_, "xsite: %s\n", msg:gsub("\n", "\nxsite: "))
    return nil
  end
  return cfg
end

-- The state files the policy reads besides xsite.conf: the measured link
-- (LinkStateFile) and the measured profiles (ProfileStateFile).  A broken
-- one is named on stderr and left out, as the policy does.
-- @return link state or nil, profile state or nil
local function state_files(cfg, cmd, io_)
  local link, profiles, e
  if cfg.policy.link_state_file then
    link, e = config.load_link_state(cfg.policy.link_state_file)
    if e then err(io_, "xsite %s: %s (using the configured link)\n", cmd, e) end
  end
  if cfg.policy.profile_state_file then
    profiles, e = config.load_profile_state(cfg.policy.profile_state_file)
    if e then err(io_, "xsite %s: %s (using the configured profiles)\n", cmd, e) end
  end
  return link, profiles
end

-- A comma-separated list of quantities, with integer ranges for counts.
local function parse_list(text, kind, flag)
  local outl = {}
  for item in (text .. ","):gmatch("([^,]*),") do
    local a, b = item:match("^(%d+)%-(%d+)$")
    if kind == "count" and a then
      a, b = tonumber(a), tonumber(b)
      if a < 1 or a > b or b - a > 100000 then return nil, string.format("%s: bad range '%s'", flag, item) end
      for n = a, b do outl[#outl + 1] = n end
    else
      local v, e
      if kind == "count" then v, e = units.parse_integer(item) else v, e = units.parse(item, kind) end
      if not v then return nil, flag .. ": " .. e end
      outl[#outl + 1] = v
    end
  end
  return outl
end

function M.check(args, io_, global)
  local opts, pos = parse_args(args, {})
  if not opts then err(io_, "xsite check: %s\n", pos) return 2 end
  if opts.help then out(io_, "%s", USAGE.check) return 0 end
  if #pos > 1 then err(io_, "xsite check: one file at most\n") return 2 end
  local path = pos[1] or global.config or config.locate()
  local cfg, _, errs = config.load(path)
  if not cfg then
    for _, e in ipairs(errs) do err(io_, "%s\n", e) end
    return 1
  end

  local n = #cfg.sites[1].nodes + #cfg.sites[2].nodes
  out(io_, "%s: OK: sites %s (%d nodes) and %s (%d nodes), link %s %s, %d profiles\n", path,
    cfg.sites[1].name, #cfg.sites[1].nodes, cfg.sites[2].name, #cfg.sites[2].nodes,
    units.format_bandwidth(cfg.link.bandwidth * cfg.link.channels), units.format_time(cfg.link.latency),
    #cfg.profiles)
  return n > 0 and 0 or 1
end

function M.model(args, io_, global)
  local opts, code = command_options("model", args, { profile = true, nodes = true, ["link-bandwidth"] = true,
    ["link-latency"] = true, json = false, svg = true }, io_)
  if not opts then return code end
  if not opts.profile then err(io_, "xsite model: --profile is required\n") return 2 end
  local cfg = load_config(global.config, io_)
  if not cfg then return 1 end
  local _, measured = state_files(cfg, "model", io_)
  local prof, perr = profile.resolve(opts.profile, cfg, measured)
  if not prof then err(io_, "xsite model: --profile: %s\n", perr) return 2 end

  local total = #cfg.sites[1].nodes + #cfg.sites[2].nodes
  local nodes, bws, lats, e
  if opts.nodes then
    nodes, e = parse_list(opts.nodes, "count", "--nodes")
    if not nodes then err(io_, "xsite model: %s\n", e) return 2 end
  else
    nodes = {}
    local n = 1
    while n <= total do nodes[#nodes + 1] = n; n = n * 2 end
    if nodes[#nodes] ~= total then nodes[#nodes + 1] = total end
  end
  bws, lats = { cfg.link.bandwidth }, { cfg.link.latency }
  if opts["link-bandwidth"] then
    bws, e = parse_list(opts["link-bandwidth"], "bandwidth", "--link-bandwidth")
    if not bws then err(io_, "xsite model: %s\n", e) return 2 end
  end
  if opts["link-latency"] then
    lats, e = parse_list(opts["link-latency"], "time", "--link-latency")
    if not lats then err(io_, "xsite model: %s\n", e) return 2 end
  end

  -- the scan for where spanning stops paying covers every even node count up
  -- to both sites' nodes, or the largest count asked for
  local scan_max = math.max(total, 2)
  for _, n in ipairs(nodes) do scan_max = math.max(scan_max, n) end
  scan_max = scan_max - scan_max % 2
  local results = json.array({})
  for _, bw in ipairs(bws) do
    for _, lat in ipairs(lats) do
      local link = { bandwidth = bw, latency = lat, channels = cfg.link.channels }
      local rows = json.array({})
      for _, n in ipairs(nodes) do
        local r = model.evaluate(cfg, prof, n, link)
        rows[#rows + 1] = { nodes = n, split = { r.nA, r.nB }, t_one = r.t_one, t_span = r.t_span,
          slowdown = r.slowdown, speedup = r.speedup }
      end
      local best, _, within = model.scaling_limit(cfg, prof, link, scan_max, cfg.policy.max_slowdown)
      results[#results + 1] = { link = { bandwidth = bw, latency = lat, channels = cfg.link.channels },
        rows = rows, stops_paying_at = best < scan_max and best or json.null, scanned_up_to = scan_max,
        within_max_slowdown = within }
    end
  end

  if opts.svg then
    local ok, werr = M.write_chart(opts.svg, cfg, prof, results, nodes)
    if not ok then err(io_, "xsite model: --svg: %s\n", werr) return 1 end
  end
  if opts.json then
    out(io_, "%s\n", json.encode({ profile = profile.label(prof), max_slowdown = cfg.policy.max_slowdown,
      results = results }))
    return 0
  end
  out(io_, "profile %s, MaxSlowdown %.2f\n", profile.label(prof), cfg.policy.max_slowdown)
  for _, res in ipairs(results) do
    out(io_, "\nlink %s x %d, %s one way\n", units.format_bandwidth(res.link.bandwidth), res.link.channels,
      units.format_time(res.link.latency))
    out(io_, "%7s %9s %12s %12s %9s %9s\n", "nodes", "split", "t_one", "t_span", "slowdown", "speed-up")
    for _, r in ipairs(res.rows) do
      out(io_, "%7d %9s %12s %12s %9.3f %9.3f\n", r.nodes, r.split[1] .. "+" .. r.split[2],
        units.format_time(r.t_one), units.format_time(r.t_span), r.slowdown, r.speedup)
    end
    out(io_, "%s; %s\n", res.stops_paying_at ~= json.null
      and string.format("spanning stops paying at %d nodes", res.stops_paying_at)
      or string.format("spanning still pays at %d nodes (the most scanned)", res.scanned_up_to),
      res.within_max_slowdown and string.format("within MaxSlowdown up to %d nodes", res.within_max_slowdown)
      or "over MaxSlowdown at every node count")
  end
  return 0
end

--- Write the speed-up chart of `xsite model --svg`.
function M.write_chart(path, cfg, prof, results, nodes)
  local series = {}
  local base = model.t_one(cfg, prof, 1)
  local ref = {}
  for _, n in ipairs(nodes) do ref[#ref + 1] = { n, base / model.t_one(cfg, prof, n) } end
  series[1] = { label = "one site (no link)", points = ref, dashed = true }
  for _, res in ipairs(results) do
    local pts = {}
    for _, r in ipairs(res.rows) do pts[#pts + 1] = { r.nodes, base / r.t_span } end
    series[#series + 1] = { label = string.format("%s, %s", units.format_bandwidth(res.link.bandwidth *
      res.link.channels), units.format_time(res.link.latency)), points = pts }
  end
  local doc = svg.line_chart({
    title = string.format("Speed-up of profile %s across two sites (%s)", profile.label(prof),
      cfg.file:match("[^/]*$")),
    xlabel = "nodes (split evenly between the sites)",
    ylabel = "speed-up over one node",
    series = series,
  })
  local f, e = io.open(path, "wb")
  if not f then return nil, e end
  f:write(doc)
  f:close()
  return true
end

function M.explain(args, io_, global)
  local opts, code = command_options("explain", args, { nodes = true, ["site-affinity"] = true, ["comm-profile"] = true,
    constraint = true, nodelist = true, ["time-limit"] = true, json = false }, io_)
  if not opts then return code end
  if not opts.nodes then err(io_, "xsite explain: --nodes is required\n") return 2 end
  -- N, or a range MIN-MAX as sbatch takes it (decided on MAX)
  local lo, hi = opts.nodes:match("^([^-]+)%-([^-]+)$")
  local n, e = units.parse_integer(lo or opts.nodes)
  if not n then err(io_, "xsite explain: --nodes: %s\n", e) return 2 end
  local most = n
  if hi then
    most, e = units.parse_integer(hi)
    if not most or most < n then
      err(io_, "xsite explain: --nodes: '%s': %s\n", opts.nodes, e or "the range runs backwards")
      return 2
    end
  end
  local limit
  if opts["time-limit"] then
    limit, e = units.parse_integer(opts["time-limit"])
    if not limit then err(io_, "xsite explain: --time-limit: %s\n", e) return 2 end
    limit = limit * 60
  end
  local cfg = load_config(global.config, io_)
  if not cfg then return 1 end
  local state, measured = state_files(cfg, "explain", io_)
  local d = policy.decide({ cfg = cfg, nodes = n, max_nodes = most, affinity = opts["site-affinity"],
    profile = opts["comm-profile"], features = opts.constraint, req_nodes = opts.nodelist, time_limit = limit,
    topology = true, link_state = state, profile_state = measured })
  if opts.json then
    local p = d.prediction
    out(io_, "%s\n", json.encode({
      action = d.action, why = d.why, message = d.message, record = d.record,
      features = d.features, req_switch = d.req_switch, wait4switch = d.wait4switch,
      prediction = p and { nodes = p.n, split = { p.nA, p.nB }, t_one = p.t_one, t_span = p.t_span,
        slowdown = p.slowdown } or nil,
    }))
  else
    out(io_, "%s\n", policy.describe(d))
    if d.features then out(io_, "  constraint: %s\n", d.features) end
    if d.wait4switch then out(io_, "  --switches=1@%ds (wait for one site at most that long)\n", d.wait4switch) end
  end
  return d.action == "reject" and 1 or 0
end

-- Read the traffic matrix of a libxsite record.
local function read_matrix(path)
  local f, e = io.open(path, "rb")
  if not f then return nil, e end
  local text = f:read("*a")
  f:close()
  local rec, jerr = json.decode(text)
  if not rec then return nil, path .. ": " .. jerr end
  local w = type(rec) == "table" and rec.matrix
  local n, merr = mapping.check_matrix(w)
  if not n then return nil, path .. ": " .. merr end
  return w
end

function M.map(args, io_, global)
  local opts, code = command_options("map", args, { nodelist = true, ["tasks-per-node"] = true, ["comm-graph"] = true,
    format = true, verbose = false }, io_)
  if not opts then return code end
  local format = output_format("map", opts.format, { "hostfile", "rankfile", "json" }, io_)
  if not format then return 2 end
  local list = opts.nodelist or os.getenv("SLURM_JOB_NODELIST") or os.getenv("SLURM_NODELIST")
  if not list then
    err(io_, "xsite map: no --nodelist and no SLURM_JOB_NODELIST: run inside an allocation\n")
    return 2
  end
  local nodes, herr = hostlist.expand(list)
  if not nodes then err(io_, "xsite map: --nodelist: %s\n", herr) return 2 end
  local spec = opts["tasks-per-node"] or os.getenv("SLURM_TASKS_PER_NODE")
  local counts
  if spec then
    local terr
    counts, terr = mapping.tasks_per_node(spec)
    if not counts then err(io_, "xsite map: --tasks-per-node: %s\n", terr) return 2 end
    if #counts ~= #nodes then
      err(io_, "xsite map: --tasks-per-node: %d counts for %d nodes\n", #counts, #nodes)
      return 2
    end
  else
    counts = {}
    for i = 1, #nodes do counts[i] = 1 end
  end
  local cfg = load_config(global.config, io_)
  if not cfg then return 1 end
  local m, merr = mapping.site_major(cfg, nodes, counts)
  if not m then err(io_, "xsite map: %s\n", merr) return 1 end
  local na = m.per_site[cfg.sites[1].name]
  local ranks, cut, start = m.slots, nil, nil
  if opts["comm-graph"] then
    local w, werr = read_matrix(opts["comm-graph"])
    if not w then err(io_, "xsite map: --comm-graph: %s\n", werr) return 1 end
    if #w ~= #m.slots then
      err(io_, "xsite map: --comm-graph: the record has %d ranks, the allocation %d task slots\n", #w, #m.slots)
      return 1
    end
    local side
    side, cut, start = mapping.bisect(w, na)
    ranks = mapping.assign(m.slots, side, na)
  end
  if opts.verbose then
    for r, slot in ipairs(ranks) do err(io_, "xsite: rank %d -> %s (site %s)\n", r - 1, slot.host, slot.site) end
    if cut then
      err(io_, "xsite: predicted bytes across the link: %s (site-major order: %s)\n",
        units.format_bytes(cut), units.format_bytes(start))
    end
  end
  if format == "json" then
    local list_ = json.array({})
    for r, slot in ipairs(ranks) do list_[r] = { rank = r - 1, host = slot.host, site = slot.site } end
    out(io_, "%s\n", json.encode({ ranks = list_, per_site = m.per_site, cross_bytes = cut,
      cross_bytes_site_major = start }))
  else
    for r, slot in ipairs(ranks) do
      if format == "hostfile" then
        out(io_, "%s\n", slot.host)
      else
        local cores = cfg.site_by_name[slot.site].cores
        out(io_, "rank %d=%s slot=%d\n", r - 1, slot.host, slot["local"] % cores)
      end
    end
  end
  return 0
end

--- Defaults the installed command sets (lua/bin/xsite.in).
M.defaults = {}

local function shell_quote(v)
  return "'" .. tostring(v):gsub("'", "'\\''") .. "'"
end

-- Run one ping-pong through srun; return its parsed result or nil, why.
local function run_pingpong(a, b, pingpong, size, iters, timeout)
  -- across the link on purpose: the policy lets root span even a link it
  -- holds down (the environment twin of --site-affinity=span)
  local cmd = string.format("XSITE_SITE_AFFINITY=span srun -N2 -n2 -w %s --mpi=pmix %s -s %d -n %d -w %d -t %d 2>&1",
    shell_quote(a .. "," .. b), shell_quote(pingpong), size, iters, math.ceil(iters / 10), timeout)
  local p = io.popen(cmd)
  if not p then return nil, "cannot run srun" end
  local output = p:read("*a") or ""
  p:close()
  return calibrate.parse_pingpong(output)
end

function M.calibrate(args, io_, global)
  local opts, code = command_options("calibrate", args, { nodes = true, pingpong = true, timeout = true,
    ["state-file"] = true, ["dry-run"] = false, json = false, ["min-bandwidth-share"] = true,
    ["max-latency-factor"] = true }, io_)
  if not opts then return code end
  local timeout = 60
  if opts.timeout then
    local e
    timeout, e = units.parse_integer(opts.timeout)
    if not timeout then err(io_, "xsite calibrate: --timeout: %s\n", e) return 2 end
  end
  local cfg = load_config(global.config, io_)
  if not cfg then return 1 end
  local a, b = cfg.sites[1].nodes[1], cfg.sites[2].nodes[1]
  if opts.nodes then
    a, b = opts.nodes:match("^([^,]+),([^,]+)$")
    local sa, sb = a and cfg.site_of_node[a], b and cfg.site_of_node[b]
    if not sa or not sb or sa == sb then
      err(io_, "xsite calibrate: --nodes: '%s' is not one node of each site, e.g. %s,%s\n", opts.nodes,
        cfg.sites[1].nodes[1], cfg.sites[2].nodes[1])
      return 2
    end
  end
  local path = opts["state-file"] or cfg.policy.link_state_file
  if not path and not opts["dry-run"] then
    err(io_, "xsite calibrate: no LinkStateFile in %s and no --state-file: nowhere to write\n", cfg.file)
    return 2
  end
  local pingpong = opts.pingpong or os.getenv("XSITE_PINGPONG") or M.defaults.pingpong or "xsite-pingpong"

  local thresholds = {}
  local THRESHOLDS = { { "min-bandwidth-share", "degraded_bandwidth" }, { "max-latency-factor", "degraded_latency" } }
  for _, o in ipairs(THRESHOLDS) do
    if opts[o[1]] then
      local v, e = units.parse(opts[o[1]], "number")
      if not v then err(io_, "xsite calibrate: --%s: %s\n", o[1], e) return 2 end
      thresholds[o[2]] = v
    end
  end

  local small, why = run_pingpong(a, b, pingpong, 8, 200, timeout)
  local large
  if small then large, why = run_pingpong(a, b, pingpong, 4 * 1024 * 1024, 10, timeout) end
  local latency = small and large and small.median_us * 1e-6
  local bandwidth = small and large and large.mbps * 1e6
  local state, reason = calibrate.judge(cfg.link, latency, bandwidth, thresholds)
  if state == "down" and why then reason = reason .. ": " .. why end
  local st = { state = state, latency = latency, bandwidth = bandwidth, time = os.time() }

  if opts.json then
    out(io_, "%s\n", json.encode({ nodes = { a, b }, state = state, reason = reason, latency = latency,
      bandwidth = bandwidth, configured = { latency = cfg.link.latency, bandwidth = cfg.link.bandwidth },
      state_file = path, written = not opts["dry-run"] }))
  else
    if latency then
      out(io_, "xsite: link %s-%s: %s one way (configured %s), %s (configured %s): %s, %s\n", a, b,
        units.format_time(latency), units.format_time(cfg.link.latency), units.format_bandwidth(bandwidth),
        units.format_bandwidth(cfg.link.bandwidth), state, reason)
    else
      out(io_, "xsite: link %s-%s: %s: %s\n", a, b, state, reason)
    end
  end
  if opts["dry-run"] then return state == "up" and 0 or 1 end
  local ok, werr = fs.write_atomic(path, calibrate.format_state(st,
    string.format("written by xsite calibrate at %s: ping-pong %s-%s", os.date("!%Y-%m-%dT%H:%M:%SZ", st.time), a, b)))
  if not ok then err(io_, "xsite calibrate: %s\n", werr) return 1 end
  if not opts.json then out(io_, "xsite: wrote %s\n", path) end
  return state == "up" and 0 or 1
end

-- The link xsite.conf (or its link state file) describes, and the slowest
-- node network of the two sites.
local function configured_link(cfg)
  local state
  if cfg.policy.link_state_file then
    local st = config.load_link_state(cfg.policy.link_state_file)
    if st then state = st end
  end
  local link = policy.effective_link(cfg, state)
  local lbw = math.min(cfg.sites[1].net_bw, cfg.sites[2].net_bw)
  return { bandwidth = link.bandwidth * link.channels, latency = link.latency }, lbw
end

M["tune-mpi"] = function(args, io_, global)
  local opts, code = command_options("tune-mpi", args, { ["link-bandwidth"] = true, ["link-latency"] = true,
    ["rules-file"] = true, format = true, check = true }, io_)
  if not opts then return code end
  if opts.check then
    local text, rerr = fs.read_capped(opts.check, fs.STATE_MAX)
    if not text then err(io_, "xsite tune-mpi: --check: %s\n", rerr) return 1 end
    local r, perr = tune.parse_rules(text, opts.check)
    if not r then err(io_, "xsite tune-mpi: %s\n", perr) return 1 end
    local n = 0
    for _ in pairs(r) do n = n + 1 end
    out(io_, "%s: rules for %d collective(s), readable by coll/tuned\n", opts.check, n)
    return 0
  end
  local format = output_format("tune-mpi", opts.format, { "env", "shell", "rules" }, io_)
  if not format then return 2 end
  if opts["rules-file"] == "" then err(io_, "xsite tune-mpi: --rules-file: empty path\n") return 2 end
  local link, lbw = {}, nil
  for _, k in ipairs({ { "link-bandwidth", "bandwidth", "bandwidth" }, { "link-latency", "latency", "time" } }) do
    if opts[k[1]] then
      local v, e = units.parse(opts[k[1]], k[3])
      if not v then err(io_, "xsite tune-mpi: --%s: %s\n", k[1], e) return 2 end
      link[k[2]] = v
    end
  end
  if not (link.bandwidth and link.latency) then
    local cfg = load_config(global.config, io_)
    if not cfg then return 1 end
    local cl
    cl, lbw = configured_link(cfg)
    link.bandwidth = link.bandwidth or cl.bandwidth
    link.latency = link.latency or cl.latency
  end
  local p, perr = tune.plan(link, { local_bandwidth = lbw })
  if not p then err(io_, "xsite tune-mpi: %s\n", perr) return 1 end
  local text = tune.rules_text(p)
  if format == "rules" then out(io_, "%s", text) return 0 end
  local path = opts["rules-file"] or os.tmpname()
  local ok, werr = fs.write_atomic(path, text)
  if not ok then err(io_, "xsite tune-mpi: --rules-file: %s\n", werr) return 1 end
  local wmax, rmax = tune.kernel_caps()
  for _, c in ipairs({ { "wmem_max", wmax, "sndbuf" }, { "rmem_max", rmax, "rcvbuf" } }) do
    if c[2] and c[2] < p[c[3]] then
      err(io_, "xsite tune-mpi: net.core.%s is %d: the kernel caps btl_tcp_%s=%d at it"
        .. " (sysctl -w net.core.%s=%d on the nodes)\n", c[1], c[2], c[3], p[c[3]], c[1], p[c[3]])
    end
  end
  out(io_, "%s", (tune.format(tune.env(p, path), format)))
  return 0
end

function M.replay(args, io_, global)
  local opts, code = command_options("replay", args, { since = true, ["max-slowdown"] = true,
    ["sacct-file"] = true, json = false }, io_)
  if not opts then return code end
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
  local cfg = load_config(global.config, io_)
  if not cfg then return 1 end
  local text
  if opts["sacct-file"] then
    local e
    text, e = config.read_file(opts["sacct-file"])
    if not text then err(io_, "xsite replay: --sacct-file: %s\n", e) return 1 end
  else
    -- the field names of this Slurm (Reserved became Planned in 23.11)
    local hp = io.popen("sacct --helpformat 2>/dev/null")
    local helpformat = hp and hp:read("*a")
    if hp then hp:close() end
    local cmd = string.format("sacct -a -X -n -P --delimiter=%s --state=%s --starttime=%s --endtime=now"
      .. " --format=%s 2>&1", shell_quote(replay.DELIMITER), replay.STATES, shell_quote(since),
      table.concat(replay.sacct_fields(helpformat), ","))
    local p = io.popen(cmd)
    text = p and p:read("*a") or ""
    if p then p:close() end
    -- sacct says why it failed in a line without the field delimiter
    local first = text:match("[^\n]+")
    if not p or (first and not first:find(replay.DELIMITER, 1, true)) then
      err(io_, "xsite replay: sacct failed (is accounting through slurmdbd configured?): %s\n",
        (text:match("[^\n]+") or "no output"))
      return 1
    end
  end
  local jobs, perr = replay.parse_sacct(text)
  if not jobs then err(io_, "xsite replay: %s\n", perr) return 1 end
  local _, measured = state_files(cfg, "replay", io_)
  local s = replay.run(cfg, jobs, { max_slowdown = maxs, profile_state = measured, spans = function(job)
    local seen, n = {}, 0
    for _, name in ipairs(hostlist.expand(job.nodelist) or {}) do
      local site = cfg.site_of_node[name]
      if site and not seen[site] then seen[site], n = true, n + 1 end
    end
    return n > 1
  end })
  if opts.json then
    out(io_, "%s\n", json.encode({ max_slowdown = maxs or cfg.policy.max_slowdown, jobs = s.jobs,
      replayed = s.replayed, skipped = s.skipped, before = s.before, after = s.after,
      changed = json.array(s.changed), node_hours_lost = s.node_hours_lost,
      queue_node_hours = s.queue_node_hours }))
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
  return 0
end

-- What accounting (sacct), else slurmctld (scontrol), says of a job; nil when neither knows it.
local function job_accounting(id)
  local function run(cmd)
    local p = io.popen(cmd .. " 2>/dev/null")
    if not p then return "" end
    local text = p:read("*a") or ""
    p:close()
    return text
  end
  local a = report.parse_accounting(run(string.format("sacct -j %s -X -n -P --delimiter=%s --format=%s", id,
    shell_quote("\t"), table.concat(report.SACCT_FIELDS, ","))), "sacct")
  if a and a.record then return a end
  -- slurmdbd may not have the AdminComment yet; slurmctld keeps an ended
  -- job for MinJobAge
  local b = report.parse_accounting(run("scontrol show job -o " .. id), "scontrol")
  if b and b.record then return b end
  return a or b
end

function M.report(args, io_, global)
  local opts, pos = parse_args(args, { json = false, svg = true, ["report-dir"] = true })
  if not opts then err(io_, "xsite report: %s\n", pos) return 2 end
  if opts.help then out(io_, "%s", USAGE.report) return 0 end
  if #pos ~= 1 then
    err(io_, "xsite report: %s (usage: xsite report JOBID [--json] [--svg FILE])\n",
      #pos == 0 and "which job? give its JOBID" or "one JOBID only")
    return 2
  end
  local id = pos[1]
  if not id:match("^%d+$") then
    err(io_, "xsite report: '%s' is not a job id (digits, as squeue and sacct show it)\n", id)
    return 2
  end
  local cfg = load_config(global.config, io_)
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
  local acct = job_accounting(id)
  local max_slowdown = cfg.policy.max_slowdown
  if opts.svg then
    local f, ferr = io.open(opts.svg, "w")
    if not f then err(io_, "xsite report: --svg: %s\n", ferr) return 1 end
    f:write(report.svg(rec, acct, max_slowdown))
    f:close()
  end
  if opts.json then
    out(io_, "%s\n", report.json(rec, acct, max_slowdown))
  else
    out(io_, "%s", report.text(rec, acct, max_slowdown))
  end
  return 0
end

-- Every readable record under dir; the unreadable and broken ones are named on stderr.
local function read_records(dir, io_)
  local p = io.popen("find " .. shell_quote(dir) .. " -mindepth 2 -maxdepth 2 -name " .. report.FILE
    .. " 2>/dev/null | sort")
  local records, bad = {}, 0
  for path in (p and p:read("*a") or ""):gmatch("[^\n]+") do
    local text, rerr = fs.read_capped(path, report.MAX_RECORD)
    local rec, derr
    if text then rec, derr = report.decode(text, path) end
    if rec then
      records[#records + 1] = rec
    else
      bad = bad + 1
      err(io_, "xsite tune: %s (left out)\n", derr or rerr)
    end
  end
  if p then p:close() end
  return records, bad
end

-- The profile state file with the fitted line of `name` in it.
local function write_profile_state(path, name, line)
  local text, rerr, missing = fs.read_trusted(path)
  local st = {}
  if text then
    local perr
    st, perr = config.parse_profile_state(text, path)
    if not st then return nil, perr .. " (not overwritten)" end
  elseif not missing then
    return nil, rerr
  end
  local lines = { "# written by xsite tune: measured Exchange and Steps of xsite.conf's profiles" }
  local names = {}
  for n in pairs(st) do if n ~= name then names[#names + 1] = n end end
  table.sort(names)
  for _, n in ipairs(names) do
    local e = st[n]
    lines[#lines + 1] = string.format("ProfileName=%s%s%s", n, e.exchange and string.format(" Exchange=%.0f",
      e.exchange) or "", e.steps and string.format(" Steps=%d", e.steps) or "")
  end
  lines[#lines + 1] = line
  return fs.write_atomic(path, table.concat(lines, "\n") .. "\n")
end

M.tune = function(args, io_, global)
  local opts, code = command_options("tune", args, { profile = true, apply = false, json = false,
    ["report-dir"] = true, ["min-users"] = true }, io_)
  if not opts then return code end
  local min_users = tonumber(opts["min-users"] or "2")
  if not min_users or min_users < 1 or min_users % 1 ~= 0 then
    err(io_, "xsite tune: --min-users: '%s' is not a whole number of at least 1\n", opts["min-users"])
    return 2
  end
  if not opts.profile or opts.profile == "" then
    err(io_, "xsite tune: --profile: which profile? (a name of xsite.conf, or op=…,b=…,x=…)\n")
    return 2
  end
  local cfg = load_config(global.config, io_)
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
  local obs, skipped = fit.observations(records, name)
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
    local ok, werr = write_profile_state(path, name, line)
    if not ok then err(io_, "xsite tune: --apply: %s\n", werr) return 1 end
    err(io_, "xsite tune: wrote %s: the policy's next decisions for %s use it\n", path, name)
  end
  return 0
end

--- Run the command line.
-- @param args array of arguments
-- @param io_ optional { stdout, stderr } (default io.stdout, io.stderr)
-- @return exit status
function M.main(args, io_)
  io_ = io_ or { stdout = io.stdout, stderr = io.stderr }
  -- --config FILE may stand before or after the command; take it out first
  local global, rest = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--config" or a:match("^%-%-config=") then
      local v = a:match("^%-%-config=(.*)$")
      if not v then
        i = i + 1
        v = args[i]
      end
      if v == nil or v == "" then err(io_, "xsite: --config needs a file\n") return 2 end
      global.config = v
    else
      rest[#rest + 1] = a
    end
    i = i + 1
  end
  local cmd = table.remove(rest, 1)
  if cmd == "-h" or cmd == "--help" or cmd == "help" then
    out(io_, "%s", USAGE.main)
    return 0
  end
  if cmd == nil then
    err(io_, "%s", USAGE.main)
    return 2
  end
  if cmd:sub(1, 1) == "-" then
    err(io_, "xsite: unknown option %s (try: xsite --help)\n", cmd)
    return 2
  end
  local f = ({ check = M.check, model = M.model, explain = M.explain, map = M.map,
    calibrate = M.calibrate, ["tune-mpi"] = M["tune-mpi"], replay = M.replay, report = M.report,
    tune = M.tune })[cmd]
  if not f then
    err(io_, "xsite: unknown command '%s' (try: xsite --help)\n", cmd)
    return 2
  end
  return f(rest, io_, global)
end

return M
