--- Rank placement across the two sites, for xsite-run.
--
-- `site_major` orders an allocation's task slots site by site (every slot of
-- the first site, then the second; inside a site, Slurm's own order), so that
-- neighbouring ranks share a site and a collective crosses the link once.
-- `bisect` goes further when a run's traffic matrix is known: it chooses which
-- ranks go to which site so that the bytes across the link are fewest, with
-- each site holding exactly its number of slots (Kernighan-Lin bisection, see
-- xsite(1), map).  Nothing here raises on bad input: `nil, message`.
-- @module xsite.mapping

local hostlist = require("xsite.hostlist")

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

--- Balanced bisection of the ranks by Kernighan-Lin: start from the
-- site-major assignment (the first `na` ranks at site 1), then, pass after
-- pass, swap pairs of ranks between the sites while the best prefix of swaps
-- lowers the bytes across.  Each pass picks, among unlocked ranks, the rank
-- of site 1 with the largest gain and its best partner at site 2 (the usual
-- O(n²)-per-pass form), and stops at a pass that gains nothing.
-- @param w traffic matrix (see cut_bytes), n × n
-- @param na ranks at site 1 (the rest go to site 2)
-- @return side array, the bytes across, the bytes across of the site-major start
function M.bisect(w, na)
  local n = #w
  -- symmetric weights: traffic either way crosses the link
  local c = {}
  for i = 1, n do
    c[i] = {}
    for j = 1, n do c[i][j] = (w[i][j] or 0) + (w[j][i] or 0) end
  end
  local side = {}
  for i = 1, n do side[i] = i <= na and 1 or 2 end
  local start = M.cut_bytes(w, side)
  if na == 0 or na == n then return side, start, start end

  for _ = 1, 50 do
    -- D[i] = external - internal cost
    local D = {}
    for i = 1, n do
      local ext, int = 0, 0
      for j = 1, n do
        if j ~= i then
          if side[j] == side[i] then int = int + c[i][j] else ext = ext + c[i][j] end
        end
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
      for j = 1, n do
        if side[j] == 2 and not locked[j] then
          local g = D[a] + D[j] - 2 * c[a][j]
          if not best_g or g > best_g then b, best_g = j, g end
        end
      end
      locked[a], locked[b] = true, true
      swaps[#swaps + 1] = { a, b }
      gains[#gains + 1] = best_g
      -- update D as if a and b had swapped
      for i = 1, n do
        if not locked[i] then
          if side[i] == 1 then
            D[i] = D[i] + 2 * c[i][a] - 2 * c[i][b]
          else
            D[i] = D[i] + 2 * c[i][b] - 2 * c[i][a]
          end
        end
      end
    end
    local best_k, best_sum, sum = 0, 0, 0
    for k, g in ipairs(gains) do
      sum = sum + g
      if sum > best_sum then best_k, best_sum = k, sum end
    end
    if best_k == 0 then break end
    for k = 1, best_k do
      local a, b = swaps[k][1], swaps[k][2]
      side[a], side[b] = 2, 1
    end
  end
  return side, M.cut_bytes(w, side), start
end

--- Put ranks on slots: the ranks of each site take that site's slots in
-- rank order.
-- @param slots the slots of `site_major`, site 1 first
-- @param side array of 1 or 2 per rank (from `bisect`), or nil for site-major
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
