--- Text a user wrote, made safe to show: in a log line, on a terminal, in
-- an SVG picture, in a record that other tools print.
-- @module xsite.text

local json = require("xsite.json")

local M = {}

--- A count as text for people: a whole number whatever Lua holds it as
-- (an integer or a float), "?" for anything else.
function M.whole(v)
  return type(v) == "number" and v == v and math.abs(v) < math.huge and string.format("%.0f", v) or "?"
end

--- The longest text of a user's taken into a note or a log line.
M.NOTE_MAX = 120

-- The length of the well-formed UTF-8 character at byte j of s that is not a
-- control character (C1, U+0080-U+009F), a line or paragraph separator
-- (U+2028, U+2029: a new line to some viewers) or a bidirectional override
-- or isolate (U+202A-U+202E, U+2066-U+2069: they reorder the rest of a log
-- line), else nil.
local function utf8_len(s, j)
  local b, c = s:byte(j), s:byte(j + 1) or 0
  local len = (b >= 0xC2 and b <= 0xDF and 2) or (b >= 0xE0 and b <= 0xEF and 3) or (b >= 0xF0 and b <= 0xF4 and 4)
  if not len or (b == 0xC2 and c < 0xA0) or (b == 0xE0 and c < 0xA0) or (b == 0xED and c >= 0xA0)
    or (b == 0xF0 and c < 0x90) or (b == 0xF4 and c >= 0x90) then
    return nil
  end
  if b == 0xE2 then
    local d = s:byte(j + 2) or 0
    if (c == 0x80 and d >= 0xA8 and d <= 0xAE) or (c == 0x81 and d >= 0xA6 and d <= 0xA9) then return nil end
  end
  for k = j + 1, j + len - 1 do
    local x = s:byte(k)
    if not x or x < 0x80 or x > 0xBF then return nil end
  end
  return len
end

--- Any value as text that is safe in a log line, a terminal or an SVG: no
-- control characters (C0, DEL and C1), line separators or bidirectional
-- controls, no byte that is not well-formed UTF-8 (each such byte as \xHH), at most max bytes of the value (default
-- M.NOTE_MAX) and "..." when cut.  A backslash stays as it is, so that text
-- made printable once (a note in a record) does not change the second time.
function M.printable(v, max)
  max = max or M.NOTE_MAX
  local s
  if type(v) == "string" then
    s = v
  elseif type(v) == "number" then
    s = v == math.floor(v) and math.abs(v) < 2 ^ 63 and string.format("%.0f", v) or string.format("%.17g", v)
  elseif v == nil or v == json.null then
    s = "null"
  elseif type(v) == "boolean" then
    s = tostring(v)
  elseif type(v) == "table" then
    s = json.is_array(v) and "(an array)" or "(an object)"
  else
    s = "(" .. type(v) .. ")"
  end
  local cut = #s > max
  if cut then s = s:sub(1, max) end
  if not s:find("[%c\128-\255]") then return s .. (cut and "..." or "") end
  local out, i = {}, 1
  while i <= #s do
    local j = s:find("[%c\128-\255]", i)
    if not j then
      out[#out + 1] = s:sub(i)
      break
    end
    out[#out + 1] = s:sub(i, j - 1)
    local len = s:byte(j) >= 0x80 and utf8_len(s, j)
    if len then
      out[#out + 1] = s:sub(j, j + len - 1)
      i = j + len
    else
      out[#out + 1] = string.format("\\x%02x", s:byte(j))
      i = j + 1
    end
  end
  return table.concat(out) .. (cut and "..." or "")
end

return M
