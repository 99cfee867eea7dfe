-- Specs for xsite.json: a small encoder with stable output.

local HERE = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = HERE .. "/../../lua/?.lua;" .. package.path

local json = require("xsite.json")

-- An independent decoder, when one is installed (lua-dkjson).
local has_dkjson, dkjson = pcall(require, "dkjson")

describe("xsite.json.encode", function()
  describe("objects", function()
    it("writes keys sorted, whatever the order they were set in", function()
      local a, b = {}, {}
      a.zeta, a.alpha, a.mid = 1, 2, 3
      b.mid, b.zeta, b.alpha = 3, 1, 2
      assert.are.equal('{"alpha":2,"mid":3,"zeta":1}', json.encode(a))
      assert.are.equal(json.encode(a), json.encode(b))
    end)

    it("sorts keys by bytes: upper case before lower case, shorter prefix first", function()
      assert.are.equal('{"B":1,"a":2,"ab":3}', json.encode({ ab = 3, a = 2, B = 1 }))
    end)

    it("sorts the keys of nested objects too", function()
      assert.are.equal('{"a":{"x":1,"y":2},"b":[{"c":3,"d":4}]}',
        json.encode({ b = { { d = 4, c = 3 } }, a = { y = 2, x = 1 } }))
    end)

    it("writes an empty table as an object", function()
      assert.are.equal("{}", json.encode({}))
    end)

    it("escapes keys like strings", function()
      assert.are.equal('{"a\\"b":1}', json.encode({ ['a"b'] = 1 }))
    end)

    it("raises on a key that is not a string (a caller mistake)", function()
      local sparse = {}
      sparse[1], sparse[3] = "a", "c"
      assert.has_error(function() json.encode(sparse) end, "xsite.json: object key is not a string")
      assert.has_error(function() json.encode({ 1, 2, x = 3 }) end, "xsite.json: object key is not a string")
      assert.has_error(function() json.encode({ [true] = 1 }) end, "xsite.json: object key is not a string")
    end)
  end)

  describe("arrays", function()
    it("writes a table with keys 1..n as an array, in order", function()
      assert.are.equal('[3,1,2]', json.encode({ 3, 1, 2 }))
      assert.are.equal('["a",["b",[]],{}]', json.encode({ "a", { "b", json.array({}) }, {} }))
    end)

    it("writes an empty table marked with json.array as []", function()
      local t = {}
      assert.are.equal(t, json.array(t))
      assert.are.equal("[]", json.encode(t))
      assert.are.equal('{"rows":[]}', json.encode({ rows = json.array({}) }))
    end)
  end)

  describe("strings", function()
    it("escapes quotes, backslashes and the named control characters", function()
      assert.are.equal([["a\"b\\c"]], json.encode('a"b\\c'))
      assert.are.equal([["\b\f\n\r\t"]], json.encode("\b\f\n\r\t"))
    end)

    it("writes other control characters as \\u00XX", function()
      assert.are.equal([["\u0000\u0001\u001f\u007f"]], json.encode("\0\1\31\127"))
    end)

    it("leaves slashes, blanks and UTF-8 as they are", function()
      assert.are.equal('"/var/spool x \194\181s"', json.encode("/var/spool x \194\181s"))
    end)
  end)

  describe("numbers", function()
    it("writes whole numbers without a fraction, floats and integers alike", function()
      assert.are.equal("0", json.encode(0))
      assert.are.equal("-3", json.encode(-3))
      assert.are.equal("42", json.encode(42.0))
      assert.are.equal("100000000000000", json.encode(1e14))
      assert.are.equal("[1,2]", json.encode({ 1.0, 2 }))
    end)

    it("writes whole numbers up to 2^53 exactly", function()
      assert.are.equal("999999999999999", json.encode(999999999999999))
      assert.are.equal("1234567890123456", json.encode(1234567890123456))
      assert.are.equal("9007199254740992", json.encode(2 ^ 53))
    end)

    it("writes fractions as numbers that read back close to the value", function()
      assert.are.equal("1.5", json.encode(1.5))
      assert.are.equal("-0.25", json.encode(-0.25))
      assert.are.equal("0.1", json.encode(0.1))
      for _, v in ipairs({ 1 / 3, 145e-6, 1e-7, 2.5e20, -7.25e-300 }) do
        local text = json.encode(v)
        assert.matches("^%-?%d+%.?%d*[eE]?[-+]?%d*$", text)
        local back = tonumber(text)
        assert.is_true(math.abs(back - v) <= 1e-9 * math.abs(v), text .. " for " .. v)
      end
    end)

    it("writes NaN and infinities, which JSON cannot hold, as null", function()
      assert.are.equal("null", json.encode(0 / 0))
      assert.are.equal("null", json.encode(math.huge))
      assert.are.equal("null", json.encode(-math.huge))
      assert.are.equal('{"t":null}', json.encode({ t = 0 / 0 }))
    end)

    it("writes the numbers of an array, many at a time, as it writes each one", function()
      local values = { 0, -0.0, 7, -3, 1.5, 2 ^ 53, 2 ^ 53 + 2, 2 ^ 64, 1e300, 0 / 0, math.huge, -math.huge, 1 / 3 }
      local arr, each = {}, {}
      for k = 1, 300 do
        local v = values[k % #values + 1]
        if k % 50 == 0 then v = "s" .. k end  -- runs of numbers broken by other values
        if k % 77 == 0 then v = { k } end
        arr[k] = v
        each[k] = json.encode(v)
      end
      assert.are.equal("[" .. table.concat(each, ",") .. "]", json.encode(arr))
      -- a run longer than one string.format takes
      local long, texts = {}, {}
      for k = 1, 9000 do
        long[k] = k % 3 == 0 and k / 7 or k
        texts[k] = json.encode(long[k])
      end
      assert.are.equal("[" .. table.concat(texts, ",") .. "]", json.encode(long))
      assert.are.equal("[null,1,null]", json.encode({ 0 / 0, 1, math.huge }))
      assert.are.equal("[1]", json.encode({ 1 }))
    end)
  end)

  describe("other values", function()
    it("writes booleans and nil", function()
      assert.are.equal("true", json.encode(true))
      assert.are.equal("false", json.encode(false))
      assert.are.equal("null", json.encode(nil))
    end)

    it("raises on functions and other values JSON cannot hold", function()
      assert.has_error(function() json.encode({ f = print }) end, "xsite.json: cannot encode a function")
      local thread = coroutine.create(function() end)
      assert.has_error(function() json.encode(thread) end, "xsite.json: cannot encode a thread")
    end)
  end)

  it("writes text an independent JSON decoder reads back to the same value", function()
    if not has_dkjson then
      pending("lua-dkjson is not installed: no independent decoder to check with")
      return
    end
    local value = {
      action = "span", why = "within", n = 8, slowdown = 1.0625, ok = true, none = false,
      split = { 4, 4 }, rows = { { nodes = 2, t = 1.5 }, { nodes = 4, t = 0.75 } },
      text = "quote \" backslash \\ newline \n tab \t ctl \1 \194\181s", empty = json.array({}),
    }
    local text = json.encode(value)
    local back, _, err = dkjson.decode(text)
    assert.is_nil(err)
    assert.are.same(value, back)
  end)
end)

-- Call f(arg) under a budget of VM instructions, so that a loop fails the
-- spec instead of hanging the suite.
local function bounded(f, arg)
  local hook, mask, count = debug.gethook()
  debug.sethook(function() error("did not return within 10000000 VM instructions", 0) end, "", 10000000)
  local ok, a, b = pcall(f, arg)
  debug.sethook(hook, mask, count)
  return ok, a, b
end

describe("xsite.json.decode", function()
  -- the message decode gives for text it must refuse (opts: its limits)
  local function refused(text, opts)
    local v, err = json.decode(text, opts)
    assert.is_nil(v, type(text) == "string" and text or nil)
    return err
  end

  it("reads a DEL (0x7f) in a string as it is, like any character JSON does not escape", function()
    local ok, v, err = bounded(json.decode, '"a\127b"')
    assert.is_true(ok, v)
    assert.is_nil(err)
    assert.are.equal("a\127b", v)
    ok, v = bounded(json.decode, json.encode("a\127b"))
    assert.is_true(ok, v)
    assert.are.equal("a\127b", v)
  end)

  it("reads objects, arrays, strings, numbers, booleans and null", function()
    local v = assert(json.decode(' {"b" : [true, false, null], "a": -1.5e3, "s": "x", "o": {}, "e": []} '))
    assert.are.same({ true, false, json.null }, v.b)
    assert.are.equal(-1500, v.a)
    assert.are.equal("x", v.s)
    assert.are.same({}, v.o)
    assert.are.same({}, v.e)
  end)

  it("marks decoded arrays, so an empty one encodes as [] again", function()
    local v = assert(json.decode('{"e":[],"o":{}}'))
    assert.are.equal('{"e":[],"o":{}}', json.encode(v))
  end)

  it("reads null as json.null, which encodes as null", function()
    assert.are.equal(json.null, json.decode("null"))
    assert.are.equal("[null]", json.encode(assert(json.decode("[null]"))))
  end)

  it("reads every escape, \\u escapes as UTF-8, surrogate pairs as one character", function()
    assert.are.equal('"\\/\b\f\n\r\t', json.decode([["\"\\\/\b\f\n\r\t"]]))
    assert.are.equal("A\194\181\226\130\172", json.decode([["\u0041\u00b5\u20AC"]]))
    assert.are.equal("\240\159\152\128", json.decode([["\ud83d\ude00"]]))  -- U+1F600
  end)

  it("reads back what encode writes", function()
    local value = { action = "span", n = 8, slowdown = 1.0625, ok = true, split = { 4, 4 },
      text = "quote \" backslash \\ newline \n ctl \1 \194\181s", rows = { { nodes = 2 } } }
    local back = assert(json.decode(json.encode(value)))
    assert.are.same(value, back)
    assert.are.equal(json.encode(value), json.encode(back))
  end)

  it("returns nil and a message with the offset for bad text", function()
    local cases = {
      { "", "offset 1: unexpected end of text" },
      { "[1,]", "offset 4: unexpected ']'" },
      { '{"a":1,}', "offset 8: expected a string key" },
      { '{"a" 1}', "offset 6: expected ':'" },
      { "[1 2]", "offset 4: expected ',' or ']'" },
      { '"abc', "offset 1: unterminated string" },
      { '"a\\qb"', "offset 3: bad escape" },
      { '"\\u12"', "offset 2: bad \\u escape" },
      { '"\\ud83d"', "offset 8: unpaired surrogate" },
      { '"a\nb"', "offset 3: control character in string" },
      { "tru", "offset 1: unexpected 't'" },
      { "1 2", "offset 3: text after the value" },
      { "NaN", "offset 1: unexpected 'N'" },
    }
    for _, c in ipairs(cases) do
      assert.are.equal(c[2], refused(c[1]), c[1])
    end
    assert.are.equal("no text", refused(nil))
  end)

  it("refuses nesting deeper than 200 without raising", function()
    assert.matches("nested too deep", refused(string.rep("[", 100000)))
    assert.are.same({ { { 1 } } }, json.decode("[[[1]]]"))
  end)

  it("keeps to the limits a caller gives: depth, items, string length, values", function()
    assert.are.same({ { { 1 } } }, json.decode("[[[1]]]", { max_depth = 3 }))
    assert.are.equal("offset 3: nested too deep (more than 2 levels)", refused("[[[1]]]", { max_depth = 2 }))
    assert.are.same({ 1, 2 }, json.decode("[1,2]", { max_items = 2 }))
    assert.are.equal("offset 6: an array of more than 2 elements", refused("[1,2,3]", { max_items = 2 }))
    assert.are.equal("offset 14: an object of more than 2 members",
      refused('{"a":1,"b":2,"c":3}', { max_items = 2 }))
    assert.are.equal("abc", json.decode('"abc"', { max_string = 3 }))
    assert.are.equal("offset 1: string longer than 3 bytes", refused('"a\\u0062cd"', { max_string = 3 }))
    assert.are.equal("offset 2: string longer than 3 bytes", refused('{"long key":1}', { max_string = 3 }))
    assert.are.same({ 1, 2, 3 }, json.decode("[1,2,3]", { max_values = 4 }))
    assert.are.equal("offset 8: more than 3 values", refused("[1, 2, 3.5]", { max_values = 3 }))
    assert.are.equal("offset 6: more than 3 values", refused("[1,2,3]", { max_values = 3 }))
    -- strings and keys of 32 bytes or more as written, counted before any is made
    local long = string.rep("k", 32)
    assert.are.same({ [long] = { long, "short", "\\\"" } },
      json.decode('{"' .. long .. '":["' .. long .. '","short","\\\\\\""]}', { max_long_strings = 2 }))
    assert.are.equal("more than 2 strings of 32 bytes or more",
      refused('["' .. long .. '","' .. long .. '","' .. long .. '"]', { max_long_strings = 2 }))
    -- an escaped quote does not end a string
    assert.are.equal("more than 1 strings of 32 bytes or more",
      refused('["' .. string.rep("\\\"", 16) .. '","' .. long .. '"]', { max_long_strings = 1 }))
    -- pieces between escapes are made too: each of 32 bytes or more counts
    local two = '"' .. long .. "\\t" .. long .. '"'
    assert.are.equal(long .. "\t" .. long, json.decode(two, { max_long_strings = 3 }))
    assert.are.equal("more than 2 strings of 32 bytes or more", refused(two, { max_long_strings = 2 }))
    -- characters of a number, checked before its text is made
    assert.are.same({ 12345, -1.5e-3 }, json.decode("[12345,-1.5e-3]", { max_number = 7 }))
    assert.are.equal("offset 2: a number longer than 8 characters", refused("[123456789]", { max_number = 8 }))
    assert.are.equal("offset 6: a number longer than 6 characters", refused('{"n":1.25e+10}', { max_number = 6 }))
    -- the defaults
    assert.are.equal(200, json.LIMITS.max_depth)
  end)

  it("counts the strings it makes: keys, strings, their pieces, a number's text not read from its bytes", function()
    assert.are.same({ ab = "cd" }, json.decode('{"ab":"cd"}', { max_strings = 2 }))
    assert.are.equal("offset 12: more than 2 strings and keys",
      refused('{"ab":"cd","ef":"gh"}', { max_strings = 2 }))
    -- a string of one byte is no new string
    assert.are.same({ a = "b", c = "d" }, json.decode('{"a":"b","c":"d"}', { max_strings = 0 }))
    -- pieces between escapes: "ab", "é" (two bytes) and the whole; a single byte is no new string
    assert.are.equal("ab\195\169c", json.decode('"ab\\u00e9c"', { max_strings = 3 }))
    assert.matches("more than 2 strings and keys", refused('"ab\\u00e9c"', { max_strings = 2 }))
    assert.are.equal("\n", json.decode('"\\n"', { max_strings = 0 }))
    -- numbers are read from their bytes: none is made, but one with more
    -- digits than a double holds, scaled, is read from its text
    assert.are.same({ 1, -2.5, 1e3, 0.125, 18446744073709551615, 1e-22 },
      json.decode("[1,-2.5,1e3,0.125,18446744073709551615,1e-22]", { max_strings = 0 }))
    assert.are.same({ 1.2345678901234567 }, json.decode("[1.2345678901234567]", { max_strings = 1 }))
    assert.are.equal("offset 2: more than 0 strings and keys",
      refused("[1.2345678901234567]", { max_strings = 0 }))
    assert.are.equal("offset 2: more than 0 strings and keys", refused("[1e300]", { max_strings = 0 }))
  end)

  it("skips the values of the keys it is told to, in any object, checking them all the same", function()
    local skip = { skip = { per_rank = true } }
    assert.are.same({ a = 1, b = {} },
      json.decode('{"a":1,"per_rank":[{"rank":0,"host":"n1"},"x",1.5,null],"b":{"per_rank":{"c":true}}}', skip))
    -- nothing of it is made: its strings do not count
    local many = {}
    for k = 1, 1000 do many[k] = string.format('{"host":"node%04d"}', k) end
    assert.are.same({ a = "b" }, json.decode('{"a":"b","per_rank":[' .. table.concat(many, ",") .. "]}",
      { skip = { per_rank = true }, max_strings = 2 }))
    -- but it is read as strictly as the rest, and the limits hold in it
    for _, c in ipairs({
      { '{"per_rank":[1,]}', "offset 16: unexpected ']'" },
      { '{"per_rank":"a\\qb"}', "offset 15: bad escape" },
      { '{"per_rank":[01]}', "offset 14: leading zero" },
      { '{"per_rank":"\\ud800"}', "offset 20: unpaired surrogate" },
      { '{"per_rank":[[[1]]]}', "offset 14: nested too deep (more than 2 levels)", { max_depth = 2 } },
      { '{"p":"abcd"}', "offset 6: string longer than 3 bytes", { max_string = 3, skip = { p = true } } },
      { '{"per_rank":[1,2,3]}', "offset 18: more than 4 values", { max_values = 4 } },
      { '{"per_rank":[1234]}', "offset 14: a number longer than 3 characters", { max_number = 3 } },
    }) do
      local opts = c[3] or {}
      opts.skip = opts.skip or skip.skip
      assert.are.equal(c[2], refused(c[1], opts), c[1])
    end
  end)

  it("names a byte it does not expect without printing it", function()
    assert.are.equal("offset 2: unexpected byte 0x1b", refused("[\27[2J]"))
    assert.are.equal("offset 1: unexpected byte 0xff", refused("\255"))
  end)

  it("reads integers in arrays fast and as strictly as any number", function()
    assert.are.same({ 0, -1, 25, 3 }, json.decode("[0,-1,25,3]"))
    for _, text in ipairs({ "[01]", "[-01,1]", "[1,00]" }) do
      assert.matches("leading zero", refused(text))
    end
    assert.are.same({ 1.5, 2e3, -0.25 }, json.decode("[1.5,2e3,-0.25]"))
  end)

  it("reads every number from its bytes as tonumber reads its text: value, sign of zero, integer or float", function()
    local kind = math.type or function() return "number" end
    local function same(text)
      local want = tonumber(text)
      local docs = { "[" .. text .. "]", "[" .. text .. ",0]", '{"n":' .. text .. "}", "[[" .. text .. "]]" }
      for _, doc in ipairs(docs) do
        local v = assert(json.decode(doc), doc)
        v = v[1] or v.n
        if type(v) == "table" then v = v[1] end
        assert.are.equal(want, v, doc)
        assert.are.equal(kind(want), kind(v), doc)
        if want == 0 then assert.are.equal(1 / want, 1 / v, doc .. ": the sign of zero") end
      end
    end
    for _, text in ipairs({ "0", "-0", "7", "-7", "0.0", "-0.0", "1e0", "1E+2", "1e-2", "123456789012345",
      "1234567890123456", "9007199254740993", "9223372036854775807", "9223372036854775808",
      "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
      "18446744073709551616", "99999999999999999999", "100000000000000000000", "0.1", "0.30000000000000004",
      "1.7976931348623157e308", "4.9e-324", "2.2250738585072014e-308", "1e23", "1e22", "1e-22", "1e-23",
      "123456789012345e7", "0.000000000000000000000000001", "-1.844674407371e+19", "1.25e+10", "0.68600010871887",
      "1795897856.351" }) do
      same(text)
    end
    -- and numbers of every shape, at random
    local rnd = 12345
    local function r(n)
      rnd = (rnd * 1103515245 + 12345) % 2147483648
      return rnd % n
    end
    local function digits(n, lead)
      local t = { tostring(lead and 1 + r(9) or r(10)) }
      for k = 2, n do t[k] = tostring(r(10)) end
      return table.concat(t)
    end
    for _ = 1, 3000 do
      local nint = 1 + r(21)
      local text = (r(3) == 0 and "-" or "") .. (r(5) == 0 and "0" or digits(nint, true))
      if r(2) == 0 then text = text .. "." .. digits(1 + r(17)) end
      if r(2) == 0 then text = text .. ({ "e", "E" })[1 + r(2)] .. ({ "", "+", "-" })[1 + r(3)] .. r(40) end
      same(text)
    end
  end)

  it("tells decoded arrays from objects", function()
    local v = assert(json.decode('{"a":[],"o":{}}'))
    assert.is_true(json.is_array(v.a))
    assert.is_false(json.is_array(v.o))
    assert.is_false(json.is_array(v))
    assert.is_false(json.is_array("x"))
    assert.is_true(json.is_array(json.array({})))
  end)

  it("refuses numbers RFC 8259 does not allow: leading zeros, a bare dot, a lone low surrogate", function()
    for _, text in ipairs({ "01", "-01", "1.", "1.e5", '"\\udc00"' }) do
      local v, err = json.decode(text)
      assert.is_nil(v, text .. " was read as " .. tostring(v))
      assert.is_string(err)
    end
  end)
end)
