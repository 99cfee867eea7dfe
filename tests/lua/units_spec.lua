-- Specs for xsite.units: quantities with unit suffixes, in base SI units.
-- Every expected value below is worked out by hand from the prefix and unit
-- (e.g. 40Gb/s = 40e9 bit/s / 8 = 5e9 B/s), not copied from the code's output.

dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")

local units = require("xsite.units")

-- Values built by a multiplication may differ from the literal by one ulp.
local function assert_value(expected, text, kind, opts)
  local v, err = units.parse(text, kind, opts)
  assert.is_nil(err, "unexpected error for " .. text)
  assert.is_number(v)
  assert.is_true(math.abs(v - expected) <= 1e-12 * math.abs(expected),
    string.format("%s as %s: expected %.17g, got %.17g", text, kind, expected, v))
end

local function assert_error(pattern, text, kind, opts)
  local v, err = units.parse(text, kind, opts)
  assert.is_nil(v, "expected an error for " .. tostring(text) .. ", got " .. tostring(v))
  assert.is_string(err)
  assert.matches(pattern, err, 1, true)
end

-- Each { expected, text } read as `kind`.
local function reads(kind, cases)
  for _, c in ipairs(cases) do assert_value(c[1], c[2], kind) end
end

-- Each { message, text } refused as `kind`, the message naming what is wrong.
local function refuses(kind, cases)
  for _, c in ipairs(cases) do assert_error(c[1], c[2], kind) end
end

