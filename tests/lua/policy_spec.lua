local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local policy = require("xsite.policy")

-- Three nodes a site; `chatty` costs far more than 10 % across the link,
-- `quiet` almost nothing (see the model specs for the arithmetic).
local PROFILES = table.concat({
  "ProfileName=quiet Ops=1e12 Bytes=1GB Exchange=1MB Steps=10 Pattern=tree",
  "ProfileName=chatty Ops=1e10 Bytes=1GB Exchange=10GB Steps=10000 Pattern=halo3d",
  "DefaultProfile=chatty",
}, "\n")

local function cfg_with(extra)
  return h.two_sites(3, 3, PROFILES .. "\n" .. (extra or ""))
end

local function decide(req, extra)
  req.cfg = req.cfg or cfg_with(extra)
  return policy.decide(req)
end

describe("xsite.policy with --site-affinity=auto", function()
  it("lets a job span when the predicted slowdown is within MaxSlowdown", function()
    local d = decide({ nodes = 4, profile = "quiet" })
    assert.are.equal("span", d.action)
    assert.are.equal("within", d.why)
    assert.is_nil(d.features)
    assert.is_true(d.prediction.slowdown <= 1.10)
    assert.matches("^xsite: may span both sites: spanning would be 1%.%d%dx slower than one site " ..
      "%(within the limit 1%.10x%)$", d.message)
  end)

  it("pins a job to one site when spanning costs too much", function()
    local d = decide({ nodes = 2, profile = "chatty" })
    assert.are.equal("pin", d.action)
    assert.are.equal("slowdown", d.why)
    assert.are.equal("[site_a|site_b]", d.features)
    assert.is_true(d.prediction.slowdown > 1.10)
    assert.matches("pinned to one site %(a or b%): spanning would be [%d.]+x slower than one site %(limit 1.10x%)",
      d.message)
  end)

  it("uses the DefaultProfile when the job names none", function()
    local d = decide({ nodes = 2 })
    assert.are.equal("pin", d.action)
    assert.matches("profile=chatty", d.record)
  end)

  it("follows MaxSlowdown", function()
    local d = decide({ nodes = 2, profile = "chatty" }, "MaxSlowdown=1000")
    assert.are.equal("span", d.action)
  end)

  it("asks topology/tree to wait for one site at most the time spanning would lose", function()
    -- ten days at a slowdown of 1.00002: about 21 s of waiting for one site
    local d = decide({ nodes = 2, profile = "quiet", topology = true, time_limit = 864000 })
    assert.are.equal("span", d.action)
    assert.are.equal(1, d.req_switch)
    assert.are.equal(math.floor(864000 * (d.prediction.slowdown - 1)), d.wait4switch)
    assert.is_true(d.wait4switch >= 1)
    assert.matches("wait4switch=" .. d.wait4switch, d.record)
    -- ten hours lose less than a second: no wait is asked for
    assert.is_nil(decide({ nodes = 2, profile = "quiet", topology = true, time_limit = 36000 }).req_switch)
    -- no wait without a time limit, without topology, or when no site holds the job
    assert.is_nil(decide({ nodes = 2, profile = "quiet", topology = true }).req_switch)
    assert.is_nil(decide({ nodes = 2, profile = "quiet", time_limit = 600 }).req_switch)
    assert.is_nil(decide({ nodes = 5, profile = "quiet", topology = true, time_limit = 600 }).req_switch)
  end)

  it("leaves a one-node job alone", function()
    local d = decide({ nodes = 1, profile = "chatty" })
    assert.are.equal("none", d.action)
    assert.are.equal("one-node", d.why)
  end)

  describe("for a job larger than any site that spanning slows too much", function()
    it("rejects it under OversizeAction=reject, naming the node count", function()
      local d = decide({ nodes = 5, profile = "chatty" }, "OversizeAction=reject")
      assert.are.equal("reject", d.action)
      assert.matches("^xsite: job rejected: no single site has 5 nodes; spanning would be", d.message)
    end)

    it("runs it with a warning under OversizeAction=warn", function()
      local d = decide({ nodes = 5, profile = "chatty" }, "OversizeAction=warn")
      assert.are.equal("span", d.action)
      assert.are.equal("oversize", d.why)
      assert.matches("running anyway %(OversizeAction=warn%)$", d.message)
    end)

    it("runs it quietly under OversizeAction=allow", function()
      local d = decide({ nodes = 5, profile = "chatty" }, "OversizeAction=allow")
      assert.are.equal("span", d.action)
      assert.is_nil(d.message:find("running anyway", 1, true))
    end)
  end)
end)

