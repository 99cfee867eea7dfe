-- halo-graphs.lua: the rank placement of tests/bench/halo on synthetic
-- traffic, beyond the testbed's 8 ranks: 2-D halo exchanges of 64 to
-- 16 384 ranks (each rank sends 1 MB to each of its 4 grid neighbours),
-- on a grid 4 times wider than high, its ranks numbered row by row
-- ("rows") or by a fixed pseudo-random permutation ("scrambled": a code
-- whose rank numbers do not follow its grid).  For each it prints the bytes
-- across the link in Slurm's block order over an allocation whose nodes
-- alternate between the sites (4 ranks a node), in the site-major order,
-- as METIS and xsite's own Kernighan-Lin (up to its 512 ranks) bisect it,
-- what `xsite map --comm-graph` chooses, and the seconds that choice took;
-- then the size of libxsite's record of that traffic (beyond 512 ranks,
-- XSITE_MATRIX_MAX, its edges) and the seconds `xsite map` takes to read
-- it (xsite.traffic's decode and check, and the graph of its edges).
-- Prints figures; asserts nothing.
--
-- Usage: lua5.1 tests/bench/halo-graphs.lua TOP [MAX-RANKS]
local top, most = arg[1], tonumber(arg[2] or 16384)
package.path = top .. "/lua/?.lua;" .. package.path
local json = require("xsite.json")
local mapping = require("xsite.mapping")
local shell = require("xsite.shell")
local traffic = require("xsite.traffic")

-- wall-clock seconds (gpmetis runs as a child: os.clock would miss it)
local function now()
  return tonumber((shell.run({ "date", "+%s.%N" })))
end

local BYTES = 1e6
local seed = 4242
local function rand(k)
  seed = (seed * 16807) % 2147483647
  return seed % k + 1
end

-- the halo graph of a px × py grid, rank numbers from `number(x, y)`, and
-- its edges
local function halo(px, py, number)
  local edges = {}
  for y = 0, py - 1 do
    for x = 0, px - 1 do
      local r = number(x, y)
      if x + 1 < px then edges[#edges + 1] = { r, number(x + 1, y), 2 * BYTES } end
      if y + 1 < py then edges[#edges + 1] = { r, number(x, y + 1), 2 * BYTES } end
    end
  end
  return mapping.graph_of_edges(px * py, edges), edges
end

-- libxsite's record of that traffic, as it writes it beyond XSITE_MATRIX_MAX
-- ranks: each rank's sends that are not 0 as i, j, bytes (ranks from 0),
-- with one per_rank entry a rank
local function record(p, edges)
  local sent = {}
  for _, e in ipairs(edges) do
    sent[#sent + 1] = string.format("%d,%d,%d", e[1] - 1, e[2] - 1, BYTES)
    sent[#sent + 1] = string.format("%d,%d,%d", e[2] - 1, e[1] - 1, BYTES)
  end
  local a, b, per = {}, {}, {}
  for r = 0, p - 1 do
    local at = r < p / 2
    if at then a[#a + 1] = r else b[#b + 1] = r end
    per[#per + 1] = string.format('{"rank":%d,"site":"%s","host":"node%d","cross_bytes":0,"cross_messages":0}', r,
      at and "alpha" or "beta", math.floor(r / 4))
  end
  return string.format('{"version":1,"job":1,"step":0,"ranks":%d,"sites":{"alpha":[%s],"beta":[%s]},'
    .. '"cross":{"bytes":0,"messages":0,"p2p_bytes":0,"p2p_messages":0,"coll_bytes":0,"coll_messages":0},'
    .. '"collectives":"site-aware","large_msg":65536,"streams":4,\n"per_rank":[%s],\n"matrix":null,"edges":[%s]}\n',
    p, table.concat(a, ","), table.concat(b, ","), table.concat(per, ",\n"), table.concat(sent, ",\n"))
end

local function fmt(bytes)
  if not bytes then return "-" end
  return string.format("%.0f MB", bytes / 1e6)
end

print(string.format("%-6s %-10s %12s %12s %12s %12s %12s %-14s %8s %9s %8s", "ranks", "numbering", "slurm block",
  "site-major", "metis", "own KL", "placed", "by", "seconds", "record", "read s"))
local p = 64
while p <= most do
  local py = math.floor(math.sqrt(p / 4) + 0.5)
  local px = p / py
  local perm = {}
  for i = 1, p do perm[i] = i end
  for i = p, 2, -1 do
    local j = rand(i)
    perm[i], perm[j] = perm[j], perm[i]
  end
  for _, numbering in ipairs({ "rows", "scrambled" }) do
    local g, edges = halo(px, py, function(x, y)
      local r = y * px + x + 1
      return numbering == "rows" and r or perm[r]
    end)
    local na = p / 2
    local block = {}
    for r = 1, p do block[r] = math.floor((r - 1) / 4) % 2 + 1 end
    local metis = mapping.bisect_metis(g, na)
    local kl
    if p <= mapping.KL_MAX then
      -- Kernighan-Lin alone: bisect_graph with no gpmetis to run
      local side = mapping.bisect_graph(g, na, { gpmetis = "/nonexistent/gpmetis" })
      kl = mapping.cut(g, side)
    end
    local t0 = now()
    local _, cut, start, method, note = mapping.bisect_graph(g, na)
    local secs = now() - t0
    local text = record(p, edges)
    t0 = now()
    local t = assert(traffic.decode(text, { max_size = false }))
    local g2 = assert(mapping.graph_of_traffic(t))
    local read = now() - t0
    assert(json.present(t.edges) and mapping.cut(g2, block) == mapping.cut(g, block))
    print(string.format("%-6d %-10s %12s %12s %12s %12s %12s %-14s %8.2f %6.1f MB %8.2f", p, numbering,
      fmt(mapping.cut(g, block)), fmt(start), fmt(metis and mapping.cut(g, metis)), fmt(kl), fmt(cut), method, secs,
      #text / 1e6, read))
    if note then print("  (" .. note .. ")") end
  end
  p = p * 4
end
