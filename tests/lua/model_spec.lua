local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local model = require("xsite.model")
local config = require("xsite.config")

-- One core of 1 Gflop/s, 1 GB/s of memory and network, 1 us.
local SITE = { cores = 1, core_peak = 1e9, mem_bw = 1e9, net_bw = 1e9, net_latency = 1e-6, nodes = {} }
local LINK = { bandwidth = 100e6, latency = 1e-3, channels = 1 }

local function app(t)
  return { ops = t.ops or 1e9, bytes = t.bytes or 1e9, exchange = t.exchange or 1e9,
    steps = t.steps or 10, pattern = t.pattern or "halo1d" }
end

local function close(a, b, rel)
  rel = rel or 1e-9
  return math.abs(a - b) <= rel * math.max(math.abs(a), math.abs(b), 1e-300)
end

describe("xsite.model one site", function()
  it("adds compute (smooth roofline), network and latency times", function()
    local t, parts = model.t_site(SITE, app({}), 2)
    -- compute: 1e9 flop / (2 nodes * 1 Gflop/s) + 1e9 B / (2 * 1 GB/s) = 1 s
    assert.is_true(close(parts.compute, 1.0))
    -- network: 1e9 B / (2 nodes * 1 GB/s) = 0.5 s
    assert.is_true(close(parts.network, 0.5))
    -- latency: 10 steps * 1 round (halo) * 1 us
    assert.is_true(close(parts.latency, 1e-5))
    assert.is_true(close(t, 1.50001))
  end)

  it("has no network time on one node", function()
    local _, parts = model.t_site(SITE, app({}), 1)
    assert.are.equal(0, parts.network)
    assert.are.equal(0, parts.latency)
  end)

  it("counts log2(p) latency rounds for tree and all-to-all steps", function()
    assert.are.equal(3, model.rounds("tree", 8))
    assert.are.equal(4, model.rounds("alltoall", 9))
    assert.are.equal(1, model.rounds("halo3d", 64))
    assert.are.equal(0, model.rounds("none", 64))
  end)

  it("agrees with Kredel's published bound when latency is left out", function()
    for _, p in ipairs({ 2, 7, 64 }) do
      local a = app({ ops = 3e12, bytes = 5e10, exchange = 2e10, steps = 0 })
      local s = { cores = 8, core_peak = 11.3e9, mem_bw = 8e9, net_bw = 1.5e9, net_latency = 0 }
      local t = model.t_site(s, a, p)
      local perf, eff = model.kredel(s, a, p, p)
      assert.is_true(close(perf, a.ops / t, 1e-12), "p=" .. p)
      assert.is_true(close(eff, perf / (8 * p * 11.3e9), 1e-12))
    end
  end)

  it("gives a single shared network (beta = 1) p times less network bandwidth", function()
    local s = { cores = 4, core_peak = 1e9, mem_bw = 4e9, net_bw = 1e9, net_latency = 0 }
    local a = app({ ops = 4e9, bytes = 1e9, exchange = 4e9, steps = 0 })
    local fast = model.kredel(s, a, 4, 4)
    local slow = model.kredel(s, a, 4, 1)
    -- compute 4e9/(16e9) + 1e9/16e9 = 0.3125 s; network 1 s (beta = p) or 4 s (beta = 1)
    assert.is_true(close(fast, 4e9 / 1.3125, 1e-12))
    assert.is_true(close(slow, 4e9 / 4.3125, 1e-12))
  end)
end)

describe("xsite.model crossing traffic", function()
  it("sends 2·nA·nB/(p(p-1)) of all-to-all traffic across", function()
    local f, flows = model.crossing("alltoall", 2, 2)
    assert.is_true(close(f, 8 / 12))
    assert.are.equal(4, flows)
  end)

  it("crosses one of the p-1 edges of a 1-D halo", function()
    local f, flows = model.crossing("halo1d", 5, 3)
    assert.is_true(close(f, 1 / 7))
    assert.are.equal(1, flows)
  end)

  it("cuts a 4x4 grid in half with 4 of its 24 edges", function()
    local f, flows = model.crossing("halo2d", 8, 8)
    assert.is_true(close(f, 4 / 24))
    assert.are.equal(4, flows)
  end)

  it("cuts a 2x2x2 grid in half with 4 of its 12 edges", function()
    local f, flows = model.crossing("halo3d", 4, 4)
    assert.is_true(close(f, 4 / 12))
    assert.are.equal(4, flows)
  end)

  it("cuts a 4x4x4 grid with 16 of its 144 edges, wherever the sites split it", function()
    assert.is_true(close(model.crossing("halo3d", 32, 32), 16 / 144))
    assert.is_true(close(model.crossing("halo3d", 48, 16), 16 / 144))
  end)

  it("sends a smaller share across as halo jobs grow, never more than all", function()
    for _, pattern in ipairs({ "halo1d", "halo2d", "halo3d" }) do
      local last = 1
      for p = 2, 300 do
        local f = model.crossing(pattern, p - math.floor(p / 2), math.floor(p / 2))
        assert.is_true(f <= last and f > 0, pattern .. " p=" .. p)
        last = f
      end
    end
  end)

  it("moves one node's share of a site-aware reduction across", function()
    local f, flows = model.crossing("tree", 6, 2)
    assert.is_true(close(f, 1 / 8))
    assert.are.equal(2, flows)
  end)

  it("crosses nothing for embarrassingly parallel jobs or one site", function()
    assert.are.equal(0, (model.crossing("none", 4, 4)))
    assert.are.equal(0, (model.crossing("alltoall", 4, 0)))
  end)
end)

