--- `xsite explain`: what the placement policy decides for a job, and why.  See xsite(1).
-- @module xsite.cli.explain

local common = require("xsite.cli.common")
local json = require("xsite.json")
local model = require("xsite.model")
local policy = require("xsite.policy")
local submit = require("xsite.submit")
local units = require("xsite.units")

local out, err = common.out, common.err

local M = {
  summary = "what the placement policy decides for a job, and why",
  options = {
    nodes = true, ["site-affinity"] = true, ["comm-profile"] = true, constraint = true, prefer = true,
    nodelist = true, ["time-limit"] = true, json = false,
  },
  usage = [[
Usage: xsite explain --nodes N|MIN-MAX [--site-affinity A] [--comm-profile P]
                     [--constraint F] [--prefer F] [--nodelist HOSTLIST]
                     [--time-limit MINUTES] [--json]

What the placement policy would decide for a job of N nodes (a range is
decided on MAX, as sbatch's), and why, with the link state and the link's
load the policy would use (LinkStateFile and LinkLoadFile, when present),
and the prediction's expected error for the job's pattern and link latency
from the latest fidelity run (FidelityFile, when present).
]],
}

function M.run(opts, _, io_, global)
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
  local cfg = common.load_config(global.config, io_)
  if not cfg then return 1 end
  local state, measured, ld = common.state_files(cfg, "explain", io_)
  -- a --nodelist longer than N: the nodes to choose from where the Slurm
  -- xsite was built for reads it so
  local chooses = submit.nodelist_chooses(common.defaults.slurm_version or "")
  local d = policy.decide({ cfg = cfg, nodes = n, max_nodes = most, affinity = opts["site-affinity"],
    profile = opts["comm-profile"], features = opts.constraint, prefer = opts.prefer, req_nodes = opts.nodelist,
    nodelist_min = chooses and n or nil, time_limit = limit, topology = true, link_state = state,
    profile_state = measured, link_load = ld, now = os.time() })
  local p = d.prediction
  local ex = p and model.expected_error(common.fidelity(cfg, "explain", io_), p.pattern, d.link.latency)
  if opts.json then
    out(io_, "%s\n", json.encode({
      action = d.action, why = d.why, message = d.message, record = d.record,
      features = d.features, prefer = d.prefer, req_switch = d.req_switch, wait4switch = d.wait4switch,
      licenses = d.licenses, link_wait = d.link_wait, site_wait = d.site_wait,
      prediction = p and { nodes = p.n, split = { p.nA, p.nB }, t_one = p.t_one, t_span = p.t_span,
        slowdown = p.slowdown, link_share = p.link_share, pattern = p.pattern } or nil,
      expected_error = ex,
    }))
  else
    out(io_, "%s\n", policy.describe(d))
    if p then
      out(io_, "  expected error: %s\n", ex and model.error_text(ex, p.pattern) or
        (cfg.policy.fidelity_file and "unknown (no fidelity run in " .. cfg.policy.fidelity_file .. ")" or
          "unknown (no FidelityFile)"))
    end
    if d.features then out(io_, "  constraint: %s\n", d.features) end
    if d.prefer then out(io_, "  prefer: %s\n", d.prefer) end
    if d.wait4switch then out(io_, "  --switches=1@%ds (wait for one site at most that long)\n", d.wait4switch) end
    if d.licenses then
      out(io_, "  --licenses=%s (%.1f %% of the link each way, on average)\n", d.licenses,
        100 * d.prediction.link_share)
    end
  end
  return d.action == "reject" and 1 or 0
end

return M
