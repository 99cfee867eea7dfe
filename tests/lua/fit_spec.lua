local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local fit = require("xsite.fit")
local report = require("xsite.report")
local config = require("xsite.config")
local states = require("xsite.state")
local profile = require("xsite.profile")
local policy = require("xsite.policy")
local json = require("xsite.json")

local function cfg(extra)
  return h.two_sites(4, 4, "ProfileName=halo Ops=1e10 Bytes=1GB Exchange=10GB Steps=100000 Pattern=halo1d"
    .. " Iterations=2\n" .. (extra or ""))
end

-- A job's record with the traffic libxsite would have counted.
local function job(c, id, nodes, bytes, messages, label, uid)
  local rec = report.step_start(c, { job = tostring(id), step = "0", user = "u", uid = uid or "1", job_nodes = nodes,
    profile = label or "halo", start = 0 })
  local t = json.encode({ version = 1, job = id, ranks = 2,
    cross = { bytes = bytes, messages = messages, p2p_bytes = bytes, p2p_messages = messages,
      coll_bytes = 0, coll_messages = 0 } })
  return (report.step_end(json.encode(rec), 10, bytes and t or nil, bytes and nil or "none"))
end

describe("xsite.fit", function()
  it("estimates exchange and steps in the model's terms, and predicts each job with the fit", function()
    local c = cfg()
    -- halo1d across 1+1 nodes: f = 1, one flow; across 2+2: f = 1/3, one flow
    -- (libxsite counts whole bytes)
    local recs = { job(c, 1, "a1,b1", 3000, 220), job(c, 2, "a[1-2],b[1-2]", 1000, 220),
      job(c, 3, "a[1-3]", 0, 0), job(c, 4, "a1,b1"), job(c, 5, "a1,b1", 5, 5, "other") }
    local obs, skipped = fit.observations(recs, "halo")
    assert.are.equal(2, #obs)
    assert.are.same({ { job = "3", why = "ran at one site" }, { job = "4", why = "no MPI traffic record" } },
      skipped)
    local r = assert(fit.fit(obs))
    assert.is_near(3000, r.exchange, 1e-6)
    assert.are.equal(110, r.steps)
    assert.is_near(0, r.median_error, 1e-9)
    assert.is_near(3000 / 20e9, r.ratio, 1e-12)
    -- the fit is per run; the profile line is per iteration
    assert.are.equal("ProfileName=halo Exchange=1500 Steps=55", fit.line("halo", r, 2))
  end)

  it("leaves out the records whose placement is not to be believed", function()
    local c = cfg()
    local recs = { job(c, 1, "a1,b1", 3000, 220), job(c, 2, "a[1-2],b[1-2]", 1000, 220) }
    local obs, skipped = fit.observations(recs, "halo", function(rec)
      return rec.job == "2" and "not Slurm's" or nil
    end)
    assert.are.equal(1, #obs)
    assert.are.equal("1", obs[1].job)
    assert.are.same({ { job = "2", why = "not Slurm's" } }, skipped)
  end)

  it("takes the median: one odd job does not move the fit, and shows as a large error", function()
    local c = cfg()
    local recs = { job(c, 1, "a1,b1", 1000, 20), job(c, 2, "a1,b1", 1100, 22), job(c, 3, "a1,b1", 90000, 20) }
    local r = assert(fit.fit((fit.observations(recs, "halo"))))
    assert.are.equal(1100, r.exchange)
    assert.is_near(0.0909, r.median_error, 1e-3)
    assert.is_near(90000 / 1100 - 1, r.worst_error, 1e-9)
  end)

  it("gives each job's owner one vote: many forged records of one user do not move the fit", function()
    local c = cfg()
    local recs = { job(c, 1, "a1,b1", 1000, 20, nil, "1"), job(c, 2, "a1,b1", 1200, 20, nil, "2") }
    -- user 3 claims that the profile crosses almost nothing, in 20 jobs
    for i = 1, 20 do recs[#recs + 1] = job(c, 100 + i, "a1,b1", 1, 20, nil, "3") end
    local r = assert(fit.fit((fit.observations(recs, "halo"))))
    assert.are.same({ 1, 2, 3 }, r.users)
    assert.are.equal(22, r.jobs)
    assert.are.equal(1000, r.exchange, "the median of 1000, 1200 and 1: the forger's 20 jobs are one vote")
  end)

  it("says when there is nothing to fit", function()
    local r, err = fit.fit({})
    assert.is_nil(r)
    assert.matches("no job with this profile spanned the link", err)
  end)

  it("the profile state overrides Exchange and Steps of a named profile in the policy's decision", function()
    local c = cfg()
    local before = policy.decide({ cfg = c, nodes = 2, profile = "halo" })
    assert.are.equal("pin", before.action)
    assert.are.equal("slowdown", before.why)
    local st = assert(states.parse_profiles("# fitted\nProfileName=halo Exchange=500 Steps=55\n", "p.state"))
    local after = policy.decide({ cfg = c, nodes = 2, profile = "halo", profile_state = st })
    assert.are.equal("span", after.action)
    local p = profile.resolve("halo", c, st)
    assert.are.equal(500, p.exchange)
    assert.are.equal(55, p.steps)
    assert.is_true(p.measured)
    assert.are.equal(p, profile.resolve("halo", c, st), "one merged profile per state entry")
    assert.are.equal(10e9, profile.resolve("halo", c).exchange, "the configured profile is unchanged")
  end)

  it("reads the profile state with xsite.conf's checks, naming file:line and key", function()
    for text, msg in pairs({
      ["Exchange=5"] = "p:1: Exchange: a line starts with ProfileName=",
      ["ProfileName=x Ops=5"] = "p:1: Ops: unknown key %(ProfileName, Exchange, Steps%)",
      ["ProfileName=x Exchange=lots"] = "p:1: Exchange: ",
      ["ProfileName=x Steps=1.5"] = "p:1: Steps: ",
      ["ProfileName=x\n\nProfileName=x"] = "p:3: ProfileName: x given twice %(first at line 1%)",
    }) do
      local st, err = states.parse_profiles(text, "p")
      assert.is_nil(st)
      assert.matches(msg, err)
    end
    assert.are.same({}, states.parse_profiles("# nothing yet\n", "p"))
  end)
end)

describe("xsite tune --apply", function()
  local dir
  local function sh(cmd)
    local a = os.execute(cmd)
    assert(a == true or a == 0, cmd)
  end
  local function buffer()
    local b = { parts = {} }
    function b:write(s) self.parts[#self.parts + 1] = s end
    return b
  end
  -- xsite.conf with ReportDir and ProfileStateFile in dir, the records of
  -- jobs (id, uid) in ReportDir; runs `xsite tune --profile halo ARGS...`
  local function tune(jobs, ...)
    local conf = dir .. "/xsite.conf"
    local f = assert(io.open(conf, "w"))
    f:write(table.concat({
      "SiteName=a Nodes=a[1-4] Feature=site_a CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s"
        .. " NetLatency=1us",
      "SiteName=b Nodes=b[1-4] Feature=site_b CoresPerNode=1 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s"
        .. " NetLatency=1us",
      "LinkName=l Bandwidth=100MB/s Latency=1ms",
      "ProfileName=halo Ops=1e10 Bytes=1GB Exchange=10GB Steps=100000 Pattern=halo1d",
      "ReportDir=" .. dir .. "/reports", "ProfileStateFile=" .. dir .. "/profiles.state", "" }, "\n"))
    f:close()
    local c = assert(config.load(conf))
    for _, j in ipairs(jobs) do
      sh("mkdir -p " .. dir .. "/reports/" .. j[1])
      local r = assert(io.open(dir .. "/reports/" .. j[1] .. "/report.json", "w"))
      r:write(json.encode(job(c, j[1], "a1,b1", 1000, 20, nil, j[2])))
      r:close()
      -- Slurm's node list, as the epilog keeps it (j[3] false: none)
      if j[3] ~= false then
        r = assert(io.open(dir .. "/reports/" .. j[1] .. "/slurm-nodes.json", "w"))
        r:write(string.format('{"%s":"%s"}\n', j[1], j[3] or "a1,b1"))
        r:close()
      end
    end
    local o, e = buffer(), buffer()
    local rc = require("xsite.cli").main({ "--config", conf, "tune", "--profile", "halo", ... },
      { stdout = o, stderr = e })
    return rc, table.concat(o.parts), table.concat(e.parts)
  end
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    sh("mkdir -m 0755 " .. dir)
  end)
  after_each(function() sh("rm -rf " .. dir) end)

  it("refuses a fit that rests on one user's traffic records, naming the user and the way to apply it", function()
    local rc, out, err = tune({ { 1, "1001" }, { 2, "1001" } }, "--apply")
    assert.are.equal(1, rc)
    assert.matches("\n  votes: 1 user%(s%), one each: uid 1001\n", out)
    assert.are.equal("xsite tune: --apply: the fit rests on the jobs of 1 user(s) (uid 1001), fewer than"
      .. " --min-users 2; a job's owner writes its traffic record: check their jobs, then give --min-users 1"
      .. " to apply it\n", err)
    assert.is_nil(io.open(dir .. "/profiles.state"))
    rc = tune({}, "--apply", "--min-users", "1")
    assert.are.equal(0, rc)
    assert.matches("ProfileName=halo Exchange=1000 Steps=10\n", assert(io.open(dir .. "/profiles.state")):read("*a"))
  end)

  it("applies a fit of two users' jobs, or of root's alone", function()
    assert.are.equal(0, (tune({ { 1, "1001" }, { 2, "1002" } }, "--apply")))
    sh("rm -rf " .. dir .. "/reports")
    assert.are.equal(0, (tune({ { 3, "0" } }, "--apply")))
  end)

  it("takes a placement from Slurm's node lists only: a record without them, or with other nodes, is left out",
      function()
    local rc, out = tune({ { 1, "1001" }, { 2, "1002", false }, { 3, "1003", "a[1-2],b1" }, { 4, "1004", "a[1-" } })
    assert.are.equal(0, rc)
    assert.matches("\n  job 1 +1%+1 nodes, ", out)
    assert.matches("\n  job 2 +left out: no node list of Slurm's beside it %(the job runs still, or its first"
      .. " node's epilog wrote none%)\n", out)
    assert.matches("\n  job 3 +left out: its steps named other nodes than Slurm gave it %(2 %+ 1%)\n", out)
    assert.matches("\n  job 4 +left out: Slurm's node lists of the job cannot be counted: ", out)
  end)

  it("names a bad --min-users", function()
    local rc, _, err = tune({}, "--apply", "--min-users", "0")
    assert.are.equal(2, rc)
    assert.are.equal("xsite tune: --min-users: '0' is not a whole number of at least 1\n", err)
  end)
end)
