local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local xspank = require("xsite.spank")

-- The plugin's way in: one request, one answer; the answer's fields when
-- its code is "ok", else nil, the message and the code.
local function call(name, req)
  local ans = xspank.handle(name, req or {})
  if ans.code ~= "ok" then return nil, ans.message, ans.code end
  ans.code = nil
  return ans
end
local spank = {
  load = function(path) return call("load", { path = path }) end,
  task_env = function(host, nodelist) return call("task_env", { host = host, nodelist = nodelist }) end,
  check_affinity = function(v) return call("check_affinity", { value = v }) end,
  check_profile = function(v) return call("check_profile", { value = v }) end,
  tune_env = function(path)
    local ans, err, code = call("tune_env", { path = path })
    if not ans then return nil, err, code end
    return ans.env, ans.rules
  end,
  report_limits = function()
    local ans = assert(call("report_settings"))
    return ans.traffic_max_size, ans.retention
  end,
  step_start = function(job, step, user, uid, job_nodes, step_nodes, profile, start)
    return assert(call("step_start", { job = job, step = step, user = user, uid = uid, job_nodes = job_nodes,
      step_nodes = step_nodes, profile = profile, start = start })).record
  end,
  step_end = function(start, finish, traffic, note, existing)
    local ans = assert(call("step_end", { start = start, finish = finish, traffic = traffic, note = note,
      existing = existing }))
    return ans.record, ans.log or ""
  end,
}

