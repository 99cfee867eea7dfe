--- `xsite calibrate`: measure the link through Slurm and write the link state file.  See xsite(1).
-- @module xsite.cli.calibrate

local common = require("xsite.cli.common")
local shell = require("xsite.shell")
local calibrate = require("xsite.calibrate")
local json = require("xsite.json")
local states = require("xsite.state")
local units = require("xsite.units")

local out, err = common.out, common.err

local M = {
  summary = "measure the link through Slurm and write the link state file",
  options = {
    nodes = true, pingpong = true, timeout = true, ["state-file"] = true, ["dry-run"] = false, json = false,
    ["min-bandwidth-share"] = true, ["max-latency-factor"] = true,
  },
  usage = [[
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
}

-- Run one ping-pong through srun; return its parsed result or nil, why.
local function run_pingpong(a, b, pingpong, size, iters, timeout)
  -- across the link on purpose: the policy lets root span even a link it
  -- holds down (the environment twin of --site-affinity=span)
  local output = shell.run({ "srun", "-N2", "-n2", "-w", a .. "," .. b, "--mpi=pmix", pingpong,
    "-s", size, "-n", iters, "-w", math.ceil(iters / 10), "-t", timeout }, { env = { XSITE_SITE_AFFINITY = "span" } })
  return calibrate.parse_pingpong(output)
end

function M.run(opts, _, io_, global)
  local timeout = common.timeout(opts, "calibrate", 60, io_)
  if not timeout then return 2 end
  local cfg = common.load_config(global.config, io_)
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
  local pingpong = opts.pingpong or os.getenv("XSITE_PINGPONG") or common.defaults.pingpong or "xsite-pingpong"

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
  local ok, werr = states.write_link(path, st,
    string.format("written by xsite calibrate at %s: ping-pong %s-%s", os.date("!%Y-%m-%dT%H:%M:%SZ", st.time), a, b))
  if not ok then err(io_, "xsite calibrate: %s\n", werr) return 1 end
  if not opts.json then out(io_, "xsite: wrote %s\n", path) end
  return state == "up" and 0 or 1
end

return M
