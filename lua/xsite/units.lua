--- Quantities with unit suffixes, as written in xsite.conf and on the command line.
--
-- Every quantity is stored in base SI units: seconds, bytes, bytes per second,
-- flop per second, plain counts.  Decimal prefixes are powers of 1000
-- (`930MB/s` = 930e6 B/s), binary prefixes powers of 1024 (`1GiB`); a lower-case
-- `b` or `bit` is a bit (`40Gb/s` = 5e9 B/s).  Parsing never raises on bad input:
-- it returns `nil, message`.
-- @module xsite.units

local M = {}

local DEC = { [""] = 1, k = 1e3, K = 1e3, M = 1e6, G = 1e9, T = 1e12, P = 1e15, E = 1e18 }
local BIN = { Ki = 1024, Mi = 1024 ^ 2, Gi = 1024 ^ 3, Ti = 1024 ^ 4, Pi = 1024 ^ 5 }

-- Each kind: the factor of every unit text it accepts (a table, so that
-- parsing a value is one lookup), whether a bare number is allowed, and a
-- description of the accepted units for error messages.
local KINDS = {}

local function prefixed(out, prefixes, suffix)
  for p, f in pairs(prefixes) do out[p .. suffix] = f end
  return out
end

KINDS.time = {
  units = "s, ms, us or ns",
  factors = { s = 1, ms = 1e-3, us = 1e-6, ["\194\181s"] = 1e-6, ns = 1e-9 },
}

-- B with a decimal or binary prefix
local BYTES = prefixed(prefixed({}, DEC, "B"), BIN, "B")

KINDS.bytes = {
  units = "B, kB, MB, GB, TB, KiB, MiB, GiB, TiB",
  bare = true,
  factors = prefixed({ [""] = 1 }, BYTES, ""),
}

-- bytes or bits (b, bit) with a prefix, per second (/s or ps)
local bandwidth = {}
for _, per in ipairs({ "/s", "ps" }) do
  prefixed(bandwidth, BYTES, per)
  for _, bit in ipairs({ "b", "bit" }) do
    for p, f in pairs(DEC) do bandwidth[p .. bit .. per] = f / 8 end
    for p, f in pairs(BIN) do bandwidth[p .. bit .. per] = f / 8 end
  end
end
KINDS.bandwidth = {
  units = "B/s, MB/s, GB/s, MiB/s, Mb/s, Gb/s, Mbit/s, Gbit/s",
  factors = bandwidth,
}

-- flop/s with a one-letter decimal prefix
local flops = {}
for p, f in pairs(DEC) do
  if #p <= 1 then
    for _, u in ipairs({ "F", "flop/s", "Flop/s", "FLOPS" }) do flops[p .. u] = f end
  end
end
KINDS.flops = {
  units = "F, MF, GF, TF (or Gflop/s, GFLOPS)",
  factors = flops,
}

KINDS.count = {
  units = "a plain number, or k, M, G, T, P",
  bare = true,
  factors = DEC,
}

KINDS.number = {
  units = "none",
  bare = true,
  factors = { [""] = 1 },
}

--- Split a quantity into its number and its unit text.
-- @return number, unit text; or nil when no number leads the text
local function split_number(text)
  local num, unit = text:match("^([%d%.]+)(.*)$")
  if not num or not num:find("%d") then return nil end
  if unit:find("^[eE][-+]?%d") then
    local exp
    exp, unit = unit:match("^([eE][-+]?%d+)(.*)$")
    num = num .. exp
  end
  local value = tonumber(num)
  if not value then return nil end
  value = value * 1.0  -- a float: Lua 5.3+ integers would wrap when scaled
  return value, unit
end

--- Parse a quantity of a kind.
-- @param text the text, e.g. `"930MB/s"`
-- @param kind one of `time`, `bytes`, `bandwidth`, `flops`, `count`, `number`
-- @param opts optional table: `zero = true` allows 0 (default: the value must be > 0)
-- @return the value in base units, or nil and a message
function M.parse(text, kind, opts)
  local k = KINDS[kind]
  if not k then error("xsite.units: unknown kind " .. tostring(kind), 2) end
  if type(text) ~= "string" or text == "" then
    return nil, "empty value"
  end
  -- The usual form, "12MB", "1.5G", "1e12", in one match; anything else
  -- (and every error) takes the general path below, which gives the same
  -- value for what this one takes.
  local num, u = text:match("^(%d+%.?%d*[eE]?%d*)(%a*)$")
  if num and (u ~= "" or k.bare) then
    local factor, n = k.factors[u], tonumber(num)
    if factor and n then
      local v = n * 1.0 * factor
      if v > 0 and v < math.huge then return v end
    end
  end
  local value, unit = split_number(text)
  if not value then
    return nil, string.format("'%s' is not a number with a unit (%s)", text, k.units)
  end
  if unit:find("^%s") then unit = unit:gsub("^%s+", "") end
  if unit == "" and value == 0 and opts and opts.zero then
    return 0  -- a bare 0 is 0 in every unit
  end
  if unit == "" and not k.bare then
    return nil, string.format("'%s' needs a unit (%s)", text, k.units)
  end
  local factor = k.factors[unit]
  if not factor then
    return nil, string.format("'%s': unknown unit '%s' (%s)", text, unit, k.units)
  end
  value = value * factor
  if value ~= value or value == math.huge then
    return nil, string.format("'%s' is out of range", text)
  end
  if value == 0 and not (opts and opts.zero) then
    return nil, string.format("'%s' must be greater than 0", text)
  end
  return value
