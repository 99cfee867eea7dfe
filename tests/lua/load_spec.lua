local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local load = require("xsite.load")
local policy = require("xsite.policy")
local states = require("xsite.state")

-- Two sites of three nodes, the link as 100 licenses; `mid` may span, 1.05x
-- slower than one site.
local HW = "CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us"
local function cfg(license)
  return h.config(table.concat({
    "SiteName=a Nodes=a[1-3] Feature=site_a " .. HW,
    "SiteName=b Nodes=b[1-3] Feature=site_b " .. HW,
    "LinkName=l Bandwidth=100MB/s Latency=1ms License=" .. (license or "xsite_link:100"),
    "ProfileName=mid Ops=1e12 Bytes=1GB Exchange=10GB Steps=10 Pattern=tree",
    "ProfileName=chatty Ops=1e10 Bytes=1GB Exchange=10GB Steps=10000 Pattern=halo3d",
    "DefaultProfile=mid",
  }, "\n"))
end

local NOW = 1764120000

describe("xsite.state link load file", function()
  it("reads back what it writes", function()
    local ld = { time = NOW, license = { name = "xsite_link", total = 100, used = 78,
      ends = { { NOW + 60, 39 }, { NOW + 120, 39 } } }, sites = { a = { { NOW, 1 }, { NOW + 60, 2 } }, b = {} } }
    local text = states.format_load(ld, "a comment")
    assert.matches("^# a comment\nVersion=1 Time=1764120000\n", text)
    assert.matches("\nLicense=xsite_link Total=100 Used=78 Ends=1764120060%*39,1764120120%*39\n", text)
    assert.matches("\nSite=a Free=1764120000%*1,1764120060%*2\nSite=b\n$", text)
    assert.are.same(ld, assert(states.parse_load(text, "load")))
  end)

  it("refuses a bad file, naming file:line and key", function()
    local cases = {
      { "Time=5\n", "load:1: Time: a line starts with Version=, License= or Site=" },
      { "Version=1\n", "load:1: Time: missing or not an epoch" },
      { "Version=2 Time=5\n", "load:1: Version: 2, this xsite reads version 1" },
      { "Version=1 Time=5\nSite=a Free=7*1,6*1\n", "load:2: Free: '6*1' is earlier than the one before" },
      { "Version=1 Time=5\nSite=a Free=7\n", "load:2: Free: '7' is not EPOCH*COUNT" },
      { "Version=1 Time=5\nLicense=x Total=1\n", "load:2: Total, Used: each a whole number" },
      { "Version=1 Time=5\nLicense=x Total=1 Used=0 Colour=red\n", "load:2: Colour: unknown key on a License line" },
      { "Version=1 Time=5\nSite=a\nSite=a\n", "load:3: Site: a given twice" },
      { "Site=a\n", "load: Version=1 Time=EPOCH: missing" },
    }
    for _, c in ipairs(cases) do
      local ld, err = states.parse_load(c[1], "load")
      assert.is_nil(ld)
      assert.are.equal(c[2], err)
    end
  end)

  it("caps the groups of a list", function()
    local items = {}
    for i = 1, states.LOAD_GROUPS + 1 do items[i] = i .. "*1" end
    local ld, err = states.parse_load("Version=1 Time=5\nSite=a Free=" .. table.concat(items, ",") .. "\n", "load")
    assert.is_nil(ld)
    assert.matches("Free: more than 100000 groups", err)
  end)
end)

