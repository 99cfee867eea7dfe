local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local constraint = require("xsite.constraint")

local cfg = h.two_sites(2, 2)

local function names(sites)
  local t = {}
  for i, s in ipairs(sites) do t[i] = s.name end
  return table.concat(t, ",")
end

local function analyse(text)
  local a, err = constraint.analyse(text, cfg)
  assert(a, err)
  return a
end

describe("xsite.constraint.analyse", function()
  it("finds the sites a constraint's nodes can be at", function()
    assert.are.equal("a", names(analyse("site_a").sites))
    assert.are.equal("b", names(analyse("ib&site_b").sites))
    assert.are.equal("b", names(analyse("ib,site_b").sites))
    assert.are.equal("a,b", names(analyse("ib").sites))
    assert.are.equal("a,b", names(analyse("site_a|ib").sites))
    assert.are.equal("a", names(analyse("(site_a|ib)&site_a").sites))
    -- Slurm has no negation: "!site_a" is a feature of that name
    assert.are.equal("a,b", names(analyse("!site_a").sites))
  end)

  it("counts a site possible under left-to-right evaluation or under & before |", function()
    -- left to right: (site_b|big)&site_a; with precedence: site_b|(big&site_a)
    local a = analyse("site_b|big&site_a")
    assert.are.equal("a,b", names(a.sites))
    assert.is_false(a.one_site)
    assert.is_true(a.top_or)
  end)

  it("says whether a constraint keeps a job at one site", function()
    assert.is_true(analyse("site_a&ib").one_site)
    assert.is_true(analyse("[site_a|site_b]").one_site)
    assert.is_true(analyse("ib&[(site_a&big)|site_b]").one_site)
    assert.is_false(analyse("[site_a|ib]").one_site)
    assert.is_false(analyse("site_a|site_b").one_site)
    assert.is_false(analyse("x|[site_a|site_b]").one_site)
  end)

  it("keeps nothing at one site when a count is present", function()
    for _, c in ipairs({ "site_a*1", "[site_a*1&site_b*1]", "[(site_a&ib)*2]" }) do
      local a = analyse(c)
      assert.is_true(a.counts, c)
      assert.is_false(a.one_site, c)
      assert.are.equal("a,b", names(a.sites), c)
    end
  end)

  it("refuses what Slurm's grammar does not allow, with the character", function()
    local cases = {
      ["a((b))"] = "character 2", ["(a&(b))"] = "nested parentheses", ["[a]&[b]"] = "more than one",
      ["(a&[b|c])"] = "inside parentheses", ["a&"] = "missing at the end", ["a b"] = "blank",
      ["[a"] = "unbalanced '['", ["(a"] = "unbalanced '('", ["a*0"] = "positive count",
      ["[a|b]*2"] = "count after ']'", ["a\0b"] = "control", ["a]"] = "unbalanced '['",
      -- as many of each, in the wrong order
      ["x]&[y"] = "unbalanced '['", ["a)&(b"] = "unbalanced '('",
      -- naming a site: parsed in full
      ["site_a]"] = "unexpected ']'", ["site_a&((b))"] = "nested parentheses", ["[site_a"] = "unbalanced '['",
    }
    for text, want in pairs(cases) do
      local a, err = constraint.analyse(text, cfg)
      assert.is_nil(a, text)
      assert.matches(want, err, 1, true)
    end
    local a, err = constraint.analyse(string.rep("x&", 600) .. "x", cfg)
    assert.is_nil(a)
    assert.matches("longer than 1024 characters", err, 1, true)
    -- a long one naming a site is refused before it is parsed
    a, err = constraint.analyse(string.rep("x&", 100) .. "site_a", cfg)
    assert.is_nil(a)
    assert.matches("more than 64 features", err, 1, true)
    -- one naming no site is read with searches only, whatever its length
    a = constraint.analyse(string.rep("x&", 500) .. "x", cfg)
    assert.are.equal("a,b", names(a.sites))
    assert.is_false(a.top_or)
  end)

  it("takes no constraint as every site", function()
    local a = analyse(nil)
    assert.is_true(a.empty)
    assert.are.equal("a,b", names(a.sites))
  end)
end)

describe("xsite.constraint.combine", function()
  local function combine(user, add)
    return constraint.combine(user, analyse(user), add)
  end

  it("adds a site to a conjunction, and puts an OR in parentheses first", function()
    assert.are.equal("[site_a|site_b]", constraint.combine(nil, analyse(nil), "[site_a|site_b]"))
    assert.are.equal("ib&big&site_a", combine("ib&big", "site_a"))
    assert.are.equal("(ib|big)&[site_a|site_b]", combine("ib|big", "[site_a|site_b]"))
    assert.are.equal("(ib|big)&x&site_b", combine("(ib|big)&x", "site_b"))
    assert.are.equal("[r1|r2]&site_b", combine("[r1|r2]", "site_b"))
  end)

  it("splits a bracket group's alternatives by site for a choice of sites", function()
    assert.are.equal("[(r1&site_a)|(r1&site_b)|(r2&ib&site_a)|(r2&ib&site_b)]&x",
      combine("[r1|(r2&ib)]&x", "[site_a|site_b]"))
  end)

  it("refuses what it cannot combine, and says why", function()
    local cases = {
      { "site_a*1", "site_b", "node count" },
      { "[site_a*1&site_b*1]", "[site_a|site_b]", "node count" },
      { "(a&b)|c", "site_a", "cannot put it in parentheses" },
      { "a|[b|c]", "site_a", "cannot put it in parentheses" },
      { "[(a|b)|c]", "[site_a|site_b]", "cannot split by site" },
      -- Slurm refuses a constraint over 1024 characters, even from job_submit
      { ("ib&"):rep(339) .. "ib", "[site_a|site_b]", "longer than 1024 characters" },
      { ("ib|"):rep(339) .. "ib", "site_a", "longer than 1024 characters" },
    }
    for _, c in ipairs(cases) do
      local out, why = combine(c[1], c[2])
      assert.is_nil(out, c[1])
      assert.matches(c[3], why, 1, true)
    end
  end)
end)