describe("xsite.units.parse", function()
  describe("time", function()
    it("reads s, ms, us, µs and ns as seconds", function()
      reads("time", {
        { 2, "2s" },
        { 9e-3, "9ms" },
        { 145e-6, "145us" },
        { 145e-6, "145\194\181s" },
        { 900e-9, "900ns" },
        { 1.5e-6, "1.5us" },
      })
    end)

    it("accepts a number in scientific notation before the unit", function()
      reads("time", {
        { 1e-3, "1e-3s" },
        { 4500e-6, "4.5E3us" },
      })
    end)

    it("accepts blanks between the number and the unit", function()
      assert_value(145e-6, "145 us", "time")
    end)

    it("refuses a bare number: a time needs its unit", function()
      assert_error("'145' needs a unit (s, ms, us or ns)", "145", "time")
    end)

    it("refuses units of other kinds and misspelled units, naming the unit", function()
      refuses("time", {
        { "'9MB': unknown unit 'MB' (s, ms, us or ns)", "9MB" },
        { "unknown unit 'sec'", "9sec" },
        { "unknown unit 'Ms'", "9Ms" },
      })
    end)
  end)

  describe("bytes", function()
    it("reads decimal prefixes as powers of 1000, K and k alike", function()
      reads("bytes", {
        { 1, "1B" },
        { 1e3, "1kB" },
        { 1e3, "1KB" },
        { 930e6, "930MB" },
        { 8e9, "8GB" },
        { 2e12, "2TB" },
        { 3e15, "3PB" },
        { 1e18, "1EB" },
      })
    end)

    it("reads binary prefixes as powers of 1024", function()
      reads("bytes", {
        { 1024, "1KiB" },
        { 1048576, "1MiB" },
        { 1073741824, "1GiB" },
        { 1099511627776, "1TiB" },
        { 1125899906842624, "1PiB" },
        { 1.5 * 1073741824, "1.5GiB" },
      })
    end)

    it("reads a bare number as bytes", function()
      reads("bytes", {
        { 1000, "1000" },
        { 4096, "4096" },
      })
    end)

    it("refuses a lower-case m and a lower-case i prefix", function()
      refuses("bytes", {
        { "unknown unit 'mB'", "1mB" },
        { "unknown unit 'kiB'", "1kiB" },
      })
    end)

    it("refuses a rate where an amount is wanted", function()
      assert_error("'1GB/s': unknown unit 'GB/s' (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)", "1GB/s", "bytes")
    end)

    it("does not wrap a huge KiB amount around (Lua 5.3+ integers)", function()
      -- 9223372036854775807 KiB = 9.44e21 B; an integer multiplication would wrap
      -- to -1024 on Lua 5.3 and 5.4.
      local v, err = units.parse("9223372036854775807KiB", "bytes")
      if v == nil then
        assert.is_string(err)
      else
        assert.is_true(math.abs(v - 9.444732965739290e21) <= 1e-9 * 9.444732965739290e21,
          "got " .. tostring(v))
      end
      local w, werr = units.parse("18014398509481984KiB", "bytes")  -- 2^54 KiB = 2^64 B
      if w == nil then
        assert.not_matches("greater than 0", werr)
      else
        assert.is_true(w > 1.8e19, "got " .. tostring(w))
      end
    end)
  end)

  describe("bandwidth", function()
    it("reads bytes per second with decimal and binary prefixes", function()
      reads("bandwidth", {
        { 1, "1B/s" },
        { 930e6, "930MB/s" },
        { 2.6e9, "2.6GB/s" },
        { 1048576, "1MiB/s" },
        { 60 * 1073741824, "60GiB/s" },
        { 1e12, "1TB/s" },
      })
    end)

    it("reads a lower-case b or bit as a bit: 40Gb/s is 5e9 B/s", function()
      reads("bandwidth", {
        { 5e9, "40Gb/s" },          -- 40e9 / 8
        { 12.5e6, "100Mbit/s" },    -- 100e6 / 8
        { 1.25e9, "10Gbit/s" },     -- 10e9 / 8
        { 1, "8b/s" },
        { 128, "1Kib/s" },          -- 1024 / 8
      })
    end)

    it("reads the ps spelling like /s", function()
      reads("bandwidth", {
        { 1.25e8, "1Gbps" },
        { 1e9, "1GBps" },
      })
    end)

    it("refuses a bare number and an amount without /s", function()
      refuses("bandwidth", {
        { "'930' needs a unit (B/s, MB/s", "930" },
        { "'930MB': unknown unit 'MB' (B/s, MB/s", "930MB" },
      })
    end)

    it("refuses a rate without an amount and unknown amounts", function()
      refuses("bandwidth", {
        { "unknown unit '/s'", "1/s" },
        { "unknown unit 'ps'", "1ps" },
        { "unknown unit 'Gx/s'", "1Gx/s" },
        { "unknown unit 'GB/h'", "1GB/h" },
      })
    end)
  end)

  describe("flops", function()
    it("reads F with decimal prefixes: 8.5GF is 8.5e9 flop/s", function()
      reads("flops", {
        { 1, "1F" },
        { 2e6, "2MF" },
        { 8.5e9, "8.5GF" },
        { 1.2e12, "1.2TF" },
      })
    end)

    it("reads the flop/s and FLOPS spellings", function()
      reads("flops", {
        { 2.5e9, "2.5Gflop/s" },
        { 2.5e9, "2.5GFlop/s" },
        { 3e9, "3GFLOPS" },
      })
    end)

    it("refuses a bare number and binary prefixes", function()
      refuses("flops", {
        { "'8' needs a unit (F, MF, GF, TF", "8" },
        { "unknown unit 'GiF'", "8GiF" },
      })
    end)
  end)

  describe("count", function()
    it("reads a bare number and decimal prefixes k, K, M, G, T, P", function()
      reads("count", {
        { 100, "100" },
        { 1e3, "1k" },
        { 1e3, "1K" },
        { 2e6, "2M" },
        { 1e9, "1G" },
        { 1e12, "1T" },
        { 1e15, "1P" },
        { 1e12, "1e12" },
      })
    end)

    it("refuses binary prefixes and units", function()
      refuses("count", {
        { "'1Ki': unknown unit 'Ki' (a plain number, or k, M, G, T, P)", "1Ki" },
        { "unknown unit 'B'", "1B" },
      })
    end)
  end)

  describe("number", function()
    it("reads a plain number only", function()
      reads("number", {
        { 1.1, "1.1" },
        { 1000, "1e3" },
      })
      refuses("number", {
        { "'2x': unknown unit 'x' (none)", "2x" },
        { "unknown unit 'k'", "2k" },
      })
    end)
  end)

  describe("zero", function()
    it("refuses 0 of every kind by default", function()
      for _, c in ipairs({ { "0s", "time" }, { "0B", "bytes" }, { "0MB/s", "bandwidth" },
        { "0GF", "flops" }, { "0", "count" }, { "0", "number" }, { "0.0e5", "count" } }) do
        assert_error("'" .. c[1] .. "' must be greater than 0", c[1], c[2])
      end
    end)

    it("accepts 0 of every kind when zero = true", function()
      for _, c in ipairs({ { "0s", "time" }, { "0B", "bytes" }, { "0MB/s", "bandwidth" },
        { "0GF", "flops" }, { "0", "count" }, { "0", "number" } }) do
        local v, err = units.parse(c[1], c[2], { zero = true })
        assert.is_nil(err)
        assert.are.equal(0, v)
      end
    end)

    it("accepts a bare 0 bytes when zero = true", function()
      local v, err = units.parse("0", "bytes", { zero = true })
      assert.is_nil(err)
      assert.are.equal(0, v)
    end)

    it("reads a bare 0 as 0 of any kind where 0 is allowed, and wants a unit otherwise", function()
      assert.are.equal(0, units.parse("0", "time", { zero = true }))
      assert_error("'0' needs a unit (s, ms, us or ns)", "0", "time")
      assert_error("'5' needs a unit (s, ms, us or ns)", "5", "time", { zero = true })
    end)

    it("reads an underflow to 0 as 0, refused without zero = true", function()
      assert_error("must be greater than 0", "1e-400s", "time")
    end)
  end)

  describe("bad input", function()
    it("says 'empty value' for an empty string and for a missing value", function()
      assert_error("empty value", "", "time")
      assert_error("empty value", nil, "bytes")
    end)

    it("names the text and the accepted units when no number leads", function()
      assert_error("'MB/s' is not a number with a unit (B/s, MB/s, GB/s, MiB/s, Mb/s, Gb/s, Mbit/s, Gbit/s)",
        "MB/s", "bandwidth")
      refuses("time", {
        { "'-5us' is not a number with a unit", "-5us" },
        { "'+5us' is not a number with a unit", "+5us" },
        { "'1.2.3s' is not a number with a unit", "1.2.3s" },
        { "'.s' is not a number with a unit", ".s" },
        { "' 5s' is not a number with a unit", " 5s" },
      })
      refuses("number", {
        { "'inf' is not a number with a unit", "inf" },
        { "'nan' is not a number with a unit", "nan" },
      })
    end)

    it("refuses a hexadecimal number", function()
      assert_error("unknown unit 'x10'", "0x10", "count")
    end)

    it("says 'out of range' for a value that overflows to infinity", function()
      assert_error("'1e400GB' is out of range", "1e400GB", "bytes")
      assert_error("is out of range", "1e308k", "count")
    end)

    it("refuses a trailing blank after the unit", function()
      assert_error("unknown unit 'MB/s '", "930MB/s ", "bandwidth")
    end)

    it("raises on an unknown kind (a caller mistake)", function()
      assert.has_error(function() units.parse("1s", "weight") end, "xsite.units: unknown kind weight")
    end)
  end)
end)