describe("xsite.spank", function()
  local dir
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
  end)
  after_each(function() os.execute("rm -rf " .. dir) end)

  local function load(extra)
    local f = assert(io.open(dir .. "/xsite.conf", "w"))
    f:write((assert(io.open(h.root .. "/site-configs/testbed.conf")):read("*a"):gsub("LinkStateFile=%S+", "")))
    f:write(extra or "")
    f:close()
    assert(spank.load(dir .. "/xsite.conf"))
  end

  it("tells a task of a spanning job its site, the split and the link", function()
    load()
    local env = assert(spank.task_env("alpha2", "alpha[1-2],beta1"))
    assert.are.same({ site = "alpha", sites = "alpha:2,beta:1", spanning = "1",
      latency_us = "1000", bandwidth_mbps = "125" }, env)
  end)

  it("tells a task of a one-site job that it does not span, and ignores a domain", function()
    load()
    local env = assert(spank.task_env("beta2.example.org", "beta[1-2]"))
    assert.are.equal("beta", env.site)
    assert.are.equal("beta:2", env.sites)
    assert.are.equal("0", env.spanning)
  end)

  it("uses the measured link of the link state file", function()
    load("LinkStateFile=" .. dir .. "/link.state\n")
    local f = assert(io.open(dir .. "/link.state", "w"))
    f:write("State=degraded Bandwidth=400MB/s Latency=150us\n")
    f:close()
    local env = assert(spank.task_env("alpha1", "alpha1,beta1"))
    assert.are.equal("150", env.latency_us)
    assert.are.equal("400", env.bandwidth_mbps)
  end)

  it("warns about nodes in no site and refuses a bad node list", function()
    load()
    local env = assert(spank.task_env("gamma1", "alpha1,gamma1"))
    assert.is_nil(env.site)
    assert.matches("node 'gamma1' is in no site", env.warning)
    assert.matches("1 node%(s%) of the job in no site", env.warning)
    local none, err = spank.task_env("alpha1", "alpha[1-")
    assert.is_nil(none)
    assert.matches("^SLURM_JOB_NODELIST: unclosed '%['", err)
  end)

  it("checks flags with the policy's and the profiles' messages", function()
    load()
    assert.is_table(spank.check_affinity("beta"))
    local ok, err = spank.check_affinity("gamma")
    assert.is_nil(ok)
    assert.are.equal("unknown site 'gamma' (valid: auto, pin, span, alpha, beta)", err)
    assert.is_table(spank.check_profile("low"))
    ok, err = spank.check_profile("op=1,b=zz,x=1")
    assert.is_nil(ok)
    assert.matches("^b: 'zz' is not a number", err)
  end)
  it("tune_env gives the rules for the link and points Open MPI at the plugin's file for them", function()
    load()
    local path = dir .. "/xsite-coll-rules.42.0.Ab3dEf"
    local env, rules = spank.tune_env(path)
    -- 1 Gb/s, 1 ms: the eager limit is 250 kB rounded up
    assert.are.equal("OMPI_MCA_btl_tcp_sndbuf=524288\nOMPI_MCA_btl_tcp_rcvbuf=524288\n"
      .. "OMPI_MCA_btl_tcp_eager_limit=262144\nOMPI_MCA_coll_han_priority=0\n"
      .. "OMPI_MCA_coll_tuned_use_dynamic_rules=1\nOMPI_MCA_coll_tuned_dynamic_rules_filename=" .. path .. "\n", env)
    assert.matches("^# Open MPI coll/tuned dynamic rules", rules)
    assert.matches("\n5 # collectives\n", rules)
    -- nothing is written here: the plugin writes the file it made
    assert.is_nil(io.open(path))
  end)

  it("tune_env follows the measured link and refuses a down link or a bad file name", function()
    load("LinkStateFile=" .. dir .. "/link.state\n")
    local f = assert(io.open(dir .. "/link.state", "w"))
    f:write("State=degraded Bandwidth=1250MB/s Latency=5ms\n")
    f:close()
    local env = assert(spank.tune_env(dir .. "/rules.7"))
    -- 1.25 GB/s x 10 ms RTT x 2 = 25 MB -> 32 MiB
    assert.matches("OMPI_MCA_btl_tcp_sndbuf=33554432\n", env)
    f = assert(io.open(dir .. "/link.state", "w"))
    f:write("State=down\n")
    f:close()
    local none, err, code = spank.tune_env(dir .. "/rules.8")
    assert.is_nil(none)
    assert.matches("link is down", err)
    assert.are.equal("unavailable", code)
    for _, bad in ipairs({ "relative/rules.8", dir .. "/rules\n8", dir .. "/a=b" }) do
      none, err, code = spank.tune_env(bad)
      assert.is_nil(none)
      assert.matches("is not an absolute file name", err)
      assert.are.equal("invalid", code)
    end
  end)

  it("gives the plugin TrafficMaxSize and ReportRetention, 1 MiB and 30 days by default", function()
    load()
    assert.are.same({ "1048576", "2592000" }, { spank.report_limits() })
    load("TrafficMaxSize=64KiB ReportRetention=12hours\n")
    assert.are.same({ "65536", "43200" }, { spank.report_limits() })
    load("TrafficMaxSize=1MB ReportRetention=0\n")
    assert.are.same({ "1000000", "0" }, { spank.report_limits() })
    local f = assert(io.open(dir .. "/bad.conf", "w"))
    f:write((assert(io.open(h.root .. "/site-configs/testbed.conf")):read("*a"):gsub("LinkStateFile=%S+", "")))
    f:write("TrafficMaxSize=2GiB ReportRetention=30\n")
    f:close()
    local ok, err = spank.load(dir .. "/bad.conf")
    assert.is_nil(ok)
    assert.matches("TrafficMaxSize: '2GiB' is more than 1GiB", err)
    assert.matches("ReportRetention: '30' is not a time to keep records", err)
  end)

  it("reads no traffic record over TrafficMaxSize in step_end", function()
    load("TrafficMaxSize=100\n")
    local start = spank.step_start("42", "0", "alice", "1001", "alpha1,beta1", "", "medium", "1000")
    local traffic = '{"version":1,"job":42,"ranks":1,"cross":{"bytes":0,"messages":0,"p2p_bytes":0,'
      .. '"p2p_messages":0,"coll_bytes":0,"coll_messages":0}}'
    local rec, log = spank.step_end(start, "1001", traffic, "", "")
    assert.matches("MPI traffic record ignored: " .. #traffic .. " bytes, over TrafficMaxSize %(100 bytes%)", rec)
    assert.matches("job 42 step 0: MPI traffic record ignored", log)
    load("TrafficMaxSize=1KiB\n")
    rec, log = spank.step_end(start, "1001", traffic, "", "")
    assert.matches('"cross_bytes":0', rec)
    assert.are.equal("", log)
  end)

  it("adds Slurm's node list to a record on the list's first node only", function()
    assert.are.same({ first = "1" }, call("first_node", { nodes = "alpha[1-2],beta1", node = "alpha1" }))
    assert.are.same({ first = "0" }, call("first_node", { nodes = "alpha[1-2],beta1", node = "alpha2" }))
    assert.are.same({ first = "0" }, call("first_node", { nodes = "alpha[1-2],beta1" }))
    local ok, err, code = call("first_node", { nodes = "alpha[1-", node = "alpha1" })
    assert.is_nil(ok)
    assert.are.equal("invalid", code)
    assert.matches("^SLURM_NODELIST: ", err)
    local ans = assert(call("slurm_nodes", { job = "42", nodes = "alpha1,beta1" }))
    assert.are.equal('{"42":"alpha1,beta1"}\n', ans.lists)
    assert.is_nil(ans.log)
    ans = assert(call("slurm_nodes", { existing = ans.lists, job = "43", nodes = "beta2" }))
    assert.are.same({ ["42"] = "alpha1,beta1", ["43"] = "beta2" }, require("xsite.json").decode(ans.lists))
    ans = assert(call("slurm_nodes", { existing = ans.lists, job = "44", nodes = "" }))
    assert.matches("slurmd gave the epilog no node list of job 44: not kept", ans.log, 1, true)
    ans = assert(call("slurm_nodes", { existing = "[]x", job = "42", nodes = "alpha1" }))
    assert.are.equal('{"42":"alpha1"}\n', ans.lists)
    assert.matches("^slurm%-nodes%.json: not JSON .*: started anew$", ans.log)
    ok, err, code = call("slurm_nodes", { job = "x", nodes = "alpha1" })
    assert.is_nil(ok)
    assert.are.equal("invalid", code)
    assert.matches("is not a job id", err)
  end)

  it("answers every request with a code: no configuration, a bad value, a bug, an unknown function", function()
    local ans = xspank.handle("load", { path = dir .. "/none.conf" })
    assert.are.equal("config", ans.code)
    assert.matches("none.conf", ans.message)
    ans = xspank.handle("task_env", { host = "alpha1", nodelist = "alpha1" })
    assert.are.same({ code = "config", message = "no configuration loaded" }, ans)
    load()
    ans = xspank.handle("check_affinity", { value = "gamma" })
    assert.are.equal("invalid", ans.code)
    -- a request without its fields is the plugin's bug, answered, never raised
    ans = xspank.handle("step_end", {})
    assert.are.equal("string", type(ans.code))
    ans = xspank.handle("frobnicate", {})
    assert.are.same({ code = "internal", message = "xsite.spank has no function 'frobnicate'" }, ans)
    ans = xspank.handle("task_env", { host = "alpha1", nodelist = "alpha1" })
    assert.are.equal("ok", ans.code)
    assert.are.equal("alpha", ans.site)
  end)
end)
