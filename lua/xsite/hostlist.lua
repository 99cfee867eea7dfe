--- Slurm hostlist expressions, both ways.
--
-- `expand("hd[001-003],ma[1-2]-ib")` gives `{"hd001","hd002","hd003","ma1-ib","ma2-ib"}`;
-- `compress` gives the shortest list of bracket expressions back.  Zero padding
-- follows the width of a range's lower bound (`[001-140]`); several bracket
-- groups in one name expand as a product (`r[1-2]n[1-3]`).  Bad syntax returns
-- `nil, message`; nothing here raises on bad input.
--
-- Code that runs as root on a user's hostlist (`--nodelist` in slurmctld,
-- a job's node list in slurmstepd) never expands it: `count` adds up its
-- ranges, `sites` finds the sites it names and how many nodes of each (each
-- node once), `site_counts` how many of its names each site has, from an
-- index of the configured nodes, with work bounded by the length of the
-- expression (at most `MAX_LENGTH`, `MAX_NODELIST` for `site_counts`) and
-- the cluster's size.
-- @module xsite.hostlist

local M = {}

--- The most names one expression may expand to.
M.MAX_HOSTS = 1000000
--- The most names `count`, `sites` and `site_counts` take in one
-- expression (more than Slurm holds in a job's node count).
M.MAX_COUNT = 4294967295
--- The most bracket groups one host name may have.
M.MAX_GROUPS = 16
--- The longest expression `count` and `sites` take.
M.MAX_LENGTH = 8192
--- The longest job node list `site_counts` takes (a fragmented allocation
-- of tens of thousands of nodes).
M.MAX_NODELIST = 262144
--- The most (configured node x range) comparisons `sites` and `site_counts`
-- make for the items of an expression with several bracket groups.
M.MAX_MATCHES = 10000

local NAME_CHARS = "^[%w%-%_%.]*$"

local byte, find, gmatch, match, sub = string.byte, string.find, string.gmatch, string.match, string.sub
local floor, math_max = math.floor, math.max
local OPEN, CLOSE, ZERO = ("["):byte(), ("]"):byte(), ("0"):byte()

-- Parse the inside of one bracket group ("001-003,7") into a list of
-- { lo, hi, width } ranges.
local function parse_ranges(inner, expr)
  local ranges = {}
  if inner == "" then
    return nil, string.format("empty brackets in '%s'", expr)
  end
  -- each item up to a comma (an empty one too), with string searches: a
  -- user's --nodelist is read here for every job that has one
  local pos, n = 1, #inner
  while pos <= n + 1 do
    local comma = find(inner, ",", pos, true)
    local last = comma and comma - 1 or n
    local item = sub(inner, pos, last)
    pos = last + 2
    local lo, hi = match(item, "^(%d+)%-(%d+)$")
    if not lo then
      lo = match(item, "^(%d+)$")
      hi = lo
    end
    if not lo then
      return nil, string.format("bad range '%s' in '%s'", item, expr)
    end
    local a, b = tonumber(lo), tonumber(hi)
    if #lo > 9 or #hi > 9 then
      return nil, string.format("number too large in '%s'", expr)
    end
    if a > b then
      return nil, string.format("range '%s' runs backwards in '%s'", item, expr)
    end
    local width = (#lo > 1 and byte(lo) == ZERO) and #lo or 0
    ranges[#ranges + 1] = { a, b, width }
  end
  return ranges
end

-- Split one host expression ("r[1-2]n[01-03]-ib") into literal parts and
-- range groups.
local function parse_host(expr, no_limit)
  local parts = {}
  local pos = 1
  local count = 1
  while pos <= #expr do
    -- the literal part and the bracket group after it, in one search
    local literal, inner, after = match(expr, "^([^%[%]]*)%[([^%[%]]*)%]()", pos)
    if not literal then
      -- no group left, or a bracket out of place
      local open = find(expr, "[%[%]]", pos)
      if not open then
        parts[#parts + 1] = sub(expr, pos)
        break
      end
      if byte(expr, open) == CLOSE then
        return nil, string.format("unmatched ']' in '%s'", expr)
      end
      return nil, string.format("unclosed '[' in '%s'", expr)
    end
    parts[#parts + 1] = literal
    local ranges, err = parse_ranges(inner, expr)
    if not ranges then return nil, err end
    local n = 0
    for k = 1, #ranges do n = n + ranges[k][2] - ranges[k][1] + 1 end
    -- (compared before it is multiplied: Lua 5.3's integers would wrap)
    local limit = no_limit and M.MAX_COUNT or M.MAX_HOSTS
    if count > limit / n then
      return nil, string.format("'%s' expands to more than %d names", expr, limit)
    end
    count = count * n
    parts[#parts + 1] = ranges
    if #parts > 2 * M.MAX_GROUPS then
      return nil, string.format("more than %d bracket groups in '%s'", M.MAX_GROUPS, expr:sub(1, 60))
    end
    pos = after
  end
  for k = 1, #parts do
    local p = parts[k]
    if type(p) == "string" and not find(p, NAME_CHARS) then
      return nil, string.format("invalid character in host name '%s'", expr)
    end
  end
  return parts, count
end

local function expand_parts(parts, i, prefix, out)
  local p = parts[i]
  if p == nil then
    if prefix == "" then return end
    out[#out + 1] = prefix
    return
  end
  if type(p) == "string" then
    return expand_parts(parts, i + 1, prefix .. p, out)
  end
  for _, r in ipairs(p) do
    local fmt = "%0" .. r[3] .. "d"
    for n = r[1], r[2] do
      expand_parts(parts, i + 1, prefix .. string.format(fmt, n), out)
    end
  end
end

--- Split a hostlist at its top-level commas (commas inside brackets separate ranges).
local function split_top(list)
  local items, depth, start, pos = {}, 0, 1, 1
  while true do
    local i = find(list, "[%[%],]", pos)
    if not i then break end
    local c = byte(list, i)
    if c == OPEN then
      depth = depth + 1
    elseif c == CLOSE then
      depth = depth - 1
    elseif depth == 0 then
      items[#items + 1] = sub(list, start, i - 1)
      start = i + 1
    end
    pos = i + 1
  end
  items[#items + 1] = sub(list, start)
  return items
end

--- Expand a hostlist expression.
-- @param list e.g. `"hd[001-140]"` or `"a[1-2],b[1-4,7]"`
-- @return array of host names in the order written (duplicates kept), or nil and a message
function M.expand(list)
  if type(list) ~= "string" then
    return nil, "hostlist must be a string"
  end
  if list == "" then
    return nil, "empty hostlist"
  end
  local out, total = {}, 0
  for _, item in ipairs(split_top(list)) do
    if item == "" then
      return nil, string.format("empty host name in '%s'", list)
    end
    local parts, count = parse_host(item)
    if not parts then return nil, count end
    total = total + count
    if total > M.MAX_HOSTS then
      return nil, string.format("'%s' expands to more than %d names", list, M.MAX_HOSTS)
    end
    expand_parts(parts, 1, "", out)
  end
  return out
end

-- Sort key pieces of a name: prefix, the last number, suffix.
local function split_name(name)
  local pre, digits, suf = name:match("^(.-)(%d+)(%D*)$")
  if not pre then return name end
  return pre, digits, suf
end

local function format_ranges(nums, width)
  local fmt = "%0" .. width .. "d"
  local out, i = {}, 1
  while i <= #nums do
    local j = i
    while j < #nums and nums[j + 1] == nums[j] + 1 do j = j + 1 end
    if j == i then
      out[#out + 1] = string.format(fmt, nums[i])
    else
      out[#out + 1] = string.format(fmt, nums[i]) .. "-" .. string.format(fmt, nums[j])
    end
    i = j + 1
  end
  return out
end

--- Compress host names into a hostlist expression.
-- Names are grouped by prefix, suffix and zero padding of their last number;
-- groups keep the order of their first name, numbers are sorted, duplicates dropped.
-- @param names array of host names
-- @return the expression (`""` for an empty array)
function M.compress(names)
  -- First the zero-padded widths in use: an unpadded number as wide as a
  -- padded group joins that group ("hd099" and "hd100" give "hd[099-100]").
  local padded = {}
  for _, name in ipairs(names) do
    local pre, digits, suf = split_name(name)
    if digits and #digits <= 9 and #digits > 1 and digits:sub(1, 1) == "0" then
      padded[pre .. "\0" .. suf .. "\0" .. #digits] = true
    end
  end
  local groups, order = {}, {}
  for _, name in ipairs(names) do
    local pre, digits, suf = split_name(name)
    local key, num, width
    if digits and #digits <= 9 then
      num = tonumber(digits)
      width = (#digits > 1 and digits:sub(1, 1) == "0") and #digits or 0
      if width == 0 and padded[pre .. "\0" .. suf .. "\0" .. #digits] then width = #digits end
      key = pre .. "\0" .. suf .. "\0" .. width
    else
      -- no number, or one too long to count: the name stands alone
      pre, suf, key = name, "", "\0" .. name
    end
    local g = groups[key]
    if not g then
      g = { pre = pre, suf = suf, width = width, nums = {}, seen = {} }
      groups[key] = g
      order[#order + 1] = g
    end
    if num and not g.seen[num] then
      g.seen[num] = true
      g.nums[#g.nums + 1] = num
    end
  end
  local out = {}
  for _, g in ipairs(order) do
    if #g.nums == 0 then
      out[#out + 1] = g.pre
    else
      table.sort(g.nums)
      local r = format_ranges(g.nums, g.width)
      if #g.nums == 1 then
        out[#out + 1] = g.pre .. r[1] .. g.suf
      else
        out[#out + 1] = g.pre .. "[" .. table.concat(r, ",") .. "]" .. g.suf
      end
    end
  end
  return table.concat(out, ",")
end

-- Parse a whole expression into its host items (lists of literal parts and
-- range groups) and the number of names they stand for, without expanding.
local function parse_items(list, max)
  max = max or M.MAX_LENGTH
  if type(list) ~= "string" then return nil, "hostlist must be a string" end
  if list == "" then return nil, "empty hostlist" end
  if #list > max then
    return nil, string.format("hostlist longer than %d characters", max)
  end
  local items, total = {}, 0
  for _, item in ipairs(split_top(list)) do
    if item == "" then
      return nil, string.format("empty host name in '%s'", list:sub(1, 60))
    end
    local parts, count = parse_host(item, true)
    if not parts then return nil, count end
    items[#items + 1] = parts
    total = total + count
    if total > M.MAX_COUNT then
      return nil, string.format("'%s' stands for more than %d names", list:sub(1, 60), M.MAX_COUNT)
    end
  end
  return items, total
end

--- The first name of an expression: its first item, each bracket group at
-- its first number (`first("alpha[03-04],beta1")` is "alpha03"), from its
-- ranges, whatever it stands for.
-- @param list a hostlist expression (at most `MAX_NODELIST` characters)
-- @return the name, or nil and a message
function M.first(list)
  local items, err = parse_items(list, M.MAX_NODELIST)
  if not items then return nil, err end
  local out = {}
  for _, p in ipairs(items[1]) do
    out[#out + 1] = type(p) == "string" and p or string.format("%0" .. p[1][3] .. "d", p[1][1])
  end
  return table.concat(out)
end

--- The number of names an expression stands for (duplicates counted), from
-- its ranges: `count("x[000000-999999]")` is 1000000, with no list made.
-- @return the count, or nil and a message
function M.count(list)
  local items, total = parse_items(list)
  if not items then return nil, total end
  return total
end

-- Whether `name` is one of the names of a parsed item (a backtracking match
-- of its literal parts and ranges; bounded by the name's length).
local function matches(parts, name)
  local function at(i, pos)
    local p = parts[i]
    if p == nil then return pos == #name + 1 end
    if type(p) == "string" then
      if name:sub(pos, pos + #p - 1) ~= p then return false end
      return at(i + 1, pos + #p)
    end
    local digits = name:match("^%d+", pos)
    if not digits then return false end
    for len = 1, math.min(#digits, 9) do
      local d = digits:sub(1, len)
      local num = tonumber(d)
      for _, r in ipairs(p) do
        if num >= r[1] and num <= r[2] and d == string.format("%0" .. r[3] .. "d", num) then
          if at(i + 1, pos + len) then return true end
          break
        end
      end
    end
    return false
  end
  return at(1, 1)
end

-- The index of a configuration's nodes: per site, "prefix\0suffix" of each
-- name (split at its last number) to its numbers by the length of their
-- digits, each list sorted; per site, the names by their leading letters
-- (up to the first digit); each site's place in the configuration's
-- order (`at`); and the site's place of each list of numbers
-- (`site_of_list`).
local indexes = setmetatable({}, { __mode = "k" })
-- The index's lists numbered without a gap, to their first number.
local DENSE = setmetatable({}, { __mode = "k" })

local function index_of(cfg)
  local idx = indexes[cfg]
  if idx then return idx end
  idx = { by_lead = {}, at = {}, site_of_list = {} }
  for si, site in ipairs(cfg.sites) do
    idx.at[site] = si
    local by_key, by_lead = {}, {}
    for _, name in ipairs(site.nodes) do
      local lead = name:match("^(%D+)%d")
      if lead then
        by_lead[lead] = by_lead[lead] or {}
        table.insert(by_lead[lead], name)
      end
      local pre, digits, suf = split_name(name)
      if digits and #digits <= 9 then
        local key = pre .. "\0" .. suf
        by_key[key] = by_key[key] or {}
        local by_len = by_key[key]
        by_len[#digits] = by_len[#digits] or {}
        table.insert(by_len[#digits], tonumber(digits))
      end
    end
    for _, by_len in pairs(by_key) do
      for _, nums in pairs(by_len) do
        table.sort(nums)
        idx.site_of_list[nums] = si
        -- numbered without a gap (no number twice: then the last would
        -- be nearer the first)
        if nums[#nums] - nums[1] == #nums - 1 then DENSE[nums] = nums[1] end
      end
    end
    idx[si] = by_key
    idx.by_lead[si] = by_lead
  end
  indexes[cfg] = idx
  return idx
end

-- The least number of each digit length, whole numbers (Lua 5.3's
-- integers, as the node numbers are: below's answers stay integers).
local LEAST = {}
for len = 1, 9 do LEAST[len] = floor(10 ^ (len - 1)) end

-- How many entries of a sorted list are below v: arithmetic for a list
-- without a gap (most sites number their nodes so), else a binary search.
local function below(nums, v)
  local first = DENSE[nums]
  if first then
    local k, n = v - first, #nums
    if k < 0 then return 0 end
    return k < n and k or n
  end
  local lo, hi = 1, #nums + 1
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    if nums[mid] < v then lo = mid + 1 else hi = mid end
  end
  return lo - 1
end

-- Per-site counts at 0 (the configuration's order), and each site's place
-- in it.
local function zero_counts(cfg)
  local counts = {}
  for si = 1, #cfg.sites do counts[si] = 0 end
  return counts, index_of(cfg).at
end

-- No names (what a site has that start with letters no node's do).
local NO_NAMES = {}

-- Walk the names of parsed items that are nodes of a site, without making
-- a name: `literal(acc, si, name)` for a node named outright or matched by
-- an item of several bracket groups, `span(acc, si, nums, a, b)` for the
-- places a to b of a sorted index list `nums` (an item
-- "prefix[ranges]suffix": one call a range and digit length; none when
-- empty).  (Functions of the module and a table they add to, not closures:
-- slurmctld runs this for every job with a --nodelist.)  Work bounded by
-- the items and the cluster's size; nil and a message past MAX_MATCHES
-- comparisons of an item with several bracket groups.
local function walk(cfg, items, acc, literal, span)
  local idx = index_of(cfg)
  local at = idx.at
  local budget = M.MAX_MATCHES
  for i = 1, #items do
    local parts = items[i]
    local groups, looks = 0, 0
    for k = 1, #parts do
      if type(parts[k]) == "table" then groups, looks = groups + 1, looks + #parts[k] end
    end
    if groups == 0 then
      local name = table.concat(parts)
      local s = cfg.site_of_node[name]
      if s then literal(acc, at[s], name) end
    elseif groups == 1 and type(parts[2]) == "table" and not parts[1]:find("%d$")
        and not (parts[3] or ""):find("%d") then
      -- prefix[ranges]suffix, split where the index splits a name: binary
      -- searches answer.  A range of width w (zero-padded, "[001-140]")
      -- names numbers written with exactly w digits, and longer ones
      -- without a leading zero; width 0 names numbers without a leading
      -- zero.
      local key, ranges = parts[1] .. "\0" .. (parts[3] or ""), parts[2]
      for si = 1, #cfg.sites do
        local by_len = idx[si][key]
        if by_len then
          for len, nums in pairs(by_len) do
            for k = 1, #ranges do
              local r = ranges[k]
              local lo, hi = r[1], r[2]
              if len > r[3] and len > 1 then lo = math_max(lo, LEAST[len]) end
              if len >= r[3] and lo <= hi then
                local a, b = below(nums, lo) + 1, below(nums, hi + 1)
                if a <= b then span(acc, si, nums, a, b) end
              end
            end
          end
        end
      end
    else
      -- compare with the nodes whose name starts as the item's does, up to
      -- its first digit (all of them when it starts with one or a group);
      -- a comparison costs up to a look at every range of the item
      local lead = type(parts[1]) == "string" and parts[1]:match("^%D+") or nil
      for si, site in ipairs(cfg.sites) do
        local candidates = lead and (idx.by_lead[si][lead] or NO_NAMES) or site.nodes
        budget = budget - #candidates * looks
        if budget < 0 then
          return nil, string.format("hostlist too complex to check (more than %d comparisons)", M.MAX_MATCHES)
        end
        for _, name in ipairs(candidates) do
          if matches(parts, name) then literal(acc, si, name) end
        end
      end
    end
  end
  return true
end

-- Per site (the configuration's order), how many of the names of parsed
-- items are its nodes, each as often as it is named (see walk).
local function count_literal(counts, si)
  counts[si] = counts[si] + 1
end

local function count_span(counts, si, _, a, b)
  counts[si] = counts[si] + b - a + 1
end

local function tally(cfg, items)
  local counts = zero_counts(cfg)
  local ok, err = walk(cfg, items, counts, count_literal, count_span)
  if not ok then return nil, err end
  return counts
end

-- Unique counting (unique_tally): a node whose name has a number is a place
-- in its index list; the places named are spans, each a number a * SPAN + b
-- (a list holds fewer than SPAN nodes, so they sort as numbers), kept per
-- index list (one span as a number, more in a list) and merged at the end.
-- Any other node is kept by name.  `u.named` adds up the names at the
-- sites, duplicates counted.  The state (`UNIQUE`, `u` in the functions)
-- and its `spans` are the module's, emptied after each count: slurmctld counts a list for every
-- job that has one, and most have a span or two.
local SPAN = 67108864   -- 2^26, written so that Lua 5.3's integers stay integers
local UNIQUE = { spans = {}, named = 0 }

local function unique_span(u, _, nums, a, b)
  local spans, key = u.spans, a * SPAN + b
  local had = spans[nums]
  if had == nil then
    spans[nums] = key
  elseif type(had) == "number" then
    spans[nums] = { had, key }
  else
    had[#had + 1] = key
  end
  u.named = u.named + b - a + 1
end

local function unique_literal(u, si, name)
  local pre, digits, suf = split_name(name)
  local by_len = digits and #digits <= 9 and u.idx[si][pre .. "\0" .. suf]
  local nums = by_len and by_len[#digits]
  if nums then
    local place = below(nums, tonumber(digits)) + 1
    unique_span(u, si, nums, place, place)
  else
    u.named = u.named + 1
    u.names = u.names or {}
    if not u.names[name] then
      u.names[name] = true
      u.counts[si] = u.counts[si] + 1
    end
  end
end

-- How many places merged spans cover: one span (a number), or a list.
local function covered(spans)
  if type(spans) == "number" then
    local a = floor(spans / SPAN)
    return spans - a * SPAN - a + 1
  end
  table.sort(spans)
  local n, top = 0, 0
  for k = 1, #spans do
    local key = spans[k]
    local a = floor(key / SPAN)
    local b = key - a * SPAN
    if a <= top then a = top + 1 end
    if b >= a then n = n + b - a + 1 end
    if b > top then top = b end
  end
  return n
end

-- Per site, how many of its nodes parsed items name, each once however
-- often it is named (as Slurm counts a --nodelist), and how many names
-- they have at the sites, duplicates counted.
local function unique_tally(cfg, items)
  local counts, idx, u = zero_counts(cfg), index_of(cfg), UNIQUE
  u.idx, u.counts, u.named, u.names = idx, counts, 0, nil
  local ok, err = walk(cfg, items, u, unique_literal, unique_span)
  local spans, site_of_list = u.spans, idx.site_of_list
  for nums, list in pairs(spans) do
    if ok then
      local si = site_of_list[nums]
      counts[si] = counts[si] + covered(list)
    end
    spans[nums] = nil
  end
  u.idx, u.counts, u.names = nil, nil, nil
  if not ok then return nil, err end
  return counts, u.named
end

-- Whether an expression is names without brackets, each valid (nil and a
-- message for an empty or invalid name); false when it has brackets or is
-- too long for this.
local function is_plain(list, max)
  if type(list) ~= "string" or #list > max or list == "" or find(list, "[", 1, true) then return false end
  if find(list, "^,") or find(list, ",$") or find(list, ",,", 1, true) then
    return nil, string.format("empty host name in '%s'", sub(list, 1, 60))
  end
  local bad = find(list, "[^%w%-%_%.,]")
  if bad then
    return nil, string.format("invalid character in host name at character %d of '%s'", bad, sub(list, 1, 60))
  end
  return true
end

-- Per site, how many names an expression names, and how many names it has;
-- with `unique`, each name once however often it is named (names at no site
-- in an expression with brackets: as often as named).
local function site_tally(list, cfg, unique, max)
  local plain, err = is_plain(list, max)
  if err then return nil, err end
  if plain then
    local counts, at = zero_counts(cfg)
    local site_of, seen, total = cfg.site_of_node, unique and {}, 0
    for name in gmatch(list, "[^,]+") do
      if not (seen and seen[name]) then
        if seen then seen[name] = true end
        total = total + 1
        local s = site_of[name]
        if s then counts[at[s]] = counts[at[s]] + 1 end
      end
    end
    return counts, total
  end
  local items, total = parse_items(list, max)
  if not items then return nil, total end
  if not unique then
    local counts, terr = tally(cfg, items)
    if not counts then return nil, terr end
    return counts, total
  end
  local counts, named = unique_tally(cfg, items)
  if not counts then return nil, named end
  total = total - named
  for si = 1, #counts do total = total + counts[si] end
  return counts, total
end

--- The sites of a configuration whose nodes an expression names, and how
-- many, without expanding it.  A node named twice counts once, as Slurm
-- counts a --nodelist (`a1,a[1-2]` is two nodes); a name at no site counts
-- as often as the expression names it when it has brackets.
-- @param list a hostlist expression (a user's --nodelist)
-- @param cfg a configuration (xsite.config)
-- @return the sites named, in the configuration's order; the number of
--   nodes named (those at no site too); and per site, in the
--   configuration's order, how many of its nodes are named.  Or nil and a
--   message.
function M.sites(list, cfg)
  local counts, total = site_tally(list, cfg, true, M.MAX_LENGTH)
  if not counts then return nil, total end
  local out = {}
  for si, site in ipairs(cfg.sites) do
    if counts[si] > 0 then out[#out + 1] = site end
  end
  return out, total, counts
end

--- How many of an expression's names are nodes of each site, without
-- expanding it (root reads a job's node list from the step's environment,
-- which its owner controls): work and memory bounded by the expression's
-- length (at most `MAX_NODELIST`) and the cluster's size.  A name is counted
-- as often as the expression names it, except in an item of several bracket
-- groups or whose prefix ends in a digit (`r[1,1]n1`: once).
-- @param list a hostlist expression (SLURM_JOB_NODELIST)
-- @param cfg a configuration (xsite.config)
-- @param unique optional: count each name once however often it is named
--   (as `sites` does: the node lists of a heterogeneous job's components,
--   which may share nodes)
-- @return an array of counts in the configuration's site order, the
--   number of names, and how many of them are at no site; or nil and a
--   message
function M.site_counts(list, cfg, unique)
  local counts, total = site_tally(list, cfg, unique, M.MAX_NODELIST)
  if not counts then return nil, total end
  local outside = total
  for _, k in ipairs(counts) do outside = outside - k end
  return counts, total, outside
end

return M
