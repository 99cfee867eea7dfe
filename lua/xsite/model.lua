--- The performance model: one site, and two sites joined by an extender link.
--
-- After Kredel, Kruse, Richling et al.: a few hardware parameters per site
-- (cores per node q, peak per core l1, memory bandwidth per node b_m, network
-- bandwidth per node b_l and latency), a few application parameters (#op
-- operations, #b bytes of data, #x bytes exchanged between nodes), and a smooth
-- roofline.  The two-site extension adds the share of #x that crosses the link
-- for the job's communication pattern, the link's bandwidth shared by the flows
-- that cross it, and a latency term: synchronising steps times the link's
-- one-way latency, which Kredel's model lacks.  Every formula is in
-- docs/model.md, with worked examples.
--
-- Sites are the tables of xsite.config (`cores`, `core_peak`, `mem_bw`,
-- `net_bw`, `net_latency`); a link is `{ bandwidth, latency, channels }`; an
-- application is `{ ops, bytes, exchange, steps, pattern }` at a node count
-- (see `M.app`).  All times are in seconds.
-- @module xsite.model

local keep = require("xsite.keep")
local units = require("xsite.units")

local M = {}

local floor, ceil, log, max, min = math.floor, math.ceil, math.log, math.max, math.min

local LOG2 = log(2)
local function log2(x) return log(x) / LOG2 end

--- Application templates: problem size n, node count p →
-- ops, bytes, exchange, steps, pattern.  w = 8 bytes (a double), c = 2w (a
-- complex double).  See docs/model.md for where each comes from.
M.templates = {}
local W, C = 8, 16

--- Scalar product of two vectors of length n: one reduction.
function M.templates.scalar(n, p)
  return 2 * n - 1, 2 * n * W, p * W, 1, "tree"
end

--- Dense matrix multiply C = A·B of n×n matrices, Cannon's algorithm on a
-- √p × √p torus: √p shift steps, each moving one block of A and one of B.
function M.templates.matmul(n, p)
  local sp = math.sqrt(p)
  return 2 * n ^ 3 - n ^ 2, 2 * n ^ 2 * W, 2 * n ^ 2 * W * sp, ceil(sp), "halo2d"
end

--- Linpack (LU with partial pivoting) of an n×n matrix: panel broadcasts and
-- row swaps, one synchronising step per panel of 256 columns.
function M.templates.linpack(n, p)
  return (2 / 3) * n ^ 3, 2 * n ^ 2 * W, (1 + log2(p) / 12) * n ^ 2 * W, ceil(n / 256), "tree"
end

--- Two-dimensional FFT of n×n complex values with a transpose across nodes.
function M.templates.fft2d(n, p)
  return 2 * n ^ 2 * log2(n), n ^ 2 * C, n ^ 2 * log2(p) * C, max(1, ceil(log2(p))), "alltoall"
end

--- One sweep of a 7-point stencil on an n³ grid, split into p boxes: each box
-- exchanges its six faces with its neighbours.
function M.templates.stencil(n, p)
  local face = (n ^ 3 / p) ^ (2 / 3)
  return 8 * n ^ 3, 2 * n ^ 3 * W, 6 * face * W * p, 1, "halo3d"
end

--- An all-to-all exchange of n doubles in all (a transpose of distributed data).
function M.templates.alltoall(n, p)
  return n, n * W, n * W * (p - 1) / p, 1, "alltoall"
end

--- The application at p nodes, from a profile (xsite.profile): explicit totals,
-- or a template evaluated at the profile's size.
-- @return { ops, bytes, exchange, steps, pattern }
function M.app(profile, p)
  local it = profile.iterations or 1
  if profile.template then
    local ops, bytes, exchange, steps, pattern = M.templates[profile.template](profile.size, p)
    return { ops = ops * it, bytes = bytes * it, exchange = p > 1 and exchange * it or 0,
      steps = steps * it, pattern = profile.pattern or pattern }
  end
  return { ops = profile.ops * it, bytes = profile.bytes * it, exchange = profile.exchange * it,
    steps = (profile.steps or 0) * it, pattern = profile.pattern or "alltoall" }
end

--- Kredel's bound for one cluster of p nodes, as published:
-- l_cl(q,p) ≤ q·p·l1 · s(x/q) / (1 + (q²·p/β) · s(x/q) / (v·r·x)),
-- with x = a/a_s, a = #op/#b, a_s = l1/b_m, v = b_l/b_m, r = #b/#x, s(z) = z/(1+z).
-- Kredel's #x counts bytes per core; `app.exchange` counts bytes per run, so
-- #x = exchange / q.
-- @param site the site's hardware
-- @param app the application at p nodes
-- @param p nodes
-- @param beta the network scaling factor (1: one shared network; p: one link per node)
-- @return performance in flop/s, and the efficiency η = l_cl / (q·p·l1)
function M.kredel(site, app, p, beta)
  local q, l1 = site.cores, site.core_peak
  local a = app.ops / app.bytes
  local a_s = l1 / site.mem_bw
  local x = a / a_s
  local v = site.net_bw / site.mem_bw
  local s = (x / q) / (1 + x / q)
  local peak = q * p * l1
  local perf
  if app.exchange <= 0 then
    perf = peak * s
  else
    local r = app.bytes / (app.exchange / q)
    perf = peak * s / (1 + (q * q * p / beta) * s / (v * r * x))
  end
  return perf, perf / peak
end

-- Number of latency-bound rounds one synchronising step takes among p nodes
-- of one site.
local function rounds(pattern, p)
  if p <= 1 or pattern == "none" then return 0 end
  if pattern == "tree" or pattern == "alltoall" then return ceil(log2(p)) end
  return 1
end
M.rounds = rounds

local HALO_DIMS = { halo1d = 1, halo2d = 2, halo3d = 3 }

--- The share of the exchanged bytes that crosses the link, and the number of
-- node pairs that talk across it, for nA nodes at one site and nB at the
-- other with site-major ranks.
--
-- Halos: the job's domain is a d-dimensional box cut into p near-cubic
-- boxes of side L = p^(1/d) (the decomposition the templates assume for #x);
-- site-major ranks put the sites on either side of one plane, which cuts
-- L^(d-1) of the d·(p − L^(d-1)) neighbour pairs.  Exact for p = L^d; for
-- 1-D, one of the p − 1 pairs.
-- @return fraction f in [0, 1], flows
function M.crossing(pattern, nA, nB)
  local p = nA + nB
  if nA == 0 or nB == 0 or pattern == "none" then return 0, 0 end
  if pattern == "alltoall" then
    return 2 * nA * nB / (p * (p - 1)), nA * nB
  elseif pattern == "tree" then
    -- a site-aware reduction: each step moves one node's share across
    return 1 / p, min(nA, nB)
  end
  local d = HALO_DIMS[pattern]
  if d == 1 then return 1 / (p - 1), 1 end
  local cut = p ^ ((d - 1) / d)
  local total = d * (p - cut)
  return min(1, cut / total), max(1, floor(cut + 0.5))
end

-- The compute part of the time on p nodes of one site (all that the time
-- across the link takes of each site's).
local function site_compute(site, app, p)
  return app.ops / (p * site.cores * site.core_peak) + app.bytes / (p * site.mem_bw)
end

-- The parts of the time on p nodes of one site: compute, network, latency
-- (numbers, no table: the policy evaluates this for every job).
local function site_parts(site, app, p)
  local compute = site_compute(site, app, p)
  local network = p > 1 and app.exchange / (p * site.net_bw) or 0
  local latency = app.steps * rounds(app.pattern, p) * site.net_latency
  return compute, network, latency
end

--- Time on p nodes of one site.
-- @return total seconds, and { compute, network, latency }
function M.t_site(site, app, p)
  local compute, network, latency = site_parts(site, app, p)
  return compute + network + latency, { compute = compute, network = network, latency = latency }
end

-- The fastest site for the application at n nodes, among those that hold n
-- nodes or, when none does, among all as if they were large enough.
-- @return seconds, the site
local function one_site(cfg, app, n)
  local best, where
  for pass = 1, 2 do
    for _, site in ipairs(cfg.sites) do
      if pass == 2 or #site.nodes >= n then
        local c, nw, l = site_parts(site, app, n)
        local t = c + nw + l
        if not best or t < best then best, where = t, site end
      end
    end
    if best then break end
  end
  return best, where
end

--- The time on n nodes at one site: at the fastest site that holds n nodes,
-- or, when none does, at the fastest site as if it were large enough.
-- @return seconds, parts, the site
function M.t_one(cfg, profile, n)
  local app = M.app(profile, n)
  local best, where = one_site(cfg, app, n)
  local _, parts = M.t_site(where, app, n)
  return best, parts, where
end

-- The parts of the time across the link for the application at nA + nB
-- nodes (numbers, see M.t_span): compute, network, link, latency, crossing
-- bytes, fraction, flows.
local function span_parts(cfg, app, nA, nB, link)
  local A, B = cfg.sites[1], cfg.sites[2]
  local p = nA + nB
  local compute = max(site_compute(A, app, p), site_compute(B, app, p))
  local f, flows = M.crossing(app.pattern, nA, nB)
  local net_bw = min(A.net_bw, B.net_bw)
  local network = (1 - f) * app.exchange / (p * net_bw)
  local crossing = f * app.exchange
  local rate = min(flows, link.channels or 1) * link.bandwidth
  rate = min(rate, min(nA, nB) * net_bw)
  local link_time = flows > 0 and crossing / 2 / rate or 0
  local local_rounds = rounds(app.pattern, max(nA, nB))
  local latency = app.steps * (local_rounds * max(A.net_latency, B.net_latency)
    + (app.pattern == "none" and 0 or link.latency))
  return compute, network, link_time, latency, crossing, f, flows
end

--- The time on nA nodes at the first site and nB at the second, across the link.
-- Compute waits for the slower site; the bytes that stay inside a site move at
-- the slower site's network; the bytes that cross share the link: each flow
-- at most one channel, all flows at most `channels` channels, half of them in
-- each direction of the full-duplex link; each synchronising step crosses
-- the link once.
-- @param link { bandwidth = B/s per channel, latency = s one way, channels }
-- @return seconds, and { compute, network, link, latency, crossing_bytes, fraction, flows }
function M.t_span(cfg, profile, nA, nB, link)
  local A, B = cfg.sites[1], cfg.sites[2]
  if nB == 0 then return M.t_site(A, M.app(profile, nA), nA) end
  if nA == 0 then return M.t_site(B, M.app(profile, nB), nB) end
  local compute, network, link_time, latency, crossing, f, flows =
    span_parts(cfg, M.app(profile, nA + nB), nA, nB, link)
  return compute + network + link_time + latency, {
    compute = compute, network = network, link = link_time, latency = latency,
    crossing_bytes = crossing, fraction = f, flows = flows,
  }
end

--- How n nodes split between the sites: as evenly as the sites allow, the
-- first site taking the odd node.
-- @return nA, nB
function M.split(cfg, n)
  local sa, sb = #cfg.sites[1].nodes, #cfg.sites[2].nodes
  local nA = ceil(n / 2)
  local nB = n - nA
  if n <= sa + sb then
    if nA > sa then nA, nB = sa, n - sa end
    if nB > sb then nA, nB = n - sb, sb end
  end
  return nA, nB
end

--- The most evaluations remembered at once, over all profiles, links and
-- node counts (a full memory keeps no new one, and starts over at most
-- every xsite.keep.RESTART_AFTER seconds, and with a new configuration or
-- link).  Explicit profiles are the users' to invent, so the bound is on
-- the whole, not per profile.
M.EVAL_CACHE_MAX = 1024

-- Evaluations already made, by profile (weak keys: the profiles of an
-- explicit cache that started over go) and node count, all of one
-- configuration and link (`eval_cfg`, `eval_link`: a new configuration or
-- link state brings new profile and link tables, and they start over).
-- The evaluations of a profile the collector took stay counted until the
-- memory starts over: the count errs towards keeping fewer, never more.
local WEAK_KEYS = { __mode = "k" }
local eval_cache, eval_count = setmetatable({}, WEAK_KEYS), keep.new()
local eval_cfg, eval_link

--- `evaluate`, remembered: the policy sees the same few job shapes again and
-- again.  Profiles and links must not change once evaluated (those of
-- xsite.config and xsite.profile never do).  At most `EVAL_CACHE_MAX`
-- evaluations are kept; none of a profile xsite.profile did not keep
-- (`transient`), which is made anew for each job.
function M.evaluate_cached(cfg, profile, n, link)
  if profile.transient then return M.evaluate(cfg, profile, n, link) end
  if cfg ~= eval_cfg or link ~= eval_link then
    eval_cache, eval_cfg, eval_link = setmetatable({}, WEAK_KEYS), cfg, link
    keep.reset(eval_count)
  end
  local by_n = eval_cache[profile]
  local r = by_n and by_n[n]
  if r then return r end
  r = M.evaluate(cfg, profile, n, link)
  local kept = keep.admit(eval_count, M.EVAL_CACHE_MAX)
  if not kept then return r end
  if kept == "restart" then eval_cache, by_n = setmetatable({}, WEAK_KEYS), nil end
  if not by_n then
    by_n = {}
    eval_cache[profile] = by_n
  end
  by_n[n] = r
  return r
end

--- How many evaluations are remembered now (for tests and benchmarks).
function M.evaluations_cached()
  return eval_count.kept
end

--- Everything the policy and the CLI need for n nodes.  slurmctld runs this
-- for every job whose shape or profile it has not seen: it makes two tables.
-- @return { n, nA, nB, t_one, t_span, slowdown, speedup, one_site,
--   link_share }, where speedup is the gain of spanning n nodes over the
--   largest job that fits one site (the node count capped at the larger
--   site), and link_share the part of the link's capacity (each way, all
--   channels) the job uses on average while it spans: its bytes across over
--   t_span (0 when it does not cross).
function M.evaluate(cfg, profile, n, link)
  local nA, nB = M.split(cfg, n)
  local app = M.app(profile, n)
  local t_one, site = one_site(cfg, app, n)
  local t_span, share
  if nA == 0 or nB == 0 then
    local c, nw, l = site_parts(cfg.sites[nA == 0 and 2 or 1], app, n)
    t_span, share = c + nw + l, 0
  else
    local c, nw, lt, l, crossing = span_parts(cfg, app, nA, nB, link)
    t_span = c + nw + lt + l
    -- half the crossing bytes go each way of the full-duplex link
    share = t_span > 0 and crossing / 2 / t_span / ((link.channels or 1) * link.bandwidth) or 0
  end
  local biggest = max(#cfg.sites[1].nodes, #cfg.sites[2].nodes)
  -- (M.t_one's time, without the parts it also makes; an explicit
  -- profile's totals are the same at any node count)
  local t_fit = n <= biggest and t_one or
    one_site(cfg, profile.template and M.app(profile, biggest) or app, biggest)
  return {
    n = n, nA = nA, nB = nB,
    t_one = t_one, t_span = t_span,
    slowdown = t_span / t_one,
    speedup = t_fit / t_span,
    one_site = site.name,
    link_share = share,
    pattern = app.pattern,
  }
end

--- The model's expected error for a job's regime, from a fidelity run
-- (xsite.state.parse_fidelity): the median of |predicted - measured| /
-- measured slowdown over the run's cases of the job's pattern at the
-- run's latency nearest the link's (nearest by ratio); over every pattern's
-- cases at that latency when the run has none of the job's pattern.
-- @param run the fidelity run
-- @param pattern the job's communication pattern (model.app)
-- @param latency the link's one-way latency in seconds
-- @return { error (a fraction), pattern (nil: every pattern), latency (the
--   run's), cases, time }, or nil when the run has no case
function M.expected_error(run, pattern, latency)
  if not run or #run.cases == 0 then return nil end
  local function distance(l) return math.abs(log(l / latency)) end
  local best
  for _, c in ipairs(run.cases) do
    if not best or distance(c.latency) < distance(best) then best = c.latency end
  end
  local errs, any = {}, {}
  for _, c in ipairs(run.cases) do
    if c.latency == best then
      local e = math.abs(c.predicted - c.measured) / c.measured
      any[#any + 1] = e
      if c.pattern == pattern then errs[#errs + 1] = e end
    end
  end
  local same = #errs > 0
  if not same then errs = any end
  table.sort(errs)
  local k = #errs
  local median = k % 2 == 1 and errs[(k + 1) / 2] or (errs[k / 2] + errs[k / 2 + 1]) / 2
  return { error = median, pattern = same and pattern or nil, latency = best, cases = k, time = run.time }
end

--- An expected error (`expected_error`) for people: "about ±8 % (the
-- fidelity run of 2026-11-26 04:40 UTC: 2 tree cases at 5 ms one way)".
-- @param ex the expected error
-- @param pattern the job's pattern, named when the run had no case of it
function M.error_text(ex, pattern)
  return string.format("about \194\177%.0f %% (the fidelity run of %s: %d %scase%s at %s one way%s)",
    ex.error * 100, os.date("!%Y-%m-%d %H:%M UTC", ex.time), ex.cases, ex.pattern and ex.pattern .. " " or "",
    ex.cases == 1 and "" or "s", units.format_time(ex.latency),
    ex.pattern and "" or ", none of pattern " .. tostring(pattern))
end

--- The node count where spanning stops paying: the n (even, 2 ≤ n ≤ nmax)
-- with the shortest time across both sites; past it, more nodes across the
-- link make the job slower.  Also the largest n whose slowdown stays within
-- max_slowdown.
-- @return n_best, t_best, n_within (or nil when even n = 2 is too slow)
function M.scaling_limit(cfg, profile, link, nmax, max_slowdown)
  local n_best, t_best, n_within
  for n = 2, nmax, 2 do
    local t = M.t_span(cfg, profile, n / 2, n / 2, link)
    if not t_best or t < t_best then n_best, t_best = n, t end
    if max_slowdown then
      local one = M.t_one(cfg, profile, n)
      if t / one <= max_slowdown then n_within = n end
    end
  end
  return n_best, t_best, n_within
end

return M
