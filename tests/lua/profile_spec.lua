-- Specs for xsite.profile: --comm-profile values, named, class or explicit.

local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local FIXTURES = h.fixtures

local config = require("xsite.config")
local profile = require("xsite.profile")

local near = h.near

local function explicit_error(spec)
  local p, err = profile.parse_explicit(spec)
  assert.is_nil(p, "expected an error for " .. tostring(spec))
  assert.is_string(err)
  return err
end

describe("xsite.profile.parse_explicit", function()
  it("reads op, b, x, steps and pattern in base units", function()
    local p = assert(profile.parse_explicit("op=1e12,b=8GB,x=1GB,steps=100,pattern=halo3d"))
    assert.are.equal("explicit", p.kind)
    assert.are.equal("op=1e12,b=8GB,x=1GB,steps=100,pattern=halo3d", p.name)
    near(1e12, p.ops, "op")
    near(8e9, p.bytes, "b")
    near(1e9, p.exchange, "x")
    assert.are.equal(100, p.steps)
    assert.are.equal("halo3d", p.pattern)
  end)

  it("takes the fields in any order, keys and patterns in any case, blanks around them", function()
    local p = assert(profile.parse_explicit(" Pattern = TREE , X=2MiB,B=1kB , OP=3G"))
    near(3e9, p.ops, "op")
    near(1e3, p.bytes, "b")
    near(2 * 1024 * 1024, p.exchange, "x")
    assert.are.equal("tree", p.pattern)
  end)

  it("defaults steps to 0 and pattern to alltoall", function()
    local p = assert(profile.parse_explicit("op=1e9,b=1GB,x=1MB"))
    assert.are.equal(0, p.steps)
    assert.are.equal("alltoall", p.pattern)
  end)

  it("accepts every pattern of the model", function()
    for _, pat in ipairs({ "alltoall", "halo1d", "halo2d", "halo3d", "tree", "none" }) do
      assert.are.equal(pat, assert(profile.parse_explicit("op=1,b=1B,x=1B,pattern=" .. pat)).pattern)
    end
  end)

  it("accepts steps with a prefix and steps=0", function()
    assert.are.equal(2000, assert(profile.parse_explicit("op=1,b=1B,x=1B,steps=2k")).steps)
    assert.are.equal(0, assert(profile.parse_explicit("op=1,b=1B,x=1B,steps=0")).steps)
  end)

  it("accepts x=0B: a job that does not communicate", function()
    assert.are.equal(0, assert(profile.parse_explicit("op=1e12,b=8GB,x=0B")).exchange)
  end)

  it("accepts x=0, a bare zero, like x=0B", function()
    local p, err = profile.parse_explicit("op=1e12,b=8GB,x=0")
    assert.is_nil(err)
    assert.are.equal(0, p.exchange)
  end)

  it("names an unknown field", function()
    assert.are.equal("foo: unknown field (op, b, x, steps, pattern)", explicit_error("op=1,b=1B,x=1B,foo=2"))
    assert.are.equal("ops: unknown field (op, b, x, steps, pattern)", explicit_error("ops=1,b=1B,x=1B"))
  end)

  it("names each missing required field", function()
    assert.are.equal("op: missing (op=, b= and x= are required)", explicit_error("b=1B,x=1B"))
    assert.are.equal("b: missing (op=, b= and x= are required)", explicit_error("op=1,x=1B"))
    assert.are.equal("x: missing (op=, b= and x= are required)", explicit_error("op=1,b=1B,steps=3"))
  end)

  it("names a bad pattern and lists the good ones", function()
    assert.are.equal("pattern: 'ring' is not one of alltoall, halo1d, halo2d, halo3d, tree, none",
      explicit_error("op=1,b=1B,x=1B,pattern=ring"))
    assert.matches("^pattern: '' is not one of", explicit_error("op=1,b=1B,x=1B,pattern="))
  end)

  it("names a field given twice", function()
    assert.are.equal("op: given twice", explicit_error("op=1,b=1B,x=1B,op=2"))
    assert.are.equal("b: given twice", explicit_error("op=1,b=1B,x=1B,B=2B"))
    assert.are.equal("pattern: given twice", explicit_error("op=1,b=1B,x=1B,pattern=tree,pattern=tree"))
  end)

  it("names the field of a bad unit or value", function()
    assert.are.equal("b: '8GB/s': unknown unit 'GB/s' (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)",
      explicit_error("op=1,b=8GB/s,x=1B"))
    assert.are.equal("op: 'lots' is not a number with a unit (a plain number, or k, M, G, T, P)",
      explicit_error("op=lots,b=1B,x=1B"))
    assert.are.equal("op: '0' must be greater than 0", explicit_error("op=0,b=1B,x=1B"))
    assert.are.equal("b: '0B' must be greater than 0", explicit_error("op=1,b=0B,x=1B"))
    assert.are.equal("x: empty value", explicit_error("op=1,b=1B,x="))
  end)

  it("refuses fractional steps, naming the field", function()
    assert.are.equal("steps: '1.5' is not a whole number", explicit_error("op=1,b=1B,x=1B,steps=1.5"))
  end)

  it("refuses an item that is not key=value", function()
    assert.are.equal("'gromacs' is not key=value", explicit_error("op=1,b=1B,x=1B,gromacs"))
    assert.are.equal("'' is not key=value", explicit_error("op=1,,b=1B,x=1B"))
    assert.are.equal("'' is not key=value", explicit_error("op=1,b=1B,x=1B,"))
  end)

  it("says 'empty profile' for an empty or missing spec", function()
    assert.are.equal("empty profile", explicit_error(""))
    assert.are.equal("empty profile", explicit_error(nil))
  end)
end)