describe("xsite.load.gather", function()
  local sinfo = table.concat({
    "a1|idle", "a2|allocated", "a3|mixed", "b1|down*", "b2|allocated", "b3|drained",
    "a1|idle", "x9|idle", -- a node in two partitions; one xsite does not know
  }, "\n") .. "\n"
  local squeue = table.concat({
    "4:00|a2,b2|xsite_link:39", -- a spanning job
    "1:00|a[2-3]|(null)",        -- a2 is free when the later of its jobs ends
    "UNLIMITED|b[2]|other:1,xsite_link@db:2",
  }, "\n") .. "\n"
  local license = "LicenseName=xsite_link Total=100 Used=41 Free=59 Reserved=0 Remote=no\n"

  it("groups the link's units by when they come free, the sites' nodes by when they are free", function()
    local ld = assert(load.gather(cfg(), { squeue = squeue, sinfo = sinfo, license = license }, NOW))
    assert.are.same({ name = "xsite_link", total = 100, used = 41, ends = { { NOW + 240, 39 } } }, ld.license)
    -- a1 idle; a3 after a minute; a2 after four; b1 down, b3 drained, b2 never
    assert.are.same({ { NOW, 1 }, { NOW + 60, 1 }, { NOW + 240, 1 } }, ld.sites.a)
    assert.are.same({}, ld.sites.b)
  end)

  it("counts the time left to the next whole minute", function()
    local ld = assert(load.gather(cfg(), { squeue = "3:01|a1|xsite_link:1\n4:00|a2|xsite_link:2\n", sinfo = sinfo,
      license = license }, NOW))
    assert.are.same({ { NOW + 240, 3 } }, ld.license.ends)
    assert.are.same({ { NOW, 1 }, { NOW + 240, 2 } }, ld.sites.a)
  end)

  it("counts a license of slurmdbd by its whole name (NAME@SERVER), as Slurm does", function()
    local remote = cfg("xsite_link@db:100")
    local q = "4:00|a2|xsite_link@db:3\n3:01|a1|xsite_link:5,XSITE_LINK@DB=2\n"
    local ld = assert(load.gather(remote, { squeue = q, sinfo = sinfo,
      license = "LicenseName=xsite_link@db Total=100 Used=5 Free=95 Reserved=0 Remote=yes\n" }, NOW))
    -- xsite_link (a license of slurmctld's own) is another license
    assert.are.same({ { NOW + 240, 5 } }, ld.license.ends)
    -- the local xsite_link of a job is not the link's when the link's is slurmdbd's
    ld = assert(load.gather(cfg(), { squeue = q, sinfo = sinfo, license = license }, NOW))
    assert.are.same({ { NOW + 240, 5 } }, ld.license.ends)
  end)

  it("reads a job's licenses whole when they ask for one of several (a|b)", function()
    local ld = assert(load.gather(cfg(), { squeue = "4:00|a2|fluent:1|ansys:1\n3:01|a1|fluent:1|xsite_link=2\n",
      sinfo = sinfo, license = license }, NOW))
    -- the units of the link it may hold, whichever it got
    assert.are.same({ { NOW + 240, 2 } }, ld.license.ends)
    assert.are.same({ { NOW, 1 }, { NOW + 240, 2 } }, ld.sites.a)
  end)

  it("refuses what it cannot read, quoting it", function()
    local ld, err = load.gather(cfg(), { squeue = "4:00|a1\n", sinfo = sinfo, license = license }, NOW)
    assert.is_nil(ld)
    assert.are.equal("squeue: unexpected line: 4:00|a1", err)
    ld, err = load.gather(cfg(), { squeue = squeue, sinfo = sinfo, license = "no such license\n" }, NOW)
    assert.is_nil(ld)
    assert.are.equal("scontrol show license xsite_link: no Total= and Used= in: no such license", err)
  end)

  it("estimates the waits for the link's units and for a site's nodes", function()
    local ld = assert(load.gather(cfg(), { squeue = squeue, sinfo = sinfo, license = license }, NOW))
    assert.are.equal(0, load.link_wait(ld, 59, NOW))
    assert.are.equal(240, load.link_wait(ld, 60, NOW))
    assert.are.equal(200, load.link_wait(ld, 98, NOW + 40))
    -- the job holding 2 remote units has no time limit: never 100
    assert.is_nil(load.link_wait(ld, 100, NOW))
    assert.are.equal(0, load.site_wait(ld, "a", 1, NOW))
    assert.are.equal(60, load.site_wait(ld, "a", 2, NOW))
    assert.are.equal(240, load.site_wait(ld, "a", 3, NOW))
    assert.is_nil(load.site_wait(ld, "b", 1, NOW))
    assert.is_nil(load.site_wait(ld, "c", 1, NOW))
  end)
end)

describe("xsite.policy with the link's load", function()
  -- units a job of 4 `mid` nodes holds
  local function need()
    local d = policy.decide({ cfg = cfg(), nodes = 4 })
    assert.are.equal("span", d.action)
    return d.link_units
  end

  -- a load: `free` units of 100 free now, the rest free at `link_at`;
  -- site a's 3 nodes free at `a_at`, site b's never
  local function loaded(free, link_at, a_at)
    return { time = NOW, license = { name = "xsite_link", total = 100, used = 100 - free,
      ends = { { link_at, 100 - free } } }, sites = { a = { { a_at, 3 } }, b = {} } }
  end

  local function decide(ld, extra)
    local req = { cfg = cfg(), nodes = 4, max_nodes = 4, link_load = ld, now = NOW, time_limit = 3600 }
    for k, v in pairs(extra or {}) do req[k] = v end
    return policy.decide(req)
  end

  it("spans as before when the link has the units free", function()
    local d = decide(loaded(need(), NOW + 600, NOW + 10))
    assert.are.equal("span", d.action)
    assert.are.equal("within", d.why)
    assert.is_nil(d.link_wait)
  end)

  it("leaves out a load older than LOAD_MAX_AGE", function()
    local d = decide(loaded(0, NOW + 600, NOW), { now = NOW + policy.LOAD_MAX_AGE + 1 })
    assert.are.equal("span", d.action)
    assert.is_nil(d.link_wait)
  end)

  it("pins a job that fits one site when that site frees its nodes sooner than the link its units", function()
    -- 3 nodes: site a holds it
    local d = decide(loaded(0, NOW + 600, NOW + 60), { nodes = 3, max_nodes = 3 })
    assert.are.equal("pin", d.action)
    assert.are.equal("link-busy", d.why)
    assert.are.equal("[site_a|site_b]", d.features)
    assert.is_nil(d.licenses)
    assert.are.equal(600, d.link_wait)
    assert.are.equal(60, d.site_wait)
    assert.matches("^xsite: pinned to one site %(a or b%): the link's licenses are held by other jobs: 100 of 100 " ..
      "held, this job needs %d+ and would wait about 10 min for them; site a has 3 nodes free in about 60 s, so " ..
      "one site finishes sooner than spanning %(1%.%d%dx slower%)$", d.message)
    assert.matches(" why=link%-busy ", d.record)
  end)

  it("weighs only the sites the job's --nodelist and --constraint allow", function()
    local ld = loaded(0, NOW + 600, NOW)
    ld.sites.b = { { NOW + 30, 3 } }
    local d = decide(ld, { nodes = 3, max_nodes = 3, req_nodes = "b1" })
    assert.are.equal("link-busy", d.why)
    assert.are.equal(30, d.site_wait)
    assert.matches("site b has 3 nodes free in about 30 s", d.message)
    d = decide(ld, { nodes = 3, max_nodes = 3, features = "site_b" })
    assert.are.equal("user-constraint", d.why)
  end)

  it("spans and waits for the link's units when they come sooner than a site's nodes", function()
    local d = decide(loaded(0, NOW + 60, NOW + 3600), { nodes = 3, max_nodes = 3 })
    assert.are.equal("span", d.action)
    assert.matches("^xsite_link:%d+$", d.licenses)
    assert.are.equal(60, d.link_wait)
    assert.are.equal(3600, d.site_wait)
    assert.matches("; the link's licenses are held by other jobs: 100 of 100 held, this job needs %d+ and would " ..
      "wait about 60 s for them; one site would take about 60 min, so spanning finishes sooner; it holds", d.message)
  end)

  it("counts what spanning loses on the side of the link's wait", function()
    -- a site frees its nodes 100 s after the link's units: spanning loses
    -- about 166 s of the hour (1.05x), one site finishes sooner
    local d = decide(loaded(0, NOW + 60, NOW + 160), { nodes = 3, max_nodes = 3 })
    assert.are.equal("pin", d.action)
    assert.are.equal("link-busy", d.why)
    -- 200 s after: spanning finishes sooner
    d = decide(loaded(0, NOW + 60, NOW + 260), { nodes = 3, max_nodes = 3 })
    assert.are.equal("span", d.action)
  end)

  it("spans a job no site holds, telling it how long it waits", function()
    local d = decide(loaded(0, NOW + 60, NOW))
    assert.are.equal("span", d.action)
    assert.matches("one site would take longer, so spanning finishes sooner", d.message)
  end)

  it("tells a job that asked to span how long it waits, and spans it", function()
    local d = decide(loaded(0, NOW + 600, NOW), { nodes = 3, max_nodes = 3, affinity = "span" })
    assert.are.equal("span", d.action)
    assert.are.equal("user-span", d.why)
    assert.matches("the link's licenses are held by other jobs: 100 of 100 held, this job needs %d+ and would " ..
      "wait about 10 min for them", d.message)
  end)

  it("keeps a chatty job pinned for its slowdown, whatever the link's load", function()
    local d = decide(loaded(0, NOW + 600, NOW), { nodes = 3, max_nodes = 3, profile = "chatty" })
    assert.are.equal("pin", d.action)
    assert.are.equal("slowdown", d.why)
  end)

  it("only advises in Mode=advise", function()
    local c = cfg()
    c.policy.mode = "advise"
    local d = decide(loaded(0, NOW + 600, NOW + 60), { cfg = c, nodes = 3, max_nodes = 3 })
    assert.are.equal("pin", d.action)
    assert.is_nil(d.features)
    assert.matches("%(advice only, Mode=advise%): the link's licenses are held", d.message)
  end)
end)
