--- `xsite tune-mpi`: Open MPI settings (MCA) for a job that spans the link.  See xsite(1).
-- @module xsite.cli.tune_mpi

local common = require("xsite.cli.common")
local fs = require("xsite.fs")
local json = require("xsite.json")
local policy = require("xsite.policy")
local states = require("xsite.state")
local tune = require("xsite.tune")
local units = require("xsite.units")

local out, err = common.out, common.err

local M = {
  summary = "Open MPI settings (MCA) for a job that spans the link",
  options = {
    ["link-bandwidth"] = true, ["link-latency"] = true, ["rules-file"] = true, format = true, check = true,
  },
  usage = [[
Usage: xsite tune-mpi [--link-bandwidth B] [--link-latency L] [--rules-file PATH]
                      [--format env|shell|rules|json]
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
                      rules: print the rules file instead, write nothing;
                      json: the link, the rules file and the settings
  --check FILE        read a coll/tuned rules file (one written by hand too):
                      exit 1 naming FILE:LINE where it is wrong, since Open
                      MPI ignores a file it cannot read without a word
]],
}

-- The link xsite.conf (or its link state file) describes, and the slowest
-- node network of the two sites.
local function configured_link(cfg)
  local state
  if cfg.policy.link_state_file then
    local st = states.load_link(cfg.policy.link_state_file)
    if st then state = st end
  end
  local link = policy.effective_link(cfg, state)
  local lbw = math.min(cfg.sites[1].net_bw, cfg.sites[2].net_bw)
  return { bandwidth = link.bandwidth * link.channels, latency = link.latency }, lbw
end

function M.run(opts, _, io_, global)
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
  local format = common.output_format("tune-mpi", opts.format, { "env", "shell", "rules", "json" }, io_)
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
    local cfg = common.load_config(global.config, io_)
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
  local env = tune.env(p, path)
  if format == "json" then
    local settings = {}
    for _, kv in ipairs(env) do settings[kv[1]] = kv[2] end
    out(io_, "%s\n", json.encode({ link = link, rules_file = path, settings = settings }))
    return 0
  end
  out(io_, "%s", (tune.format(env, format)))
  return 0
end

return M