describe("xsite.policy with the user's own choice", function()
  it("pins to a named site", function()
    local d = decide({ nodes = 3, affinity = "b", profile = "quiet" })
    assert.are.equal("site", d.action)
    assert.are.equal("site_b", d.features)
    assert.matches("pinned to site b: you asked for site b", d.message)
  end)

  it("rejects a named site that is too small, with both counts", function()
    local d = decide({ nodes = 4, affinity = "a" })
    assert.are.equal("reject", d.action)
    assert.matches("%-%-site%-affinity=a: site a has 3 nodes, the job asks for 4", d.message)
  end)

  it("rejects an unknown site and lists the valid values", function()
    local d = decide({ nodes = 2, affinity = "mars" })
    assert.are.equal("reject", d.action)
    assert.matches("%-%-site%-affinity: unknown site 'mars' %(valid: auto, pin, span, a, b%)", d.message)
  end)

  it("refuses a flag value longer than MAX_FLAG before reading it, in a short message", function()
    local cached = require("xsite.profile").explicit_cached()
    for _, req in ipairs({ { affinity = string.rep("a", 1000000) },
        { profile = "op=1e12,b=1GB,x=1MB," .. string.rep(" ", 1000000) } }) do
      req.nodes = 2
      local d = decide(req)
      assert.are.equal("reject", d.action)
      assert.are.equal("bad-request", d.why)
      assert.matches("^xsite: job rejected: %-%-[a-z%-]+: 10000%d%d characters, more than the 256 it may have$",
        d.message)
    end
    assert.are.equal(cached, require("xsite.profile").explicit_cached())
    assert.are.equal("reject", decide({ nodes = 2, profile = string.rep("x", 257) }).action)
    assert.are_not.equal("bad-request", decide({ nodes = 2, affinity = "a" .. string.rep(" ", 0) }).why)
  end)

  it("pins to either site with --site-affinity=pin, even when spanning would be cheap", function()
    local d = decide({ nodes = 3, affinity = "pin", profile = "quiet" })
    assert.are.equal("pin", d.action)
    assert.are.equal("[site_a|site_b]", d.features)
    assert.are.equal("user-pin", d.why)
  end)

  it("rejects --site-affinity=pin when no site is large enough", function()
    local d = decide({ nodes = 4, affinity = "pin" })
    assert.are.equal("reject", d.action)
    assert.matches("%-%-site%-affinity=pin: no single site has 4 nodes", d.message)
  end)

  it("spans with a balanced count per site on --site-affinity=span", function()
    local d = decide({ nodes = 5, affinity = "span", profile = "chatty" })
    assert.are.equal("span", d.action)
    assert.are.equal("[site_a*3&site_b*2]", d.features)
    assert.matches("you asked to span both sites %(3%+2 nodes; predicted [%d.]+x slower", d.message)
  end)

  it("rejects a bad --comm-profile, naming the flag and the field", function()
    local d = decide({ nodes = 2, profile = "op=1e9,b=1GB" })
    assert.are.equal("reject", d.action)
    assert.are.equal("bad-request", d.why)
    assert.matches("%-%-comm%-profile: x: missing", d.message)
    d = decide({ nodes = 2, profile = "nosuch" })
    assert.matches("%-%-comm%-profile: unknown profile 'nosuch' %(known: chatty, quiet", d.message)
  end)

  it("accepts an explicit profile", function()
    local d = decide({ nodes = 4, profile = "op=1e12,b=1GB,x=1MB,steps=1,pattern=tree" })
    assert.are.equal("span", d.action)
    assert.matches("profile=op=1e12,b=1GB,x=1MB,steps=1,pattern=tree ", d.record, 1, true)
  end)

  it("rejects a node count that is not a positive whole number", function()
    for _, n in ipairs({ 0, -1, 1.5, "4" }) do
      local d = decide({ nodes = n })
      assert.are.equal("reject", d.action)
      assert.are.equal("bad-request", d.why)
    end
    assert.are.equal("reject", decide({}).action)
  end)
end)

