--- A small JSON encoder: objects with sorted keys, so output is stable.
-- Tables with consecutive integer keys from 1 (or marked by `M.array`) are
-- arrays; an empty table is an object unless marked.  NaN and infinities,
-- which JSON cannot hold, are written as null.
-- @module xsite.json

local M = {}

local ARRAY = setmetatable({}, { __mode = "k" })

--- A value that encodes as `null` where a table field must not be absent.
M.null = setmetatable({}, { __tostring = function() return "null" end })

--- Whether a decoded field is there: neither absent nor `null`.
function M.present(v) return v ~= nil and v ~= M.null end

--- Mark a table as an array (so that an empty one encodes as `[]`).
function M.array(t)
  ARRAY[t] = true
  return t
end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function encode_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function is_array(t)
  if ARRAY[t] then return true end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  if n == 0 then return false end
  for i = 1, n do
    if t[i] == nil then return false end
  end
  return true
end

-- How a number is written: a whole number up to 2^53 in full, any other
-- with 14 significant digits; NaN and infinities as null (no argument).
local function number_format(x)
  if x ~= x or x == math.huge or x == -math.huge then return "null" end
  if x == math.floor(x) and math.abs(x) <= 2 ^ 53 then return "%.0f" end
  return "%.14g"
end

-- Numbers in a row of an array are written NUMBERS at a time by one
-- string.format: one string made for each run, not one for each number
-- (a number's text, chosen by whoever gave it, would be a Lua string: see
-- `made` below).  The runs are long (a matrix row of up to 4096 ranks is
-- one): Lua 5.1 hashes a long string from some of its bytes only, so runs
-- whose other bytes differ share a hash chain, and the fewer they are the
-- less that costs (64 at a time, a 704 x 704 matrix of digits took 1.2 s
-- instead of 0.25 s).
local NUMBERS = 4096
local unpack = table.unpack or unpack