end

--- Parse a positive integer (with optional decimal prefix).
-- @return the integer, or nil and a message
function M.parse_integer(text, opts)
  local v, err = M.parse(text, "count", opts)
  if not v then return nil, err end
  if v ~= math.floor(v) then
    return nil, string.format("'%s' is not a whole number", text)
  end
  if v >= 2 ^ 53 then return nil, string.format("'%s' is too large", text) end
  return math.floor(v)  -- an integer on Lua 5.3+
end

local function trim(s)
  -- %g with up to 4 significant digits, no trailing zeros
  return (string.format("%.4g", s))
end

--- Format seconds as a short human-readable time ("145 us", "9 ms", "1.5 s").
function M.format_time(s)
  if s == 0 then return "0 s" end
  local a = math.abs(s)
  if a < 1e-3 then return trim(s * 1e6) .. " us" end
  if a < 1 then return trim(s * 1e3) .. " ms" end
  if a < 120 then return trim(s) .. " s" end
  if a < 7200 then return trim(s / 60) .. " min" end
  return trim(s / 3600) .. " h"
end

--- Format bytes per second with a decimal prefix ("930 MB/s", "2.6 GB/s").
function M.format_bandwidth(bps)
  local a = math.abs(bps)
  if a >= 1e12 then return trim(bps / 1e12) .. " TB/s" end
  if a >= 1e9 then return trim(bps / 1e9) .. " GB/s" end
  if a >= 1e6 then return trim(bps / 1e6) .. " MB/s" end
  if a >= 1e3 then return trim(bps / 1e3) .. " kB/s" end
  return trim(bps) .. " B/s"
end

--- Format bytes with a decimal prefix ("8 GB").
function M.format_bytes(b)
  local a = math.abs(b)
  for _, u in ipairs({ { 1e15, "PB" }, { 1e12, "TB" }, { 1e9, "GB" }, { 1e6, "MB" }, { 1e3, "kB" } }) do
    if a >= u[1] then return trim(b / u[1]) .. " " .. u[2] end
  end
  return trim(b) .. " B"
end

--- A time for people, rounded: whole seconds up to 2 minutes, whole
-- minutes up to 2 hours, then hours to a tenth ("80 s", "5 min", "2.5 h").
function M.round_time(s)
  if s < 120 then return string.format("%d s", math.floor(s + 0.5)) end
  if s < 7200 then return string.format("%d min", math.floor(s / 60 + 0.5)) end
  return string.format("%.1f h", s / 3600)
end

--- Seconds of a Slurm duration: [DD-]HH:MM:SS, MM:SS, or MM:SS.fff.
-- @return seconds, or nil for an unknown or unlimited duration
function M.slurm_duration(text)
  if type(text) ~= "string" then return nil end
  local d, rest = text:match("^(%d+)%-(.*)$")
  rest = rest or text
  local h, m, s = rest:match("^(%d+):(%d+):(%d+)")
  if not h then
    h = "0"
    m, s = rest:match("^(%d+):(%d+)")
  end
  if not m then return nil end
  return (tonumber(d) or 0) * 86400 + tonumber(h) * 3600 + tonumber(m) * 60 + tonumber(s)
end

-- One item of a Slurm license list: its name (blanks around it dropped:
-- Slurm refuses them, and a check that a name is there must not miss it for
-- them) and its count (1 without one, nil when it is not a whole number);
-- nil for an item without a name.
local function license_item(item)
  local name, rest = item:match("^%s*([^:=]*)(.*)$")
  name = name:match("^(.-)%s*$")
  if name == "" then return nil end
  if rest == "" then return name, 1 end
  return name, tonumber(rest:match("^[:=](%d+)$"))
end

--- The items of a Slurm license list, read as slurmctld reads them
-- (`_build_license_list`, 22.05 to 25.11): items between ',' or ';' (and
-- '|', a job's request of one of several, from 25.11); a name up to ':' or
-- '=', then a count, 1 when there is none.  A license of slurmdbd keeps its
-- server in its name ("a@db:4").  The one reader of license lists: the
-- policy's, `xsite load`'s and slurm.conf's `Licenses=`.
-- @return a list of { name, count } (see license_item)
function M.license_items(text)
  local out = {}
  if type(text) ~= "string" then return out end
  for item in text:gmatch("[^,;|]+") do
    local name, n = license_item(item)
    if name then out[#out + 1] = { name, n } end
  end
  return out
end

--- The units of license `name` in a license list (read as `license_items`
-- reads it, with no table an item: a user's list may be long; names
-- compared without case, so that no spelling slips past): their sum, and
-- whether the list names it at all.
function M.license_units(text, name)
  local total, named = 0, false
  if type(text) ~= "string" then return total, named end
  name = name:lower()
  for item in text:gmatch("[^,;|]+") do
    local iname, n = license_item(item)
    if iname and iname:lower() == name then
      named = true
      total = total + (n or 0)
    end
  end
  return total, named
end

return M