describe("xsite.model two sites", function()
  local cfg = h.two_sites(4, 4)

  it("adds the link's share and one link latency per step", function()
    local prof = { ops = 1e9, bytes = 1e9, exchange = 1e9, steps = 10, pattern = "halo1d" }
    local t, parts = model.t_span(cfg, prof, 1, 1, LINK)
    -- p = 2, halo1d: everything crosses (f = 1), half each way at 100 MB/s
    assert.is_true(close(parts.fraction, 1))
    assert.is_true(close(parts.link, 0.5e9 / 100e6))
    assert.is_true(close(parts.network, 0))
    -- latency: 10 steps * 1 ms (one node a site: no local round)
    assert.is_true(close(parts.latency, 10 * 1e-3))
    assert.is_true(close(t, 1 + 5 + 10 * 1e-3))
    -- two nodes a site add one local round of 1 us a step
    local _, p4 = model.t_span(cfg, prof, 2, 2, LINK)
    assert.is_true(close(p4.latency, 10 * (1e-6 + 1e-3)))
  end)

  it("gives the share of the link a spanning job uses: its bytes each way over its time", function()
    local prof = { ops = 1e9, bytes = 1e9, exchange = 1e9, steps = 10, pattern = "halo1d" }
    local e = model.evaluate(cfg, prof, 2, LINK)
    local t = model.t_span(cfg, prof, 1, 1, LINK)
    -- 1e9 bytes cross, half each way, over t_span, of 100 MB/s
    assert.is_true(close(e.link_share, 0.5e9 / t / 100e6))
    assert.is_true(e.link_share > 0 and e.link_share < 1)
    -- nothing crosses: no share
    prof.pattern = "none"
    assert.are.equal(0, model.evaluate(cfg, prof, 2, LINK).link_share)
  end)

  it("shares the link among crossing flows up to its channels", function()
    local cfg4 = h.config(table.concat({
      "SiteName=a Nodes=a[1-4] CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us",
      "SiteName=b Nodes=b[1-4] CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us",
      "LinkName=l Bandwidth=100MB/s Latency=1ms Channels=4",
    }, "\n"))
    local prof = { ops = 1e9, bytes = 1e9, exchange = 1e9, steps = 0, pattern = "alltoall" }
    local _, one = model.t_span(cfg, prof, 2, 2, LINK)
    local _, four = model.t_span(cfg4, prof, 2, 2, { bandwidth = 100e6, latency = 1e-3, channels = 4 })
    -- 4 flows: one channel carries them all, or four channels one each
    assert.is_true(close(one.link, 4 * four.link))
  end)

  it("never makes an embarrassingly parallel job slower across equal sites", function()
    local prof = { ops = 1e12, bytes = 1e9, exchange = 0, steps = 0, pattern = "none" }
    local r = model.evaluate(cfg, prof, 8, LINK)
    assert.is_true(close(r.slowdown, 1))
  end)

  it("grows the slowdown with latency and shrinks it with bandwidth", function()
    local prof = { ops = 1e10, bytes = 1e9, exchange = 1e10, steps = 1000, pattern = "halo3d" }
    local base = model.evaluate(cfg, prof, 8, LINK).slowdown
    local far = model.evaluate(cfg, prof, 8, { bandwidth = 100e6, latency = 9e-3, channels = 1 }).slowdown
    local wide = model.evaluate(cfg, prof, 8, { bandwidth = 1e9, latency = 1e-3, channels = 1 }).slowdown
    assert.is_true(far > base and base > wide and wide > 1)
  end)

  it("waits for the slower site's compute", function()
    local het = h.config(table.concat({
      "SiteName=fast Nodes=f[1-2] CoresPerNode=2 CorePeak=1GF MemBandwidth=100GB/s NetBandwidth=1GB/s NetLatency=1us",
      "SiteName=slow Nodes=s[1-2] CoresPerNode=1 CorePeak=1GF MemBandwidth=100GB/s NetBandwidth=1GB/s NetLatency=1us",
      "LinkName=l Bandwidth=1GB/s Latency=1us",
    }, "\n"))
    local prof = { ops = 4e9, bytes = 1, exchange = 0, steps = 0, pattern = "none" }
    local _, parts = model.t_span(het, prof, 2, 2, LINK)
    -- 1e9 flop per node: 0.5 s at the fast site, 1 s at the slow one
    assert.is_true(close(parts.compute, 1 + 1 / 4 / 100e9, 1e-9))
    local t_one, _, site = model.t_one(het, prof, 2)
    assert.are.equal("fast", site.name)
    assert.is_true(close(t_one, 1 + 1 / 2 / 100e9, 1e-9))
  end)

  it("splits nodes evenly, within what each site has", function()
    assert.are.same({ 2, 1 }, { model.split(cfg, 3) })
    local icm = assert(config.load(h.root .. "/site-configs/icm-task.conf"))
    assert.are.same({ 8, 4 }, { model.split(icm, 12) })
    assert.are.same({ 2, 2 }, { model.split(icm, 4) })
  end)

  it("finds where spanning stops paying when the link traffic grows with nodes", function()
    local big = h.two_sites(64, 64)
    -- a 2-D FFT exchanges n^2 log2(p) complex values: more nodes, more link traffic
    local prof = { template = "fft2d", size = 8192 }
    local link = { bandwidth = 2e9, latency = 1e-4, channels = 1 }
    local best, t_best = model.scaling_limit(big, prof, link, 128)
    assert.is_true(best > 2 and best < 128)
    for n = 2, 128, 2 do
      assert.is_true(t_best <= model.t_span(big, prof, n / 2, n / 2, link), "n=" .. n)
    end
    assert.is_true(t_best < model.t_span(big, prof, 64, 64, link))
    local light = { ops = 1e12, bytes = 1e6, exchange = 1e6, steps = 1, pattern = "tree" }
    assert.are.equal(8, (model.scaling_limit(cfg, light, LINK, 8)))
  end)
end)