describe("xsite.policy with the user's constraint", function()
  it("keeps the user's features and adds the site choice", function()
    assert.are.equal("intel&[site_a|site_b]", decide({ nodes = 2, features = "intel" }).features)
    assert.are.equal("(intel|amd)&[site_a|site_b]", decide({ nodes = 2, features = "intel|amd" }).features)
    assert.are.equal("intel&site_b", decide({ nodes = 2, affinity = "b", features = "intel" }).features)
  end)

  it("puts the user's features into each site's count group of a spanning job", function()
    local d = decide({ nodes = 4, affinity = "span", features = "fast&ib" })
    assert.are.equal("[(fast&ib&site_a)*2&(fast&ib&site_b)*2]", d.features)
    assert.matches("constraint=fast&ib", d.record)
    -- an OR cannot go inside a count group, and Slurm applies nothing in
    -- front of one: the user's constraint stays as it is, and the user is told
    d = decide({ nodes = 4, affinity = "span", features = "fast|ib" })
    assert.are.equal("span", d.action)
    assert.is_nil(d.features)
    assert.matches("cannot take xsite's split of the nodes", d.message)
  end)

  it("splits the alternatives of a user's bracket group by site to pin it", function()
    local d = decide({ nodes = 2, features = "[rack1|(rack2&ib)]" })
    assert.are.equal("pin", d.action)
    assert.are.equal("[(rack1&site_a)|(rack1&site_b)|(rack2&ib&site_a)|(rack2&ib&site_b)]", d.features)
    -- one site named: an AND after the group
    assert.are.equal("[rack1|rack2]&site_b", decide({ nodes = 2, affinity = "b", features = "[rack1|rack2]" }).features)
  end)

  it("refuses a constraint it cannot add a pin to, naming --constraint and why", function()
    for _, c in ipairs({ "site_a*1", "[site_a*1&site_b*1]", "ib*2", "[(r1|r2)|r3]", "(a&b)|c&[x|y]" }) do
      local d = decide({ nodes = 2, features = c })
      assert.are.equal("reject", d.action, c)
      assert.are.equal("constraint", d.why, c)
      assert.matches("^xsite: job rejected: %-%-constraint '", d.message)
      assert.matches("xsite must keep this job at one site", d.message, 1, true)
    end
    -- under Mode=advise it only says so
    local d = decide({ nodes = 2, features = "site_a*1" }, "Mode=advise")
    assert.are.equal("none", d.action)
    assert.matches("would be rejected under Mode=enforce: %-%-constraint", d.message)
  end)

  it("refuses a constraint Slurm's grammar does not allow, naming --constraint", function()
    for _, c in ipairs({ "a((b))", "[a]&[b]", "a b", "a&", "[a", "a*0" }) do
      local d = decide({ nodes = 2, features = c })
      assert.are.equal("reject", d.action, c)
      assert.are.equal("bad-request", d.why, c)
      assert.matches("^xsite: job rejected: %-%-constraint '", d.message)
    end
  end)

  it("takes a site named inside an OR as no choice of site", function()
    local d = decide({ nodes = 2, features = "site_a|ib" })
    assert.are.equal("pin", d.action)
    assert.are.equal("(site_a|ib)&[site_a|site_b]", d.features)
  end)

  it("respects a constraint that already selects a site", function()
    local d = decide({ nodes = 3, features = "site_b&intel", profile = "quiet" })
    assert.are.equal("site", d.action)
    assert.are.equal("user-constraint", d.why)
    assert.is_nil(d.features)
  end)

  it("rejects --site-affinity that contradicts the constraint", function()
    assert.are.equal("reject", decide({ nodes = 2, affinity = "a", features = "site_b" }).action)
    local d = decide({ nodes = 2, affinity = "span", features = "site_b" })
    assert.are.equal("reject", d.action)
    assert.matches("%-%-site%-affinity=span conflicts with %-%-constraint", d.message)
  end)
end)