describe("xsite.profile.resolve", function()
  local cfg, minimal
  setup(function()
    cfg = assert(config.load(FIXTURES .. "full.conf"))
    minimal = assert(config.load(FIXTURES .. "minimal.conf"))
  end)

  it("refuses a value longer than MAX_TEXT before it parses or keeps it", function()
    local before = profile.explicit_cached()
    local p, err = profile.resolve("op=1e9,b=1GB,x=1MB" .. string.rep(" ", profile.MAX_TEXT), cfg)
    assert.is_nil(p)
    assert.are.equal(string.format("%d characters, more than the %d it may have", profile.MAX_TEXT + 18,
      profile.MAX_TEXT), err)
    assert.are.equal(before, profile.explicit_cached())
    -- at the limit it is read, its trailing blanks left out
    p = assert(profile.resolve("op=1e9,b=1GB,x=1MB" .. string.rep(" ", profile.MAX_TEXT - 18), cfg))
    assert.are.equal(1e6, p.exchange)
  end)

  it("keeps at most EXPLICIT_CACHE_MAX texts parsed; a full cache keeps no new one until RESTART_AFTER", function()
    local keep = require("xsite.keep")
    local max, after = profile.EXPLICIT_CACHE_MAX, keep.RESTART_AFTER
    finally(function() profile.EXPLICIT_CACHE_MAX, keep.RESTART_AFTER = max, after end)
    local function spec(i) return "op=1e9,b=1GB,x=1MB,steps=" .. (7000 + i) end
    profile.EXPLICIT_CACHE_MAX = profile.explicit_cached() + 2
    local a = assert(profile.resolve(spec(1), cfg))
    assert.is_nil(a.transient)
    assert.are.equal(a, profile.resolve(spec(1), cfg))
    assert.is_nil(assert(profile.resolve(spec(2), cfg)).transient)
    -- full: a new text is parsed each time, marked transient, kept nowhere
    local c = assert(profile.resolve(spec(3), cfg))
    assert.is_true(c.transient)
    assert.are.equal(7003, c.steps)
    assert.are_not.equal(c, profile.resolve(spec(3), cfg))
    assert.are.equal(a, profile.resolve(spec(1), cfg))
    assert.are.equal(profile.EXPLICIT_CACHE_MAX, profile.explicit_cached())
    -- a refusal of a text not kept is the same message
    assert.are.same({ nil, "b: missing (op=, b= and x= are required)" }, { profile.resolve("op=1,x=1", cfg) })
    -- RESTART_AFTER after it was found full, it starts over
    keep.RESTART_AFTER = 0
    local d = assert(profile.resolve(spec(4), cfg))
    assert.is_nil(d.transient)
    assert.are.equal(1, profile.explicit_cached())
    assert.are_not.equal(a, profile.resolve(spec(1), cfg))
  end)

  it("finds a named profile of the configuration", function()
    local p = assert(profile.resolve("gromacs", cfg))
    assert.are.equal(cfg.profile_by_name.gromacs, p)
    near(2e15, p.ops, "Ops")
    assert.is_false(p.class)
  end)

  it("finds a class", function()
    local p = assert(profile.resolve("medium", cfg))
    assert.is_true(p.class)
    assert.are.equal("halo3d", p.pattern)
  end)

  it("finds a template profile", function()
    assert.are.equal("linpack", assert(profile.resolve("hpl", cfg)).template)
  end)

  it("parses a spec with '=' as explicit parameters", function()
    local p = assert(profile.resolve("op=1e12,b=8GB,x=1GB", cfg))
    assert.are.equal("explicit", p.kind)
    local none, err = profile.resolve("op=1e12,b=8GB", cfg)
    assert.is_nil(none)
    assert.are.equal("x: missing (op=, b= and x= are required)", err)
  end)

  it("uses DefaultProfile when the spec is nil or empty", function()
    assert.are.equal(cfg.profile_by_name.gromacs, profile.resolve(nil, cfg))
    assert.are.equal(cfg.profile_by_name.gromacs, profile.resolve("", cfg))
  end)

  it("says so when there is neither a spec nor a DefaultProfile", function()
    local p, err = profile.resolve(nil, minimal)
    assert.is_nil(p)
    assert.are.equal("no --comm-profile given and no DefaultProfile configured", err)
  end)

  it("names an unknown profile and lists the known ones, sorted", function()
    local p, err = profile.resolve("namd", cfg)
    assert.is_nil(p)
    assert.are.equal("unknown profile 'namd' (known: gromacs, high, hpl, low, medium; or op=…,b=…,x=…)", err)
    p, err = profile.resolve("namd", minimal)
    assert.is_nil(p)
    assert.are.equal("unknown profile 'namd' (known: none; or op=…,b=…,x=…)", err)
  end)

  it("refuses a spec that is not a string", function()
    local p, err = profile.resolve(12, cfg)
    assert.is_nil(p)
    assert.are.equal("profile must be a string", err)
  end)
end)

describe("xsite.profile.label", function()
  it("is the name of a named profile or class and 'explicit' for explicit parameters", function()
    local cfg = assert(config.load(FIXTURES .. "full.conf"))
    assert.are.equal("gromacs", profile.label(cfg.profile_by_name.gromacs))
    assert.are.equal("high", profile.label(cfg.profile_by_name.high))
    assert.are.equal("op=1,b=1B,x=1B", profile.label(assert(profile.parse_explicit("op=1, b=1B ,x=1B"))))
  end)
end)
