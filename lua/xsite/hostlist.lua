--- Slurm hostlist expressions, both ways.
--
-- `expand("hd[001-003],ma[1-2]-ib")` gives `{"hd001","hd002","hd003","ma1-ib","ma2-ib"}`;
-- `compress` gives the shortest list of bracket expressions back.  Zero padding
-- follows the width of a range's lower bound (`[001-140]`); several bracket
-- groups in one name expand as a product (`r[1-2]n[1-3]`).  Bad syntax returns
-- `nil, message`; nothing here raises on bad input.
--
-- Code that runs in slurmctld on a user's hostlist (`--nodelist`) never
-- expands it: `count` adds up its ranges and `sites` finds the sites it
-- names from an index of the configured nodes, with work bounded by the
-- length of the expression (at most `MAX_LENGTH`) and the cluster's size.
-- @module xsite.hostlist

local M = {}

--- The most names one expression may expand to.
M.MAX_HOSTS = 1000000
--- The most bracket groups one host name may have.
M.MAX_GROUPS = 16
--- The longest expression `count` and `sites` take.
M.MAX_LENGTH = 8192
--- The most (host expression with several bracket groups x configured node)
-- comparisons `sites` makes.
M.MAX_MATCHES = 5000

local NAME_CHARS = "^[%w%-%_%.]*$"

