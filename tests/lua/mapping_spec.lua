local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local mapping = require("xsite.mapping")
local json = require("xsite.json")

local function zeros(n)
  local w = {}
  for i = 1, n do
    w[i] = {}
    for j = 1, n do w[i][j] = 0 end
  end
  return w
end

-- The smallest cut of a balanced bisection, by trying every one.
local function brute_force(w, na)
  local n, best = #w, math.huge
  local side = {}
  local function rec(i, left)
    if i > n then
      if left == 0 then best = math.min(best, mapping.cut_bytes(w, side)) end
      return
    end
    if left > 0 then side[i] = 1; rec(i + 1, left - 1) end
    if n - i >= left then side[i] = 2; rec(i + 1, left) end
  end
  rec(1, na)
  return best
end

describe("xsite.mapping", function()
  it("expands SLURM_TASKS_PER_NODE", function()
    assert.are.same({ 2, 2, 2, 1 }, mapping.tasks_per_node("2(x3),1"))
    assert.are.same({ 4 }, mapping.tasks_per_node("4"))
    local r, err = mapping.tasks_per_node("2(x3")
    assert.is_nil(r)
    assert.matches("'2%(x3' is not a task count", err)
  end)

  it("orders slots site by site, Slurm's order inside a site", function()
    local cfg = h.two_sites(2, 2)
    local m = assert(mapping.site_major(cfg, { "b1", "a1", "b2", "a2" }, { 2, 1, 1, 2 }))
    local hosts = {}
    for i, s in ipairs(m.slots) do hosts[i] = s.host .. ":" .. s["local"] end
    assert.are.same({ "a1:0", "a2:0", "a2:1", "b1:0", "b1:1", "b2:0" }, hosts)
    assert.are.same({ a = 3, b = 3 }, m.per_site)
  end)

  it("refuses a node that is in no site, naming it", function()
    local m, err = mapping.site_major(h.two_sites(2, 2), { "a1", "zz9" }, { 1, 1 })
    assert.is_nil(m)
    assert.matches("node 'zz9' is in no site", err)
  end)

  it("finds the planted partition of two interleaved groups", function()
    -- ranks 1,3,5,7 talk only among themselves, and so do 2,4,6,8: the
    -- site-major order cuts half of all traffic, the best order none
    local w = zeros(8)
    for i = 1, 8 do
      for j = 1, 8 do
        if i ~= j and i % 2 == j % 2 then w[i][j] = 1000 end
      end
    end
    local side, cut, start = mapping.bisect_graph(mapping.graph(w), 4)
    assert.are.equal(0, cut)
    assert.is_true(start > 0)
    assert.are.equal(side[1], side[3])
    assert.are.equal(side[2], side[8])
  end)

  it("never does worse than site-major and stays near the optimum on random graphs", function()
    local rand = h.random(7)
    local worse = 0
    for _ = 1, 40 do
      local n = 4 + rand(7)
      local na = math.floor(n / 2) + rand(2) * (n % 2)
      local w = zeros(n)
      for i = 1, n do
        for j = 1, n do
          if i ~= j and rand(3) == 0 then w[i][j] = rand(100) end
        end
      end
      local side, cut, start = mapping.bisect_graph(mapping.graph(w), na)
      local count = 0
      for i = 1, n do if side[i] == 1 then count = count + 1 end end
      assert.are.equal(na, count)
      assert.is_true(cut <= start)
      assert.are.equal(cut, mapping.cut_bytes(w, side))
      local best = brute_force(w, na)
      assert.is_true(cut >= best)
      if cut > best * 1.25 then worse = worse + 1 end
    end
    -- Kernighan-Lin is a heuristic: allow a few cases more than 25 % off
    assert.is_true(worse <= 4, worse .. " of 40 graphs more than 25 % above the optimum")
  end)

  it("gives each site's ranks that site's slots in rank order", function()
    local slots = { { host = "a1" }, { host = "a2" }, { host = "b1" }, { host = "b2" } }
    local out = mapping.assign(slots, { 2, 1, 2, 1 }, 2)
    assert.are.same({ "b1", "a1", "b2", "a2" }, { out[1].host, out[2].host, out[3].host, out[4].host })
  end)

  it("counts the same bytes across on its graph as on the matrix", function()
    local rand = h.random(11)
    for _ = 1, 20 do
      local n = 2 + rand(12)
      local w, edges, side = zeros(n), {}, {}
      for i = 1, n do
        side[i] = rand(2) + 1
        for j = 1, n do
          if i ~= j and rand(2) == 0 then
            w[i][j] = rand(1000)
            edges[#edges + 1] = { i, j, w[i][j] }
          end
        end
      end
      local expected = mapping.cut_bytes(w, side)
      assert.are.equal(expected, mapping.cut(mapping.graph(w), side))
      assert.are.equal(expected, mapping.cut(mapping.graph_of_edges(n, edges), side))
    end
  end)

  it("makes one graph of a traffic record's matrix and of its edges (ranks from 0), and names a bad edge", function()
    local rand = h.random(12)
    for _ = 1, 10 do
      local n = 2 + rand(12)
      local w, edges = zeros(n), json.array({})
      for i = 1, n do
        for j = 1, n do
          if rand(3) == 0 then
            w[i][j] = rand(1000)
            edges[#edges + 1], edges[#edges + 2], edges[#edges + 3] = i - 1, j - 1, w[i][j]
          end
        end
      end
      local from_matrix = assert(mapping.graph_of_traffic({ ranks = n, matrix = w, edges = json.null }))
      local from_edges = assert(mapping.graph_of_traffic({ ranks = n, matrix = json.null, edges = edges }))
      assert.are.same(mapping.graph(w), from_matrix)
      assert.are.same(from_matrix, from_edges)
    end
    for _, case in ipairs({
      { { ranks = 2, edges = { 0, 2, 1 } }, "edge 1 of the traffic record is not rank, rank, bytes" },
      { { ranks = 2, edges = { 0, 1, 1, 0, 0.5, 1 } }, "edge 2 " },
      { { ranks = 2, edges = { 0, 1, -1 } }, "edge 1 " },
      { { ranks = 2, edges = { 0, 1, 0 / 0 } }, "edge 1 " },
      { { ranks = 2, edges = { "x", 1, 1 } }, "edge 1 " },
      { { ranks = 2, edges = { 0, 1 } }, "the record's edges are not i, j, bytes triples" },
      { { ranks = 3, matrix = { { 0, 1 }, { 1, 0 } } }, "the matrix has 2 ranks, the record 3" },
      { { ranks = 2, matrix = json.null, edges = json.null }, "the record has no matrix and no edges" },
      { { matrix = { { 0 } } }, "the record has no rank count" },
    }) do
      local g, err = mapping.graph_of_traffic(case[1])
      assert.is_nil(g)
      assert.matches(case[2], err)
    end
  end)

  describe("with METIS", function()
    -- install-deps installs Debian's metis: without gpmetis these fail
    local function halo(px, py)
      local edges = {}
      for y = 0, py - 1 do
        for x = 0, px - 1 do
          local r = y * px + x + 1
          if x + 1 < px then edges[#edges + 1] = { r, r + 1, 100 } end
          if y + 1 < py then edges[#edges + 1] = { r, r + px, 100 } end
        end
      end
      return mapping.graph_of_edges(px * py, edges)
    end

    it("bisects a 4096-rank halo near its best cut, where site-major cuts 4 times as much", function()
      -- a 128 x 32 grid numbered row by row: site-major cuts across the
      -- 128 columns; the best bisection cuts along the 32 rows
      local g = halo(128, 32)
      local side, cut, start, method, note = mapping.bisect_graph(g, 2048)
      assert.is_nil(note)
      assert.are.equal("metis", method)
      assert.are.equal(128 * 100, start)
      assert.is_true(cut >= 32 * 100 and cut <= 1.25 * 32 * 100, "cut " .. cut)
      assert.are.equal(cut, mapping.cut(g, side))
    end)

    it("gives each site exactly its ranks, also for uneven sites", function()
      for _, na in ipairs({ 1, 5, 100, 333, 511 }) do
        local side = assert(mapping.bisect_metis(halo(32, 16), na))
        local count = 0
        for i = 1, 512 do if side[i] == 1 then count = count + 1 end end
        assert.are.equal(na, count)
      end
    end)

    it("finds a planted partition of 2000 ranks", function()
      -- two groups of 1000 interleaved by rank number, each a ring
      local edges = {}
      for i = 1, 2000 do edges[#edges + 1] = { i, (i + 1) % 2000 + 1, 50 } end
      local g = mapping.graph_of_edges(2000, edges)
      local side, cut, start = mapping.bisect_graph(g, 1000)
      assert.are.equal(0, cut)
      assert.is_true(start > 0)
      assert.are.equal(side[1], side[3])
    end)

    it("says why when gpmetis cannot run, and bisects with its own Kernighan-Lin", function()
      local side, cut, start, method, note = mapping.bisect_graph(halo(8, 4), 16, { gpmetis = "/nonexistent/gpmetis" })
      assert.matches("gpmetis failed", note)
      assert.are.equal("kernighan-lin", method)
      assert.is_true(cut < start)
      assert.are.equal(cut, mapping.cut(halo(8, 4), side))
    end)
  end)

  it("checks a traffic matrix", function()
    assert.are.equal(2, mapping.check_matrix({ { 0, 1 }, { 2, 0 } }))
    assert.matches("row 2", select(2, mapping.check_matrix({ { 0, 1 }, { 2 } })))
    assert.matches("entry %(1, 2%)", select(2, mapping.check_matrix({ { 0, -1 }, { 2, 0 } })))
  end)
end)