-- v[i..j], all numbers, into out: whole numbers (the common case) with one
-- format and v itself as the arguments, else each number's format and the
-- numbers that are not null.
local function encode_numbers(v, i, j, out)
  local k = i
  while k <= j and number_format(v[k]) == "%.0f" do k = k + 1 end
  if k > j then
    out[#out + 1] = string.format(string.rep("%.0f,", j - i) .. "%.0f", unpack(v, i, j))
    return
  end
  local fmt, args = {}, {}
  for m = i, j do
    local f = number_format(v[m])
    fmt[#fmt + 1] = f
    if f ~= "null" then args[#args + 1] = v[m] end
  end
  out[#out + 1] = string.format(table.concat(fmt, ","), unpack(args, 1, #args))
end

local function encode(v, out)
  local ty = type(v)
  if ty == "nil" or v == M.null then
    out[#out + 1] = "null"
  elseif ty == "boolean" then
    out[#out + 1] = tostring(v)
  elseif ty == "number" then
    local f = number_format(v)
    out[#out + 1] = f == "null" and f or string.format(f, v)
  elseif ty == "string" then
    out[#out + 1] = encode_string(v)
  elseif ty == "table" then
    if is_array(v) then
      out[#out + 1] = "["
      local i, n = 1, #v
      while i <= n do
        if i > 1 then out[#out + 1] = "," end
        local j = i
        while j < n and j - i + 1 < NUMBERS and type(v[j]) == "number" and type(v[j + 1]) == "number" do
          j = j + 1
        end
        if type(v[i]) == "number" then
          encode_numbers(v, i, j, out)
        else
          encode(v[i], out)
        end
        i = j + 1
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then error("xsite.json: object key is not a string", 3) end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = encode_string(k)
        out[#out + 1] = ":"
        encode(v[k], out)
      end
      out[#out + 1] = "}"
    end
  else
    error("xsite.json: cannot encode a " .. ty, 3)
  end
end

--- Encode a value as JSON text.
function M.encode(v)
  local out = {}
  encode(v, out)
  return table.concat(out)
end

-- Decoding: a strict recursive-descent reader of RFC 8259 JSON.  Never
-- raises on bad input: `decode` returns nil and a message with the offset.
-- Its work is bounded: by the length of the text (every byte is looked at a
-- bounded number of times) and by the limits below, which a caller reading
-- someone else's text (root reading a user's file) sets tighter.

--- Default limits of `decode` (each can be given in its `opts`).
-- `max_depth`: arrays and objects inside each other; `max_items`: elements
-- of one array or members of one object; `max_string`: bytes of one string
-- or key once decoded; `max_values`: values in the whole text;
-- `max_long_strings`: strings and keys of 32 bytes or more as written, and
-- their pieces between escapes (see `long_strings`); `max_number`:
-- characters of one number; `max_strings`: Lua strings the decode makes
-- (see `made`).
M.LIMITS = { max_depth = 200, max_items = math.huge, max_string = math.huge, max_values = math.huge,
  max_long_strings = math.huge, max_number = math.huge, max_strings = math.huge }

local ESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

local function utf8_char(cp)
  if cp < 0x80 then return string.char(cp) end
  if cp < 0x800 then return string.char(0xC0 + math.floor(cp / 64), 0x80 + cp % 64) end
  if cp < 0x10000 then
    return string.char(0xE0 + math.floor(cp / 4096), 0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return string.char(0xF0 + math.floor(cp / 262144), 0x80 + math.floor(cp / 4096) % 64,
    0x80 + math.floor(cp / 64) % 64, 0x80 + cp % 64)
end

-- The limits of the decode in progress (decode is not re-entrant: it never
-- yields or calls out), the keys whose values it skips, and its counts.
local lim_depth, lim_items, lim_string, lim_values, lim_number, lim_strings, skipped, nvalues, nstrings

local byte = string.byte
local NO_SKIP = {}

local decode_value

local function skip(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local function fail(i, msg)
  error({ json = string.format("offset %d: %s", i, msg) }, 0)
end

-- Every Lua string is interned, and Lua 5.1 hashes one with a seed that is
-- the same in every process: texts built offline to share a hash chain
-- make each new one compare with all those before it, a cost that grows
-- with the square of their number (80000 keys of 8 bytes in a 1 MiB text:
-- 45 s).  So a decode counts the strings it makes (keys, string values and
-- their pieces, the text of a number it cannot read from its bytes) and
-- stops past max_strings; numbers are read from their bytes; values the
-- caller skips are checked, not made.
local function made(i)
  nstrings = nstrings + 1
  if nstrings > lim_strings then fail(i, string.format("more than %d strings and keys", lim_strings)) end
end

-- A character of the text for a message: itself when printable ASCII.
local function shown(c)
  if c == "" then return "end of text" end
  local b = c:byte()
  if b >= 32 and b < 127 then return "'" .. c .. "'" end
  return string.format("byte 0x%02x", b)
end

-- The value of a hex digit's byte, or nil.
local function hex_digit(b)
  if b == nil then return nil end
  if b >= 48 and b <= 57 then return b - 48 end
  if b >= 65 and b <= 70 then return b - 55 end
  if b >= 97 and b <= 102 then return b - 87 end
end

-- The four hex digits at s[j], or nil.
local function hex4(s, j)
  local a, b, c, d = byte(s, j, j + 3)
  a, b, c, d = hex_digit(a), hex_digit(b), hex_digit(c), hex_digit(d)
  if a and b and c and d then return ((a * 16 + b) * 16 + c) * 16 + d end
end

-- A string from s[i] (its opening quote): its value (nil when not `make`:
-- checked the same, nothing made) and the position after it.
local function decode_string(s, i, make)
  local out, j, len = {}, i + 1, 0
  while true do
    local c = byte(s, j)
    if c == nil then fail(i, "unterminated string") end
    if c == 34 then  -- '"'
      if not make then return nil, j + 1 end
      if #out <= 1 then return out[1] or "", j + 1 end
      made(i)
      return table.concat(out), j + 1
    end
    local piece, n
    if c == 92 then  -- '\\'
      local e = s:sub(j + 1, j + 1)
      if e == "u" then
        local cp = hex4(s, j + 2)
        if not cp then fail(j, "bad \\u escape") end
        j = j + 6
        if cp >= 0xDC00 and cp <= 0xDFFF then fail(j - 6, "unpaired surrogate") end
        if cp >= 0xD800 and cp <= 0xDBFF then
          local lo = byte(s, j) == 92 and byte(s, j + 1) == 117 and hex4(s, j + 2)
          if not lo or lo < 0xDC00 or lo > 0xDFFF then fail(j, "unpaired surrogate") end
          cp = 0x10000 + (cp - 0xD800) * 1024 + (lo - 0xDC00)
          j = j + 6
        end
        n = cp < 0x80 and 1 or cp < 0x800 and 2 or cp < 0x10000 and 3 or 4
        if make and n > 1 then
          made(i)
          piece = utf8_char(cp)
        elseif make then
          piece = string.char(cp)
        end
      elseif ESCAPES[e] then
        piece, n = ESCAPES[e], 1
        j = j + 2
      else
        fail(j, "bad escape")
      end
    elseif c < 32 then
      fail(j, "control character in string")
    else
      local k = s:find('["\\\1-\31]', j) or #s + 1
      n = k - j
      if make and n > 1 then
        made(i)
        piece = s:sub(j, k - 1)
      elseif make then
        piece = s:sub(j, j)
      end
      j = k
    end
    len = len + n
    if len > lim_string then fail(i, string.format("string longer than %d bytes", lim_string)) end
    if make then out[#out + 1] = piece end
  end
end

-- The value of the digits s[i..j], at most 15 of them (exact), read from
-- their bytes five at a time.
local function digits(s, i, j)
  local v, k = 0, i
  while j - k >= 4 do
    local a, b, c, d, e = byte(s, k, k + 4)
    v = v * 100000 + (a * 10000 + b * 1000 + c * 100 + d * 10 + e - 533328)
    k = k + 5
  end
  while k <= j do
    v = v * 10 + byte(s, k) - 48
    k = k + 1
  end
  return v
end

-- Powers of ten a double holds exactly; 10^15, an integer where Lua has them.
local POW10 = {}
for k = 0, 22 do POW10[k] = 10 ^ k end
local E15 = 1000000000000000

-- The value of the number s[i..j - 1]: its integer digits end at d, its
-- fraction is f0..f1 (f1 < f0: none), its exponent's digits x0..x1 (x1 <
-- x0: none; xneg its sign).  Read from the bytes when that gives the double
-- nearest to it, as tonumber does: up to 15 significant digits scaled by
-- at most 10^22 (one rounding), or an integer of up to 20 digits
-- (hi * 10^15 + lo, one rounding).  Else from its text, which is made.
local function number_value(s, i, d, f0, f1, x0, x1, xneg, j)
  local neg = byte(s, i) == 45
  local d0 = neg and i + 1 or i
  local nint, nfrac, v = d - d0 + 1, f1 - f0 + 1, nil
  if nint + nfrac <= 15 and x1 - x0 < 3 then
    v = digits(s, d0, d)
    if nfrac > 0 or x1 >= x0 then
      if nfrac > 0 then v = v * POW10[nfrac] + digits(s, f0, f1) end
      local e = (x1 >= x0 and digits(s, x0, x1) or 0) * (xneg and -1 or 1) - nfrac
      if e >= 0 and e <= 22 then
        v = v * POW10[e]
      elseif e < 0 and e >= -22 then
        v = v / POW10[-e]
      else
        v = nil
      end
    end
  elseif nint <= 20 and nfrac == 0 and x1 < x0 then
    -- an integer where Lua has them, as tonumber gives it, from -2^63 to
    -- 2^63 - 1 (2^63 wraps to -2^63 there, and its negation is itself)
    local hi, lo = digits(s, d0, d - 15), digits(s, d - 14, d)
    if hi < 9223 or (hi == 9223 and lo <= (neg and 372036854775808 or 372036854775807)) then
      v = hi * E15 + lo
    else
      v = hi * POW10[15] + lo
    end
  end
  if v == nil then
    made(i)
    return tonumber(s:sub(i, j - 1))
  end
  return neg and -v or v
end

-- RFC 8259 numbers: -?(0|[1-9]digits)(.digits)?([eE][+-]?digits)?, found
-- by position; its value from number_value.
local function decode_number(s, i, make)
  local _, d = s:find("^-?%d+", i)
  if not d then return nil end
  if s:find("^-?0%d", i) then fail(i, "leading zero") end
  local j, f0, f1, x0, x1, xneg = d + 1, 0, -1, 0, -1, false
  if byte(s, j) == 46 then  -- '.'
    f0 = j + 1
    _, f1 = s:find("^%d+", f0)
    if not f1 then fail(j, "a digit must follow '.'") end
    j = f1 + 1
  end
  local e = byte(s, j)
  if e == 101 or e == 69 then  -- 'e', 'E'
    local sign = byte(s, j + 1)
    x0 = (sign == 43 or sign == 45) and j + 2 or j + 1
    xneg = sign == 45
    _, x1 = s:find("^%d+", x0)
    if not x1 then fail(j, "a digit must follow the exponent") end
    j = x1 + 1
  end
  if j - i > lim_number then fail(i, string.format("a number longer than %d characters", lim_number)) end
  if not make then return false, j end
  return number_value(s, i, d, f0, f1, x0, x1, xneg, j), j
end

-- The value at s[i] (after blanks) and the position after it; with `make`
-- false it is checked the same, and nothing of it is made (nil).
function decode_value(s, i, depth, make)
  i = skip(s, i)
  nvalues = nvalues + 1
  if nvalues > lim_values then fail(i, string.format("more than %d values", lim_values)) end
  local c = byte(s, i)
  if c == 123 or c == 91 then  -- '{', '['
    if depth >= lim_depth then fail(i, string.format("nested too deep (more than %d levels)", lim_depth)) end
  end
  if c == 123 then
    local obj, n = make and {}, 0
    i = skip(s, i + 1)
    if byte(s, i) == 125 then return obj, i + 1 end
    while true do
      if byte(s, i) ~= 34 then fail(i, "expected a string key") end
      n = n + 1
      if n > lim_items then fail(i, string.format("an object of more than %d members", lim_items)) end
      local k, v
      k, i = decode_string(s, i, make)
      i = skip(s, i)
      if byte(s, i) ~= 58 then fail(i, "expected ':'") end
      local keep = make and not skipped[k]
      v, i = decode_value(s, i + 1, depth + 1, keep)
      if keep then obj[k] = v end
      i = skip(s, i)
      local d = byte(s, i)
      if d == 125 then return obj, i + 1 end
      if d ~= 44 then fail(i, "expected ',' or '}'") end
      i = skip(s, i + 1)
    end
  elseif c == 91 then
    local arr, n = make and M.array({}), 0
    i = skip(s, i + 1)
    if byte(s, i) == 93 then return arr, i + 1 end
    while true do
      n = n + 1
      if n > lim_items then fail(i, string.format("an array of more than %d elements", lim_items)) end
      -- the common case first: a plain integer right before ',' or ']'
      local _, j = s:find("^-?%d+[,%]]", i)
      local v
      local len, b = j and j - i, byte(s, i)
      -- (a leading zero is refused by decode_value)
      if j and len <= lim_number and (len == 1 or (b ~= 48 and (b ~= 45 or byte(s, i + 1) ~= 48))) then
        nvalues = nvalues + 1
        if nvalues > lim_values then fail(i, string.format("more than %d values", lim_values)) end
        if make and len == 1 then
          v = b - 48
        elseif make and len <= 15 and b ~= 45 then
          v = digits(s, i, j - 1)
        elseif make then
          v = number_value(s, i, j - 1, 0, -1, 0, -1, false, j)
        end
        i = j
      else
        v, i = decode_value(s, i, depth + 1, make)
        i = skip(s, i)
      end
      if make then arr[n] = v end
      local d = byte(s, i)
      if d == 93 then return arr, i + 1 end
      if d ~= 44 then fail(i, "expected ',' or ']'") end
      i = i + 1
    end
  elseif c == 34 then
    return decode_string(s, i, make)
  elseif s:find("^true", i) then
    return true, i + 4
  elseif s:find("^false", i) then
    return false, i + 5
  elseif s:find("^null", i) then
    return M.null, i + 4
  end
  local v, j = decode_number(s, i, make)
  if v ~= nil then return make and v or nil, j end
  fail(i, "unexpected " .. shown(s:sub(i, i)))
end

-- The strings of 32 bytes or more a decode of a text would make, counted
-- from positions (none is made): each string or key that long as written,
-- and each of its pieces between escapes that long (decode_string makes
-- them too); the count stops past `limit`.  Lua 5.1 to 5.3 hash such a
-- string from some of its bytes only: many that differ elsewhere share one
-- chain of the string table, and making each compares it with all those
-- before it, a cost that grows with the square of their number.  A text
-- with too many is refused unread.  (Numbers are bounded by max_number.)
local function long_strings(s, limit)
  local n, i = 0, 1
  while n <= limit do
    local open = s:find('"', i, true)
    if not open then break end
    local j, escaped = open + 1, false
    while true do
      local q = s:find('["\\]', j)
      if not q then return n end
      if q - j >= 32 then n = n + 1 end
      if s:byte(q) ~= 92 then
        j = q
        break
      end
      escaped, j = true, q + 2
    end
    if escaped and j - open - 1 >= 32 then n = n + 1 end
    i = j + 1
  end
  return n
end

--- Decode JSON text.  `null` becomes `M.null`; arrays are marked (`M.is_array`).
-- @param text the text
-- @param opts optional limits (see `M.LIMITS`); past one, the text is
--   refused; and `skip`, a set of keys whose values, in any object, are
--   checked but not made (the key is absent from the result)
-- @return the value, or nil and a message with the offset of the error
function M.decode(text, opts)
  if type(text) ~= "string" then return nil, "no text" end
  opts = opts or M.LIMITS
  lim_depth = opts.max_depth or M.LIMITS.max_depth
  lim_items = opts.max_items or M.LIMITS.max_items
  lim_string = opts.max_string or M.LIMITS.max_string
  lim_values = opts.max_values or M.LIMITS.max_values
  lim_number = opts.max_number or M.LIMITS.max_number
  lim_strings = opts.max_strings or M.LIMITS.max_strings
  skipped = opts.skip or NO_SKIP
  local lim_long = opts.max_long_strings or M.LIMITS.max_long_strings
  if lim_long < math.huge and long_strings(text, lim_long) > lim_long then
    return nil, string.format("more than %d strings of 32 bytes or more", lim_long)
  end
  nvalues, nstrings = 0, 0
  local ok, v, i = pcall(decode_value, text, 1, 0, true)
  if not ok then
    if type(v) == "table" and v.json then return nil, v.json end
    return nil, tostring(v)
  end
  i = skip(text, i)
  if i <= #text then return nil, string.format("offset %d: text after the value", i) end
  return v
end

--- Whether a table is an array: decoded from a JSON array, or marked by `M.array`.
function M.is_array(t)
  return type(t) == "table" and ARRAY[t] == true
end

return M
