local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local recheck = require("xsite.recheck")

local HW = "CoresPerNode=4 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us"
local CONF = table.concat({
  "SiteName=a Nodes=a[1-3] Feature=site_a " .. HW,
  "SiteName=b Nodes=b[1-3] Feature=site_b " .. HW,
  "LinkName=l Bandwidth=100MB/s Latency=1ms",
}, "\n") .. "\n"

-- squeue's line for a job (recheck.SQUEUE's fields)
local function line(id, reason, comment, features, prefer)
  return table.concat({ id, reason, comment, prefer or "(null)", features }, "\t")
end

local function ids(list)
  local out = {}
  for i, j in ipairs(list) do out[i] = j.id .. (j.held and "/" .. j.held or "") end
  return table.concat(out, " ")
end

describe("xsite.recheck", function()
  local cfg = h.config(CONF)

  it("with the link down, picks the pending jobs that may span", function()
    local text = table.concat({
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
    }, "\n") .. "\n"
    -- judged by the constraint and preference as they are, not by the
    -- record (its owner may have changed them since): a job pinned, one the
    -- user keeps at a site, one root placed, one xsite holds are left alone;
    -- one decided with the link down but no longer at one site (16) is not
    assert.are.equal("11 13/user 14/admin 16 18_4 20 22 23 25", ids(recheck.select(text, cfg, true)))
  end)

  it("with the link back, picks the jobs decided while it was down", function()
    local text = table.concat({
      line("21", "Priority", "xsite v=1 action=pin why=link-down mode=enforce n=2", "[site_a|site_b]"),
      line("22", "JobHeldAdmin", "xsite v=1 action=span why=within mode=enforce n=6 hold=xsite recheck=down", ""),
      line("23", "Priority", "xsite v=1 action=span why=within mode=enforce n=2", ""),
      line("24", "Priority", "xsite v=1 action=pin why=link-down mode=enforce n=2 recheck=up", "[site_a|site_b]"),
      line("25", "JobHeldAdmin", "xsite v=1 action=reject why=oversize mode=enforce n=6 hold=admin recheck=up", ""),
    }, "\n")
    -- a job decided again with the link up stays as that decision left it
    assert.are.equal("21 22/admin", ids(recheck.select(text, cfg, false)))
    local sel = recheck.select(text, cfg, false)
    assert.are.equal("xsite recheck", recheck.request(sel[1]))
    -- a job xsite holds: its record says whose hold it was
    assert.are.equal("xsite recheck", recheck.request(sel[2]))
    assert.are.equal("xsite recheck held=user", recheck.request({ id = "1", held = "user" }))
  end)

  it("with the link up, picks the jobs Mode=enforce kept at one site that are no longer kept there", function()
    local pin = "xsite v=1 action=pin why=slowdown mode=enforce n=2 keeps=prefer"
    local text = table.concat({
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
    }, "\n") .. "\n"
    local sel = recheck.select(text, cfg, false)
    assert.are.equal("41 42 43", ids(sel))
    -- the request says so: job_modify cannot see the job's Prefer
    assert.are.equal("xsite recheck unkept", recheck.request(sel[2]))
    assert.are.equal("xsite recheck held=user unkept", recheck.request({ id = "1", held = "user", unkept = true }))
  end)

  it("believes no line that takes a job away: a forged one only adds", function()
    -- the owner's features end the line; a newline in them makes a second
    -- line for job 31 saying root placed it
    local text = line("31", "Priority", "xsite v=1 action=span why=within mode=enforce n=4",
      "x\n31\tPriority\txsite v=1 action=span why=within mode=enforce n=4 override=0\t(null)\tx") .. "\n"
    assert.are.equal("31", ids(recheck.select(text, cfg, true)))
    text = line("32", "Priority", "xsite v=1 action=pin why=slowdown mode=enforce n=2 override=0", "x") .. "\n" ..
      line("32", "Priority", "", "x") .. "\n"
    assert.are.equal("32", ids(recheck.select(text, cfg, true)))
    -- a tab in the preference shifts the constraint, which then holds a
    -- blank: checked
    text = line("35", "Priority", "xsite v=1 action=pin why=slowdown mode=enforce n=2", "site_a", "x\tsite_a") .. "\n"
    assert.are.equal("35", ids(recheck.select(text, cfg, true)))
    -- ids that do not name one job record are not passed to scontrol
    text = line("33;rm", "Priority", "", "x") .. "\n" .. line("-1", "Priority", "", "x") .. "\n" ..
      line("34_[1-3]", "Priority", "", "x") .. "\n" .. line("36", "Priority", "", "x") .. "\n"
    assert.are.equal("36", ids(recheck.select(text, cfg, true)))
  end)

  it("checks at most MAX_JOBS jobs a run, a random choice of them", function()
    local lines = {}
    for i = 1, recheck.MAX_JOBS + 10 do lines[i] = line(tostring(i), "Priority", "", "ib") end
    local text = table.concat(lines, "\n")
    -- a "random" choice that always takes the last: the first is the last line's
    local first = recheck.select(text, cfg, true, function(_, n) return n end)
    assert.are.equal(recheck.MAX_JOBS, #first)
    assert.are.equal(tostring(recheck.MAX_JOBS + 10), first[1].id)
    local r = h.random(11)
    local other = recheck.select(text, cfg, true, function(m, n) return m + r(n - m + 1) end)
    assert.are.equal(recheck.MAX_JOBS, #other)
    local seen = {}
    for _, j in ipairs(other) do
      assert.is_nil(seen[j.id])
      seen[j.id] = true
    end
  end)
end)
