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

local function prefix_factor(p)
  return DEC[p] or BIN[p]
end

-- Each kind: a function from the unit text to a factor, and a description of
-- the accepted units for error messages.
local KINDS = {}

local TIME = { s = 1, ms = 1e-3, us = 1e-6, ["\194\181s"] = 1e-6, ns = 1e-9 }

KINDS.time = {
  units = "s, ms, us or ns",
  factor = function(u) return TIME[u] end,
}

local function byte_factor(u)
  local p = u:match("^(%a?i?)B$")
  if not p then return nil end
  return prefix_factor(p)
end

KINDS.bytes = {
  units = "B, kB, MB, GB, TB, KiB, MiB, GiB, TiB",
  bare = true,
  factor = function(u)
    if u == "" then return 1 end
    return byte_factor(u)
  end,
}

KINDS.bandwidth = {
  units = "B/s, MB/s, GB/s, MiB/s, Mb/s, Gb/s, Mbit/s, Gbit/s",
  factor = function(u)
    local rate = u:match("^(.-)/s$") or u:match("^(.-)ps$")
    if not rate or rate == "" then return nil end
    local f = byte_factor(rate)
    if f then return f end
    local p = rate:match("^(%a?i?)bit$") or rate:match("^(%a?i?)b$")
    if p then
      local pf = prefix_factor(p)
      return pf and pf / 8
    end
    return nil
  end,
}

KINDS.flops = {
  units = "F, MF, GF, TF (or Gflop/s, GFLOPS)",
  factor = function(u)
    local p = u:match("^(%a?)F$") or u:match("^(%a?)[Ff]lop/s$") or u:match("^(%a?)FLOPS$")
    return p and DEC[p]
  end,
}

KINDS.count = {
  units = "a plain number, or k, M, G, T, P",
  bare = true,
  factor = function(u) return DEC[u] end,
}

KINDS.number = {
  units = "none",
  bare = true,
  factor = function(u) if u == "" then return 1 end end,
}

--- Split a quantity into its number and its unit text.
-- @return number, unit text; or nil when no number leads the text
local function split_number(text)
  local num, unit = text:match("^([%d%.]+[eE][-+]?%d+)(.*)$")
  if not num then
    num, unit = text:match("^([%d%.]+)(.*)$")
  end
  if not num or not num:find("%d") then return nil end
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
  local value, unit = split_number(text)
  if not value then
    return nil, string.format("'%s' is not a number with a unit (%s)", text, k.units)
  end
  unit = unit:gsub("^%s+", "")
  if unit == "" and value == 0 and opts and opts.zero then
    return 0  -- a bare 0 is 0 in every unit
  end
  if unit == "" and not k.bare then
    return nil, string.format("'%s' needs a unit (%s)", text, k.units)
  end
  local factor = k.factor(unit)
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

return M
