--- `xsite model`: predicted times and speed-ups over node counts and links.  See xsite(1).
-- @module xsite.cli.model

local common = require("xsite.cli.common")
local json = require("xsite.json")
local model = require("xsite.model")
local profile = require("xsite.profile")
local svg = require("xsite.svg")
local units = require("xsite.units")

local out, err = common.out, common.err

local M = {
  summary = "predicted times and speed-ups over node counts and links",
  options = {
    profile = true, nodes = true, ["link-bandwidth"] = true, ["link-latency"] = true, json = false,
    svg = true,
  },
  usage = [[
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
}

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

function M.run(opts, _, io_, global)
  if not opts.profile then err(io_, "xsite model: --profile is required\n") return 2 end
  local cfg = common.load_config(global.config, io_)
  if not cfg then return 1 end
  local _, measured = common.state_files(cfg, "model", io_)
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

return M