describe("xsite.policy with nodes asked for by name", function()
  it("lets nodes named at both sites span when the model allows it, and records where", function()
    local d = decide({ nodes = 2, req_nodes = "a1,b[1]", profile = "quiet" })
    assert.are.equal("span", d.action)
    assert.are.equal("user-nodes", d.why)
    assert.is_nil(d.features)
    assert.matches("you asked for nodes by name %(%-%-nodelist%) at a and b", d.message)
    assert.matches(" wsites=a:1+b:1", d.record, 1, true)
  end)

  it("refuses nodes named at both sites when the job may not span", function()
    local d = decide({ nodes = 2, req_nodes = "a1,b[1]" })
    assert.are.equal("reject", d.action)
    assert.matches("^xsite: job rejected: %-%-nodelist names nodes at both sites %(a and b%), but this job " ..
      "may not span: spanning would be", d.message)
    d = decide({ nodes = 2, req_nodes = "a1,b1", profile = "quiet", affinity = "pin" })
    assert.are.equal("reject", d.action)
    d = decide({ nodes = 2, req_nodes = "a1,b1", affinity = "span", link_state = { state = "down" } })
    assert.are.equal("reject", d.action)
    assert.matches("the link between the sites is down", d.message)
  end)

  it("pins the rest of a job to the site of the nodes it names", function()
    local d = decide({ nodes = 3, req_nodes = "b1" })
    assert.are.equal("site", d.action)
    assert.are.equal("site_b", d.features)
    assert.matches("sites=b ", d.record)
  end)

  it("counts a node range without expanding it", function()
    local d = decide({ nodes = 1, req_nodes = "x[000000-999999]" })
    assert.are.equal(1000000, d.min_nodes)
  end)
end)