describe("xsite.units.parse_integer", function()
  it("reads whole numbers with decimal prefixes", function()
    assert.are.equal(42, units.parse_integer("42"))
    assert.are.equal(2000, units.parse_integer("2k"))
    assert.are.equal(3e6, units.parse_integer("3M"))
  end)

  it("refuses fractions, naming the text", function()
    local v, err = units.parse_integer("1.5")
    assert.is_nil(v)
    assert.are.equal("'1.5' is not a whole number", err)
    assert.are.equal(1500, units.parse_integer("1.5k"))
  end)

  it("gives an integer on Lua 5.3+ (math.type), a whole number everywhere", function()
    local v = units.parse_integer("2k")
    assert.are.equal(2000, v)
    if math.type then assert.are.equal("integer", math.type(v)) end
  end)

  it("refuses whole numbers from 2^53 on, which a double cannot count exactly", function()
    assert.are.equal(2 ^ 53 - 1, units.parse_integer("9007199254740991"))
    local v, err = units.parse_integer("1e16")
    assert.is_nil(v)
    assert.are.equal("'1e16' is too large", err)
  end)

  it("refuses 0 unless zero = true", function()
    local v, err = units.parse_integer("0")
    assert.is_nil(v)
    assert.are.equal("'0' must be greater than 0", err)
    assert.are.equal(0, units.parse_integer("0", { zero = true }))
  end)

  it("passes on the parse error of a bad number", function()
    local v, err = units.parse_integer("12 nodes")
    assert.is_nil(v)
    assert.are.equal("'12 nodes': unknown unit 'nodes' (a plain number, or k, M, G, T, P)", err)
  end)
end)

describe("xsite.units formatting", function()
  it("formats times in us, ms, s, min and h", function()
    assert.are.equal("0 s", units.format_time(0))
    assert.are.equal("145 us", units.format_time(145e-6))
    assert.are.equal("999.9 us", units.format_time(999.9e-6))
    assert.are.equal("1 ms", units.format_time(1e-3))
    assert.are.equal("9 ms", units.format_time(9e-3))
    assert.are.equal("1.5 s", units.format_time(1.5))
    assert.are.equal("5 min", units.format_time(300))
    assert.are.equal("3 h", units.format_time(10800))
    assert.are.equal("-9 ms", units.format_time(-9e-3))
  end)

  it("formats bandwidths with decimal prefixes", function()
    assert.are.equal("12 B/s", units.format_bandwidth(12))
    assert.are.equal("1.5 kB/s", units.format_bandwidth(1500))
    assert.are.equal("930 MB/s", units.format_bandwidth(930e6))
    assert.are.equal("2.6 GB/s", units.format_bandwidth(2.6e9))
    assert.are.equal("5 TB/s", units.format_bandwidth(5e12))
  end)

  it("formats amounts of bytes with decimal prefixes", function()
    assert.are.equal("999 B", units.format_bytes(999))
    assert.are.equal("8 GB", units.format_bytes(8e9))
    assert.are.equal("1.5 PB", units.format_bytes(1.5e15))
    assert.are.equal("1.074 GB", units.format_bytes(1073741824))
  end)

  it("reads back what it formats (format_bandwidth then parse)", function()
    for _, bps in ipairs({ 930e6, 2.6e9, 1.5e3, 5e12 }) do
      local text = units.format_bandwidth(bps):gsub(" ", "")
      assert_value(bps, text, "bandwidth")
    end
  end)
end)

