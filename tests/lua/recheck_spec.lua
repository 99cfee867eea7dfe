local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local recheck = require("xsite.recheck")

local HW = "CoresPerNode=4 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us"
local CONF = table.concat({
  "SiteName=a Nodes=a[1-3] Feature=site_a " .. HW,
  "SiteName=b Nodes=b[1-3] Feature=site_b " .. HW,
  "LinkName=l Bandwidth=100MB/s Latency=1ms",
}, "\n") .. "\n"

-- squeue's lines for a job: recheck.SQUEUE_JOBS's and SQUEUE_ASKS's (a
-- newline in the owner's text makes more than one).  A job held by
-- JobHeldUser or JobHeldAdmin has priority 0 unless `priority` says.  A
-- component of a heterogeneous job H+k has job id 100*H+k.
local function line(id, reason, comment, features, prefer, nodes, priority)
  priority = priority or (reason:find("^JobHeld") and "0" or "4294")
  local het, k = id:match("^(%d+)%+(%d+)$")
  local own = het and tostring(100 * tonumber(het) + tonumber(k)) or id:match("^%d+") or "0"
  return { jobs = table.concat({ id, own, reason, priority, comment, nodes or "" }, "\t"),
    asks = table.concat({ id, prefer or "(null)", features }, "\t") }
end

local function ids(list)
  local out = {}
  for i, j in ipairs(list) do out[i] = j.id .. (j.held and "/" .. j.held or "") end
  return table.concat(out, " ")
end

