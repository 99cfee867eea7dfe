local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local report = require("xsite.report")
local model = require("xsite.model")
local policy = require("xsite.policy")
local profile = require("xsite.profile")
local json = require("xsite.json")

local function cfg()
  return h.two_sites(2, 2, "ProfileName=halo Ops=1e10 Bytes=1GB Exchange=1GB Steps=100 Pattern=halo1d\n"
    .. "DefaultProfile=halo")
end

local function start(c, a)
  a = a or {}
  return report.step_start(c, { job = a.job or "42", step = a.step or "0", user = "alice", uid = "1001",
    job_nodes = a.nodes or "a[1-2],b[1-2]", step_nodes = a.step_nodes, profile = a.profile,
    start = a.start or 1000 }, a.state)
end

-- libxsite's traffic record (its version 1) for job 42.
local function traffic(bytes, messages, extra)
  local t = { version = 1, job = 42, step = 0, ranks = 2, sites = { a = { 0 }, b = { 1 } },
    cross = { bytes = bytes, messages = messages, p2p_bytes = bytes, p2p_messages = messages,
      coll_bytes = 0, coll_messages = 0 },
    matrix = { { 0, bytes }, { 0, 0 } } }
  for k, v in pairs(extra or {}) do t[k] = v end
  return json.encode(t)
end

local function ended(c, a, traffic_text, note, existing, finish)
  local rec = start(c, a)
  return report.step_end(json.encode(rec), finish or 1010, traffic_text, note, existing)
end

