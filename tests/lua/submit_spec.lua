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

  it("replaces its own record in admin_comment and keeps the admin's text", function()
    assert.are.equal("xsite v=1 a=1", submit.with_record(nil, "xsite v=1 a=1"))
    assert.are.equal("keep me; xsite v=1 a=2", submit.with_record("keep me; xsite v=1 a=1", "xsite v=1 a=2"))
    assert.are.equal("xsite v=1 a=2", submit.with_record("xsite v=1 a=1", "xsite v=1 a=2"))
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

  it("never raises: an internal error accepts the job and logs it", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local evil = setmetatable({}, { __index = function(_, k)
      if k == "spank_job_env" then return {} end
      error("boom on " .. k)
    end })
    assert.are.equal(0, submit.job_submit(evil, s))
    assert.matches("internal error, job accepted unchanged: .*boom", s.errors[1])
  end)

  it("decides again when a pending job's node count changes", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local j = job({ min_nodes = 2, features = "ib" })
    submit.job_submit(j, s)
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = {} }
    local change = { min_nodes = 5 }
    assert.are.equal(0, submit.job_modify(change, rec, s))
    -- five nodes fit no site: the chatty job spans with a warning, the user's constraint kept
    assert.are.equal("ib", change.features)
    assert.matches("action=span why=oversize", change.admin_comment)
    assert.are.equal(0, submit.job_modify({ time_limit = 5 }, rec, s))
  end)

  it("drops the constraint it added when a modification no longer pins the job", function()
    setup_conf(CONF)
    local s = fake_slurm()
    local j = job({ min_nodes = 2 })
    submit.job_submit(j, s)
    assert.are.equal("[site_a|site_b]", j.features)
    local rec = { features = j.features, admin_comment = j.admin_comment, spank_job_env = {} }
    local change = { min_nodes = 5 }
    assert.are.equal(0, submit.job_modify(change, rec, s))
    assert.matches("action=span why=oversize", change.admin_comment)
    -- job_submit/lua cannot clear a constraint: one every node meets replaces it
    assert.are.equal("site_a|site_b", change.features)
    -- a job xsite never constrained keeps its (absent) constraint
    local plain = { admin_comment = change.admin_comment, spank_job_env = {} }
    local change2 = { min_nodes = 6 }
    assert.are.equal(0, submit.job_modify(change2, plain, s))
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
    assert.are.equal(0, submit.job_modify(change, rec, s))
    assert.matches("action=span why=within mode=enforce n=5", change.admin_comment)
    assert.are.equal(0, change.req_switch)
    -- three still fit one site: the job still waits for one switch
    local again = { min_nodes = 3, time_limit = 600 }
    assert.are.equal(0, submit.job_modify(again, rec, s))
    assert.are.equal(1, again.req_switch)
  end)
end)