describe("xsite.policy with a node list to choose from (Slurm 23.02 and later)", function()
  -- nodelist_min: the job's own --nodes minimum, on a Slurm that reads a
  -- longer --nodelist as the nodes to choose from
  it("takes a list longer than the job's minimum as nodes to choose from, not nodes it must have", function()
    -- -N1 -w a1,b1: one node, at either site; pinned all the same, as a
    -- change Slurm refuses half-way leaves the list as nodes the job must
    -- have; and to one site by its own feature, as a choice of sites
    -- ([site_a|site_b]) does not hold nodes a job must have (the first of
    -- the sites with the most of the list's nodes)
    local d = decide({ nodes = 1, nodelist_min = 1, req_nodes = "a1,b1" })
    assert.are.equal("pin", d.action)
    assert.are.equal("one-node", d.why)
    assert.are.equal("site_a", d.features)
    assert.are.equal("site_b", decide({ nodes = 1, nodelist_min = 1, req_nodes = "a1,b[1-2]" }).features)
    -- a choice of sites of the user's own gets the site too, in
    -- --constraint and --prefer
    d = decide({ nodes = 1, nodelist_min = 1, req_nodes = "a1,b1", features = "[site_a|site_b]",
      prefer = "site_a|site_b" })
    assert.are.equal("[site_a|site_b]&site_a", d.features)
    assert.are.equal("(site_a|site_b)&[site_a|site_b]&site_a", d.prefer)
    -- one that names a site already keeps the job there
    d = decide({ nodes = 1, nodelist_min = 1, req_nodes = "a1,b1", features = "site_b&ib" })
    assert.are.equal("site", d.action)
    assert.is_nil(d.features)
    -- at one site: kept there
    assert.are.equal("site_b", decide({ nodes = 1, nodelist_min = 1, req_nodes = "b[1-2]" }).features)
    -- the same on a Slurm that gives the job both (22.05)
    assert.are.equal("reject", decide({ nodes = 1, req_nodes = "a1,b1" }).action)
    -- and where the list is no longer than the minimum: every node
    d = decide({ nodes = 2, nodelist_min = 2, req_nodes = "a1,b1" })
    assert.are.equal("reject", d.action)
    assert.matches("--nodelist names nodes at both sites", d.message, 1, true)
  end)

  it("counts a node named twice once, as Slurm does", function()
    local d = decide({ nodes = 2, nodelist_min = 2, req_nodes = "a1,a1,b[1,1]" })
    assert.are.equal("reject", d.action)
    assert.matches("--nodelist names nodes at both sites", d.message, 1, true)
    assert.are.equal(2, d.min_nodes)
  end)

  it("pins the job to a site with enough of the listed nodes, and never past the list's length", function()
    local d = decide({ nodes = 2, max_nodes = 6, nodelist_min = 2, req_nodes = "a[1-2],b1" })
    assert.are.equal("pin", d.action)
    assert.are.equal("site_a", d.features)
    assert.are.equal(3, d.nodes)
    assert.matches(" n=3 ", d.record, 1, true)
    assert.matches(" nmin=2 wsites=a:2+b:1 ", d.record, 1, true)
    -- nowhere enough: no site can hold it, and with the link down it is refused
    d = decide({ nodes = 3, nodelist_min = 3, req_nodes = "a[1-2],b[1-2]", link_state = { state = "down" } })
    assert.are.equal("reject", d.action)
    assert.matches("the link between the sites is down, and no site can take all 3 nodes among those --nodelist " ..
      "names", d.message, 1, true)
    -- a list with too few nodes at each site is no job too large for a
    -- site: OversizeAction does not let it span
    d = decide({ nodes = 3, nodelist_min = 3, req_nodes = "a[1-2],b[1-2]" }, "OversizeAction=warn")
    assert.are.equal("reject", d.action)
    assert.matches("no site can take all 3 nodes among those --nodelist names", d.message, 1, true)
  end)

  it("never spans with the link down, whatever the list", function()
    local d = decide({ nodes = 2, nodelist_min = 2, req_nodes = "a[1-2],b[1-3]", affinity = "span",
      profile = "quiet", link_state = { state = "down" } })
    assert.are.equal("pin", d.action)
    assert.are.equal("site_b", d.features)
  end)

  it("keeps a job whose list is at one site there", function()
    local d = decide({ nodes = 1, max_nodes = 3, nodelist_min = 1, req_nodes = "b[1-3]", affinity = "span",
      profile = "quiet" })
    assert.are.equal("site", d.action)
    assert.are.equal("user-nodes", d.why)
    assert.are.equal("site_b", d.features)
    -- and refuses it when its constraint allows no node there
    d = decide({ nodes = 1, max_nodes = 3, nodelist_min = 1, req_nodes = "b[1-3]", features = "site_a" })
    assert.are.equal("reject", d.action)
    assert.matches("--constraint 'site_a' allows no node of site b, where every node --nodelist names is",
      d.message, 1, true)
  end)

  it("takes a site asked for when the list has enough nodes there", function()
    local d = decide({ nodes = 2, nodelist_min = 2, req_nodes = "a[1-2],b1", affinity = "a" })
    assert.are.equal("site", d.action)
    assert.are.equal("site_a", d.features)
    d = decide({ nodes = 2, nodelist_min = 2, req_nodes = "a[1-2],b1", affinity = "b" })
    assert.are.equal("reject", d.action)
    assert.matches("--site-affinity=b conflicts with --nodelist, which names 1 node at site b, and the job " ..
      "needs 2", d.message, 1, true)
  end)

  it("leaves the split to Slurm when the list cannot take xsite's", function()
    -- four nodes of a[1-3],b1: xsite's split would be 2+2
    local d = decide({ nodes = 3, max_nodes = 4, nodelist_min = 3, req_nodes = "a[1-3],b1", affinity = "span",
      profile = "quiet" })
    assert.are.equal("span", d.action)
    assert.is_nil(d.features)
    assert.matches("the nodes --nodelist names cannot take xsite's split", d.message, 1, true)
    d = decide({ nodes = 4, nodelist_min = 4, req_nodes = "a[1-3],b[1-3]", affinity = "span", profile = "quiet" })
    assert.are.equal("[site_a*2&site_b*2]", d.features)
  end)

  it("puts a heterogeneous job's later component where its first went when the list allows it", function()
    local d = decide({ nodes = 2, nodelist_min = 2, het = { offset = 1, site = "b" }, req_nodes = "a1,b[1-2]" })
    assert.are.equal("site", d.action)
    assert.are.equal("site_b", d.features)
    d = decide({ nodes = 2, nodelist_min = 2, het = { offset = 1, site = "b" }, req_nodes = "a[1-2],b1" })
    assert.are.equal("reject", d.action)
    assert.matches("--nodelist names 1 node at site b, and the job needs 2: component 1", d.message, 1, true)
  end)

  it("decides a change from the record's list as from the list", function()
    local d = decide({ nodes = 2, nodelist_min = 2, nodelist_sites = "a:2+b:1" })
    assert.are.equal("site_a", d.features)
    assert.matches(" wsites=a:2+b:1", d.record, 1, true)
    -- an older record, without counts: nodes the job must have
    d = decide({ nodes = 2, nodelist_min = 2, nodelist_sites = "a+b" })
    assert.are.equal("reject", d.action)
    assert.matches(" wsites=a+b", d.record, 1, true)
  end)
end)

describe("xsite.policy on the job's real shape", function()
  it("decides a node range on its largest count", function()
    local d = decide({ nodes = 1, max_nodes = 4 })
    assert.are.equal("pin", d.action)
    assert.are.equal("[site_a|site_b]", d.features)
    assert.matches(" n=4 ", d.record, 1, true)
    assert.matches(" nmin=1", d.record, 1, true)
  end)

  it("keeps a range that reaches past one site at one site when its minimum fits", function()
    local d = decide({ nodes = 2, max_nodes = 6 })
    assert.are.equal("pin", d.action)
    assert.matches(" n=6 ", d.record, 1, true)
  end)
end)

describe("xsite.policy with heterogeneous jobs", function()
  it("puts a first component at one named site", function()
    local d = decide({ nodes = 1, het = { offset = 0 }, profile = "quiet" })
    assert.are.equal("site", d.action)
    assert.are.equal("a", d.het)
    assert.are.equal("site_a", d.features)
    d = decide({ nodes = 1, het = { offset = 0 }, affinity = "b" })
    assert.are.equal("b", d.het)
    d = decide({ nodes = 3, het = { offset = 0 }, features = "site_b|x" })
    assert.are.equal("(site_b|x)&site_a", d.features)
  end)

  it("puts later components where the first went, or refuses them", function()
    local d = decide({ nodes = 2, het = { offset = 1, site = "b" } })
    assert.are.equal("site", d.action)
    assert.are.equal("site_b", d.features)
    assert.are.equal("reject", decide({ nodes = 1, het = { offset = 1, site = "b" }, affinity = "a" }).action)
    assert.are.equal("reject", decide({ nodes = 1, het = { offset = 1, site = "b" }, features = "site_a" }).action)
    assert.are.equal("reject", decide({ nodes = 1, het = { offset = 1, site = "b" }, req_nodes = "a1" }).action)
    assert.are.equal("reject", decide({ nodes = 4, het = { offset = 1, site = "b" } }).action)
    d = decide({ nodes = 1, het = { offset = 1 } })
    assert.are.equal("reject", d.action)
    assert.matches("submit the job again", d.message, 1, true)
  end)

  it("lets the components of a job asked to span go anywhere while the link is up", function()
    local d = decide({ nodes = 1, het = { offset = 0 }, affinity = "span" })
    assert.are.equal("span", d.het)
    assert.are.equal("span", decide({ nodes = 2, het = { offset = 1, site = "span" } }).action)
    assert.are.equal("reject", decide({ nodes = 2, het = { offset = 1, site = "span" },
      link_state = { state = "down" } }).action)
  end)
end)

describe("xsite.policy modes and link state", function()
  it("changes nothing with Mode=off", function()
    local d = decide({ nodes = 2, affinity = "mars" }, "Mode=off")
    assert.are.equal("none", d.action)
    assert.matches("^xsite v=1 action=none why=off", d.record)
  end)

  it("only advises with Mode=advise", function()
    local d = decide({ nodes = 2, profile = "chatty", topology = true, time_limit = 600 }, "Mode=advise")
    assert.are.equal("pin", d.action)
    assert.is_nil(d.features)
    assert.matches("%(advice only, Mode=advise%)", d.message)
    d = decide({ nodes = 5, profile = "chatty" }, "Mode=advise\nOversizeAction=reject")
    assert.are.equal("none", d.action)
    assert.matches("would be rejected under Mode=enforce", d.message)
    -- bad input is still an error
    assert.are.equal("reject", decide({ nodes = 2, affinity = "mars" }, "Mode=advise").action)
  end)

  it("pins every job that fits a site while the link is down", function()
    local d = decide({ nodes = 2, profile = "quiet", link_state = { state = "down" } })
    assert.are.equal("pin", d.action)
    assert.are.equal("link-down", d.why)
    d = decide({ nodes = 2, affinity = "span", link_state = { state = "down" } })
    assert.are.equal("pin", d.action)
    assert.matches("span cannot be honoured", d.message)
  end)

  it("uses the measured link figures", function()
    local cfg = cfg_with()
    local up = policy.decide({ cfg = cfg, nodes = 2, profile = "quiet" })
    local slow = policy.decide({ cfg = cfg, nodes = 2, profile = "quiet",
      link_state = { state = "degraded", latency = 5, bandwidth = 1e6 } })
    assert.are.equal("span", up.action)
    assert.are.equal("pin", slow.action)
    assert.matches("link=degraded,1e%+06,5,measured", slow.record)
  end)
end)

describe("xsite.policy record", function()
  it("is one line of key=value words that xsite.record parses back", function()
    local d = decide({ nodes = 2, profile = "chatty" })
    assert.is_nil(d.record:find("\n"))
    local r = assert(require("xsite.record").parse("other text; " .. d.record))
    assert.are.equal("1", r.v)
    assert.are.equal("pin", r.action)
    assert.are.equal("slowdown", r.why)
    assert.are.equal("2", r.n)
    assert.are.equal("1+1", r.split)
    assert.are.equal(string.format("%.4f", d.prediction.slowdown), r.slowdown)
  end)
end)

describe("xsite.policy overrides", function()
  it("lets root or SlurmUser span with the link down, and records who", function()
    local d = decide({ nodes = 2, affinity = "span", override = 0, link_state = { state = "down" } })
    assert.are.equal("span", d.action)
    assert.matches(" override=0", d.record, 1, true)
    d = decide({ nodes = 2, affinity = "span", link_state = { state = "down" } })
    assert.are.equal("pin", d.action)
    d = decide({ nodes = 2, affinity = "span", req_nodes = "a1,b1", override = 0, link_state = { state = "down" } })
    assert.are.equal("span", d.action)
    -- an override is for span only: root's auto job is decided like anyone's
    d = decide({ nodes = 2, override = 0 })
    assert.are.equal("pin", d.action)
    assert.is_nil(d.record:match("override"))
  end)

  it("keeps a one-node job asking to span as it is", function()
    local d = decide({ nodes = 1, affinity = "span" })
    assert.are.equal("none", d.action)
    assert.are.equal("one-node", d.why)
    assert.is_nil(d.features)
  end)
end)
