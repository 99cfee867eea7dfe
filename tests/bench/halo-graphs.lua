-- halo-graphs.lua: the rank placement of tests/bench/halo on synthetic
-- traffic, beyond the testbed's 8 ranks: 2-D halo exchanges of 64 to
-- 16 384 ranks (each rank sends 1 MB to each of its 4 grid neighbours),
-- on a grid 4 times wider than high, its ranks numbered row by row
-- ("rows") or by a fixed pseudo-random permutation ("scrambled": a code
-- whose rank numbers do not follow its grid).  For each it prints the bytes
-- across the link in Slurm's block order over an allocation whose nodes
-- alternate between the sites (4 ranks a node), in the site-major order,
-- as METIS and xsite's own Kernighan-Lin (up to its 512 ranks) bisect it,
-- what `xsite map --comm-graph` chooses, and the seconds that choice took.
-- Prints figures; asserts nothing.
--
-- Usage: lua5.1 tests/bench/halo-graphs.lua TOP [MAX-RANKS]
local top, most = arg[1], tonumber(arg[2] or 16384)
package.path = top .. "/lua/?.lua;" .. package.path
local mapping = require("xsite.mapping")
local shell = require("xsite.shell")

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

-- the halo graph of a px × py grid, rank numbers from `number(x, y)`
local function halo(px, py, number)
  local edges = {}
  for y = 0, py - 1 do
    for x = 0, px - 1 do
      local r = number(x, y)
      if x + 1 < px then edges[#edges + 1] = { r, number(x + 1, y), 2 * BYTES } end
      if y + 1 < py then edges[#edges + 1] = { r, number(x, y + 1), 2 * BYTES } end
    end
  end
  return mapping.graph_of_edges(px * py, edges)
end

local function fmt(bytes)
  if not bytes then return "-" end
  return string.format("%.0f MB", bytes / 1e6)
end

print(string.format("%-6s %-10s %12s %12s %12s %12s %12s %-14s %8s", "ranks", "numbering", "slurm block",
  "site-major", "metis", "own KL", "placed", "by", "seconds"))
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
    local g = halo(px, py, function(x, y)
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
    print(string.format("%-6d %-10s %12s %12s %12s %12s %12s %-14s %8.2f", p, numbering, fmt(mapping.cut(g, block)),
      fmt(start), fmt(metis and mapping.cut(g, metis)), fmt(kl), fmt(cut), method, secs))
    if note then print("  (" .. note .. ")") end
  end
  p = p * 4
end