-- Parse the inside of one bracket group ("001-003,7") into a list of
-- { lo, hi, width } ranges.
local function parse_ranges(inner, expr)
  local ranges = {}
  if inner == "" then
    return nil, string.format("empty brackets in '%s'", expr)
  end
  for item in (inner .. ","):gmatch("([^,]*),") do
    local lo, hi = item:match("^(%d+)%-(%d+)$")
    if not lo then
      lo = item:match("^(%d+)$")
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
    local width = (#lo > 1 and lo:sub(1, 1) == "0") and #lo or 0
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
    local open = expr:find("[%[%]]", pos)
    if not open then
      parts[#parts + 1] = expr:sub(pos)
      break
    end
    if expr:sub(open, open) == "]" then
      return nil, string.format("unmatched ']' in '%s'", expr)
    end
    parts[#parts + 1] = expr:sub(pos, open - 1)
    local close = expr:find("[%[%]]", open + 1)
    if not close or expr:sub(close, close) ~= "]" then
      return nil, string.format("unclosed '[' in '%s'", expr)
    end
    local ranges, err = parse_ranges(expr:sub(open + 1, close - 1), expr)
    if not ranges then return nil, err end
    local n = 0
    for _, r in ipairs(ranges) do n = n + r[2] - r[1] + 1 end
    count = count * n
    if count > M.MAX_HOSTS and not no_limit then
      return nil, string.format("'%s' expands to more than %d names", expr, M.MAX_HOSTS)
    end
    parts[#parts + 1] = ranges
    if #parts > 2 * M.MAX_GROUPS then
      return nil, string.format("more than %d bracket groups in '%s'", M.MAX_GROUPS, expr:sub(1, 60))
    end
    pos = close + 1
  end
  for _, p in ipairs(parts) do
    if type(p) == "string" and not p:find(NAME_CHARS) then
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
    local i = list:find("[%[%],]", pos)
    if not i then break end
    local c = list:sub(i, i)
    if c == "[" then
      depth = depth + 1
    elseif c == "]" then
      depth = depth - 1
    elseif depth == 0 then
      items[#items + 1] = list:sub(start, i - 1)
      start = i + 1
    end
    pos = i + 1
  end
  items[#items + 1] = list:sub(start)
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
local function parse_items(list)
  if type(list) ~= "string" then return nil, "hostlist must be a string" end
  if list == "" then return nil, "empty hostlist" end
  if #list > M.MAX_LENGTH then
    return nil, string.format("hostlist longer than %d characters", M.MAX_LENGTH)
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
  end
  return items, total
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
-- name (split at its last number) to the sorted list of { number, digits }.
local indexes = setmetatable({}, { __mode = "k" })

local function index_of(cfg)
  local idx = indexes[cfg]
  if idx then return idx end
  idx = { by_lead = {} }
  for si, site in ipairs(cfg.sites) do
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
        table.insert(by_key[key], { tonumber(digits), digits })
      end
    end
    for _, l in pairs(by_key) do
      table.sort(l, function(a, b) return a[1] < b[1] end)
    end
    idx[si] = by_key
    idx.by_lead[si] = by_lead
  end
  indexes[cfg] = idx
  return idx
end

-- Whether a sorted { number, digits } list holds a name of one of `ranges`.
local function any_in(list, ranges)
  for _, r in ipairs(ranges) do
    local lo, hi = 1, #list + 1
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if list[mid][1] < r[1] then lo = mid + 1 else hi = mid end
    end
    local fmt = "%0" .. r[3] .. "d"
    for i = lo, #list do
      local e = list[i]
      if e[1] > r[2] then break end
      if e[2] == string.format(fmt, e[1]) then return true end
    end
  end
  return false
end

-- The sites of `hit` (a set), in the configuration's order.
local function in_config_order(cfg, hit)
  local out = {}
  for _, site in ipairs(cfg.sites) do
    if hit[site] then out[#out + 1] = site end
  end
  return out
end

--- The sites of a configuration whose nodes an expression names, without
-- expanding it.
-- @param list a hostlist expression (a user's --nodelist)
-- @param cfg a configuration (xsite.config)
-- @return the sites named, in the configuration's order (names that are
--   no site's are ignored), and the number of names; or nil and a message
function M.sites(list, cfg)
  if type(list) == "string" and #list <= M.MAX_LENGTH and list ~= "" and not list:find("[", 1, true) then
    -- names only: each looked up
    if list:find("^,") or list:find(",$") or list:find(",,", 1, true) then
      return nil, string.format("empty host name in '%s'", list:sub(1, 60))
    end
    local bad = list:find("[^%w%-%_%.,]")
    if bad then
      return nil, string.format("invalid character in host name at character %d of '%s'", bad, list:sub(1, 60))
    end
    local hit, n, site_of = {}, 0, cfg.site_of_node
    for name in list:gmatch("[^,]+") do
      n = n + 1
      local s = site_of[name]
      if s then hit[s] = true end
    end
    return in_config_order(cfg, hit), n
  end
  local items, total = parse_items(list)
  if not items then return nil, total end
  local idx = index_of(cfg)
  local hit, budget = {}, M.MAX_MATCHES
  for _, parts in ipairs(items) do
    local groups = 0
    for _, p in ipairs(parts) do
      if type(p) == "table" then groups = groups + 1 end
    end
    if groups == 0 then
      local s = cfg.site_of_node[table.concat(parts)]
      if s then hit[s] = true end
    elseif groups == 1 and type(parts[2]) == "table" then
      -- prefix[ranges]suffix: the index answers
      local key = parts[1] .. "\0" .. (parts[3] or "")
      for si, site in ipairs(cfg.sites) do
        local l = idx[si][key]
        if not hit[site] and l and any_in(l, parts[2]) then hit[site] = true end
      end
    else
      -- several groups: compare with the nodes whose name starts with the
      -- item's literal prefix and then a digit (all of them when the
      -- prefix is empty or ends in a digit)
      local pre = type(parts[1]) == "string" and parts[1] or ""
      local by_lead = (pre ~= "" and not pre:find("%d$")) and idx.by_lead or nil
      for si, site in ipairs(cfg.sites) do
        local candidates = by_lead and (by_lead[si][pre] or {}) or site.nodes
        if not hit[site] then
          budget = budget - #candidates
          if budget < 0 then
            return nil, string.format("hostlist too complex to check (more than %d comparisons)", M.MAX_MATCHES)
          end
          for _, name in ipairs(candidates) do
            if matches(parts, name) then
              hit[site] = true
              break
            end
          end
        end
      end
    end
  end
  return in_config_order(cfg, hit), total
end

return M
