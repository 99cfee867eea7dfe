-- Specs for xsite.hostlist: Slurm hostlist expressions, both ways.

local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")

local hostlist = require("xsite.hostlist")

local function expand_error(list)
  local names, err = hostlist.expand(list)
  assert.is_nil(names, "expected an error for " .. tostring(list))
  assert.is_string(err)
  assert.is_true(#err > 0)
  return err
end

local sorted_unique = h.sorted_unique

describe("xsite.hostlist.expand", function()
  it("expands hd[001-140] into 140 names padded to three digits", function()
    local names = assert(hostlist.expand("hd[001-140]"))
    assert.are.equal(140, #names)
    assert.are.equal("hd001", names[1])
    assert.are.equal("hd009", names[9])
    assert.are.equal("hd010", names[10])
    assert.are.equal("hd099", names[99])
    assert.are.equal("hd140", names[140])
    for i, n in ipairs(names) do
      assert.are.equal(string.format("hd%03d", i), n)
    end
  end)

  it("expands several hosts and comma-separated ranges in the order written", function()
    assert.are.same({ "a1", "a2", "b1", "b2", "b3", "b4", "b7" }, hostlist.expand("a[1-2],b[1-4,7]"))
  end)

  it("expands several bracket groups as a product, the first group slowest", function()
    assert.are.same({ "r1n1", "r1n2", "r1n3", "r2n1", "r2n2", "r2n3" }, hostlist.expand("r[1-2]n[1-3]"))
  end)

  it("keeps a suffix after the brackets", function()
    assert.are.same({ "node1-ib", "node2-ib", "node3-ib" }, hostlist.expand("node[1-3]-ib"))
  end)

  it("takes single names and plain lists", function()
    assert.are.same({ "login" }, hostlist.expand("login"))
    assert.are.same({ "a", "b.example", "c_d" }, hostlist.expand("a,b.example,c_d"))
  end)

  it("pads each range to the width of its own lower bound (mixed padding)", function()
    assert.are.same({ "n01", "n02", "n03", "n5" }, hostlist.expand("n[01-03,5]"))
    assert.are.same({ "n8", "n9", "n10" }, hostlist.expand("n[8-10]"))
    assert.are.same({ "n08", "n09", "n10" }, hostlist.expand("n[08-10]"))
    assert.are.same({ "n0", "n1" }, hostlist.expand("n[0-1]"))
    assert.are.same({ "n00", "n01" }, hostlist.expand("n[00-01]"))
  end)

  it("keeps duplicates as written", function()
    assert.are.same({ "a1", "a2", "a2" }, hostlist.expand("a[1-2],a2"))
  end)

  it("expands a bracket group with no prefix into bare numbers", function()
    assert.are.same({ "1", "2" }, hostlist.expand("[1-2]"))
  end)

  it("expands a single-number group", function()
    assert.are.same({ "a7" }, hostlist.expand("a[7]"))
  end)

  describe("syntax errors return nil and a message naming the expression", function()
    it("unclosed bracket", function()
      assert.are.equal("unclosed '[' in 'a[1-3'", expand_error("a[1-3"))
      assert.are.equal("unclosed '[' in 'a[1,2'", expand_error("a[1,2"))
      assert.matches("unclosed '%['", expand_error("a[[1]]"))
    end)

    it("unmatched closing bracket", function()
      assert.are.equal("unmatched ']' in 'a1-3]'", expand_error("a1-3]"))
      assert.matches("unmatched ']'", expand_error("a[1]]"))
    end)

    it("backwards range", function()
      assert.are.equal("range '5-3' runs backwards in 'a[5-3]'", expand_error("a[5-3]"))
    end)

    it("empty list, empty name and empty brackets", function()
      assert.are.equal("empty hostlist", expand_error(""))
      assert.are.equal("empty host name in 'a,,b'", expand_error("a,,b"))
      assert.are.equal("empty host name in 'a,'", expand_error("a,"))
      assert.are.equal("empty host name in ',a'", expand_error(",a"))
      assert.are.equal("empty brackets in 'a[]'", expand_error("a[]"))
    end)

    it("bad ranges", function()
      assert.are.equal("bad range '1-' in 'a[1-]'", expand_error("a[1-]"))
      assert.are.equal("bad range '-1' in 'a[-1]'", expand_error("a[-1]"))
      assert.are.equal("bad range 'x' in 'a[x]'", expand_error("a[x]"))
      assert.are.equal("bad range '1-2-3' in 'a[1-2-3]'", expand_error("a[1-2-3]"))
      assert.are.equal("bad range ' 1' in 'a[ 1]'", expand_error("a[ 1]"))
      assert.matches("bad range ''", expand_error("a[1,]"))
    end)

    it("bad characters in a name", function()
      assert.are.equal("invalid character in host name 'a b'", expand_error("a b"))
      assert.are.equal("invalid character in host name 'a/b'", expand_error("a/b"))
      assert.are.equal("invalid character in host name 'n[1-2]x\"'", expand_error("n[1-2]x\""))
      assert.matches("invalid character", expand_error("h\195\164"))
      assert.matches("invalid character", expand_error("a\n"))
    end)

    it("numbers of more than nine digits", function()
      assert.are.equal("number too large in 'a[1-9999999999]'", expand_error("a[1-9999999999]"))
    end)

    it("too many names, in one group, in a product and in a sum", function()
      assert.are.equal("'a[1-2000000]' expands to more than 1000000 names", expand_error("a[1-2000000]"))
      assert.matches("expands to more than 1000000 names", expand_error("a[1-1000]b[1-1001]"))
      assert.matches("expands to more than 1000000 names", expand_error("a[1-600000],b[1-600000]"))
    end)

    it("not a string", function()
      assert.are.equal("hostlist must be a string", expand_error(nil))
      assert.are.equal("hostlist must be a string", expand_error(12))
    end)
  end)

  describe("the limit MAX_HOSTS", function()
    local saved
    before_each(function() saved = hostlist.MAX_HOSTS end)
    after_each(function() hostlist.MAX_HOSTS = saved end)

    it("allows exactly MAX_HOSTS names and refuses one more", function()
      hostlist.MAX_HOSTS = 10
      assert.are.equal(10, #assert(hostlist.expand("a[1-10]")))
      assert.are.equal(10, #assert(hostlist.expand("a[1-5],b[1-5]")))
      assert.are.equal("'a[1-11]' expands to more than 10 names", expand_error("a[1-11]"))
      assert.are.equal("'a[1-5],b[1-6]' expands to more than 10 names", expand_error("a[1-5],b[1-6]"))
    end)
  end)

  it("allows MAX_GROUPS bracket groups in one name and refuses one more", function()
    local n = hostlist.MAX_GROUPS
    assert.is_number(n)
    assert.are.same({ string.rep("a1", n) }, hostlist.expand(string.rep("a[1]", n)))
    assert.matches("^more than " .. n .. " bracket groups in 'a%[1%]", expand_error(string.rep("a[1]", n + 1)))
  end)

  it("returns nil and a message, without raising, for 30000 bracket groups in one name", function()
    -- Each bracket group is one level of recursion in the expansion; Lua 5.1
    -- stops at about 20000 levels with "stack overflow".
    local expr = string.rep("a[1]", 30000)
    local ok, names, err = pcall(hostlist.expand, expr)
    assert.is_true(ok, "raised: " .. tostring(names))
    if names then
      assert.are.same({ string.rep("a1", 30000) }, names)
    else
      assert.is_string(err)
    end
  end)
end)

describe("xsite.hostlist.compress", function()
  it("compresses consecutive numbers into ranges, keeping the padding", function()
    local names = assert(hostlist.expand("hd[001-140]"))
    assert.are.equal("hd[001-140]", hostlist.compress(names))
    assert.are.equal("a[1-3,5]", hostlist.compress({ "a1", "a2", "a3", "a5" }))
  end)

  it("sorts numbers and drops duplicates", function()
    assert.are.equal("a[1-3]", hostlist.compress({ "a3", "a1", "a2", "a1" }))
  end)

  it("keeps groups in the order of their first name", function()
    assert.are.equal("b[1-2],a[1-2]", hostlist.compress({ "b1", "a1", "b2", "a2" }))
  end)

  it("groups by prefix and suffix around the last number", function()
    assert.are.equal("node[1-3]-ib", hostlist.compress({ "node1-ib", "node2-ib", "node3-ib" }))
    assert.are.equal("r1n[1-3],r2n[1-3]", hostlist.compress(assert(hostlist.expand("r[1-2]n[1-3]"))))
  end)

  it("writes a single name without brackets, and names without numbers as they are", function()
    assert.are.equal("a7", hostlist.compress({ "a7" }))
    assert.are.equal("login,a7", hostlist.compress({ "login", "a7" }))
  end)

  it("gives an empty string for no names", function()
    assert.are.equal("", hostlist.compress({}))
  end)

  it("keeps names of different padding apart (mixed padding)", function()
    local c = hostlist.compress({ "n01", "n1", "n02", "n2" })
    assert.are.same({ "n01", "n02", "n1", "n2" }, sorted_unique(assert(hostlist.expand(c))))
  end)

  it("lets an unpadded number as wide as a padded group join that group", function()
    assert.are.equal("n[08-10]", hostlist.compress({ "n08", "n09", "n10" }))
  end)

  it("keeps numbers of more than nine digits as literal names", function()
    assert.are.equal("n1234567890", hostlist.compress({ "n1234567890" }))
    local c = hostlist.compress({ "n1234567890", "n1234567891" })
    assert.are.same({ "n1234567890", "n1234567891" }, sorted_unique(assert(hostlist.expand(c))))
  end)

  it("drops a repeated unpadded name that comes after a padded group of its width", function()
    -- n1000 starts an unpadded group, n0001 a group of width 4; the second
    -- n1000 must not land in the padded group as well.
    local c = hostlist.compress({ "n1000", "n0001", "n1000" })
    local back = assert(hostlist.expand(c))
    table.sort(back)
    assert.are.same({ "n0001", "n1000" }, back, "compress gave " .. c)
  end)

  -- A small generator that is the same on every Lua version (Park-Miller).
  local function rng(seed)
    local s = seed
    return function(n)
      s = (s * 48271) % 2147483647
      return s % n + 1
    end
  end

  local SEED = 4711
  it("round-trips: expand(compress(x)) holds the sorted unique names of x (seed " .. SEED
    .. ", 3000 random lists)", function()
    local r = rng(SEED)
    local prefixes = { "n", "hd", "ma", "r1n", "node", "a-", "x.y", "", "c_" }
    local suffixes = { "", "", "", "-ib", "a", ".mgmt" }
    for case = 1, 3000 do
      local names = {}
      for _ = 1, r(40) - 1 do
        local num = r(1200) - 1
        local width = ({ 0, 0, 2, 3, 4 })[r(5)]
        local digits = width > 0 and string.format("%0" .. width .. "d", num) or tostring(num)
        local name = prefixes[r(#prefixes)] .. digits .. suffixes[r(#suffixes)]
        if r(20) == 1 then name = prefixes[r(#prefixes)] .. "x" end  -- no number at all
        names[#names + 1] = name
      end
      local c = hostlist.compress(names)
      if #names == 0 then
        assert.are.equal("", c)
      else
        local back, err = hostlist.expand(c)
        assert.is_nil(err, "case " .. case .. ": " .. c)
        table.sort(back)
        assert.are.same(sorted_unique(names), back, "case " .. case .. ": " .. c)
      end
    end
  end)
end)

describe("xsite.hostlist without expanding", function()
  local cfg = h.config(table.concat({
    "SiteName=a Nodes=a[001-140] Feature=site_a CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s " ..
      "NetBandwidth=1GB/s NetLatency=1us",
    "SiteName=b Nodes=b[1-4],gpu-b[1-2]-x Feature=site_b CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s " ..
      "NetBandwidth=1GB/s NetLatency=1us",
    "LinkName=l Bandwidth=100MB/s Latency=1ms",
  }, "\n"))

  local function sites(list)
    local s, n = hostlist.sites(list, cfg)
    assert(s, n)
    local t = {}
    for i, site in ipairs(s) do t[i] = site.name end
    return table.concat(t, ","), n
  end

  it("gives an expression's first name from its ranges", function()
    assert.are.equal("a003", hostlist.first("a[003-140],b1"))
    assert.are.equal("r1n07-ib", hostlist.first("r[1-2]n[07,09]-ib"))
    assert.are.equal("b1", hostlist.first("b1,a1"))
    assert.are.equal("x000000", hostlist.first("x[000000-999999]"))
    assert.is_nil(hostlist.first(""))
    assert.is_nil(hostlist.first("a[1-"))
    assert.is_nil(hostlist.first(nil))
    local ok, err = hostlist.first("a" .. string.rep("1", hostlist.MAX_NODELIST))
    assert.is_nil(ok)
    assert.matches("longer than", err)
  end)

  it("counts a node named in several lists once when asked to", function()
    assert.are.same({ 3, 1 }, (hostlist.site_counts("a[001-002],b1,a001", cfg)))
    local counts, total, outside = hostlist.site_counts("a[001-002],b1,a001,zz1", cfg, true)
    assert.are.same({ 2, 1 }, counts)
    assert.are.equal(4, total)
    assert.are.equal(1, outside)
  end)

  it("counts the names of ranges with no list made", function()
    assert.are.equal(1000000, hostlist.count("x[000000-999999]"))
    assert.are.equal(1000000 * 16, hostlist.count("x[000000-999999]y[1-16]"))
    assert.are.equal(5, hostlist.count("a[1-2],b[1-3]"))
    assert.is_nil(hostlist.count("a[1-"))
  end)

  it("finds the sites a hostlist names, honouring zero padding", function()
    assert.are.same({ "a", 1 }, { sites("a001") })
    assert.are.same({ "a,b", 3 }, { sites("a[139-140],b4") })
    assert.are.same({ "", 3 }, { sites("a[1-3]") })   -- a1 is no node: a001 is
    assert.are.same({ "", 2 }, { sites("b[01-02]") })
    assert.are.same({ "b", 2 }, { sites("gpu-b[1-2]-x") })
    assert.are.same({ "b", 4 }, { sites("gpu-b[1-2]-x,b[3-4]") })
    assert.are.same({ "", 1000000 }, { sites("x[000000-999999]") })
    assert.are.same({ "", 1000000 }, { sites("a[000000-999999]") })  -- a000001 is no node
    assert.are.same({ "a", 1000 }, { sites("a[000-999]") })
  end)

  it("counts the names of each site as expanding would, with no list made", function()
    -- per site from the expansion, for comparison
    local function by_expansion(list)
      local counts = { 0, 0 }
      local names = assert(hostlist.expand(list))
      for _, n in ipairs(names) do
        local s = cfg.site_of_node[n]
        if s then counts[s.name == "a" and 1 or 2] = counts[s.name == "a" and 1 or 2] + 1 end
      end
      return counts, #names
    end
    for _, list in ipairs({ "a001", "a[001-140]", "a[1-200]", "a[001-005,003-009],b[0-9]", "a[0001-0140]",
        "a[99-140]", "a[100-140],a[010-099]", "b[1-4],gpu-b[1-2]-x", "b[01-04]", "gpu-b[1-2]-[x]",
        "a0[01-40]", "a00[1-9]", "[a-b]", "x[1-3]a001", "a[001-002]b", "b1,b2,a001,zz", "a[000-999]" }) do
      local c, n = hostlist.site_counts(list, cfg)
      if c then
        local want, wn = by_expansion(list)
        assert.are.same({ want, wn }, { c, n }, list)
      else
        assert.is_nil(hostlist.expand(list), list)
      end
    end
  end)

  it("counts a hostile node list from the ranges: no name made, little memory", function()
    -- 8000-character names, a million of them: expanding would take 8 GB
    local list = string.rep("x", 8000) .. "[000000-999999]," .. "a[001-140],b[1-4]"
    collectgarbage("collect")
    local before = collectgarbage("count")
    local c, n, outside = hostlist.site_counts(list, cfg)
    assert.are.same({ { 140, 4 }, 1000144, 1000000 }, { c, n, outside })
    assert.is_true(collectgarbage("count") - before < 1024, "less than 1 MiB of Lua heap")
    local long, err = hostlist.site_counts(string.rep("a001,", 60000) .. "a001", cfg)
    assert.is_nil(long)
    assert.matches("longer than 262144 characters", err)
  end)

  it("finds nodes whose names have digits before their last group, and refuses counts past MAX_COUNT", function()
    local racks = h.config(table.concat({
      "SiteName=a Nodes=a[1-2] Feature=site_a CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s " ..
        "NetBandwidth=1GB/s NetLatency=1us",
      "SiteName=b Nodes=r1c[1-2]n[1-4],r1n[1-3]-ib0 Feature=site_b CoresPerNode=1 CorePeak=1GF " ..
        "MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us",
      "LinkName=l Bandwidth=100MB/s Latency=1ms",
    }, "\n"))
    assert.are.same({ { 0, 8 }, 8, 0 }, { hostlist.site_counts("r1c[1-2]n[1-4]", racks) })
    assert.are.same({ { 0, 3 }, 3, 0 }, { hostlist.site_counts("r1n[1-3]-ib0", racks) })
    assert.are.same({ { 1, 2 }, 3, 0 }, { hostlist.site_counts("r1c[1-2]n1,a2", racks) })
    assert.are.equal(1, #hostlist.sites("r1c[1-2]n[1-4]", racks))
    -- three groups of a billion: more than a 32-bit count, never wrapped
    local c, err = hostlist.site_counts("x[1-999999999]y[1-999999999]z[1-999999999]", racks)
    assert.is_nil(c)
    assert.matches("expands to more than 4294967295 names", err)
    c, err = hostlist.site_counts(string.rep("x[1-999999999],", 5) .. "a1", racks)
    assert.is_nil(c)
    assert.matches("stands for more than 4294967295 names", err)
  end)

  it("counts each node a --nodelist names once, as Slurm does, with no list made", function()
    local racks = h.config(table.concat({
      "SiteName=a Nodes=a[001-140],a[1-3],login Feature=site_a CoresPerNode=1 CorePeak=1GF " ..
        "MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us",
      "SiteName=b Nodes=b[1-4],gpu-b[1-2]-x,r1c[1-2]n[1-4] Feature=site_b CoresPerNode=1 CorePeak=1GF " ..
        "MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us",
      "LinkName=l Bandwidth=100MB/s Latency=1ms",
    }, "\n"))
    -- the nodes of each site the expansion names, each once; and how many
    -- names in all, each once (a name at no site in a list with brackets:
    -- as often as named)
    local function by_expansion(list)
      local counts, seen, total = { 0, 0 }, {}, 0
      for _, n in ipairs(assert(hostlist.expand(list))) do
        local site = racks.site_of_node[n]
        if not seen[n] then
          seen[n], total = true, total + 1
          if site then counts[site.name == "a" and 1 or 2] = counts[site.name == "a" and 1 or 2] + 1 end
        elseif not site and list:find("[", 1, true) then
          total = total + 1
        end
      end
      return counts, total
    end
    local lists = { "a001,a001", "a[001-005],a[003-009],a004", "a[1-3],a[001-003],a[1-2]", "login,login,a1",
      "b[1-4],b[2-3],b[1,1,1]", "r1c[1-2]n[1-4],r1c1n[1-2],r1c[1-2]n1", "gpu-b[1-2]-x,gpu-b1-x",
      "a[001-140],a[050-060],a[100-140]", "b1,b1,b1,a001", "a[0001-0140],a[001-140]", "a[5-120],a[1-2]" }
    -- and random lists of overlapping ranges and names
    math.randomseed(7)
    for _ = 1, 300 do
      local items = {}
      for k = 1, math.random(1, 6) do
        local pick = math.random(1, 4)
        if pick == 1 then
          local lo = math.random(1, 140)
          items[k] = string.format("a[%03d-%03d]", lo, math.min(140, lo + math.random(0, 30)))
        elseif pick == 2 then
          items[k] = string.format("b[%d-%d]", math.random(1, 2), math.random(2, 4))
        elseif pick == 3 then
          items[k] = string.format("r1c%d n[%d-4]", math.random(1, 2), math.random(1, 4)):gsub(" ", "")
        else
          items[k] = ({ "a001", "a1", "login", "b3", "zz9" })[math.random(1, 5)]
        end
      end
      lists[#lists + 1] = table.concat(items, ",")
    end
    for _, list in ipairs(lists) do
      local want, want_total = by_expansion(list)
      local named, total, counts = hostlist.sites(list, racks)
      assert(named, total)
      assert.are.same({ want, want_total }, { counts, total }, list)
      -- whole numbers on Lua 5.3 and later too (a record writes them)
      for _, k in ipairs({ counts[1], counts[2], total }) do
        assert.are.equal(string.format("%d", k), tostring(k), list)
      end
      assert.are.equal((want[1] > 0 and 1 or 0) + (want[2] > 0 and 1 or 0), #named, list)
    end
  end)

  it("refuses what is too long or too complex to check", function()
    assert.is_nil(hostlist.sites(string.rep("a001,", 20000), cfg))
    local many = {}
    for i = 1, 500 do many[i] = "a" .. i .. "[1-2]z[1-2]" end
    local s, err = hostlist.sites(table.concat(many, ","), cfg)
    assert.is_nil(s)
    assert.matches("too complex", err)
    -- every range of an item of several groups counts against the bound:
    -- 1300 of them in each group, against a site of 5000 such names
    local big = h.config(table.concat({
      "SiteName=a Nodes=r[10-59]n[100-199] Feature=site_a CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s " ..
        "NetBandwidth=1GB/s NetLatency=1us",
      "SiteName=b Nodes=b[1-4] Feature=site_b CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s " ..
        "NetBandwidth=1GB/s NetLatency=1us",
      "LinkName=l Bandwidth=100MB/s Latency=1ms",
    }, "\n"))
    s, err = hostlist.sites(string.format("r[%s10-59]n[%s100-199]", ("9,"):rep(1300), ("9,"):rep(1300)), big)
    assert.is_nil(s)
    assert.matches("too complex", err)
    assert.are.same({ 5000, { 5000, 0 } }, { select(2, hostlist.sites("r[10-59]n[100-199]", big)) })
    -- what a refused list had counted is not carried into the next count
    assert.is_nil(hostlist.sites("a[001-010]," .. table.concat(many, ","), cfg))
    local _, total, counts = hostlist.sites("a[005-006]", cfg)
    assert.are.same({ 2, { 2, 0 } }, { total, counts })
  end)
end)
