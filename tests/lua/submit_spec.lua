local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local submit = require("xsite.submit")

-- The part of Slurm's `slurm` table job_submit.lua uses, recording what it is told.
local function fake_slurm()
  local s = { SUCCESS = 0, ERROR = -1, user = {}, info = {}, errors = {} }
  local function fmt(...) return string.format(...) end
  function s.log_user(...) s.user[#s.user + 1] = fmt(...) end
  function s.log_info(...) s.info[#s.info + 1] = fmt(...) end
  function s.log_error(...) s.errors[#s.errors + 1] = fmt(...) end
  return s
end

local HW = "CoresPerNode=4 CorePeak=1GF MemBandwidth=1GB/s NetBandwidth=1GB/s NetLatency=1us"
local CONF = table.concat({
  "SiteName=a Nodes=a[1-3] Feature=site_a " .. HW,
  "SiteName=b Nodes=b[1-3] Feature=site_b " .. HW,
  "LinkName=l Bandwidth=100MB/s Latency=1ms",
  "ProfileName=quiet Ops=1e12 Bytes=1GB Exchange=1MB Steps=10 Pattern=tree",
  "ProfileName=chatty Ops=1e10 Bytes=1GB Exchange=10GB Steps=10000 Pattern=halo3d",
  "DefaultProfile=chatty",
}, "\n") .. "\n"

local dir, now

local function write(name, text)
  local f = assert(io.open(dir .. "/" .. name, "w"))
  f:write(text)
  f:close()
end

local function setup_conf(text, slurm_conf)
  write("xsite.conf", text)
  if slurm_conf then write("slurm.conf", slurm_conf) end
  submit.setup(dir .. "/xsite.conf", { interval = 5, clock = function() return now end,
    slurm_conf = dir .. "/slurm.conf" })
end

local function job(t)
  t.spank_job_env = t.spank_job_env or {}
  t.min_nodes = t.min_nodes or submit.NO_VAL
  t.time_limit = t.time_limit or submit.NO_VAL
  return t
end

describe("xsite.submit", function()
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    now = 1000
  end)
  after_each(function()
    os.execute("rm -rf " .. dir)
  end)

  it("reads the flags from spank_job_env, indexed from 0", function()
    local f = submit.flags({ [0] = "XSITE_SITE_AFFINITY=pin", [1] = "OTHER=x",
      [2] = "_SLURM_SPANK_OPTION_xsite_comm_profile=quiet" })
    assert.are.same({ affinity = "pin", profile = "quiet" }, f)
    assert.are.same({}, submit.flags(nil))
  end)

  it("counts nodes from min_nodes, else from tasks and the larger site's cores", function()
    local cfg = h.config(CONF)
    assert.are.equal(5, submit.node_count({ min_nodes = 5 }, cfg))
    assert.are.equal(3, submit.node_count({ min_nodes = submit.NO_VAL, num_tasks = 9 }, cfg))
    assert.are.equal(5, submit.node_count({ min_nodes = submit.NO_VAL, num_tasks = 9,
      cpus_per_task = 2 }, cfg))
    assert.are.equal(1, submit.node_count({ min_nodes = submit.NO_VAL, num_tasks = submit.NO_VAL }, cfg))
  end)

  it("pins a chatty job, records why and tells the user in one line", function()
    setup_conf(CONF)
    local s, j = fake_slurm(), job({ min_nodes = 2, features = "ib" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("ib&[site_a|site_b]", j.features)
    assert.matches("^xsite v=1 action=pin why=slowdown", j.admin_comment)
    assert.matches("constraint=ib", j.admin_comment)
    assert.are.equal(1, #s.user)
    assert.matches("^xsite: pinned to one site %(a or b%): spanning would be", s.user[1])
  end)

  it("takes the flags the SPANK plugin set", function()
    setup_conf(CONF)
    local s, j = fake_slurm(), job({ min_nodes = 2, spank_job_env = { [0] = "XSITE_SITE_AFFINITY=b" } })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("site_b", j.features)
  end)

  it("rejects bad flags with a feature error and oversize requests with a node-count error", function()
    setup_conf(CONF)
    local s = fake_slurm()
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(job({ min_nodes = 2,
      spank_job_env = { [0] = "XSITE_SITE_AFFINITY=mars" } }), s))
    assert.matches("unknown site 'mars'", s.user[1])
    assert.are.equal(submit.ESLURM_INVALID_NODE_COUNT, submit.job_submit(job({ min_nodes = 4,
      spank_job_env = { [0] = "XSITE_SITE_AFFINITY=a" } }), s))
  end)

  it("asks topology/tree to wait for one site when slurm.conf configures it", function()
    setup_conf(CONF, "ClusterName=x\nTopologyPlugin=topology/tree # one switch a site\n")
    local s, j = fake_slurm(), job({ min_nodes = 2, time_limit = 600,
      spank_job_env = { [0] = "XSITE_COMM_PROFILE=quiet" } })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal(1, j.req_switch)
    assert.is_true(j.wait4switch >= 0)
    setup_conf(CONF, "TopologyPlugin=topology/none\n")
    j = job({ min_nodes = 2, time_limit = 600, spank_job_env = { [0] = "XSITE_COMM_PROFILE=quiet" } })
    submit.job_submit(j, s)
    assert.is_nil(j.req_switch)
  end)

  it("keeps the last good configuration when the file breaks, and logs the error once", function()
    setup_conf(CONF)
    local s = fake_slurm()
    submit.job_submit(job({ min_nodes = 2 }), s)
    write("xsite.conf", CONF .. "Bogus=1\n")
    now = now + 10
    local j = job({ min_nodes = 2 })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("[site_a|site_b]", j.features)
    now = now + 10
    submit.job_submit(job({ min_nodes = 2 }), s)
    local bogus = 0
    for _, e in ipairs(s.errors) do if e:find("Bogus: unknown key", 1, true) then bogus = bogus + 1 end end
    assert.are.equal(1, bogus)
  end)

  it("accepts jobs unchanged without any usable configuration", function()
    submit.setup(dir .. "/missing.conf", { clock = function() return now end })
    local s, j = fake_slurm(), job({ min_nodes = 2, features = "ib" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("ib", j.features)
    assert.is_nil(j.admin_comment)
    assert.matches("cannot open", s.errors[1])
  end)

  it("rejects jobs while the configuration is broken under FailMode=closed", function()
    setup_conf(CONF .. "FailMode=closed\n")
    local s = fake_slurm()
    assert.are.equal(0, submit.job_submit(job({ min_nodes = 2 }), s))
    write("xsite.conf", CONF .. "FailMode=closed\nBogus=1\n")
    now = now + 10
    assert.are.equal(-1, submit.job_submit(job({ min_nodes = 2 }), s))
    assert.matches("^xsite: job rejected: the site configuration is broken %(FailMode=closed%)", s.user[2])
  end)

  it("uses the link state file", function()
    setup_conf(CONF .. "LinkStateFile=" .. dir .. "/link.state\n")
    write("link.state", "State=down Time=1000\n")
    local s, j = fake_slurm(), job({ min_nodes = 2, spank_job_env = { [0] = "XSITE_COMM_PROFILE=quiet" } })
    submit.job_submit(j, s)
    assert.matches("why=link%-down", j.admin_comment)
    write("link.state", "State=sideways\n")
    now = now + 10
    submit.job_submit(job({ min_nodes = 2 }), s)
    assert.matches("link.state:1: State: 'sideways' is not one of up, degraded, down", s.errors[#s.errors])
  end)

  it("opens no link state file a user could have written: the last good state (down) stays in force", function()
    setup_conf(CONF .. "LinkStateFile=" .. dir .. "/link.state\n")
    write("link.state", "State=down Time=1000\n")
    local s = fake_slurm()
    local quiet = { [0] = "XSITE_COMM_PROFILE=quiet" }
    local j = job({ min_nodes = 2, spank_job_env = quiet })
    submit.job_submit(j, s)
    assert.matches("why=link%-down", j.admin_comment)
    for _, plant in ipairs({
      { "chmod 0666 " .. dir .. "/link.state", "link.state: writable by group or others %(mode 666%); not read" },
      { "rm " .. dir .. "/link.state && mkfifo " .. dir .. "/link.state", "link.state: a FIFO, not a regular file" },
      { "rm " .. dir .. "/link.state && ln -s /dev/null " .. dir .. "/link.state",
        "link.state: a symbolic link, not a regular file" },
    }) do
      assert(os.execute(plant[1]))
      now = now + 10
      j = job({ min_nodes = 2, spank_job_env = quiet })
      submit.job_submit(j, s)
      assert.matches(plant[2] .. ".*; using the last good link state$", s.errors[#s.errors])
      assert.matches("why=link%-down", j.admin_comment)
      os.execute("rm -f " .. dir .. "/link.state")
      write("link.state", "State=down Time=1000\n")
    end
  end)

  it("decides a pending job again when root asks (xsite recheck): pinned or held with the link down", function()
    setup_conf(CONF .. "LinkStateFile=" .. dir .. "/link.state\n")
    write("link.state", "State=up Time=1000\n")
    local s = fake_slurm()
    local quiet = { [0] = "XSITE_COMM_PROFILE=quiet" }
    -- two jobs accepted to span: one fits a site, one does not
    local fits = job({ min_nodes = 2, spank_job_env = quiet, features = "ib" })
    local big = job({ min_nodes = 5, max_nodes = 5, spank_job_env = quiet })
    assert.are.equal(0, submit.job_submit(fits, s))
    assert.are.equal(0, submit.job_submit(big, s))
    assert.matches("action=span", fits.admin_comment)
    -- the job record Slurm keeps, and the change applied to it as Slurm does
    local function rec(j, extra)
      local r = { features = j.features, admin_comment = "admin text; " .. j.admin_comment,
        spank_job_env = j.spank_job_env, min_nodes = j.min_nodes, max_nodes = j.max_nodes or 0,
        job_state = submit.JOB_PENDING, user_id = 1001, job_id = 7, priority = 100 }
      for k, v in pairs(extra or {}) do r[k] = v end
      return r
    end
    local function ask(r, held, uid)
      local change = { admin_comment = submit.RECHECK .. (held and " held=" .. held or "") }
      assert.are.equal(0, submit.job_modify(change, r, s, uid or 0))
      for _, k in ipairs({ "features", "admin_comment" }) do
        if change[k] ~= nil then r[k] = change[k] end
      end
      if change.priority == submit.INFINITE then r.priority = 100 elseif change.priority then r.priority = 0 end
      return change
    end
    write("link.state", "State=down Time=1010\n")
    now = now + 10
    -- the owner cannot ask: only root and SlurmUser
    local change = { admin_comment = submit.RECHECK }
    assert.are.equal(0, submit.job_modify(change, rec(fits), s, 1001))
    assert.is_nil(change.features)
    -- root: pinned, the record says so and that it was the link down
    local r = rec(fits)
    change = ask(r)
    assert.are.equal("ib&[site_a|site_b]", change.features)
    assert.matches("^admin text; xsite v=1 action=pin why=link%-down .*constraint=ib keeps=prefer recheck=down$",
      change.admin_comment)
    assert.is_nil(change.priority)
    -- the owner's own constraint set since (the record still says ib) is kept
    r = rec(fits, { features = "skylake" })
    assert.are.equal("skylake&[site_a|site_b]", ask(r).features)
    -- one no site can hold: held by xsite (priority 0) with the record it
    -- had, not refused
    local big_rec = rec(big)
    change = ask(big_rec)
    assert.are.equal(0, change.priority)
    assert.is_nil(change.features)
    assert.matches("^admin text; xsite v=1 action=span why=within .* hold=xsite recheck=down$", change.admin_comment)
    -- held by its owner before: the hold becomes xsite's, and says whose it
    -- was; held by someone squeue did not name: an administrator's
    assert.matches(" hold=user recheck=down$", ask(rec(big, { priority = 0 }), "user").admin_comment)
    assert.matches(" hold=admin recheck=down$", ask(rec(big, { priority = 0 })).admin_comment)
    -- the link back (degraded counts as up): released, the hold word gone
    write("link.state", "State=degraded Time=1020\n")
    now = now + 10
    change = ask(big_rec)
    assert.are.equal(submit.INFINITE, change.priority)
    assert.matches("action=span why=within .* recheck=up$", change.admin_comment)
    assert.is_nil(change.admin_comment:match("hold="))
    -- a job in its owner's hold stays held (xsite load gives it back to its owner)
    local user_held = rec(big, { priority = 0 })
    write("link.state", "State=down Time=1030\n")
    now = now + 10
    ask(user_held, "user")
    write("link.state", "State=up Time=1040\n")
    now = now + 10
    assert.is_nil(ask(user_held).priority)
    assert.is_nil(user_held.admin_comment:match("hold="))
    -- held with the link down, then refused with it up for another reason
    -- (a new MaxSlowdown): released as it was accepted
    write("link.state", "State=down Time=1050\n")
    now = now + 10
    big_rec = rec(big)
    ask(big_rec)
    assert.are.equal(0, big_rec.priority)
    write("link.state", "State=up Time=1060\n")
    write("xsite.conf", CONF .. "LinkStateFile=" .. dir .. "/link.state\nOversizeAction=reject\nMaxSlowdown=1.0\n")
    now = now + 10
    change = ask(big_rec)
    assert.are.equal(submit.INFINITE, change.priority)
    assert.matches("^admin text; xsite v=1 action=span why=within .* recheck=up$", change.admin_comment)
    -- its owner cannot give the held job a priority back through Nice=
    write("link.state", "State=down Time=1070\n")
    now = now + 10
    big_rec = rec(big)
    ask(big_rec)
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_modify({ nice = 2147483647 }, big_rec, s, 1001))
    assert.matches("Nice: the job is held", s.user[#s.user])
    -- decided again while held (Slurm gave it a priority back): still the
    -- hold it had
    big_rec.admin_comment = big_rec.admin_comment:gsub("hold=xsite", "hold=user")
    big_rec.priority = 2
    assert.matches(" hold=user recheck=down$", ask(big_rec).admin_comment)
    assert.are.equal(0, big_rec.priority)
    -- a one-node job is pinned too, so that every job left is at one site
    local one = job({ min_nodes = 1, max_nodes = 1, spank_job_env = quiet })
    assert.are.equal(0, submit.job_submit(one, s))
    change = ask(rec(one))
    assert.are.equal("[site_a|site_b]", change.features)
    -- a job that started meanwhile keeps its AdminComment
    change = { admin_comment = submit.RECHECK }
    assert.are.equal(0, submit.job_modify(change, rec(fits, { job_state = 1 }), s, 0))
    assert.are.equal("admin text; " .. fits.admin_comment, change.admin_comment)
    -- a request with other changes, or a word it does not know, is no request
    assert.are.equal(-1, submit.job_modify({ admin_comment = submit.RECHECK, min_nodes = 3 }, rec(fits), s, 0))
    assert.matches("takes no other change", s.user[#s.user])
    change = { admin_comment = submit.RECHECK .. " held=nobody" }
    assert.are.equal(0, submit.job_modify(change, rec(fits), s, 0))
    assert.are.equal(submit.RECHECK .. " held=nobody", change.admin_comment)
    assert.is_nil(submit.recheck_request("xsite rechecked"))
  end)

  it("decides again a job Mode=enforce pinned that its owner took off its site under Mode=advise", function()
    local enforce = CONF .. "MaxSlowdown=1.0\nOversizeAction=reject\n"
    setup_conf(enforce)
    local s = fake_slurm()
    local j = job({ min_nodes = 2, max_nodes = 2, features = "ib" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.matches("action=pin .* keeps=prefer", j.admin_comment)
    local r = { features = j.features, admin_comment = j.admin_comment, spank_job_env = j.spank_job_env,
      min_nodes = 2, max_nodes = 2, job_state = submit.JOB_PENDING, user_id = 1001, job_id = 8, priority = 100 }
    -- Mode=advise: the owner's new constraint and preference go through as
    -- given, and the record stays (an owner's change cannot touch it)
    write("xsite.conf", enforce .. "Mode=advise\n")
    now = now + 10
    local change = { features = "ib", prefer = "site_a|site_b" }
    assert.are.equal(0, submit.job_modify(change, r, s, 1001))
    assert.are.equal("ib", change.features)
    r.features = change.features
    -- root's request while this slurmctld still reads Mode=advise: nothing
    change = { admin_comment = submit.RECHECK }
    assert.are.equal(0, submit.job_modify(change, r, s, 0))
    assert.are.same({ admin_comment = r.admin_comment }, change)
    assert.matches("job 8: xsite recheck ignored: Mode=advise", s.info[#s.info])
    -- Mode=enforce again; root (xsite load) asks: pinned anew, the
    -- preference the record's (none: the pin's)
    write("xsite.conf", enforce)
    now = now + 10
    change = { admin_comment = submit.RECHECK }
    assert.are.equal(0, submit.job_modify(change, r, s, 0))
    assert.are.equal("ib&[site_a|site_b]", change.features)
    assert.are.equal("ib&[site_a|site_b]", change.prefer)
    assert.matches("action=pin .* keeps=prefer recheck=up$", change.admin_comment)
    assert.is_nil(change.priority)
    -- a constraint of the owner that cannot take a site (a count): held by
    -- xsite, not left to span
    r.features = "[ib*1&big*1]"
    change = { admin_comment = submit.RECHECK .. " unkept" }
    assert.are.equal(0, submit.job_modify(change, r, s, 0))
    assert.are.equal(0, change.priority)
    assert.is_nil(change.features)
    assert.matches("action=pin .* hold=xsite recheck=up$", change.admin_comment)
    assert.matches("job 8 held: it was kept at one site and no longer is", s.info[#s.info])
    -- Features at one site, the owner's Prefer at both (which job_modify
    -- cannot see, xsite load can) and a shape no site can hold: held too
    write("xsite.conf", enforce .. "Mode=advise\n")
    now = now + 10
    change = { min_nodes = 4, max_nodes = 4, features = "site_a", prefer = "ib" }
    assert.are.equal(0, submit.job_modify(change, r, s, 1001))
    r.features, r.min_nodes, r.max_nodes = "site_a", 4, 4
    write("xsite.conf", enforce)
    now = now + 10
    change = { admin_comment = submit.RECHECK .. " unkept" }
    assert.are.equal(0, submit.job_modify(change, r, s, 0))
    assert.are.equal(0, change.priority)
    assert.matches(" hold=xsite recheck=up$", change.admin_comment)
    -- the same refusal without the word (a job kept at one site, refused
    -- for another reason): left as it was accepted
    change = { admin_comment = submit.RECHECK }
    assert.are.equal(0, submit.job_modify(change, r, s, 0))
    assert.is_nil(change.priority)
    assert.are.same({ unkept = true, held = "user" }, submit.recheck_request(submit.RECHECK .. " held=user unkept"))
    assert.is_nil(submit.recheck_request(submit.RECHECK .. " unkept held=user"))
  end)

  it("keeps a job its choice of sites keeps, a node list at both sites, at one by its feature (recheck)", function()
    local enforce = CONF .. "MaxSlowdown=1.0\nOversizeAction=reject\n"
    setup_conf(enforce)
    local s = fake_slurm()
    s.ESLURM_INVALID_NODE_NAME = 2014 -- Slurm 23.02 and later: nodes to choose from
    local j = job({ min_nodes = 1, req_nodes = "a1,b1" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("site_a", j.features)
    -- as an earlier xsite left it, or its owner under Mode=advise: a
    -- choice of sites, which does not hold nodes the job must have (the
    -- job record job_submit/lua shows has no node list: the record's)
    local r = { features = "[site_a|site_b]", admin_comment = j.admin_comment, spank_job_env = j.spank_job_env,
      min_nodes = 1, max_nodes = 0, job_state = submit.JOB_PENDING, user_id = 1001, job_id = 9, priority = 100 }
    local change = { admin_comment = submit.RECHECK .. " unkept" }
    assert.are.equal(0, submit.job_modify(change, r, s, 0))
    assert.are.equal("site_a", change.features)
    assert.is_nil(change.priority)
    assert.matches(" wsites=a:1%+b:1 .* recheck=up$", change.admin_comment)
    -- its list changed under Mode=advise, more of it at site b now: root's
    -- request says so (xsite load reads it from squeue), and the new
    -- record has it
    change = { admin_comment = submit.RECHECK .. " unkept wsites=a:1+b:2" }
    assert.are.equal(0, submit.job_modify(change, r, s, 0))
    assert.are.equal("site_b", change.features)
    assert.matches(" wsites=a:1%+b:2 .* recheck=up$", change.admin_comment)
    -- no list now: as a one-node job without one
    change = { admin_comment = submit.RECHECK .. " unkept wsites=-" }
    assert.are.equal(0, submit.job_modify(change, r, s, 0))
    assert.is_nil(change.admin_comment:match("wsites="))
    assert.are.same({ unkept = true, held = "user", wsites = "a:1+b:2" },
      submit.recheck_request(submit.RECHECK .. " held=user unkept wsites=a:1+b:2"))
    assert.is_nil(submit.recheck_request(submit.RECHECK .. " wsites=a:1 unkept"))
  end)

  -- A job description that raises on every field but spank_job_env.
  local function exploding_job()
    return setmetatable({}, { __index = function(_, k)
      if k == "spank_job_env" then return {} end
      error("boom on " .. k)
    end })
  end

  it("never raises: an internal error accepts the job and logs it", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local evil = exploding_job()
    assert.are.equal(0, submit.job_submit(evil, s))
    assert.matches("internal error, job accepted unchanged: .*boom", s.errors[1])
  end)

  it("under FailMode=closed an internal error rejects the job, except root's", function()
    setup_conf(CONF .. "FailMode=closed\n")
    local s = fake_slurm()
    local evil = exploding_job()
    assert.are.equal(-1, submit.job_submit(evil, s, 1000))
    assert.matches("internal error, job refused: .*boom", s.errors[1])
    assert.matches("^xsite: job rejected: xsite could not judge it", s.user[1])
    assert.are.equal(0, submit.job_submit(evil, s, 0))
  end)

  it("Mode=enforce: a change it cannot judge is refused, the job unchanged", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local j = job({ min_nodes = 2, features = "ib" })
    submit.job_submit(j, s)
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = {} }
    local evil = setmetatable({ features = "ib" }, { __index = function(_, k)
      if k == "min_nodes" then return 3 end
      if k == "admin_comment" then return nil end
      error("boom on " .. k)
    end })
    assert.are.equal(-1, submit.job_modify(evil, rec, s, 1000))
    assert.matches("internal error, modification refused: .*boom", s.errors[#s.errors])
    assert.matches("^xsite: change refused: xsite could not judge it", s.user[#s.user])
    -- root's change goes through as given
    assert.are.equal(0, submit.job_modify(evil, rec, s, 0))
    -- Mode=advise promises nothing: accepted, logged
    setup_conf(CONF .. "Mode=advise\n")
    assert.are.equal(0, submit.job_modify(evil, rec, s, 1000))
    assert.matches("internal error, modification accepted unchanged: .*boom", s.errors[#s.errors])
  end)

  it("a count in the constraint or --prefer of a job with no top to its node count: any number of nodes", function()
    setup_conf(CONF)
    local s = fake_slurm()
    -- no -N: Slurm raises the node count to the counts' sum, so the job is
    -- judged as the whole cluster's; a pin cannot go with a count: refused
    for _, f in ipairs({ { features = "[site_a*1&site_b*1]" }, { features = "ib*2" },
        { prefer = "[site_a*1&site_b*1]" } }) do
      local j = job({ min_nodes = submit.NO_VAL, max_nodes = submit.NO_VAL, features = f.features,
        prefer = f.prefer })
      assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j, s, 1000))
      assert.matches("it has a node count %(%*N%)", s.user[#s.user])
      assert.matches(" n=6 ", j.admin_comment or s.info[#s.info])
    end
    -- with a top, the top bounds it
    local j = job({ min_nodes = 1, max_nodes = 1, features = "ib*1" })
    assert.are.equal(0, submit.job_submit(j, s, 1000))
    assert.matches("a one%-node job", s.user[#s.user])
  end)

  it("Mode=enforce refuses a job that grows another (--dependency=expand), except root's", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local j = job({ min_nodes = 1, max_nodes = 1, dependency = "expand:42" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j, s, 1000))
    assert.matches("^xsite: job rejected: %-%-dependency=expand: a job that grows another", s.user[#s.user])
    assert.are.equal(0, submit.job_submit(job({ min_nodes = 1, max_nodes = 1, dependency = "afterok:42" }), s, 1000))
    assert.are.equal(0, submit.job_submit(job({ min_nodes = 1, max_nodes = 1, dependency = "EXPAND:42" }), s, 0))
    -- nor can a pending job be made one
    assert.are.equal(-1, submit.job_modify({ dependency = "expand:42" }, { spank_job_env = {} }, s, 1000))
    assert.matches("^xsite: change refused: %-%-dependency=expand", s.user[#s.user])
    setup_conf(CONF .. "Mode=advise\n")
    assert.are.equal(0, submit.job_submit(job({ min_nodes = 1, max_nodes = 1, dependency = "expand:42" }), s, 1000))
  end)

  it("refuses a change of shape or place that needs a new pin, unless the job is kept at one site already", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local one = job({ min_nodes = 1, max_nodes = 1 })
    assert.are.equal(0, submit.job_submit(one, s, 1000))
    assert.is_nil(one.features)
    local function rec(features)
      return { job_id = 7, features = features, admin_comment = one.admin_comment, spank_job_env = {} }
    end
    -- Slurm would set NumNodes, then fail at Nice (a user may not lower
    -- it), or at a Deadline job_submit/lua does not show: two nodes without
    -- the site constraint.  Refused, with the way round.
    for _, change in ipairs({ { min_nodes = 2, max_nodes = 2, nice = 2147483548 }, { min_nodes = 2, max_nodes = 2 },
        { min_nodes = 2, max_nodes = 2, features = "ib" }, { partition = "wide", min_nodes = 2, max_nodes = 2 } }) do
      assert.are.equal(-1, submit.job_modify(change, rec(nil), s, 1000))
      assert.are.equal("xsite: change refused: it needs the job kept at one site, which Slurm would set only "
        .. "after the rest of the change, and not at all were a part of it to fail; make it in two: first "
        .. "scontrol update JobId=7 Features='" .. (change.features and change.features .. "&" or "")
        .. "[site_a|site_b]', then the change", s.user[#s.user])
      assert.are.equal(s.user[#s.user]:gsub("^xsite: ", "xsite: job 7: "), s.info[#s.info])
    end
    -- a site of the owner's own in the same change: the same, naming it
    assert.are.equal(-1, submit.job_modify({ min_nodes = 2, max_nodes = 2, features = "site_b" }, rec(nil), s, 1000))
    assert.matches("first scontrol update JobId=7 Features='site_b', then the change$", s.user[#s.user])
    -- the two steps: the constraint first (a change of Features alone),
    -- then the rest, on a job kept at one site
    local change = { features = "[site_a|site_b]" }
    assert.are.equal(0, submit.job_modify(change, rec(nil), s, 1000))
    assert.are.equal("[site_a|site_b]", change.features)
    change = { min_nodes = 2, max_nodes = 2, nice = 2147483548 }
    assert.are.equal(0, submit.job_modify(change, rec("[site_a|site_b]"), s, 1000))
    -- root's goes through, as does a change that needs no pin
    change = { min_nodes = 2, max_nodes = 2 }
    assert.are.equal(0, submit.job_modify(change, rec(nil), s, 0))
    assert.are.equal("[site_a|site_b]", change.features)
    assert.are.equal(0, submit.job_modify({ min_nodes = 5, max_nodes = 5 }, rec(nil), s, 1000))
    -- a job whose record does not say its --prefer was kept with its
    -- Features (accepted under Mode=advise, or by an earlier xsite):
    -- refused even with Features at one site, with no two steps to take
    local old = rec("[site_a|site_b]")
    old.admin_comment = (one.admin_comment:gsub(" keeps=prefer", ""))
    assert.are.equal(-1, submit.job_modify({ min_nodes = 2, max_nodes = 2, nice = 2147483548 }, old, s, 1000))
    assert.are.equal("xsite: change refused: it needs the job kept at one site, which Slurm would set only after "
      .. "the rest of the change, and its --prefer may not keep it there (accepted before Mode=enforce, or by an "
      .. "earlier xsite); submit the job again with the new shape", s.user[#s.user])
    -- Mode=advise refuses no change
    setup_conf(CONF .. "Mode=advise\n")
    assert.are.equal(0, submit.job_modify({ min_nodes = 2, max_nodes = 2, nice = 2147483548 }, rec(nil), s, 1000))
  end)

  it("a job kept at one site by its constraint has its --prefer kept there too, one-node jobs included", function()
    setup_conf(CONF)
    local s = fake_slurm()
    -- so that a later change of its size, which Slurm may apply without the
    -- preference xsite sets with it, finds the preference pinned
    for _, c in ipairs({ { "site_a", "site_a|site_b", "(site_a|site_b)&site_a" },
        { "[site_a|site_b]", "ib", "ib&[site_a|site_b]" }, { "site_b&ib", "site_b", "site_b" } }) do
      local one = job({ min_nodes = 1, max_nodes = 1, features = c[1], prefer = c[2] })
      assert.are.equal(0, submit.job_submit(one, s, 1000))
      assert.are.equal(c[1], one.features)
      assert.are.equal(c[3], one.prefer)
      assert.are.equal(c[2], require("xsite.record").parse(one.admin_comment).prefer)
    end
    -- one that cannot take it is refused, naming --prefer
    local one = job({ min_nodes = 1, max_nodes = 1, features = "site_a", prefer = "ib*2" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(one, s, 1000))
    assert.matches("^xsite: job rejected: %-%-prefer 'ib%*2': .*your %-%-constraint keeps the job at site a",
      s.user[#s.user])
    -- a constraint that does not keep it at one site leaves a one-node
    -- job's preference as it is
    one = job({ min_nodes = 1, max_nodes = 1, features = "ib", prefer = "site_a|site_b" })
    assert.are.equal(0, submit.job_submit(one, s, 1000))
    assert.are.equal("site_a|site_b", one.prefer)
  end)

  it("refuses Prefer= in a change that keeps the job at one site from now on", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local one = job({ min_nodes = 1, max_nodes = 1, features = "ib", prefer = "site_a|site_b" })
    assert.are.equal(0, submit.job_submit(one, s, 1000))
    local function rec(features)
      return { job_id = 7, features = features, admin_comment = one.admin_comment, spank_job_env = {},
        job_state = submit.JOB_PENDING }
    end
    -- Slurm would set Features=site_a, then refuse an invalid preference:
    -- kept at one site by Features, with the old preference for both
    assert.are.equal(-1, submit.job_modify({ features = "site_a", prefer = "nosuch" }, rec("ib"), s, 1000))
    assert.are.equal("xsite: change refused: Prefer= with a change that keeps the job at one site: Slurm sets the "
      .. "rest first and keeps it when it finds the preference invalid, and the job's old preference need not "
      .. "keep it there; make it in two: first scontrol update JobId=7 Features='site_a', then Prefer=",
      s.user[#s.user])
    -- the two steps
    local change = { features = "site_a" }
    assert.are.equal(0, submit.job_modify(change, rec("ib"), s, 1000))
    assert.are.equal("(site_a|site_b)&site_a", change.prefer)
    -- then the preference: whatever constraint the job has after, a
    -- preference that keeps it within the same sites
    change = { prefer = "fast" }
    assert.are.equal(0, submit.job_modify(change, rec("site_a"), s, 1000))
    local constraint, cfg = require("xsite.constraint"), require("xsite.config").parse(CONF, "xsite.conf")
    local after = assert(constraint.analyse(change.features or "site_a", cfg))
    if after.one_site then
      local p = assert(constraint.analyse(change.prefer, cfg))
      assert.is_true(p.one_site and p.sites[1] == after.sites[1], change.prefer)
    end
    -- Features that xsite writes back (the owner's own constraint from the
    -- record, for a job whose Features name both sites): the same
    local one_a = job({ min_nodes = 1, max_nodes = 1, features = "site_a" })
    assert.are.equal(0, submit.job_submit(one_a, s, 1000))
    local both = { job_id = 8, features = "site_a|site_b", admin_comment = one_a.admin_comment, spank_job_env = {},
      job_state = submit.JOB_PENDING }
    change = { prefer = "nosuch" }
    assert.are.equal(-1, submit.job_modify(change, both, s, 1000))
    assert.matches("first scontrol update JobId=8 Features='site_a', then Prefer=$", s.user[#s.user])
    -- a change that leaves the job's constraint as it was, root's, and one
    -- under Mode=advise go through
    assert.are.equal(0, submit.job_modify({ prefer = "fast" }, rec("ib"), s, 1000))
    assert.are.equal(0, submit.job_modify({ features = "site_a", prefer = "nosuch" }, rec("ib"), s, 0))
    setup_conf(CONF .. "Mode=advise\n")
    assert.are.equal(0, submit.job_modify({ features = "site_a", prefer = "nosuch" }, rec("ib"), s, 1000))
  end)

  it("decides again when a pending job's node count changes", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local j = job({ min_nodes = 2, features = "ib" })
    submit.job_submit(j, s)
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = {} }
    local change = { min_nodes = 5 }
    assert.are.equal(0, submit.job_modify(change, rec, s, 0))
    -- five nodes fit no site: the chatty job spans with a warning, the user's constraint kept
    assert.are.equal("ib", change.features)
    assert.matches("action=span why=oversize", change.admin_comment)
    assert.are.equal(0, submit.job_modify({ time_limit = 5 }, rec, s, 0))
  end)

  it("drops the constraint it added when a modification no longer pins the job", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local j = job({ min_nodes = 2 })
    submit.job_submit(j, s)
    assert.are.equal("[site_a|site_b]", j.features)
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = {} }
    local change = { min_nodes = 5 }
    assert.are.equal(0, submit.job_modify(change, rec, s, 0))
    assert.matches("action=span why=oversize", change.admin_comment)
    -- job_submit/lua cannot clear a constraint: one every node meets replaces it
    assert.are.equal("site_a|site_b", change.features)
    -- a job xsite never constrained keeps its (absent) constraint
    local plain = { admin_comment = change.admin_comment, spank_job_env = {} }
    local change2 = { min_nodes = 6 }
    assert.are.equal(0, submit.job_modify(change2, plain, s, 0))
    assert.is_nil(change2.features)
  end)

  it("drops the switch count it asked for when a modification no longer wants one site", function()
    setup_conf(CONF, "TopologyPlugin=topology/tree\n")
    local s = fake_slurm()
    local env = { [0] = "XSITE_COMM_PROFILE=quiet" }
    local j = job({ min_nodes = 2, time_limit = 600, spank_job_env = env })
    submit.job_submit(j, s)
    assert.are.equal(1, j.req_switch)
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = env,
      time_limit = 600 }
    -- five nodes fit no site: no switch to wait for
    local change = { min_nodes = 5 }
    assert.are.equal(0, submit.job_modify(change, rec, s, 0))
    assert.matches("action=span why=within mode=enforce n=5", change.admin_comment)
    assert.are.equal(0, change.req_switch)
    -- three still fit one site: the job still waits for one switch
    local again = { min_nodes = 3, time_limit = 600 }
    assert.are.equal(0, submit.job_modify(again, rec, s, 0))
    assert.are.equal(1, again.req_switch)
  end)
  it("decides a node range or a task count on the most nodes the job can get", function()
    local cfg = h.config(CONF)
    assert.are.equal(8, submit.most_nodes({ min_nodes = 1, max_nodes = 8 }, cfg))
    assert.are.equal(2, submit.most_nodes({ min_nodes = 2, max_nodes = submit.NO_VAL }, cfg))
    -- -n2 with min_nodes 1 and no max_nodes: Slurm may put a task on each of two nodes
    assert.are.equal(2, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL, num_tasks = 2 }, cfg))
    assert.are.equal(1, submit.most_nodes({ min_nodes = 1, max_nodes = 1, num_tasks = 2 }, cfg))
    assert.are.equal(9, submit.most_nodes({ min_nodes = submit.NO_VAL, num_tasks = 9 }, cfg))
    -- with -n, --ntasks-per-node is the most tasks a node, not the fewest:
    -- -n9 --ntasks-per-node=2 needs five nodes and may get nine
    assert.are.equal(9, submit.most_nodes({ min_nodes = submit.NO_VAL, num_tasks = 9, ntasks_per_node = 2 }, cfg))
    assert.are.equal(5, submit.node_count({ min_nodes = submit.NO_VAL, num_tasks = 9, ntasks_per_node = 2 }, cfg))
    setup_conf(CONF)
    local s, j = fake_slurm(), job({ min_nodes = 1, max_nodes = 6 })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("[site_a|site_b]", j.features)
    assert.matches("action=pin why=slowdown mode=enforce n=6 ", j.admin_comment)
  end)

  it("raises the node count to the partitions' MinNodes, as Slurm schedules the job", function()
    local parts = { batch = { min_nodes_orig = 0, flag_default = 1 }, wide = { min_nodes_orig = 2, flag_default = 0 },
      huge = { min_nodes_orig = 5, flag_default = 0 } }
    -- the default partition's when none is named; the largest of those named
    assert.is_nil(submit.partition_floor(nil, parts))
    assert.are.equal(2, submit.partition_floor("wide", parts))
    assert.are.equal(5, submit.partition_floor("batch,wide,huge", parts))
    -- not those above the job's top (Slurm does not run it there)
    assert.are.equal(2, submit.partition_floor("batch,wide,huge", parts, 4))
    assert.is_nil(submit.partition_floor("wide", parts, 1))
    -- unknown names and records, no list (an older job_submit.lua)
    assert.is_nil(submit.partition_floor("nope,,", parts))
    assert.is_nil(submit.partition_floor("wide", nil))
    assert.is_nil(submit.partition_floor("wide", { wide = "x" }))
    parts.batch.min_nodes_orig = submit.NO_VAL
    assert.is_nil(submit.partition_floor("", parts))
    parts.batch.min_nodes_orig = 3
    assert.are.equal(3, submit.partition_floor("", parts))
    -- more than MAX_PARTITIONS names (Slurm drops repeated ones): every
    -- partition counts
    assert.are.equal(3, submit.partition_floor(("batch,"):rep(submit.MAX_PARTITIONS - 1) .. "wide", parts))
    assert.are.equal(5, submit.partition_floor(("batch,"):rep(submit.MAX_PARTITIONS) .. "wide", parts))
    -- a partition job_submit/lua leaves out (AllowGroups that do not show
    -- the user yet): slurm.conf's MinNodes
    local conf = require("xsite.config").slurm_partitions(
      "PartitionName=DEFAULT MinNodes=4\nPartitionName=hidden Nodes=ALL\nPartitionName=dflt Default=YES MinNodes=6\n")
    assert.are.equal(4, submit.partition_floor("hidden", parts, nil, conf))
    assert.is_nil(submit.partition_floor("hidden", parts, 3, conf))
    assert.are.equal(5, submit.partition_floor("hidden,huge", parts, nil, conf))
    assert.are.equal(5, submit.partition_floor(("batch,"):rep(submit.MAX_PARTITIONS) .. "wide", parts, nil,
      { min = { other = 3 } }))
    assert.are.equal(7, submit.partition_floor(("batch,"):rep(submit.MAX_PARTITIONS) .. "wide", parts, nil,
      { min = { other = 7 } }))
    -- a name neither knows (Slurm refuses it): nothing
    assert.is_nil(submit.partition_floor("nope", parts, nil, conf))
    -- no default partition among the job's: slurm.conf's default
    parts.batch.flag_default = 0
    assert.are.equal(6, submit.partition_floor(nil, parts, nil, conf))
    parts.batch.flag_default = 1
    local cfg = h.config(CONF)
    assert.are.equal(2, submit.node_count({ min_nodes = submit.NO_VAL }, cfg, 2))
    assert.are.equal(3, submit.node_count({ min_nodes = 3 }, cfg, 2))
    assert.are.equal(2, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL }, cfg, 2))
    -- --ntasks-per-node without -n: on each of the raised count's nodes
    assert.are.equal(6, submit.most_nodes({ min_nodes = submit.NO_VAL, ntasks_per_node = 2 }, cfg, 3))

    -- a job with no node count in a partition of MinNodes=2: not a
    -- one-node job, pinned
    setup_conf(CONF)
    local s = fake_slurm()
    local j = job({ partition = "wide" })
    assert.are.equal(0, submit.job_submit(j, s, 1001, parts))
    assert.are.equal("[site_a|site_b]", j.features)
    assert.matches("action=pin why=slowdown mode=enforce n=2 ", j.admin_comment)
    -- the same through the default partition
    j = job({})
    assert.are.equal(0, submit.job_submit(j, s, 1001, parts))
    assert.matches("action=pin why=slowdown mode=enforce n=3 ", j.admin_comment)
    -- -N1 (a top of 1) cannot be raised: a one-node job
    j = job({ partition = "wide", min_nodes = 1, max_nodes = 1 })
    assert.are.equal(0, submit.job_submit(j, s, 1001, parts))
    assert.matches("action=none why=one%-node", j.admin_comment)
    -- Partition=wide of a pending one-node job without a top
    j = job({ partition = "batch", min_nodes = 1 })
    parts.batch.min_nodes_orig = 0
    assert.are.equal(0, submit.job_submit(j, s, 1001, parts))
    assert.matches("action=none why=one%-node", j.admin_comment)
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = j.spank_job_env,
      min_nodes = 1, max_nodes = 0, job_state = submit.JOB_PENDING, user_id = 1001, partition = "batch" }
    -- at once it would need the pin Slurm sets last: in two
    local change = { partition = "wide" }
    assert.are.equal(-1, submit.job_modify(change, rec, s, 1001, parts))
    assert.matches("first scontrol update JobId=nil Features='%[site_a|site_b%]', then the change$", s.user[#s.user])
    change = { features = "[site_a|site_b]" }
    assert.are.equal(0, submit.job_modify(change, rec, s, 1001, parts))
    rec.features = change.features
    change = { partition = "wide" }
    assert.are.equal(0, submit.job_modify(change, rec, s, 1001, parts))
    assert.are.equal("[site_a|site_b]", change.features)
    assert.are.equal("[site_a|site_b]", change.prefer)
    -- and a change of something else of a job in it
    rec.partition = "wide"
    change = { features = "ib" }
    assert.are.equal(0, submit.job_modify(change, rec, s, 1001, parts))
    assert.are.equal("ib&[site_a|site_b]", change.features)
  end)

  it("keeps every component of a heterogeneous job at the site of the first", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local j0 = job({ min_nodes = 1, het_job_offset = 0, user_id = 1001,
      spank_job_env = { [0] = "XSITE_SITE_AFFINITY=b" } })
    assert.are.equal(0, submit.job_submit(j0, s))
    assert.are.equal("site_b", j0.features)
    assert.matches(" het=b", j0.admin_comment, 1, true)
    local j1 = job({ min_nodes = 2, het_job_offset = 1, user_id = 1001 })
    assert.are.equal(0, submit.job_submit(j1, s))
    assert.are.equal("site_b", j1.features)
    -- a later component that names the other site is refused
    local j2 = job({ min_nodes = 1, het_job_offset = 2, user_id = 1001, features = "site_a" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j2, s))
    assert.matches("allows no node of site b, where component 2 of this heterogeneous job must run",
      s.user[#s.user], 1, true)
    -- another user's first component does not move this user's
    assert.are.equal(0, submit.job_submit(job({ min_nodes = 1, het_job_offset = 0, user_id = 1002 }), s))
    local j3 = job({ min_nodes = 1, het_job_offset = 1, user_id = 1001 })
    assert.are.equal(0, submit.job_submit(j3, s))
    assert.are.equal("site_b", j3.features)
    -- a first component of the same user for the other site a moment later is refused
    local other = job({ min_nodes = 1, het_job_offset = 0, user_id = 1001,
      spank_job_env = { [0] = "XSITE_SITE_AFFINITY=a" } })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(other, s))
    assert.matches("another heterogeneous job of yours was placed at site b a moment ago", s.user[#s.user], 1, true)
    -- long after, a component with no first one is refused, not left unplaced
    now = now + submit.HET_WINDOW + 1
    assert.are.equal(submit.ESLURM_INVALID_FEATURE,
      submit.job_submit(job({ min_nodes = 1, het_job_offset = 1, user_id = 1001 }), s))
    assert.are.equal(0, submit.job_submit(other, s))
    assert.are.equal("site_a", other.features)
  end)

  it("rejects jobs under FailMode=closed even when no configuration was ever good", function()
    write("xsite.conf", CONF .. "FailMode=closed\nBogus=1\n")
    submit.setup(dir .. "/xsite.conf", { clock = function() return now end })
    local s = fake_slurm()
    assert.are.equal(-1, submit.job_submit(job({ min_nodes = 2 }), s))
    assert.matches("FailMode=closed", s.user[1], 1, true)
    -- a '#' inside double quotes is no comment there either
    write("xsite.conf", CONF .. 'Bogus="a # b" FailMode=closed\n')
    now = now + 10
    assert.are.equal(-1, submit.job_submit(job({ min_nodes = 2 }), s))
    -- FailMode=open (or none) in the broken file: accepted unchanged
    write("xsite.conf", CONF .. "Bogus=1\n")
    now = now + 10
    assert.are.equal(0, submit.job_submit(job({ min_nodes = 2 }), s))
  end)

  it("decides -n2 --ntasks-per-node=2 on two nodes, not as a one-node job", function()
    setup_conf(CONF)
    -- --spread-job puts the two tasks on two nodes
    local j = job({ min_nodes = 1, max_nodes = submit.NO_VAL, num_tasks = 2, ntasks_per_node = 2 })
    assert.are.equal(0, submit.job_submit(j, fake_slurm()))
    assert.are.equal("[site_a|site_b]", j.features)
    assert.matches("action=pin why=slowdown mode=enforce n=2 ", j.admin_comment, 1, true)
  end)

  -- A pending job of user 1001, submitted with `submitted` and changed with
  -- `change`; `fields` sets more of the job record (Slurm's, not the request's).
  -- A change of a job submitted as `submitted` (Slurm's record of it with
  -- `fields`) by uid (default the owner's, 1001).  One that job_modify
  -- refuses to make at once (a new pin with a new shape or place) is made
  -- in the two steps it names, as the owner would: the constraint, then
  -- the change (fourth value true).
  local function modify(submitted, change, uid, fields)
    local s = fake_slurm()
    local j = job(submitted)
    assert.are.equal(0, submit.job_submit(j, s))
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = j.spank_job_env,
      min_nodes = j.min_nodes, max_nodes = j.max_nodes, job_state = submit.JOB_PENDING, user_id = 1001,
      het_job_id = 0, het_job_offset = 0, licenses = j.licenses }
    for k, v in pairs(fields or {}) do rec[k] = v end
    local again = {}
    for k, v in pairs(change) do again[k] = v end
    local rc = submit.job_modify(change, rec, s, uid or 1001)
    local first = rc == -1 and s.user[#s.user]:match("make it in two: first scontrol update JobId=%S+ " ..
      "Features='(.-)', then the change$")
    if not first then return rc, change, s, false end
    local step = { features = first }
    assert.are.equal(0, submit.job_modify(step, rec, s, uid or 1001))
    rec.features = step.features
    return submit.job_modify(again, rec, s, uid or 1001), again, s, true
  end

  it("decides a change of tasks or CPUs on the most nodes the job can get then", function()
    setup_conf(CONF)
    -- -n1 (a one-node job, no site added; Slurm's record: no top to its
    -- node count, one CPU), then NumTasks=4 NumCPUs=4: up to four nodes
    local rc, c = modify({ min_nodes = 1, num_tasks = 1 }, { num_tasks = 4, min_cpus = 4 }, 1001,
      { max_nodes = 0, min_cpus = 1 })
    assert.are.equal(0, rc)
    assert.are.equal("[site_a|site_b]", c.features)
    -- NumCPUs=4 alone, after a NumTasks=4 whose decision the record does not
    -- keep (the owner cannot change admin_comment)
    rc, c = modify({ min_nodes = 1, num_tasks = 1 }, { min_cpus = 4 }, 1001, { max_nodes = 0, min_cpus = 1 })
    assert.are.equal(0, rc)
    assert.are.equal("[site_a|site_b]", c.features)
    -- the record's CPUs count too: a job of four CPUs whose Features change
    rc, c = modify({ min_nodes = 1, num_tasks = 1 }, { features = "ib" }, 1001, { max_nodes = 0, min_cpus = 4 })
    assert.are.equal(0, rc)
    assert.are.equal("ib&[site_a|site_b]", c.features)
    -- a top to the node count bounds it: -N1 stays a one-node job
    rc, c = modify({ min_nodes = 1, max_nodes = 1 }, { min_cpus = 4 }, 1001, { max_nodes = 1, min_cpus = 1 })
    assert.are.equal(0, rc)
    assert.is_nil(c.features)
  end)

  it("refuses more tasks than the job's top to its node count, which Slurm 26.05 may have set and raise", function()
    setup_conf(CONF)
    -- -n1 on Slurm 26.05: the record's top is 1, Slurm's own (num_tasks);
    -- NumTasks=4 raises it to 4 after job_modify
    local rc, _, s = modify({ min_nodes = 1, num_tasks = 1 }, { num_tasks = 4 }, 1001, { max_nodes = 1, min_cpus = 1 })
    assert.are.equal(submit.ESLURM_INVALID_NODE_COUNT, rc)
    assert.matches("^xsite: NumTasks=4: more tasks than the job's top of 1 node%(s%), which Slurm may raise with " ..
      "them; give NumNodes=MIN%-MAX with NumTasks$", s.user[#s.user])
    -- with a new top it is decided on that top; within the top, on the top
    local c
    rc, c = modify({ min_nodes = 1, num_tasks = 1 }, { num_tasks = 4, min_nodes = 1, max_nodes = 4 }, 1001,
      { max_nodes = 1, min_cpus = 1 })
    assert.are.equal(0, rc)
    assert.are.equal("[site_a|site_b]", c.features)
    rc, c = modify({ min_nodes = 1, max_nodes = 2, num_tasks = 1 }, { num_tasks = 2 }, 1001,
      { max_nodes = 2, min_cpus = 1 })
    assert.are.equal(0, rc)
    assert.are.equal("[site_a|site_b]", c.features)
  end)

  it("counts the nodes a job may get from 32-bit counts of 65534, tasks a node, CPUs and GPUs", function()
    local cfg = h.config(CONF)
    -- 0xfffe is NO_VAL16, a count like any other in a 32-bit field
    assert.are.equal(65534, submit.most_nodes({ min_nodes = 1, max_nodes = 65534 }, cfg))
    assert.are.equal(65534, submit.most_nodes({ min_nodes = submit.NO_VAL, num_tasks = 65534 }, cfg))
    assert.are.equal(1, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL,
      ntasks_per_node = submit.NO_VAL16, cpus_per_task = submit.NO_VAL16 }, cfg))
    -- --ntasks-per-node without -n: slurmctld makes it that many tasks on
    -- each of the fewest nodes after job_submit; --spread-job spreads them
    assert.are.equal(2, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL, ntasks_per_node = 2 }, cfg))
    assert.are.equal(6, submit.most_nodes({ min_nodes = 3, max_nodes = 0, ntasks_per_node = 2 }, cfg))
    -- CPUs without tasks: over --cpus-per-task
    assert.are.equal(4, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL, min_cpus = 4 }, cfg))
    assert.are.equal(1, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL, min_cpus = 4,
      cpus_per_task = 4 }, cfg))
    -- GPUs for the whole job
    assert.are.equal(8, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL,
      tres_per_job = "gres/gpu:8" }, cfg))
    assert.are.equal(10, submit.gres_units("gres/gpu:8,gres/gpu:a100:2"))
    assert.are.equal(2, submit.gres_units("gpu,gres/shard"))
    assert.are.equal(math.huge, submit.gres_units("gres/gpu:2k"))
    -- a count after `=` (--gpus=a100=8, TresPerJob=gres/gpu=8), as
    -- slurmctld 23.11 and later read it: not a type of one GPU
    assert.are.equal(8, submit.gres_units("gres/gpu:a100=8"))
    assert.are.equal(9, submit.gres_units("gres/gpu=8,gres/gpu:a100"))
    assert.are.equal(math.huge, submit.gres_units("gres/gpu:a100=many"))
    assert.are.equal(math.huge, submit.gres_units("gres/gpu="))
    assert.are.equal(8, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL,
      tres_per_job = "gres/gpu:a100=8" }, cfg))
    -- --ntasks-per-gpu without -n: that many tasks for each GPU, at least
    -- one GPU a node (_figure_out_num_tasks sets min_nodes x ntasks_per_tres)
    assert.are.equal(96, submit.most_nodes({ min_nodes = submit.NO_VAL, max_nodes = submit.NO_VAL,
      ntasks_per_tres = 96, tres_per_node = "gres/gpu:1" }, cfg))
    assert.are.equal(8, submit.most_nodes({ min_nodes = 1, max_nodes = submit.NO_VAL,
      ntasks_per_tres = 2, tres_per_job = "gres/gpu=4" }, cfg))
    assert.are.equal(2, submit.most_nodes({ min_nodes = 1, max_nodes = 2, ntasks_per_tres = 96 }, cfg))
    -- --gpus-per-socket=2 --sockets-per-node=2 --ntasks-per-gpu=3, two
    -- nodes: 8 GPUs, 24 tasks (one socket when the count is not given)
    assert.are.equal(24, submit.most_nodes({ min_nodes = 2, max_nodes = submit.NO_VAL, ntasks_per_tres = 3,
      tres_per_socket = "gres/gpu:2", sockets_per_node = 2 }, cfg))
    assert.are.equal(12, submit.most_nodes({ min_nodes = 2, max_nodes = submit.NO_VAL, ntasks_per_tres = 3,
      tres_per_socket = "gres/gpu:2", sockets_per_node = submit.NO_VAL16 }, cfg))
    -- a count of 0 GPUs a node asks for none: Slurm gives the 96 tasks GPUs itself
    assert.are.equal(96, submit.most_nodes({ min_nodes = submit.NO_VAL, max_nodes = submit.NO_VAL,
      ntasks_per_tres = 96, tres_per_node = "gres/gpu:0" }, cfg))
    assert.are.equal(math.huge, submit.gres_units(string.rep("gpu:1,", 200)))
    assert.is_nil(submit.gres_units(nil))
    -- none of them is a one-node job any more
    setup_conf(CONF)
    for _, shape in ipairs({ { min_nodes = 1, max_nodes = 65534 }, { min_nodes = 1, ntasks_per_node = 2 },
        { min_nodes = 1, min_cpus = 4 }, { min_nodes = 1, tres_per_job = "gres/gpu:8" },
        { min_nodes = 1, tres_per_job = "gres/gpu:a100=8" }, { min_nodes = 1, tres_per_job = "gres/gpu=8" },
        { min_nodes = 1, ntasks_per_tres = 96, tres_per_node = "gres/gpu:1" } }) do
      local j = job(shape)
      submit.job_submit(j, fake_slurm())
      assert.is_nil(tostring(j.admin_comment):match("why=one%-node"), tostring(j.admin_comment))
    end
  end)

  it("decides a pending job again on NumNodes=1-0, a 65534 count or TresPerJob=", function()
    setup_conf(CONF)
    local NO = { max_nodes = 0, min_cpus = 1 }
    -- -n4 (pinned, up to four nodes), then NumNodes=1-0 (no limit) with
    -- NumTasks=4: still pinned
    local rc, c = modify({ min_nodes = 1, num_tasks = 4 }, { min_nodes = 1, max_nodes = 0, num_tasks = 4 }, 1001, NO)
    assert.are.equal(0, rc)
    assert.are.equal("[site_a|site_b]", c.features)
    -- without NumTasks=, the job's tasks are unknown (the record has none,
    -- and --overcommit or NumCPUs= make its CPUs fewer): a top of 0 or
    -- INFINITE (libslurm sends what scontrol refuses) is refused, whoever
    -- asks
    for _, top in ipairs({ 0, submit.INFINITE }) do
      for _, uid in ipairs({ 1001, 0 }) do
        local s
        rc, _, s = modify({ min_nodes = 1, num_tasks = 1 }, { min_nodes = 1, max_nodes = top }, uid, NO)
        assert.are.equal(submit.ESLURM_INVALID_NODE_COUNT, rc)
        assert.matches("^xsite: NumNodes: a node count without a top .* give NumTasks= with it$", s.user[#s.user])
      end
    end
    -- Mode=advise refuses no change
    setup_conf(CONF .. "Mode=advise\n")
    rc = modify({ min_nodes = 1, num_tasks = 1 }, { min_nodes = 1, max_nodes = 0 }, 1001, NO)
    assert.are.equal(0, rc)
    setup_conf(CONF)
    -- a one-node job given NumTasks=65534 or TresPerJob=gres/gpu:4
    for _, change in ipairs({ { num_tasks = 65534 }, { tres_per_job = "gres/gpu:4" } }) do
      local s
      rc, c, s = modify({ min_nodes = 1, num_tasks = 1 }, change, 1001, NO)
      assert.is_nil(s.info[#s.info]:match("why=one%-node"), s.info[#s.info])
      if rc == 0 then assert.are.equal("[site_a|site_b]", c.features) end
    end
  end)

  it("pins --prefer as it pins --constraint: Slurm schedules with it instead where it can", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local j = job({ min_nodes = 2, prefer = "site_a|site_b" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("[site_a|site_b]", j.features)
    assert.are.equal("(site_a|site_b)&[site_a|site_b]", j.prefer)
    local r = require("xsite.record").parse(j.admin_comment)
    assert.are.equal("site_a|site_b", r.prefer)
    -- a preference that keeps the job at one site is left as it is
    j = job({ min_nodes = 2, prefer = "site_b&ib" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("[site_a|site_b]", j.features)
    assert.are.equal("site_b&ib", j.prefer)
    -- a constraint at one site is no longer enough when --prefer allows both
    j = job({ min_nodes = 2, features = "site_a", prefer = "ib" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("site_a", j.features)
    assert.are.equal("ib&site_a", j.prefer)
    -- one that cannot take the pin is refused, naming --prefer
    j = job({ min_nodes = 2, prefer = "[site_a*1&site_b*1]" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j, s))
    assert.matches("^xsite: job rejected: %-%-prefer '%[site_a%*1&site_b%*1%]': it has a node count", s.user[#s.user])
    -- a job that may span keeps its preference as given
    j = job({ min_nodes = 2, prefer = "ib", spank_job_env = { [0] = "XSITE_COMM_PROFILE=quiet" } })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("ib", j.prefer)
    -- a bad one is refused before anything else
    j = job({ min_nodes = 2, prefer = "a((b" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j, s))
    assert.matches("^xsite: job rejected: %-%-prefer 'a%(%(b': ", s.user[#s.user])
  end)

  it("keeps the pin in --prefer through scontrol update", function()
    setup_conf(CONF)
    -- Prefer= of a pinned job: pinned too
    local rc, c = modify({ min_nodes = 2 }, { prefer = "site_a|site_b" })
    assert.are.equal(0, rc)
    assert.are.equal("(site_a|site_b)&[site_a|site_b]", c.prefer)
    -- Features= of a job submitted with --prefer: the user's own from the
    -- record, pinned again
    rc, c = modify({ min_nodes = 2, prefer = "ib" }, { features = "fast" })
    assert.are.equal(0, rc)
    assert.are.equal("fast&[site_a|site_b]", c.features)
    assert.are.equal("ib&[site_a|site_b]", c.prefer)
    -- Prefer= that cannot take the pin: refused, naming --prefer
    local _, s
    rc, _, s = modify({ min_nodes = 2 }, { prefer = "[site_a*1&site_b*1]" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, rc)
    assert.matches("%-%-prefer '%[site_a%*1&site_b%*1%]'", s.user[#s.user])
    -- a change after which the job may span: the user's own preference again
    rc, c = modify({ min_nodes = 2, prefer = "ib" }, { min_nodes = 1, max_nodes = 1 })
    assert.are.equal(0, rc)
    assert.are.equal("ib", c.prefer)
    -- a preference the record does not know (one set by a Prefer= xsite
    -- let pass while the job could span; the job record has none): the
    -- job's constraint, pinned or not
    rc, c = modify({ min_nodes = 1 }, { min_nodes = 2, max_nodes = 2 })
    assert.are.equal(0, rc)
    assert.are.equal("[site_a|site_b]", c.features)
    assert.are.equal("[site_a|site_b]", c.prefer)
    rc, c = modify({ min_nodes = 2, features = "ib" }, { features = "fast" })
    assert.are.equal(0, rc)
    assert.are.equal("fast&[site_a|site_b]", c.prefer)
    rc, c = modify({ min_nodes = 2, features = "site_b" }, { min_nodes = 3 })
    assert.are.equal(0, rc)
    assert.is_nil(c.features)
    assert.are.equal("site_b", c.prefer)
    -- four nodes fit no site: the job may span, and a pin in its preference
    -- would keep it waiting
    rc, c = modify({ min_nodes = 2 }, { min_nodes = 4, max_nodes = 4 }, 1001, { features = "[site_a|site_b]" })
    assert.are.equal(0, rc)
    assert.are.equal("site_a|site_b", c.features)
    assert.are.equal("site_a|site_b", c.prefer)
  end)

  it("takes the job's constraint as the user's own when it names no site (the owner changed it since)", function()
    setup_conf(CONF)
    -- submitted with ib (the record says so), Features=skylake since: the
    -- record cannot say (only root may change it)
    local rc, c = modify({ min_nodes = 1 }, { min_nodes = 2, max_nodes = 2 }, 1001, { features = "skylake" })
    assert.are.equal(0, rc)
    assert.are.equal("skylake&[site_a|site_b]", c.features)
    -- a feature that only contains a site's name names no site
    rc, c = modify({ min_nodes = 1 }, { min_nodes = 2, max_nodes = 2 }, 1001, { features = "site_ab&x_site_a" })
    assert.are.equal(0, rc)
    assert.are.equal("site_ab&x_site_a&[site_a|site_b]", c.features)
    -- one naming a site may be xsite's: the record's
    rc, c = modify({ min_nodes = 2, features = "ib" }, { min_nodes = 3 }, 1001, { features = "ib&[site_a|site_b]" })
    assert.are.equal(0, rc)
    assert.are.equal("ib&[site_a|site_b]", c.features)
    -- a pin that would make the constraint longer than Slurm takes: refused
    local s = fake_slurm()
    local j = job({ min_nodes = 2, features = ("ib&"):rep(339) .. "ib" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j, s))
    assert.matches("with the site added it would be longer than 1024 characters", s.user[#s.user])
  end)

  it("counts --ntasks-per-node of a change on the job's own nodes", function()
    setup_conf(CONF)
    -- -N2-0 (no top): TasksPerNode=2 makes four tasks, up to four nodes
    local rc, c, s = modify({ min_nodes = 2, max_nodes = 0 }, { ntasks_per_node = 2 }, 1001, { max_nodes = 0 })
    assert.are.equal(0, rc)
    assert.matches(" n=4 ", s.info[#s.info])
    assert.is_nil(c.min_nodes)
  end)

  it("keeps the pin through every scontrol update of a pending job", function()
    setup_conf(CONF)
    -- Features= without a site: the pin is added again
    local rc, c = modify({ min_nodes = 2 }, { features = "ib" })
    assert.are.equal(0, rc)
    assert.are.equal("ib&[site_a|site_b]", c.features)
    -- Features= that spans by counts: refused, naming --constraint
    local s
    rc, c, s = modify({ min_nodes = 2 }, { features = "[site_a*1&site_b*1]" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, rc)
    assert.is_nil(c.admin_comment)
    assert.matches("^xsite: job rejected: %-%-constraint '%[site_a%*1&site_b%*1%]': it has a node count",
      s.user[#s.user])
    -- Features= cleared: the pin stays
    rc, c = modify({ min_nodes = 2, features = "ib" }, { features = "" })
    assert.are.equal(0, rc)
    assert.are.equal("[site_a|site_b]", c.features)
    -- ReqNodeList= at both sites: refused
    rc = modify({ min_nodes = 2 }, { req_nodes = "a1,b1" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, rc)
    -- ReqNodeList= at one site, as many nodes there as the record has:
    -- pinned there; a list the record does not have (later decisions read
    -- the list's sites from the record, which only root may write): refused
    rc, c = modify({ min_nodes = 2, req_nodes = "b2" }, { req_nodes = "b1" })
    assert.are.equal(0, rc)
    assert.are.equal("site_b", c.features)
    for _, change in ipairs({ { req_nodes = "b1" }, { req_nodes = "b[1-2]" }, { req_nodes = "a1" } }) do
      rc, _, s = modify({ min_nodes = 2, req_nodes = change.req_nodes == "b1" and "" or "b3" }, change)
      assert.are.equal(-1, rc)
      assert.matches("^xsite: change refused: ReqNodeList: xsite decides each later change of the job from "
        .. "the sites of its node list as its submission recorded them %((.-)%)", s.user[#s.user])
      assert.are.equal(change.req_nodes == "b1" and "no node list" or "nodes: 1 at b",
        s.user[#s.user]:match("recorded them %((.-)%)"))
    end
    -- taking the list away leaves the record on the safe side: taken
    rc = modify({ min_nodes = 2, req_nodes = "b3" }, { req_nodes = "" })
    assert.are.equal(0, rc)
    -- root's new list is taken as given, and recorded (override)
    rc, c = modify({ min_nodes = 2 }, { req_nodes = "a1" }, 0)
    assert.are.equal(0, rc)
    assert.matches(" override=0", c.admin_comment, 1, true)
    -- NumNodes= a range: decided on its top
    rc, c = modify({ min_nodes = 1 }, { min_nodes = 1, max_nodes = 3 })
    assert.are.equal(0, rc)
    assert.are.equal("[site_a|site_b]", c.features)
    -- the owner's change keeps the submission's record (Slurm lets only
    -- root and SlurmUser change admin_comment); the log has the new one
    assert.is_nil(c.admin_comment)
    local _, _, s2 = modify({ min_nodes = 1 }, { min_nodes = 1, max_nodes = 3 })
    assert.matches(" n=3 ", s2.info[#s2.info], 1, true)
    -- Partition= and ExcNodeList=: decided again, the pin kept
    for _, change in ipairs({ { partition = "other" }, { exc_nodes = "a1" } }) do
      rc, c = modify({ min_nodes = 2 }, change)
      assert.are.equal(0, rc)
      assert.are.equal("[site_a|site_b]", c.features)
    end
  end)

  it("reads a --nodelist longer than the job's --nodes as nodes to choose from where Slurm does", function()
    setup_conf(CONF)
    -- Slurm 22.05's `slurm` table, and 24.11's (every error code in it)
    local old, new = fake_slurm(), fake_slurm()
    new.ESLURM_INVALID_NODE_NAME = 2014
    assert.is_false(submit.nodelist_chooses(old))
    assert.is_true(submit.nodelist_chooses(new))
    -- the xsite command's: the Slurm release it was built for
    for v, chooses in pairs({ ["22.05.8"] = false, ["23.02.0"] = true, ["24.11.5"] = true, ["9.99"] = false,
        [""] = false, ["100.01.1"] = true }) do
      assert.are.equal(chooses, submit.nodelist_chooses(v), v)
    end
    -- -N1 -w a1,b1: 22.05 gives the job both (it may not span: refused),
    -- 24.11 one of them
    local function n1() return job({ min_nodes = 1, max_nodes = 1, req_nodes = "a1,b1" }) end
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(n1(), old))
    local j = n1()
    assert.are.equal(0, submit.job_submit(j, new))
    assert.matches("^xsite v=1 action=pin why=one%-node", j.admin_comment)
    -- pinned all the same: a change Slurm refuses half-way (an unknown
    -- Reservation= with it) leaves such a list as nodes the job must have,
    -- which a choice of sites does not hold at one: to a site's own feature
    assert.are.equal("site_a", j.features)
    local plain = job({ min_nodes = 1, max_nodes = 0 })
    assert.are.equal(0, submit.job_submit(plain, new))
    -- (and a job's owner cannot bring such a list later: its record, which
    -- every later decision reads, has none)
    local change = { req_nodes = "a1,b1", reservation = "nosuch" }
    assert.are.equal(-1, submit.job_modify(change, { features = plain.features, admin_comment = plain.admin_comment,
      spank_job_env = plain.spank_job_env, min_nodes = 1, max_nodes = 0, job_state = submit.JOB_PENDING,
      user_id = 1001, het_job_id = 0, het_job_offset = 0, job_id = 7 }, new, 1001))
    assert.matches("ReqNodeList: .*%(no node list%)", new.user[#new.user])
    -- a new list of as many nodes at each site to a job kept at either
    -- site by its Features (as an earlier xsite left it, or its owner under
    -- Mode=advise) is made in two, the site first; a job kept at one site
    -- already takes it at once
    local pinned = job({ min_nodes = 2, max_nodes = 2, req_nodes = "a[1-2],b[1-3]" })
    assert.are.equal(0, submit.job_submit(pinned, new))
    assert.are.equal("site_b", pinned.features)
    for _, features in ipairs({ "[site_a|site_b]", "site_b" }) do
      change = { req_nodes = "a[2-3],b[1-3]", reservation = "nosuch" }
      local rc = submit.job_modify(change, { features = features, admin_comment = pinned.admin_comment,
        spank_job_env = pinned.spank_job_env, min_nodes = 2, max_nodes = 2, job_state = submit.JOB_PENDING,
        user_id = 1001, het_job_id = 0, het_job_offset = 0, job_id = 8 }, new, 1001)
      if features == "site_b" then
        assert.are.equal(0, rc)
        assert.are.equal("site_b", change.features)
      else
        assert.are.equal(-1, rc)
        assert.matches("make it in two: first scontrol update JobId=8 Features='site_b'", new.user[#new.user], 1,
          true)
      end
    end
    -- -N2 -w a[1-2],b1: kept at a, where the list has two nodes
    j = job({ min_nodes = 2, max_nodes = 2, req_nodes = "a[1-2],b1" })
    assert.are.equal(0, submit.job_submit(j, new))
    assert.are.equal("site_a", j.features)
    assert.matches(" wsites=a:2+b:1", j.admin_comment, 1, true)
    -- -w a1,b1 without -N: sbatch sends no minimum, Slurm takes the list's
    -- length: nodes the job must have
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(job({ req_nodes = "a1,b1" }), new))
    -- changes of that pending job: decided from the record's list and the
    -- new minimum, or from a new list
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = j.spank_job_env,
      min_nodes = 2, max_nodes = 2, job_state = submit.JOB_PENDING, user_id = 1001, het_job_id = 0,
      het_job_offset = 0 }
    change = { min_nodes = 3, max_nodes = 3 }
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_modify(change, rec, new, 1001))
    assert.matches("--nodelist names nodes at both sites", new.user[#new.user], 1, true)
    change = { req_nodes = "a[2-3],b2" }
    assert.are.equal(0, submit.job_modify(change, rec, new, 1001))
    assert.are.equal("site_a", change.features)
    -- (a list of other counts per site than the record's is refused)
    change = { req_nodes = "a1,b[1-2]" }
    assert.are.equal(-1, submit.job_modify(change, rec, new, 1001))
    assert.matches("ReqNodeList: .*%(nodes: 2 at a, 1 at b%)", new.user[#new.user])
    -- (a record of an older xsite has the sites without counts)
    local older = {}
    for k, v in pairs(rec) do older[k] = v end
    older.admin_comment = rec.admin_comment:gsub("wsites=%S+", "wsites=a+b")
    change = { req_nodes = "a1,b[1-2]" }
    assert.are.equal(-1, submit.job_modify(change, older, new, 1001))
    assert.matches("ReqNodeList: .*%(nodes: some at a, some at b%)", new.user[#new.user])
    -- the same change on 22.05: nodes the job must have, at both sites
    change = { req_nodes = "a1,b[1-2]" }
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_modify(change, rec, old, 1001))
  end)

  it("leaves a placement root or SlurmUser sets as given, and says so in the record", function()
    setup_conf(CONF, "SlurmUser=" .. (os.getenv("USER") == "root" and "root" or "4242") .. "\n")
    local rc, c = modify({ min_nodes = 2 }, { features = "[site_a*1&site_b*1]" }, 0)
    assert.are.equal(0, rc)
    assert.are.equal("[site_a*1&site_b*1]", c.features)
    assert.matches(" override=0", c.admin_comment, 1, true)
    assert.is_true(submit.privileged(0))
    assert.is_false(submit.privileged(1001))
  end)

  it("keeps deciding a task-count job on its tasks when its node list changes", function()
    setup_conf(CONF)
    -- -n6 (up to six nodes) submitted held, then the owner names one node:
    -- the job record has no task count, the record's n stands for it
    local rc, c = modify({ min_nodes = 1, num_tasks = 6, features = "[(big&site_b)|big]", req_nodes = "b2" },
      { req_nodes = "b1" })
    assert.are.equal(0, rc)
    assert.are.equal("[(big&site_b)|big]&site_b", c.features)
  end)

  -- The link as 100 licenses: CONF with License= on its line, slurm.conf
  -- declaring it (or `slurm_conf`).
  local LICENSED = CONF:gsub("(LinkName=[^\n]*)", "%1 License=xsite_link:100")
  local QUIET = { [0] = "XSITE_COMM_PROFILE=quiet" }

  it("gives a job that may span its share of the link in licenses, and a pinned job none", function()
    setup_conf(LICENSED, "Licenses=xsite_link:100,matlab:4\n")
    local s = fake_slurm()
    local j = job({ min_nodes = 2, spank_job_env = QUIET })
    assert.are.equal(0, submit.job_submit(j, s))
    local n = tonumber(j.licenses:match("^xsite_link:(%d+)$"))
    assert.is_true(n >= 1 and n <= 100)
    assert.are.equal(tostring(n), require("xsite.record").parse(j.admin_comment).lic)
    assert.matches("may span both sites: .*; it holds " .. n .. " of the link's 100 licenses %(xsite_link%)",
      s.user[1])
    -- the user's own licenses are kept
    j = job({ min_nodes = 2, spank_job_env = QUIET, licenses = "matlab:2" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("matlab:2,xsite_link:" .. n, j.licenses)
    -- a chatty job is pinned: no share of the link
    j = job({ min_nodes = 2, licenses = "matlab:2" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("matlab:2", j.licenses)
    assert.is_nil(j.admin_comment:match(" lic="))
  end)

  it("asks for more of the link the more a job sends across it", function()
    local cfg = h.config(LICENSED)
    local policy = require("xsite.policy")
    local function units(p)
      return policy.decide({ cfg = cfg, nodes = 2, affinity = "span", profile = p }).link_units
    end
    local quiet, chatty = units("quiet"), units("chatty")
    assert.is_true(quiet >= 1 and chatty <= 100)
    assert.is_true(chatty > quiet, chatty .. " > " .. quiet)
    -- a job that only computes still holds one
    assert.are.equal(1, units("op=1e12,b=1GB,x=0,steps=0"))
    -- advice: what it would hold, nothing asked for
    local d = policy.decide({ cfg = h.config(LICENSED .. "Mode=advise\n"), nodes = 2, affinity = "span",
      profile = "chatty" })
    assert.is_nil(d.licenses)
    assert.are.equal(chatty, d.link_units)
    assert.matches("; it would hold " .. chatty .. " of the link's 100 licenses", d.message, 1, true)
  end)

  it("refuses a user's own request for the link's license, and an OR of licenses for a job that spans", function()
    setup_conf(LICENSED, "Licenses=xsite_link:100,a:1,b:1\n")
    -- (Slurm takes ';' between items and '=' before a count as well)
    for _, own in ipairs({ "xsite_link:1", "a:1,XSITE_LINK", "b|xsite_link:3", "a:1;xsite_link:100",
        "xsite_link=100" }) do
      local s = fake_slurm()
      local j = job({ min_nodes = 2, licenses = own })
      assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j, s))
      assert.matches("^xsite: job rejected: %-%-licenses '.*': xsite_link is the link's share", s.user[1])
      assert.are.equal(own, j.licenses)
    end
    local s = fake_slurm()
    local j = job({ min_nodes = 2, spank_job_env = QUIET, licenses = "a|b" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j, s))
    assert.matches("^xsite: job rejected: %-%-licenses 'a|b' asks for one of several", s.user[1])
    -- pinned, an OR is the user's business
    j = job({ min_nodes = 2, licenses = "a|b" })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.are.equal("a|b", j.licenses)
    -- through --tres-per-task (Slurm 23.02 and later add its licenses to
    -- the job's, times its tasks), at submission and in a change
    for _, tres in ipairs({ "cpu=1,license/xsite_link=1", "License/XSITE_LINK:2" }) do
      s = fake_slurm()
      j = job({ min_nodes = 2, tres_per_task = tres })
      assert.are.equal(submit.ESLURM_INVALID_FEATURE, submit.job_submit(j, s))
      assert.matches("^xsite: job rejected: %-%-tres%-per%-task '.*': xsite_link is the link's share", s.user[1])
    end
    j = job({ min_nodes = 2, tres_per_task = "cpu=1,license/a=1" })
    assert.are.equal(0, submit.job_submit(j, s))
    local r = { features = j.features, admin_comment = j.admin_comment, spank_job_env = j.spank_job_env,
      min_nodes = 2, max_nodes = 2, job_state = submit.JOB_PENDING, user_id = 1001, job_id = 9,
      tres_per_task = j.tres_per_task }
    s = fake_slurm()
    assert.are.equal(submit.ESLURM_INVALID_FEATURE,
      submit.job_modify({ tres_per_task = "license/xsite_link=4" }, r, s, 1001))
    assert.matches("%-%-tres%-per%-task 'xsite_link=4': xsite_link is the link's share", s.user[#s.user])
    assert.are.equal("a=1,b:2", submit.tres_licenses("cpu=1,license/a=1,gres/gpu=1,license/b:2"))
    assert.is_nil(submit.tres_licenses("cpu=1"))
    -- root may ask for the link's license itself: it stands as given
    j = job({ min_nodes = 2, spank_job_env = QUIET, licenses = "xsite_link:7" })
    assert.are.equal(0, submit.job_submit(j, s, 0))
    assert.are.equal("xsite_link:7", j.licenses)
  end)

  it("asks for no license slurm.conf does not declare, and says so once in slurmctld's log", function()
    setup_conf(LICENSED, "Licenses=xsite_link:50\n")
    local s = fake_slurm()
    for _ = 1, 3 do
      local j = job({ min_nodes = 2, spank_job_env = QUIET })
      assert.are.equal(0, submit.job_submit(j, s))
      assert.is_nil(j.licenses)
    end
    assert.are.equal(1, #s.errors)
    assert.matches("has License=xsite_link:100, but slurm.conf says xsite_link:50; spanning jobs get no license",
      s.errors[1])
  end)

  it("follows a count changed in slurm.conf and xsite.conf at run time, with no new Lua state", function()
    setup_conf(LICENSED, "Licenses=xsite_link:100\n")
    local s = fake_slurm()
    local j = job({ min_nodes = 2, spank_job_env = QUIET })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.matches("^xsite_link:%d+$", j.licenses)
    -- the admin halves the link in both files (then scontrol reconfigure,
    -- which on Slurm 22.05 keeps job_submit.lua's Lua state)
    write("slurm.conf", "Licenses=xsite_link:50\n")
    write("xsite.conf", (LICENSED:gsub("xsite_link:100", "xsite_link:50")))
    now = now + 6
    j = job({ min_nodes = 2, spank_job_env = QUIET })
    assert.are.equal(0, submit.job_submit(j, s))
    assert.matches("^xsite_link:%d+$", j.licenses)
    assert.matches("of the link's 50 licenses", s.user[#s.user])
    assert.are.equal(0, #s.errors)
    -- one file changed before the other: no license meanwhile, said once
    write("slurm.conf", "Licenses=xsite_link:80\n")
    now = now + 6
    for _ = 1, 2 do
      j = job({ min_nodes = 2, spank_job_env = QUIET })
      assert.are.equal(0, submit.job_submit(j, s))
      assert.is_nil(j.licenses)
    end
    assert.are.equal(1, #s.errors)
    assert.matches("has License=xsite_link:50, but slurm.conf says xsite_link:80", s.errors[1])
  end)

  it("gives the link's share back to a pending job whose owner changes its licenses", function()
    setup_conf(LICENSED, "Licenses=xsite_link:100,a:2\n")
    local function sub() return { min_nodes = 2, spank_job_env = QUIET } end
    local rc, c = modify(sub(), { licenses = "a:1" })
    assert.are.equal(0, rc)
    local n = c.licenses:match("^a:1,xsite_link:(%d+)$")
    assert.truthy(n)
    -- cleared: the share is set again
    rc, c = modify(sub(), { licenses = "" })
    assert.are.equal(0, rc)
    assert.are.equal("xsite_link:" .. n, c.licenses)
    -- the link's license itself: refused
    local _, s
    rc, _, s = modify(sub(), { licenses = "xsite_link:1" })
    assert.are.equal(submit.ESLURM_INVALID_FEATURE, rc)
    assert.matches("%-%-licenses 'xsite_link:1'", s.user[#s.user])
    -- another change keeps the user's own licenses beside the share
    rc, c = modify({ min_nodes = 2, spank_job_env = QUIET, licenses = "a:2" }, { min_nodes = 3 })
    assert.are.equal(0, rc)
    assert.matches("^a:2,xsite_link:%d+$", c.licenses)
    -- a change that keeps the job at one site: the share goes, the
    -- user's own licenses stay (none: "," which Slurm reads as none)
    rc, c = modify({ min_nodes = 2, spank_job_env = QUIET, licenses = "a:2" }, { features = "site_a" })
    assert.are.equal(0, rc)
    assert.are.equal("a:2", c.licenses)
    rc, c = modify(sub(), { features = "site_b" })
    assert.are.equal(0, rc)
    assert.are.equal(",", c.licenses)
    -- root's change of licenses stands as given
    rc, c = modify(sub(), { licenses = "a:1" }, 0)
    assert.are.equal(0, rc)
    assert.are.equal("a:1", c.licenses)
  end)

  it("does not move a running job", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local rec = { features = "", admin_comment = "", spank_job_env = {}, job_state = 1 }
    local change = { min_nodes = 1 }
    assert.are.equal(0, submit.job_modify(change, rec, s, 1001))
    assert.is_nil(change.admin_comment)
  end)
end)