describe("xsite.model remembered evaluations", function()
  local cfg = h.two_sites(4, 4)

  it("gives what evaluate gives, and keeps at most EVAL_CACHE_MAX over every profile", function()
    local prof = app({})
    local a = model.evaluate_cached(cfg, prof, 6, LINK)
    assert.are.same(model.evaluate(cfg, prof, 6, LINK), a)
    assert.are.equal(a, model.evaluate_cached(cfg, prof, 6, LINK))
    -- what a user can send: a new explicit profile for every job, each at
    -- many node counts; the memory stays within the bound
    local most = 0
    for i = 1, 300 do
      local p = app({ exchange = i * 1e6 })
      for n = 1, 40 do
        model.evaluate_cached(cfg, p, n, LINK)
        most = math.max(most, model.evaluations_cached())
      end
    end
    assert.are.equal(model.EVAL_CACHE_MAX, most)
    assert.is_true(model.evaluations_cached() <= model.EVAL_CACHE_MAX)
  end)

  it("keeps no new evaluation when full, none of a transient profile, and starts over with a new link", function()
    local keep = require("xsite.keep")
    local max, after = model.EVAL_CACHE_MAX, keep.RESTART_AFTER
    finally(function() model.EVAL_CACHE_MAX, keep.RESTART_AFTER = max, after end)
    local link = { bandwidth = LINK.bandwidth, latency = LINK.latency, channels = LINK.channels, state = "up" }
    local prof = app({ exchange = 7e6 })
    local first = model.evaluate_cached(cfg, prof, 2, link)
    assert.are.equal(1, model.evaluations_cached())
    model.EVAL_CACHE_MAX = 2
    model.evaluate_cached(cfg, prof, 3, link)
    local full = model.evaluate_cached(cfg, prof, 4, link)
    assert.are.equal(2, model.evaluations_cached())
    assert.are.same(model.evaluate(cfg, prof, 4, link), full)
    assert.are_not.equal(full, model.evaluate_cached(cfg, prof, 4, link))
    assert.are.equal(first, model.evaluate_cached(cfg, prof, 2, link))
    local transient = app({ exchange = 8e6 })
    transient.transient = true
    keep.RESTART_AFTER = 0
    assert.are.same(model.evaluate(cfg, transient, 2, link), model.evaluate_cached(cfg, transient, 2, link))
    assert.are.equal(2, model.evaluations_cached())
    -- a new link: the old evaluations go
    model.EVAL_CACHE_MAX = max
    local other = { bandwidth = LINK.bandwidth / 2, latency = LINK.latency, channels = LINK.channels, state = "up" }
    local slow = model.evaluate_cached(cfg, prof, 2, other)
    assert.are.equal(1, model.evaluations_cached())
    assert.are.equal(slow, model.evaluate_cached(cfg, prof, 2, other))
    assert.are_not.equal(first, model.evaluate_cached(cfg, prof, 2, link))
  end)
end)

