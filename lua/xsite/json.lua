--- A small JSON encoder: objects with sorted keys, so output is stable.
-- Tables with consecutive integer keys from 1 (or marked by `M.array`) are
-- arrays; an empty table is an object unless marked.  NaN and infinities,
-- which JSON cannot hold, are written as null.
-- @module xsite.json

local M = {}

local ARRAY = setmetatable({}, { __mode = "k" })

--- A value that encodes as `null` where a table field must not be absent.
M.null = setmetatable({}, { __tostring = function() return "null" end })

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
      out[#out + 1] = string.format("%.10g", v)
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

return M