describe("xsite.report", function()
  it("records the placement and the model's prediction for the nodes the job got", function()
    local c = cfg()
    local rec = start(c, { nodes = "a1,b[1-2]" })
    assert.are.same({ 1, 2 }, { rec.nodes.split[1], rec.nodes.split[2] })
    assert.is_true(rec.spanning)
    local prof = profile.resolve("halo", c)
    local link = policy.effective_link(c, nil)
    local t_span, parts = model.t_span(c, prof, 1, 2, link)
    assert.are.equal(t_span, rec.prediction.t_span)
    assert.are.equal(model.t_one(c, prof, 3), rec.prediction.t_one)
    assert.are.equal(parts.crossing_bytes, rec.prediction.crossing_bytes)
    assert.are.equal("halo", rec.profile.label)
    assert.are.equal(1e-3, rec.link.latency)
    assert.are.equal("config", rec.link.source)
  end)

  it("uses the measured link of the link state", function()
    local rec = start(cfg(), { state = { state = "degraded", latency = 5e-3, bandwidth = 5e7 } })
    assert.are.equal(5e-3, rec.link.latency)
    assert.are.equal("degraded", rec.link.state)
    assert.are.equal("measured", rec.link.source)
  end)

  it("says why there is no prediction, and counts nodes outside the sites", function()
    local c = h.two_sites(2, 2)
    local rec = start(c, { nodes = "a1,x9" })
    assert.are.equal(json.null, rec.prediction)
    assert.are.equal(1, rec.nodes.outside)
    assert.is_false(rec.spanning)
    local all = table.concat(rec.notes, "; ")
    assert.matches("no prediction: no %-%-comm%-profile given", all)
    assert.matches("1 node%(s%) of the job are in no site", all)
  end)

  it("fails on a node list that does not parse", function()
    assert.has_error(function() start(cfg(), { nodes = "a[1-" }) end)
  end)

  it("adds the elapsed time and libxsite's traffic when the step ends", function()
    local rec, log = ended(cfg(), nil, traffic(5000, 10), nil, nil, 1012.5)
    assert.are.same({}, log)
    local s = rec.steps[1]
    assert.are.equal(12.5, s.elapsed)
    assert.are.equal(5000, s.mpi.cross_bytes)
    assert.are.equal(10, s.mpi.cross_messages)
    assert.are.equal(5000, s.mpi.matrix[1][2])
    assert.is_true(report.validate(rec))
  end)

  it("keeps the note when there is no traffic record", function()
    local rec = ended(cfg(), nil, nil, "no MPI traffic record (libxsite not loaded)")
    assert.are.equal(json.null, rec.steps[1].mpi)
    assert.are.same({ "no MPI traffic record (libxsite not loaded)" }, rec.steps[1].notes)
  end)

  for name, case in pairs({
    ["not JSON"] = { "{\"version\":", "not JSON" },
    ["another job's"] = { traffic(1, 1, { job = 7 }), "traffic record: job: 7, not this job %(42%)" },
    ["another version"] = { traffic(1, 1, { version = 2 }), "traffic record: version: not 1" },
    ["a negative count"] = { traffic(-5, 1), "traffic record: cross.bytes: not a count" },
    ["a short matrix"] = { traffic(1, 1, { matrix = { { 0 } } }), "traffic record: matrix: not ranks x ranks" },
  }) do
    it("ignores a traffic record that is " .. name .. ", and says why", function()
      local rec, log = ended(cfg(), nil, case[1])
      assert.are.equal(json.null, rec.steps[1].mpi)
      assert.matches("MPI traffic record ignored: .*" .. case[2], rec.steps[1].notes[1])
      assert.are.equal(1, #log)
      assert.matches("job 42 step 0", log[1])
    end)
  end

  it("adds steps to the job's record, and a step ended again replaces its entry", function()
    local c = cfg()
    local first = json.encode((ended(c, { step = "0" }, traffic(100, 1))))
    local second = json.encode((ended(c, { step = "batch", step_nodes = "a1" }, nil, "none", first)))
    local rec = assert(report.decode(second, "x"))
    assert.are.equal(2, #rec.steps)
    assert.are.equal("0", rec.steps[1].step)
    assert.are.equal("batch", rec.steps[2].step)
    assert.are.same({ 1, 0 }, { rec.steps[2].nodes.split[1], rec.steps[2].nodes.split[2] })
    local again = ended(c, { step = "0" }, traffic(300, 3), nil, second)
    assert.are.equal(2, #again.steps)
    assert.are.equal(300, again.steps[2].mpi.cross_bytes)
  end)

  it("replaces an unreadable record, and says so", function()
    local rec, log = ended(cfg(), nil, nil, nil, "{ broken")
    assert.are.equal(1, #rec.steps)
    assert.matches("previous record was unreadable and is replaced: report.json: not JSON", rec.notes[1])
    assert.matches("job 42: the previous record", log[1])
  end)

  it("names the field of a corrupt record", function()
    local good = json.encode((ended(cfg())))
    local cases = {
      { good:gsub('"schema":"xsite%-report"', '"schema":"other"'), "x: schema: not 'xsite%-report'" },
      { good:gsub('"version":1', '"version":9'), "x: version: 9, this xsite reads version 1" },
      { good:gsub('"job":"42"', '"job":"4x"'), "x: job: not a job id" },
      { good:gsub('"t_span":[%d.e+-]+', '"t_span":"slow"'), "x: prediction.t_span: not a number" },
      { good:gsub('"elapsed":[%d.e+-]+', '"elapsed":-1'), "x: steps%[1%]%.elapsed: not a number" },
      { "[1,2]", "x: schema" },
      { "", "x: not JSON" },
    }
    for _, case in ipairs(cases) do
      local rec, err = report.decode(case[1], "x")
      assert.is_nil(rec)
      assert.matches(case[2], err)
    end
  end)

  it("judges a job that stayed at one site", function()
    local rec = ended(cfg(), { nodes = "a[1-2]" }, traffic(0, 0))
    local a = report.assess(rec)
    assert.are.equal("ran at a only: nothing crossed the link", report.verdict(rec, a, 1.1))
    rec = ended(cfg(), { nodes = "b[1-2]" })
    assert.are.equal("ran at b only: the link was not used", report.verdict(rec, report.assess(rec), 1.1))
  end)

  it("judges a spanning job without a traffic record on its time only", function()
    local rec = ended(cfg())
    assert.matches("no MPI traffic record", report.verdict(rec, report.assess(rec), 1.1))
  end)

  it("says the profile needs updating when the traffic is off by more than 2x", function()
    local c = cfg()
    local predicted = start(c).prediction.crossing_bytes
    local rec = ended(c, nil, traffic(math.floor(predicted * 3), 10))
    local a = report.assess(rec)
    assert.is_near(3, a.traffic_ratio, 1e-6)
    assert.are.equal("model underestimated link traffic 3.0x: profile halo needs updating"
      .. " (xsite tune --profile halo)", report.verdict(rec, a, 1.1))
    rec = ended(c, nil, traffic(math.floor(predicted / 4), 10))
    assert.matches("^model overestimated link traffic 4%.0x", report.verdict(rec, report.assess(rec), 1.1))
  end)

  it("estimates what the link cost from the traffic, within or above MaxSlowdown", function()
    local c = cfg()
    local p = start(c).prediction
    local bytes = math.floor(p.crossing_bytes)
    -- link time: bytes / 2 / rate + steps x latency
    local link_time = bytes / 2 / 100e6 + 100 * 1e-3
    local rec = ended(c, nil, traffic(bytes, 10), nil, nil, 1000 + link_time * 21)
    local a = report.assess(rec)
    assert.is_near(link_time, a.link_time, 1e-9)
    assert.is_near(0.05, a.cost, 1e-6)
    assert.matches("^spanning cost 5 %% %(predicted %d+ %%%) — within policy %(MaxSlowdown 1%.10%)$",
      report.verdict(rec, a, 1.1))
    rec = ended(c, nil, traffic(bytes, 10), nil, nil, 1000 + link_time * 3)
    assert.matches("spanning cost 50 %% .*above MaxSlowdown 1%.10", report.verdict(rec, report.assess(rec), 1.1))
  end)

  it("shows a ratio far below one as a fraction", function()
    assert.are.equal("2.50x", report.ratio_text(2.5))
    assert.are.equal("0.25x", report.ratio_text(0.25))
    assert.are.equal("1/100 of", report.ratio_text(0.01))
    assert.are.equal("none of", report.ratio_text(0))
  end)

  it("reads the decision and the state from sacct, else from scontrol", function()
    local c = cfg()
    local d = policy.decide({ cfg = c, nodes = 4, profile = "halo" })
    local a = report.parse_accounting("42\talice\tCOMPLETED\t00:01:05\tnote; " .. d.record .. "\n", "sacct")
    assert.are.equal("COMPLETED", a.state)
    assert.are.equal(65, a.elapsed)
    assert.are.equal(d.action, a.record.action)
    local s = report.parse_accounting("JobId=42 JobName=x UserId=alice(1001) JobState=RUNNING RunTime=00:00:07"
      .. " AdminComment=" .. d.record .. " Comment=x\n", "scontrol")
    assert.are.equal("RUNNING", s.state)
    assert.are.equal(7, s.elapsed)
    assert.are.equal("alice", s.user)
    assert.are.equal(d.why, s.record.why)
    assert.is_nil(report.parse_accounting("", "sacct"))
    assert.is_nil(report.parse_accounting("slurm_load_jobs error: Invalid job id specified", "scontrol"))
  end)

  it("prints the report, its JSON and its picture", function()
    local c = cfg()
    local rec = ended(c, nil, traffic(5000, 10))
    local d = policy.parse_record(policy.decide({ cfg = c, nodes = 4, profile = "halo" }).record)
    local acct = { state = "COMPLETED", elapsed = 10, record = d }
    local text = report.text(rec, acct, 1.1)
    assert.matches("job 42 %(alice%), COMPLETED", text)
    assert.matches("decision:   " .. d.action, text)
    assert.matches("placement:  a:2 %+ b:2 nodes, across the link", text)
    assert.matches("verdict:    ", text)
    local j = assert(json.decode(report.json(rec, acct, 1.1)))
    assert.are.equal("42", j.record.job)
    assert.are.equal(d.action, j.decision.action)
    assert.are.equal(5000, j.assessment.cross_bytes)
    local svg = report.svg(rec, acct, 1.1)
    assert.matches("^<svg ", svg)
    assert.matches("</svg>\n$", svg)
    assert.matches("link latency", svg)
    assert.matches("decision:   unknown", report.text(rec, nil, 1.1))
  end)
end)
