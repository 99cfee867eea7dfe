--- `xsite check`: validate xsite.conf; print every error as file:line.  See xsite(1).
-- @module xsite.cli.check

local common = require("xsite.cli.common")
local config = require("xsite.config")
local json = require("xsite.json")
local units = require("xsite.units")

local out, err = common.out, common.err

local M = {
  summary = "validate xsite.conf; print every error as file:line",
  options = { json = false },
  args = { name = "[FILE]", min = 0, max = 1, extra = "one file at most" },
  usage = [[
Usage: xsite check [FILE] [--json]

Validate a configuration (default: the one --config or the environment names).
Exit 0 when it is valid, 1 with every error as `file:line: Key: message`.

  --json  the result as JSON: file, valid, errors, and for a valid file its
          sites (name, feature, cores a node, nodes), link, profiles, Mode
          and MaxSlowdown
]],
}

-- The link's License= against slurm.conf beside the file (when there is
-- one): a license Slurm does not know would make Slurm refuse every job
-- that spans, so a difference is an error at the link's line.
local function check_license(cfg, path)
  local lic = cfg.link.license
  if not lic then return nil end
  local dir = path:match("^(.*)/[^/]*$") or "."
  local text = config.read_file(dir .. "/slurm.conf")
  if not text then return nil end
  local ok, what = config.license_declared(cfg, config.slurm_licenses(text))
  if ok then return nil end
  return string.format("%s:%d: License: %s:%d, but %s/slurm.conf: %s (add Licenses=%s:%d there)", path,
    cfg.link.line, lic.name, lic.count, dir, what, lic.name, lic.count)
end

function M.run(opts, pos, io_, global)
  local path = pos[1] or global.config or config.locate()
  local cfg, _, errs = config.load(path)
  local lerr = cfg and check_license(cfg, path)
  if lerr then cfg, errs = nil, { lerr } end
  if opts.json then
    local doc = { file = path, valid = cfg ~= nil, errors = json.array(errs or {}) }
    if cfg then
      doc.sites = json.array({})
      for i, s in ipairs(cfg.sites) do
        local nodes = json.array({})
        for j, n in ipairs(s.nodes) do nodes[j] = n end
        doc.sites[i] = { name = s.name, feature = s.feature, cores = s.cores, nodes = nodes }
      end
      doc.link = { bandwidth = cfg.link.bandwidth, latency = cfg.link.latency, channels = cfg.link.channels,
        license = cfg.link.license }
      doc.profiles = json.array({})
      for i, p in ipairs(cfg.profiles) do doc.profiles[i] = p.name end
      doc.mode = cfg.policy.mode
      doc.max_slowdown = cfg.policy.max_slowdown
    end
    out(io_, "%s\n", json.encode(doc))
    return cfg and 0 or 1
  end
  if not cfg then
    for _, e in ipairs(errs) do err(io_, "%s\n", e) end
    return 1
  end
  local n = #cfg.sites[1].nodes + #cfg.sites[2].nodes
  local lic = cfg.link.license
  out(io_, "%s: OK: sites %s (%d nodes) and %s (%d nodes), link %s %s%s, %d profiles\n", path,
    cfg.sites[1].name, #cfg.sites[1].nodes, cfg.sites[2].name, #cfg.sites[2].nodes,
    units.format_bandwidth(cfg.link.bandwidth * cfg.link.channels), units.format_time(cfg.link.latency),
    lic and string.format(" as %d licenses %s", lic.count, lic.name) or "", #cfg.profiles)
  return n > 0 and 0 or 1
end

return M