describe("xsite.units.parse's two paths", function()
  -- "12MB" takes the one-match path, "12 MB" (a blank before the unit) the
  -- general one: both must give the same value, or the same refusal.
  it("give the same value for every number form and unit of every kind", function()
    local numbers = { "0", "1", "7", "12", "0.5", "1.", "3.25", "1e3", "2E2", "1e0", "10e12", "007" }
    local unit_sets = {
      count = { "", "k", "K", "M", "G", "T", "P", "E" },
      bytes = { "", "B", "kB", "MB", "GB", "KiB", "MiB", "GiB", "TiB" },
      time = { "", "s", "ms", "us", "ns" },
      flops = { "F", "GF", "TF", "MF" },
      bandwidth = { "B/s", "MB/s", "Gb/s" },
      number = { "" },
    }
    local n = 0
    for kind, list in pairs(unit_sets) do
      for _, num in ipairs(numbers) do
        for _, u in ipairs(list) do
          for _, opts in ipairs({ {}, { zero = true } }) do
            local fast, ferr = units.parse(num .. u, kind, opts)
            local slow, serr = units.parse(num .. (u ~= "" and " " .. u or ""), kind, opts)
            assert.are.equal(slow == nil, fast == nil, num .. u .. " " .. kind .. ": " .. tostring(ferr or serr))
            if fast then
              assert.are.equal(math.type and math.type(slow) or "float", math.type and math.type(fast) or "float")
              assert.is_true(fast == slow, string.format("%s %s: %.17g ~= %.17g", num .. u, kind, fast, slow))
            end
            n = n + 1
          end
        end
      end
    end
    assert.is_true(n > 700)
  end)
end)

describe("xsite.units.slurm_duration", function()
  it("reads Slurm durations", function()
    assert.are.equal(3723, units.slurm_duration("01:02:03"))
    assert.are.equal(86400 + 3600, units.slurm_duration("1-01:00:00"))
    assert.are.equal(65, units.slurm_duration("01:05"))
  end)
  it("gives nil for what is no duration", function()
    assert.is_nil(units.slurm_duration("UNLIMITED"))
    assert.is_nil(units.slurm_duration("NOT_SET"))
    assert.is_nil(units.slurm_duration(nil))
  end)
end)

describe("xsite.units.license_items", function()
  it("reads a license list as slurmctld does: ',' ';' or '|' between items, ':' or '=' before a count", function()
    assert.are.same({ { "a", 2 }, { "b", 1 }, { "xsite_link", 100 }, { "c", 3 }, { "d@db", 4 } },
      units.license_items("a:2,b;xsite_link=100|c:3,d@db:4"))
  end)
  it("keeps an item whose count is no whole number, without a count; drops blanks around names", function()
    assert.are.same({ { "a", nil }, { "b", nil }, { "xsite_link", 1 } }, units.license_items("a:x,b:-1, xsite_link "))
    assert.are.same({}, units.license_items(nil))
    assert.are.same({}, units.license_items(",;|"))
  end)
end)

describe("xsite.units.license_units", function()
  it("sums a license's units over every item that names it, whatever the case", function()
    assert.are.same({ 5, true }, { units.license_units("XSITE_LINK:2,a:7;xsite_link=3", "xsite_link") })
    assert.are.same({ 0, false }, { units.license_units("a:1|b", "xsite_link") })
  end)
  it("takes a license of slurmdbd (name@server) as the license of that whole name, as Slurm does", function()
    assert.are.same({ 4, true }, { units.license_units("xsite_link@db:4", "xsite_link@db") })
    assert.are.same({ 0, false }, { units.license_units("xsite_link@db:4", "xsite_link") })
    assert.are.same({ 0, false }, { units.license_units("xsite_link:4", "xsite_link@db") })
  end)
end)

describe("xsite.units.round_time", function()
  it("rounds to whole seconds, whole minutes, tenths of hours", function()
    assert.are.equal("80 s", units.round_time(79.6))
    assert.are.equal("2 min", units.round_time(120))
    assert.are.equal("5 min", units.round_time(290))
    assert.are.equal("120 min", units.round_time(7199))
    assert.are.equal("2.5 h", units.round_time(9000))
  end)
end)
