--- Shared set-up of the specs: the library on package.path, the repository's
-- root, and a configuration built from text.
local root = debug.getinfo(1, "S").source:match("^@(.*)/tests/lua/[^/]*$") or "."
package.path = root .. "/lua/?.lua;" .. package.path

local M = { root = root, fixtures = root .. "/tests/lua/fixtures/" }

--- Assert that `actual` is the number `expected`, to 1e-12 relative (a value
-- built by a multiplication may differ from the literal by one ulp).
function M.near(expected, actual, what)
  local assert = require("luassert")
  assert.is_number(actual, what)
  assert.is_true(math.abs(actual - expected) <= 1e-12 * math.abs(expected),
    string.format("%s: expected %.17g, got %.17g", what or "value", expected, actual))
end

--- A whole file's bytes; fails the spec when it cannot be read.
function M.read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("*a")
  f:close()
  return text
end

--- A repeatable stream of pseudo-random numbers (Park-Miller): returns a
-- function of n giving a number in 0 .. n - 1.
function M.random(seed)
  return function(n)
    seed = (seed * 16807) % 2147483647
    return seed % n
  end
end

--- The distinct values of an array, sorted.
function M.sorted_unique(list)
  local seen, out = {}, {}
  for _, v in ipairs(list) do
    if not seen[v] then
      seen[v] = true
      out[#out + 1] = v
    end
  end
  table.sort(out)
  return out
end

--- Parse a configuration text; fail the spec on errors.
function M.config(text)
  local cfg, err = require("xsite.config").parse(text, "spec.conf")
  assert(cfg, err)
  return cfg
end

--- Two sites of `na` and `nb` nodes with the same simple hardware (1 core of
-- 1 Gflop/s, 1 GB/s memory and network, 1 us), a 100 MB/s link with 1 ms one
-- way, and `extra` lines appended.
function M.two_sites(na, nb, extra)
  local hw = "CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us"
  return M.config(table.concat({
    string.format("SiteName=a Nodes=a[1-%d] Feature=site_a %s", na, hw),
    string.format("SiteName=b Nodes=b[1-%d] Feature=site_b %s", nb, hw),
    "LinkName=l Bandwidth=100MB/s Latency=1ms",
    extra or "",
  }, "\n"))
end

return M
