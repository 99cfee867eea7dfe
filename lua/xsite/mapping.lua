--- Rank placement across the two sites, for xsite-run.
--
-- `site_major` orders an allocation's task slots site by site (every slot of
-- the first site, then the second; inside a site, Slurm's own order), so that
-- neighbouring ranks share a site and a collective crosses the link once.
-- `bisect_graph` goes further when a run's traffic matrix is known: it chooses which
-- ranks go to which site so that the bytes across the link are fewest, with
-- each site holding exactly its number of slots (METIS's bisection and a
-- Kernighan-Lin of xsite's own, see xsite(1), map).  Nothing here raises on
-- bad input: `nil, message`.
-- @module xsite.mapping

local hostlist = require("xsite.hostlist")
local json = require("xsite.json")
local shell = require("xsite.shell")

local M = {}

--- Expand Slurm's SLURM_TASKS_PER_NODE ("2(x3),1") into one count per node.
-- @return array of counts, or nil and a message
function M.tasks_per_node(text)
  if type(text) ~= "string" or text == "" then return nil, "empty tasks per node" end
  local out = {}
  for item in (text .. ","):gmatch("([^,]*),") do
    local n, rep = item:match("^(%d+)%(x(%d+)%)$")
    if not n then
      n, rep = item:match("^(%d+)$"), "1"
    end
    if not n then return nil, string.format("'%s' is not a task count like 2 or 2(x3)", item) end
    n, rep = tonumber(n), tonumber(rep)
    if #out + rep > hostlist.MAX_HOSTS then return nil, "too many nodes" end
    for _ = 1, rep do out[#out + 1] = n end
  end
  return out
end

--- The task slots of an allocation, site by site.
-- @param cfg a configuration (xsite.config)
-- @param nodes array of host names in Slurm's order
-- @param counts array of tasks per node (same length as nodes)
-- @return { slots = array of { host, site, local = index on its host } in
--   rank order, per_site = { [site name] = slot count } }, or nil and a message
function M.site_major(cfg, nodes, counts)
  if #nodes ~= #counts then
    return nil, string.format("%d nodes but %d task counts", #nodes, #counts)
  end
  local by_site = {}
  for i, s in ipairs(cfg.sites) do by_site[s] = i end
  local groups = { {}, {} }
  for i, host in ipairs(nodes) do
    local site = cfg.site_of_node[host]
    if not site then
      return nil, string.format("node '%s' is in no site of %s", host, cfg.file)
    end
    local g = groups[by_site[site]]
    for l = 1, counts[i] do g[#g + 1] = { host = host, site = site.name, ["local"] = l - 1 } end
  end
  local slots = {}
  for _, g in ipairs(groups) do
    for _, s in ipairs(g) do slots[#slots + 1] = s end
  end
  return { slots = slots, per_site = { [cfg.sites[1].name] = #groups[1], [cfg.sites[2].name] = #groups[2] } }
end

--- Bytes that cross between the two sides of an assignment.
-- @param w traffic matrix: w[i][j] bytes rank i sent to rank j (1-based)
-- @param side array: side[i] is 1 or 2
function M.cut_bytes(w, side)
  local total = 0
  for i = 1, #w do
    local row = w[i]
    for j = 1, #w do
      if side[i] ~= side[j] then total = total + (row[j] or 0) end
    end
  end
  return total
end

--- Check a traffic matrix: square, non-negative finite numbers.
-- @return n, or nil and a message
function M.check_matrix(w)
  if type(w) ~= "table" or #w == 0 then return nil, "the traffic matrix is empty" end
  local n = #w
  for i = 1, n do
    if type(w[i]) ~= "table" or #w[i] ~= n then
      return nil, string.format("row %d of the traffic matrix does not have %d entries", i, n)
    end
    for j = 1, n do
      local v = w[i][j]
      if type(v) ~= "number" or v < 0 or v ~= v or v == math.huge then
        return nil, string.format("entry (%d, %d) of the traffic matrix is not a byte count", i, j)
      end
    end
  end
  return n
end

--- The communication graph of a traffic matrix: each rank's neighbours and
-- the bytes between them either way (traffic either way crosses the link).
-- @param w traffic matrix (see cut_bytes), n × n
-- @return { n = n, adj = { [i] = { j, bytes, j, bytes, ... } } }
function M.graph(w)
  local n, adj = #w, {}
  for i = 1, n do adj[i] = {} end
  for i = 1, n do
    for j = i + 1, n do
      local c = (w[i][j] or 0) + (w[j][i] or 0)
      if c > 0 then
        local a, b = adj[i], adj[j]
        a[#a + 1], a[#a + 2] = j, c
        b[#b + 1], b[#b + 2] = i, c
      end
    end
  end
  return { n = n, adj = adj }
end

--- A communication graph from a list of edges (for graphs too large for a
-- matrix: 16 384 ranks make 268 million entries).
-- @param n ranks
-- @param edges array of { i, j, bytes } (1-based; a pair may repeat, each
--   direction may be listed: the bytes add up)
-- @return the graph (see `graph`)
function M.graph_of_edges(n, edges)
  local sum = {}
  for _, e in ipairs(edges) do
    local i, j = e[1], e[2]
    if i ~= j then
      if i > j then i, j = j, i end
      local k = (i - 1) * n + j
      sum[k] = (sum[k] or 0) + e[3]
    end
  end
  local adj = {}
  for i = 1, n do adj[i] = {} end
  local keys = {}
  for k in pairs(sum) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local i, j = math.floor((k - 1) / n) + 1, (k - 1) % n + 1
    local a, b = adj[i], adj[j]
    a[#a + 1], a[#a + 2] = j, sum[k]
    b[#b + 1], b[#b + 2] = i, sum[k]
  end
  return { n = n, adj = adj }
end

--- The communication graph of a step's traffic (xsite.traffic's reading of
-- libxsite's record): from its matrix, or from its edges, the matrix's
-- entries that are not 0 (a flat list of triples i, j, bytes; ranks from
-- 0), which libxsite writes instead beyond XSITE_MATRIX_MAX ranks.
-- @param mpi { ranks = n, matrix = …, edges = … } (either may be absent or
--   JSON null)
-- @return the graph (see `graph`), or nil and a message
function M.graph_of_traffic(mpi)
  local n = mpi.ranks
  if type(n) ~= "number" or n < 1 or n ~= math.floor(n) then return nil, "the record has no rank count" end
  if json.present(mpi.matrix) then
    local m, err = M.check_matrix(mpi.matrix)
    if not m then return nil, err end
    if m ~= n then return nil, string.format("the matrix has %d ranks, the record %s", m, tostring(n)) end
    return M.graph(mpi.matrix)
  end
  if not json.present(mpi.edges) then return nil, "the record has no matrix and no edges" end
  if type(mpi.edges) ~= "table" then return nil, "the record's edges are not a list" end
  local ed, list = mpi.edges, {}
  if #ed % 3 ~= 0 then return nil, "the record's edges are not i, j, bytes triples" end
  for k = 1, #ed, 3 do
    local i, j, b = ed[k], ed[k + 1], ed[k + 2]
    if not (type(i) == "number" and type(j) == "number" and type(b) == "number" and i >= 0 and i < n
        and j >= 0 and j < n and i == math.floor(i) and j == math.floor(j) and b >= 0 and b < math.huge) then
      return nil, string.format("edge %d of the traffic record is not rank, rank, bytes", (k + 2) / 3)
    end
    list[#list + 1] = { i + 1, j + 1, b }
  end
  return M.graph_of_edges(n, list)
end

--- Bytes that cross between the two sides of an assignment of a graph's
-- ranks (the same figure as `cut_bytes` of its matrix).
function M.cut(g, side)
  local total = 0
  for i = 1, g.n do
    local a = g.adj[i]
    for k = 1, #a, 2 do
      local j = a[k]
      if j > i and side[i] ~= side[j] then total = total + a[k + 1] end
    end
  end
  return total
end

--- The site-major assignment: the first `na` ranks at site 1.
function M.site_major_sides(n, na)
  local side = {}
  for i = 1, n do side[i] = i <= na and 1 or 2 end
  return side
end

--- Up to this many ranks, `bisect_graph` also runs its own Kernighan-Lin (O(n²) a
-- pass) and keeps whichever cut is smaller.
M.KL_MAX = 512

-- Balanced bisection by Kernighan-Lin: start from the site-major assignment
-- (the first `na` ranks at site 1), then, pass after pass, swap pairs of
-- ranks between the sites while the best prefix of swaps lowers the bytes
-- across.  Each pass picks, among unlocked ranks, the rank of site 1 with
-- the largest gain and its best partner at site 2 (the usual O(n²)-per-pass
-- form), and stops at a pass that gains nothing.
local function kernighan_lin(g, na)
  local n = g.n
  local c = {}
  for i = 1, n do
    local row, a = {}, g.adj[i]
    for j = 1, n do row[j] = 0 end
    for k = 1, #a, 2 do row[a[k]] = a[k + 1] end
    c[i] = row
  end
  local side = M.site_major_sides(n, na)
  for _ = 1, 50 do
    -- D[i] = external - internal cost
    local D = {}
    for i = 1, n do
      local ext, int = 0, 0
      local a = g.adj[i]
      for k = 1, #a, 2 do
        if side[a[k]] == side[i] then int = int + a[k + 1] else ext = ext + a[k + 1] end
      end
      D[i] = ext - int
    end
    local locked, swaps, gains = {}, {}, {}
    for _ = 1, math.min(na, n - na) do
      local a, best_a
      for i = 1, n do
        if side[i] == 1 and not locked[i] and (not best_a or D[i] > best_a) then a, best_a = i, D[i] end
      end
      local b, best_g
      local ca = c[a]
      for j = 1, n do
        if side[j] == 2 and not locked[j] then
          local gain = D[a] + D[j] - 2 * ca[j]
          if not best_g or gain > best_g then b, best_g = j, gain end
        end
      end
      locked[a], locked[b] = true, true
      swaps[#swaps + 1] = { a, b }
      gains[#gains + 1] = best_g
      -- update D as if a and b had swapped
      local cb = c[b]
      for i = 1, n do
        if not locked[i] then
          if side[i] == 1 then
            D[i] = D[i] + 2 * ca[i] - 2 * cb[i]
          else
            D[i] = D[i] + 2 * cb[i] - 2 * ca[i]
          end
        end
      end
    end
    local best_k, best_sum, sum = 0, 0, 0
    for k, gain in ipairs(gains) do
      sum = sum + gain
      if sum > best_sum then best_k, best_sum = k, sum end
    end
    if best_k == 0 then break end
    for k = 1, best_k do
      local a, b = swaps[k][1], swaps[k][2]
      side[a], side[b] = 2, 1
    end
  end
  return side
end

-- Move ranks until site 1 has exactly `na`: each time the rank of the fuller
-- side whose move adds the fewest bytes across (METIS balances to within a
-- tolerance, a site's slots are exact).
local function rebalance(g, side, na)
  local count = 0
  for i = 1, g.n do if side[i] == 1 then count = count + 1 end end
  while count ~= na do
    local from = count > na and 1 or 2
    local best, best_gain
    for i = 1, g.n do
      if side[i] == from then
        local gain, a = 0, g.adj[i]
        for k = 1, #a, 2 do
          gain = gain + (side[a[k]] == from and -a[k + 1] or a[k + 1])
        end
        if not best_gain or gain > best_gain then best, best_gain = i, gain end
      end
    end
    side[best] = 3 - from
    count = count + (from == 1 and -1 or 1)
  end
  return side
end

--- The program that bisects graphs with METIS (Debian's metis package).
M.GPMETIS = "gpmetis"

--- Balanced bisection by METIS (gpmetis, recursive bisection with the
-- sites' shares as target weights), made exact by `rebalance`.
-- @param g the graph
-- @param na ranks at site 1
-- @param opts optional: `gpmetis` (the program), `timeout` (seconds, default 60)
-- @return side array, or nil and a message (no gpmetis, or it failed)
function M.bisect_metis(g, na, opts)
  opts = opts or {}
  local n = g.n
  if na == 0 or na == n then return M.site_major_sides(n, na) end
  local dir, made = shell.run({ "mktemp", "-d" }, { stderr = "drop" })
  dir = dir:gsub("\n$", "")
  if not made or dir == "" then return nil, "cannot make a temporary directory" end
  -- METIS wants whole weights below 2^31 in all: scale the bytes down
  local total, edges = 0, 0
  for i = 1, n do
    local a = g.adj[i]
    for k = 2, #a, 2 do total = total + a[k] end
    edges = edges + #a / 2
  end
  local scale = math.max(1, total / 1e9)
  local lines = { string.format("%d %d 001", n, edges / 2) }
  for i = 1, n do
    local a, words = g.adj[i], {}
    for k = 1, #a, 2 do
      words[#words + 1] = string.format("%d %d", a[k], math.max(1, math.floor(a[k + 1] / scale + 0.5)))
    end
    lines[#lines + 1] = table.concat(words, " ")
  end
  local graph, weights = dir .. "/graph", dir .. "/tpwgts"
  local f = io.open(graph, "w")
  local fw = io.open(weights, "w")
  local side, why
  if f and fw then
    f:write(table.concat(lines, "\n"), "\n")
    f:close()
    fw:write(string.format("0 = %.6f\n1 = %.6f\n", na / n, 1 - na / n))
    fw:close()
    local text, ok = shell.run({ opts.gpmetis or M.GPMETIS, "-ptype=rb", "-ufactor=1", "-ncuts=4", "-seed=1",
      "-tpwgts=" .. weights, graph, "2" }, { timeout = opts.timeout or 60 })
    local part = ok and io.open(graph .. ".part.2")
    if part then
      side = {}
      for line in part:lines() do side[#side + 1] = tonumber(line) == 0 and 1 or 2 end
      part:close()
      if #side ~= n then side, why = nil, "gpmetis gave " .. #side .. " parts for " .. n .. " ranks" end
    else
      why = "gpmetis failed: " .. (text:match("[^\n]*[%a][^\n]*") or "no output")
    end
  else
    if f then f:close() end
    if fw then fw:close() end
    why = "cannot write the graph for gpmetis in " .. dir
  end
  shell.run({ "rm", "-rf", dir })
  if not side then return nil, why end
  return rebalance(g, side, na)
end

--- Balanced bisection of a communication graph: site 1 gets exactly `na`
-- ranks and the bytes across are as few as the partitioners find.  METIS
-- (when gpmetis is installed) and, up to `KL_MAX` ranks, xsite's own
-- Kernighan-Lin both run; the smaller cut wins, and never one larger than
-- the site-major order's.
-- @param g the graph (`graph`, `graph_of_edges`)
-- @param na ranks at site 1
-- @param opts optional: see `bisect_metis`
-- @return side array, the bytes across, those of the site-major order, and
--   the method that won ("metis", "kernighan-lin" or "site-major"), and a
--   note when METIS could not run
function M.bisect_graph(g, na, opts)
  local n = g.n
  local best = M.site_major_sides(n, na)
  local start = M.cut(g, best)
  local cut, method = start, "site-major"
  if na == 0 or na == n then return best, cut, start, method end
  local side, note = M.bisect_metis(g, na, opts)
  if side then
    local c = M.cut(g, side)
    if c < cut then best, cut, method = side, c, "metis" end
  end
  if n <= M.KL_MAX then
    side = kernighan_lin(g, na)
    local c = M.cut(g, side)
    if c < cut then best, cut, method = side, c, "kernighan-lin" end
  end
  return best, cut, start, method, note
end

--- Put ranks on slots: the ranks of each site take that site's slots in
-- rank order.
-- @param slots the slots of `site_major`, site 1 first
-- @param side array of 1 or 2 per rank (from `bisect_graph`), or nil for site-major
-- @param na number of slots at site 1
-- @return array: the slot of each rank
function M.assign(slots, side, na)
  if not side then return slots end
  local next_slot = { 1, na + 1 }
  local out = {}
  for r = 1, #slots do
    local s = side[r]
    out[r] = slots[next_slot[s]]
    next_slot[s] = next_slot[s] + 1
  end
  return out
end

return M