describe("xsite.model templates", function()
  it("counts a scalar product as 2n-1 flop over 2n doubles and one reduction", function()
    local ops, bytes, x, steps, pattern = model.templates.scalar(1e6, 4)
    assert.are.same({ 2e6 - 1, 16e6, 32, 1, "tree" }, { ops, bytes, x, steps, pattern })
  end)

  it("counts Linpack as 2/3 n^3 flop and (1 + log2 p / 12) n^2 w exchanged", function()
    local ops, bytes, x, steps = model.templates.linpack(1024, 16)
    assert.is_true(close(ops, 2 / 3 * 1024 ^ 3))
    assert.are.equal(2 * 1024 ^ 2 * 8, bytes)
    assert.is_true(close(x, (1 + 4 / 12) * 1024 ^ 2 * 8))
    assert.are.equal(4, steps)
  end)

  it("counts a 2-D FFT as 2 n^2 log2 n flop over n^2 complex values", function()
    local ops, bytes, x = model.templates.fft2d(1024, 4)
    assert.are.equal(2 * 1024 ^ 2 * 10, ops)
    assert.are.equal(1024 ^ 2 * 16, bytes)
    assert.are.equal(1024 ^ 2 * 2 * 16, x)
  end)

  it("counts a matrix multiply as 2n^3 - n^2 flop", function()
    local ops, bytes = model.templates.matmul(100, 4)
    assert.are.equal(2e6 - 1e4, ops)
    assert.are.equal(2 * 1e4 * 8, bytes)
  end)

  it("scales a template profile by its iterations and has no exchange on one node", function()
    local a = model.app({ template = "stencil", size = 64, iterations = 10 }, 8)
    assert.is_true(close(a.ops, 10 * 8 * 64 ^ 3))
    assert.are.equal(10, a.steps)
    assert.are.equal("halo3d", a.pattern)
    assert.are.equal(0, model.app({ template = "stencil", size = 64 }, 1).exchange)
  end)
end)

describe("xsite.model.expected_error", function()
  local near = h.near
  local function case(name, pattern, latency, predicted, measured)
    return { name = name, pattern = pattern, latency = latency, predicted = predicted, measured = measured }
  end
  local run = { time = 1795000000, cases = {
    case("tree-8B", "tree", 0.005, 6.3, 6.0),      -- +5 %
    case("tree-16K", "tree", 0.005, 3.0, 4.0),     -- -25 %
    case("tree-1K", "tree", 0.005, 1.1, 1.0),      -- +10 %
    case("a2a-1M", "alltoall", 0.005, 2.0, 2.5),   -- -20 %
    case("tree-8B", "tree", 0.001, 2.0, 2.0),      -- 0 %
    case("halo", "halo1d", 0.0001, 1.0, 1.1),
  } }

  it("takes the median |error| of the job's pattern at the run's latency nearest the link's", function()
    local ex = assert(model.expected_error(run, "tree", 0.004))
    near(0.10, ex.error, "median of 5, 25 and 10 %")
    assert.are.equal("tree", ex.pattern)
    assert.are.equal(0.005, ex.latency)
    assert.are.equal(3, ex.cases)
    assert.are.equal(1795000000, ex.time)
    -- nearer 1 ms than 5 ms by ratio (2.2 ms: 2.2x above 1 ms, 2.3x below 5 ms)
    ex = assert(model.expected_error(run, "tree", 0.0022))
    assert.are.equal(0.001, ex.latency)
    near(0, ex.error, "one case")
  end)

  it("takes every pattern's cases at that latency when the run has none of the job's, and says so", function()
    local ex = assert(model.expected_error(run, "halo3d", 0.006))
    assert.is_nil(ex.pattern)
    local keys = {}
    for k in pairs(ex) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.are.same({ "cases", "error", "latency", "time" }, keys)
    assert.are.equal(4, ex.cases)
    near((0.10 + 0.20) / 2, ex.error, "median of 5, 10, 20 and 25 %")
    assert.matches("^about \194\17715 %% %(the fidelity run of 2026%-11%-18 %d%d:%d%d UTC: 4 cases at 5 ms one way, "
      .. "none of pattern halo3d%)$", model.error_text(ex, "halo3d"))
  end)

  it("is nil without a run or without cases", function()
    assert.is_nil(model.expected_error(nil, "tree", 0.005))
    assert.is_nil(model.expected_error({ time = 1, cases = {} }, "tree", 0.005))
  end)

  it("says the pattern and the count of the cases it rests on", function()
    local ex = assert(model.expected_error(run, "halo1d", 0.0001))
    assert.matches("^about \194\1779 %% %(the fidelity run of [^:]+:%d%d UTC: 1 halo1d case at 100 us one way%)$",
      model.error_text(ex, "halo1d"))
  end)
end)