describe("xsite.recheck", function()
  local cfg = h.config(CONF)

  -- a run's view of the jobs of `list` (lines), with the link down or up
  local function view(list, down)
    local v = recheck.view(cfg, down)
    for _, l in ipairs(list) do recheck.job_line(v, l.jobs) end
    for _, l in ipairs(list) do
      for a in (l.asks .. "\n"):gmatch("([^\n]*)\n") do recheck.ask_line(v, a) end
    end
    return v
  end

  -- the jobs of `list` recheck.select picks
  local function pick(list, down, random, ask)
    return recheck.select(view(list, down), random, ask)
  end

  it("with the link down, picks the pending jobs that may span", function()
    local text = {
      line("11", "Priority", "xsite v=1 action=span why=within mode=enforce n=4", "site_a|site_b"),
      line("12", "Priority", "xsite v=1 action=pin why=slowdown mode=enforce n=2", "[site_a|site_b]"),
      line("13", "JobHeldUser", "xsite v=1 action=span why=oversize mode=enforce n=6", "(null)"),
      line("14", "JobHeldAdmin", "", "ib"),
      line("15", "Priority", "xsite v=1 action=span why=user-span mode=enforce n=2 override=0", ""),
      line("16", "Priority", "xsite v=1 action=span why=within mode=enforce n=2 recheck=down", ""),
      line("17", "Priority", "xsite v=1 action=site why=user-site mode=enforce n=2", "ib&site_b"),
      line("18_4", "Priority", "xsite v=1 action=pin why=slowdown mode=enforce n=2", "(null)"),
      line("19+1", "Priority", "xsite v=1 action=span why=het mode=enforce n=2 het=span", "[site_a|site_b]"),
      -- a constraint at one site with a preference for both (Slurm
      -- schedules with the preference where it can)
      line("20", "Priority", "xsite v=1 action=span why=within mode=enforce n=2", "site_a", "ib"),
      line("21", "Priority", "xsite v=1 action=pin why=slowdown mode=enforce n=2", "site_a", "site_a&ib"),
      -- a reason squeue prints as free text
      line("22", "ReqNodeNotAvail, UnavailableNodes:a3", "", "ib"),
      -- pinned, with a preference for both sites
      line("23", "Priority", "xsite v=1 action=pin why=slowdown mode=enforce n=2", "[site_a|site_b]", "ib"),
      -- held by xsite: left alone while the hold lasts
      line("24", "JobHeldAdmin", "xsite v=1 action=span why=within mode=enforce n=6 hold=xsite recheck=down",
        "(null)"),
      line("25", "Priority", "xsite v=1 action=span why=within mode=enforce n=6 hold=xsite recheck=down", "(null)"),
    }
    -- judged by the constraint and preference as they are, not by the
    -- record (its owner may have changed them since): a job pinned, one the
    -- user keeps at a site, one root placed, one xsite holds are left alone;
    -- one decided with the link down but no longer at one site (16) is not
    -- (those decided again with the link down already last)
    assert.are.equal("11 13/user 14/admin 18_4 20 22 23 16 25", ids(pick(text, true)))
  end)

  it("with the link back, picks the jobs decided while it was down", function()
    local text = {
      line("21", "Priority", "xsite v=1 action=pin why=link-down mode=enforce n=2", "[site_a|site_b]"),
      line("22", "JobHeldAdmin", "xsite v=1 action=span why=within mode=enforce n=6 hold=xsite recheck=down", ""),
      line("23", "Priority", "xsite v=1 action=span why=within mode=enforce n=2", ""),
      line("24", "Priority", "xsite v=1 action=pin why=link-down mode=enforce n=2 recheck=up", "[site_a|site_b]"),
      line("25", "JobHeldAdmin", "xsite v=1 action=reject why=oversize mode=enforce n=6 hold=admin recheck=up", ""),
    }
    -- a job decided again with the link up stays as that decision left it
    assert.are.equal("21 22/admin", ids(pick(text, false)))
    local sel = pick(text, false)
    -- with the sites of its node list ("-": none), which job_modify cannot see
    assert.are.equal("xsite recheck wsites=-", recheck.request(sel[1]))
    -- a job xsite holds: its record says whose hold it was
    assert.are.equal("xsite recheck wsites=-", recheck.request(sel[2]))
    assert.are.equal("xsite recheck held=user", recheck.request({ id = "1", held = "user" }))
  end)

  it("with the link up, picks the jobs Mode=enforce kept at one site that are no longer kept there", function()
    local pin = "xsite v=1 action=pin why=slowdown mode=enforce n=2 keeps=prefer"
    local text = {
      -- pinned: its constraint at both sites now, or its preference
      line("41", "Priority", pin, "ib"),
      line("42", "Priority", pin, "ib&[site_a|site_b]", "site_a|site_b"),
      -- a one-node job its constraint kept at one site: its preference
      -- at both sites now
      line("43", "Priority", "xsite v=1 action=none why=one-node mode=enforce n=1 constraint=site_a keeps=prefer",
        "site_a", "ib"),
      -- still kept: left alone
      line("44", "Priority", pin, "ib&[site_a|site_b]", "(site_a|site_b)&[site_a|site_b]"),
      line("45", "Priority", pin, "ib&[site_a|site_b]"),
      line("46", "Priority", "xsite v=1 action=site why=user-site mode=enforce n=2", "site_b", "site_b&ib"),
      -- not kept at one site by xsite: may span, decided under Mode=advise,
      -- placed by root, held by xsite for good
      line("47", "Priority", "xsite v=1 action=span why=within mode=enforce n=2", "ib"),
      line("48", "Priority", "xsite v=1 action=pin why=slowdown mode=advise n=2", "ib"),
      line("49", "Priority", pin .. " override=0", "ib"),
      line("50", "JobHeldAdmin", pin .. " hold=xsite recheck=up", "ib"),
    }
    local sel = pick(text, false)
    assert.are.equal("41 42 43", ids(sel))
    -- the request says so: job_modify cannot see the job's Prefer
    assert.are.equal("xsite recheck unkept wsites=-", recheck.request(sel[2]))
    assert.are.equal("xsite recheck held=user unkept", recheck.request({ id = "1", held = "user", unkept = true }))
  end)

  it("takes a choice of sites for one site only with no node list at both", function()
    local function pin(wsites)
      return "xsite v=1 action=pin why=slowdown mode=enforce n=1" .. (wsites and " wsites=" .. wsites or "") ..
        " keeps=prefer"
    end
    local text = {
      -- accepted before xsite kept such jobs at one site by its feature:
      -- nodes to choose from at both sites, which Slurm makes nodes the job
      -- must have after a change that fails half-way
      line("61", "BeginTime", pin("a:1+b:1"), "[site_a|site_b]", nil, "a1,b1"),
      line("62", "BeginTime", pin("a:2+b:1"), "ib&[site_a|site_b]", "[site_a|site_b]", "a[1-2],b3"),
      line("63", "BeginTime", pin("a:1+b:1"), "site_a", "site_a|site_b", "a1,b1"),
      -- one that cannot be read is checked
      line("64", "BeginTime", pin("a:1+b:1"), "[site_a|site_b]", nil, "a[1-"),
      -- kept: one site's feature, or a node list at one site
      line("65", "BeginTime", pin("a:1+b:1"), "site_a", nil, "a1,b1"),
      line("66", "BeginTime", pin("a:3"), "[site_a|site_b]", nil, "a[1-3]"),
      line("67", "BeginTime", pin(), "[site_a|site_b]", nil, "(null)"),
      line("68", "BeginTime", pin("a:1+b:2"), "site_b&ib", "site_b", "a1,b[1-2]"),
      -- not kept by xsite: may span
      line("69", "BeginTime", "xsite v=1 action=span why=within mode=enforce n=2 wsites=a:1+b:1", "[site_a|site_b]",
        nil, "a1,b1"),
      -- a one-node job, kept by a choice of sites, with a list at both
      line("70", "BeginTime", "xsite v=1 action=none why=one-node mode=enforce n=1 wsites=a:1+b:1 keeps=prefer",
        "[site_a|site_b]", nil, "a1,b1"),
    }
    local sel = pick(text, false)
    assert.are.equal("61 62 63 64 70", ids(sel))
    assert.are.equal("xsite recheck unkept wsites=a:1+b:1", recheck.request(sel[1]))
    -- the sites of a list that cannot be read are not said
    assert.are.equal("xsite recheck unkept", recheck.request(sel[4]))
    -- with the link down likewise (a job that may span then is checked too)
    assert.are.equal("61 62 63 64 69 70", ids(pick(text, true)))
  end)

  it("picks the jobs whose node list is not the one their record has", function()
    local pin = "xsite v=1 action=pin why=slowdown mode=enforce n=1"
    local text = {
      -- changed under Mode=advise (every later decision reads the record)
      line("71", "Priority", pin .. " wsites=a:1", "site_a", nil, "b1"),
      line("72", "Priority", pin, "site_a", nil, "a1"),
      line("73", "Priority", pin .. " wsites=a:2", "site_a", nil, "(null)"),
      -- as the record has it: left alone
      line("74", "Priority", pin .. " wsites=a:1", "site_a", nil, "a2"),
      line("75", "Priority", pin .. " wsites=a:1+b:1", "site_a", nil, "b1,a2"),
      -- decided under Mode=advise, placed by root: left alone
      line("76", "Priority", "xsite v=1 action=pin why=slowdown mode=advise n=1", "site_a", nil, "b1"),
      line("77", "Priority", pin .. " override=0", "site_a", nil, "b1"),
    }
    local sel = pick(text, false)
    assert.are.equal("71 72 73", ids(sel))
    assert.are.equal("xsite recheck unkept wsites=b:1", recheck.request(sel[1]))
    assert.are.equal("xsite recheck unkept wsites=-", recheck.request(sel[3]))
    -- with the link down a job kept at one site is left alone
    assert.are.equal("", ids(pick(text, true)))
  end)

  it("leaves a job in xsite's hold alone whatever its reason, and takes first the jobs not yet decided again",
    function()
    local held = "xsite v=1 action=span why=user-span mode=enforce n=4 hold=admin recheck=down"
    local text = {
      -- its owner requeued it in a hold (Slurm keeps that as its reason),
      -- then xsite held it with the link down: left alone while held
      line("81", "job requeued in held state", held, "(null)", nil, nil, "0"),
      -- released by root meanwhile: decided again
      line("82", "job requeued in held state", held, "(null)", nil, nil, "10"),
      -- in its owner's requeue hold, not yet xsite's: a user's hold
      line("83", "job requeued in held state", "xsite v=1 action=span why=user-span mode=enforce n=4", "(null)",
        nil, nil, "0"),
    }
    local sel = pick(text, true)
    assert.are.equal("83/user 82", ids(sel))
    -- more than MAX_JOBS: those decided again under the link's state now
    -- (recheck=down) come after the others, whatever the random choice
    local lines = {}
    for i = 1, recheck.MAX_JOBS do
      lines[i] = line(tostring(i), "Priority", "xsite v=1 action=pin why=link-down mode=enforce n=2 recheck=down",
        "ib")
    end
    lines[#lines + 1] = line("9998", "Priority", "xsite v=1 action=span why=within mode=enforce n=2", "ib")
    lines[#lines + 1] = line("9999", "Priority", "xsite v=1 action=span why=within mode=enforce n=2", "ib")
    sel = pick(lines, true, function(_, n) return n end)
    assert.are.equal(recheck.MAX_JOBS, #sel)
    assert.are.equal("9998 9999", sel[1].id .. " " .. sel[2].id)
    assert.are.equal(tostring(recheck.MAX_JOBS), sel[3].id)
  end)

  it("reads nothing an owner wrote for what a job is, and asks again about a job whose lines disagree", function()
    local span = "xsite v=1 action=span why=within mode=enforce n=4"
    local pin = "xsite v=1 action=pin why=slowdown mode=enforce n=2"
    -- job 30's owner forges lines for jobs 31, 32 and 41 (a newline in its
    -- constraint): a record, a hold and a node list that are not theirs
    local forged = "ib\n31\tPriority\t1\t" .. span .. " override=0\t\t(null)\tx" ..
      "\n32\t(null)\tib\n41\t(null)\tib\n41\t(null)\tib"
    local list = {
      line("30", "Priority", pin, forged),
      line("31", "Priority", span, "ib"),
      line("32", "Priority", pin, "[site_a|site_b]"),
      line("33", "Priority", pin, "site_a"),
    }
    -- 41 is not pending: its forged lines are about no job of the view
    local v = view(list, true)
    assert.is_nil(v.jobs["41"])
    -- 31's lines agree (a shifted line is one xsite cannot read: checked):
    -- its record is the one SQUEUE_JOBS printed (no override)
    assert.is_nil(v.jobs["31"].disputed)
    -- 32's own line keeps it at one site, the forged one does not: asked
    -- about again, on its own
    assert.is_true(v.jobs["32"].disputed)
    local asked = {}
    local function ask(qid)
      asked[#asked + 1] = qid
      -- its own line first, whatever follows it
      if qid == "32" then return "32\t(null)\t[site_a|site_b]" end
    end
    local sel, left = recheck.select(v, nil, ask)
    assert.are.equal("30 31", ids(sel))
    assert.are.equal("32", table.concat(asked, " "))
    assert.are.equal(0, left)
    assert.is_nil(sel[2].rec.override)
    -- its own line asked again may say it is to be checked, and then is
    sel = pick(list, true, nil, function(qid) if qid == "32" then return "32\t(null)\tib" end end)
    assert.are.equal("30 31 32", ids(sel))
    -- nobody to ask, or a job gone meanwhile (no line, another job's, a
    -- line cut at MAX_LINE is one xsite cannot read: checked)
    sel, left = pick(list, true)
    assert.are.equal("30 31", ids(sel))
    assert.are.equal(1, left)
    assert.are.equal("30 31", ids(pick(list, true, nil, function() return "33\t(null)\tib" end)))
    assert.are.equal("30 31", ids(pick(list, true, nil, function() return nil end)))
    v = view(list, true)
    assert.are.equal("30 31 32", ids(recheck.select(v, nil, function() return "32\t(null)\tsite_a", true end)))
    -- a line cut at MAX_LINE is asked about again too
    v = view({ line("34", "Priority", pin, "site_a") }, true)
    recheck.ask_line(v, "34\t(null)\tsite_", true)
    assert.is_true(v.jobs["34"].disputed)
    -- at most MAX_ASKS asked about a run, a random choice
    local many = {}
    for i = 1, recheck.MAX_ASKS + 5 do
      many[i] = line(tostring(100 + i), "Priority", pin, "site_a\n" .. (100 + i) .. "\t(null)\tib")
    end
    local n = 0
    sel, left = pick(many, true, function(_, m) return m end, function(qid)
      n = n + 1
      return qid .. "\t(null)\tib"
    end)
    assert.are.equal(recheck.MAX_ASKS, n)
    assert.are.equal(recheck.MAX_ASKS, #sel)
    assert.are.equal(5, left)
    -- a heterogeneous job's component is asked about by its own job id
    v = view({ line("19+1", "Priority", pin, "site_a\n19+1\t(null)\tib") }, true)
    local q
    recheck.select(v, nil, function(qid) q = qid end)
    assert.are.equal("1901", q)
    -- a tab in the preference shifts the constraint, which then holds a
    -- blank: checked
    assert.are.equal("35", ids(pick({ line("35", "Priority", pin, "site_a", "x\tsite_a") }, true)))
    -- ids that do not name one job record are not passed to scontrol
    assert.are.equal("36", ids(pick({ line("33;rm", "Priority", "", "x"), line("-1", "Priority", "", "x"),
      line("34_[1-3]", "Priority", "", "x"), line("36", "Priority", "", "x") }, true)))
  end)

  it("checks at most MAX_JOBS jobs a run, a random choice of them", function()
    local lines = {}
    for i = 1, recheck.MAX_JOBS + 10 do lines[i] = line(tostring(i), "Priority", "", "ib") end
    -- a "random" choice that always takes the last: the first is the last line's
    local first = pick(lines, true, function(_, n) return n end)
    assert.are.equal(recheck.MAX_JOBS, #first)
    assert.are.equal(tostring(recheck.MAX_JOBS + 10), first[1].id)
    local r = h.random(11)
    local other = pick(lines, true, function(m, n) return m + r(n - m + 1) end)
    assert.are.equal(recheck.MAX_JOBS, #other)
    local seen = {}
    for _, j in ipairs(other) do
      assert.is_nil(seen[j.id])
      seen[j.id] = true
    end
  end)
end)
