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

local function encode(v, out)
  local ty = type(v)
  if ty == "nil" or v == M.null then
    out[#out + 1] = "null"
  elseif ty == "boolean" then
    out[#out + 1] = tostring(v)
  elseif ty == "number" then
    if v ~= v or v == math.huge or v == -math.huge then
      out[#out + 1] = "null"
    elseif v == math.floor(v) and math.abs(v) <= 2 ^ 53 then
      out[#out + 1] = string.format("%.0f", v)
    else
      out[#out + 1] = string.format("%.14g", v)
    end
  elseif ty == "string" then
    out[#out + 1] = encode_string(v)
  elseif ty == "table" then
    if is_array(v) then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        encode(v[i], out)
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
-- characters of one number.
M.LIMITS = { max_depth = 200, max_items = math.huge, max_string = math.huge, max_values = math.huge,
  max_long_strings = math.huge, max_number = math.huge }

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
-- yields or calls out).
local lim_depth, lim_items, lim_string, lim_values, lim_number, nvalues

local decode_value

local function skip(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local function fail(i, msg)
  error({ json = string.format("offset %d: %s", i, msg) }, 0)
end

-- A character of the text for a message: itself when printable ASCII.
local function shown(c)
  if c == "" then return "end of text" end
  local b = c:byte()
  if b >= 32 and b < 127 then return "'" .. c .. "'" end
  return string.format("byte 0x%02x", b)
end

local function decode_string(s, i)
  local out, j, len = {}, i + 1, 0
  while true do
    local c = s:sub(j, j)
    if c == "" then fail(i, "unterminated string") end
    if c == '"' then return table.concat(out), j + 1 end
    local piece
    if c == "\\" then
      local e = s:sub(j + 1, j + 1)
      if e == "u" then
        local hex = s:match("^%x%x%x%x", j + 2)
        if not hex then fail(j, "bad \\u escape") end
        local cp = tonumber(hex, 16)
        j = j + 6
        if cp >= 0xDC00 and cp <= 0xDFFF then fail(j - 6, "unpaired surrogate") end
        if cp >= 0xD800 and cp <= 0xDBFF then
          local lo = s:match("^\\u(%x%x%x%x)", j)
          lo = lo and tonumber(lo, 16)
          if not lo or lo < 0xDC00 or lo > 0xDFFF then fail(j, "unpaired surrogate") end
          cp = 0x10000 + (cp - 0xD800) * 1024 + (lo - 0xDC00)
          j = j + 6
        end
        piece = utf8_char(cp)
      elseif ESCAPES[e] then
        piece = ESCAPES[e]
        j = j + 2
      else
        fail(j, "bad escape")
      end
    elseif c:byte() < 32 then
      fail(j, "control character in string")
    else
      local k = s:find('["\\\1-\31]', j) or #s + 1
      piece = s:sub(j, k - 1)
      j = k
    end
    len = len + #piece
    if len > lim_string then fail(i, string.format("string longer than %d bytes", lim_string)) end
    out[#out + 1] = piece
  end
end

-- RFC 8259 numbers: -?(0|[1-9]digits)(.digits)?([eE][+-]?digits)?, found
-- by position (no text of one is made before its length is checked)
local function decode_number(s, i)
  local _, j = s:find("^-?%d+", i)
  if not j then return nil end
  if s:find("^-?0%d", i) then fail(i, "leading zero") end
  j = j + 1
  if s:byte(j) == 46 then  -- '.'
    local _, f = s:find("^%.%d+", j)
    if not f then fail(j, "a digit must follow '.'") end
    j = f + 1
  end
  local e = s:byte(j)
  if e == 101 or e == 69 then  -- 'e', 'E'
    local _, x = s:find("^[eE][-+]?%d+", j)
    if not x then fail(j, "a digit must follow the exponent") end
    j = x + 1
  end
  if j - i > lim_number then fail(i, string.format("a number longer than %d characters", lim_number)) end
  return tonumber(s:sub(i, j - 1)), j
end

function decode_value(s, i, depth)
  i = skip(s, i)
  nvalues = nvalues + 1
  if nvalues > lim_values then fail(i, string.format("more than %d values", lim_values)) end
  local c = s:sub(i, i)
  if c == "{" or c == "[" then
    if depth >= lim_depth then fail(i, string.format("nested too deep (more than %d levels)", lim_depth)) end
  end
  if c == "{" then
    local obj, n = {}, 0
    i = skip(s, i + 1)
    if s:sub(i, i) == "}" then return obj, i + 1 end
    while true do
      if s:sub(i, i) ~= '"' then fail(i, "expected a string key") end
      n = n + 1
      if n > lim_items then fail(i, string.format("an object of more than %d members", lim_items)) end
      local k
      k, i = decode_string(s, i)
      i = skip(s, i)
      if s:sub(i, i) ~= ":" then fail(i, "expected ':'") end
      obj[k], i = decode_value(s, i + 1, depth + 1)
      i = skip(s, i)
      local d = s:sub(i, i)
      if d == "}" then return obj, i + 1 end
      if d ~= "," then fail(i, "expected ',' or '}'") end
      i = skip(s, i + 1)
    end
  elseif c == "[" then
    local arr, n = M.array({}), 0
    i = skip(s, i + 1)
    if s:sub(i, i) == "]" then return arr, i + 1 end
    while true do
      n = n + 1
      if n > lim_items then fail(i, string.format("an array of more than %d elements", lim_items)) end
      -- the common case first: a plain integer right before ',' or ']'
      local _, j = s:find("^-?%d+[,%]]", i)
      if j and j - i <= lim_number and not s:find("^-?0%d", i) then
        nvalues = nvalues + 1
        if nvalues > lim_values then fail(i, string.format("more than %d values", lim_values)) end
        arr[n], i = tonumber(s:sub(i, j - 1)), j
      else
        arr[n], i = decode_value(s, i, depth + 1)
        i = skip(s, i)
      end
      local d = s:sub(i, i)
      if d == "]" then return arr, i + 1 end
      if d ~= "," then fail(i, "expected ',' or ']'") end
      i = i + 1
    end
  elseif c == '"' then
    return decode_string(s, i)
  elseif s:find("^true", i) then
    return true, i + 4
  elseif s:find("^false", i) then
    return false, i + 5
  elseif s:find("^null", i) then
    return M.null, i + 4
  end
  local v, j = decode_number(s, i)
  if v ~= nil then return v, j end
  fail(i, "unexpected " .. shown(c))
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
-- @param opts optional limits (see `M.LIMITS`); past one, the text is refused
-- @return the value, or nil and a message with the offset of the error
function M.decode(text, opts)
  if type(text) ~= "string" then return nil, "no text" end
  opts = opts or M.LIMITS
  lim_depth = opts.max_depth or M.LIMITS.max_depth
  lim_items = opts.max_items or M.LIMITS.max_items
  lim_string = opts.max_string or M.LIMITS.max_string
  lim_values = opts.max_values or M.LIMITS.max_values
  lim_number = opts.max_number or M.LIMITS.max_number
  local lim_long = opts.max_long_strings or M.LIMITS.max_long_strings
  if lim_long < math.huge and long_strings(text, lim_long) > lim_long then
    return nil, string.format("more than %d strings of 32 bytes or more", lim_long)
  end
  nvalues = 0
  local ok, v, i = pcall(decode_value, text, 1, 0)
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
