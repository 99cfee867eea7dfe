local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local replay = require("xsite.replay")
local policy = require("xsite.policy")

-- Two sites of 3 nodes; `chatty` spans at a slowdown above 1.10, `quiet` below.
local function cfg()
  return h.two_sites(3, 3, table.concat({
    "ProfileName=quiet Ops=1e12 Bytes=1GB Exchange=1MB Steps=10 Pattern=tree",
    "ProfileName=chatty Ops=1e10 Bytes=1GB Exchange=10GB Steps=10000 Pattern=halo3d",
  }, "\n"))
end

local function line(id, nodes, elapsed, reserved, nodelist, comment, start, end_)
  return table.concat({ id, "alice", "COMPLETED", nodes, elapsed, reserved, nodelist, start or "Unknown",
    end_ or "Unknown", comment }, "\t")
end

-- The record the policy itself writes for a job.
local function record(c, req)
  req.cfg = c
  return policy.decide(req).record
end

describe("xsite.replay", function()
  it("asks sacct for the queue time by the name this Slurm gives it", function()
    -- sacct --helpformat of 22.05 lists Reserved, of 23.11 and later Planned
    assert.are.same(replay.FIELDS, replay.sacct_fields(nil))
    assert.are.same(replay.FIELDS, replay.sacct_fields("NodeList  Partition  QOS\nReserved  ReqCPUS\n"))
    local new = replay.sacct_fields("NodeList  Partition  Planned  PlannedCPU  QOS\n")
    assert.are.equal("Planned", new[6])
    assert.are.equal(#replay.FIELDS, #new)
    -- a field that only starts with the name is not it
    assert.are.equal("Reserved", replay.sacct_fields("PlannedCPU  PlannedCPURAW\n")[6])
  end)

  it("reads sacct's lines, the record from the admin comment even with the delimiter in it", function()
    local c = cfg()
    local rec = record(c, { nodes = 2, profile = "chatty" })
    local jobs = assert(replay.parse_sacct(line("7", "2", "00:10:00", "00:01:00", "a[1-2]", "keep; " .. rec) ..
      "\n" .. line("8", "1", "00:00:05", "00:00:00", "b1", "") .. "\n"))
    assert.are.equal(2, #jobs)
    assert.are.equal(600, jobs[1].elapsed)
    assert.are.equal("pin", jobs[1].record.action)
    assert.is_nil(jobs[2].record)
    local none, err = replay.parse_sacct("7\talice\tCOMPLETED\n")
    assert.is_nil(none)
    assert.matches("sacct line 1: 10 fields expected", err)
  end)

  it("reads sacct's time stamps, and none where sacct has none", function()
    local a, b = replay.timestamp("2026-11-25T22:10:03"), replay.timestamp("2026-11-25T23:10:04")
    assert.are.equal(3601, b - a)
    assert.is_nil(replay.timestamp("Unknown"))
    assert.is_nil(replay.timestamp("None"))
  end)

  it("holds the jobs that may span to the link's license: the peak, and who would have waited", function()
    local lic = { name = "xsite_link", count = 100 }
    local l = replay.link_load({
      { id = "1", start = 0, end_ = 100, units = 60 },
      { id = "2", start = 10, end_ = 50, units = 30 },
      -- 60 + 30 + 20 > 100: it would have waited
      { id = "3", start = 20, end_ = 40, units = 20 },
      -- starts as 2 ends: 60 + 40 fits
      { id = "4", start = 50, end_ = 60, units = 40 },
      { id = "5", units = 99 },
      -- no time at all, as sacct may say of a short job: still held
      { id = "6", start = 200, end_ = 200, units = 7 },
    }, lic)
    assert.are.same({ "3" }, l.over)
    assert.are.equal(110, l.peak)
    assert.are.equal(5, l.jobs)
    assert.is_true(math.abs(l.unit_hours - (6000 + 1200 + 400 + 400) / 3600) < 1e-9)
  end)

  it("replays the link's license over jobs that ran at once, in percent of the link without License=", function()
    local c = cfg()
    local quiet = record(c, { nodes = 2, profile = "quiet" })
    local chatty = record(c, { nodes = 2, profile = "chatty" })
    local jobs = assert(replay.parse_sacct(table.concat({
      line("1", "2", "01:00:00", "00:00:00", "a1,b1", quiet, "2026-11-25T10:00:00", "2026-11-25T11:00:00"),
      line("2", "2", "01:00:00", "00:00:00", "a[1-2]", chatty, "2026-11-25T10:30:00", "2026-11-25T11:30:00"),
      line("3", "2", "00:30:00", "00:00:00", "b[1-2]", chatty, "2026-11-25T10:45:00", "2026-11-25T11:15:00"),
    }, "\n")))
    -- as decided: only the quiet job spans, 1 unit
    local s = replay.run(c, jobs)
    assert.are.equal("(percent of the link)", s.link.license)
    assert.are.same({ 1, 1 }, { s.link.jobs, s.link.peak })
    assert.are.same({}, s.link.over)
    -- all three may span under a loose MaxSlowdown: a chatty job holds 77 %
    -- of the link, so the second chatty one would have waited
    local loose = replay.run(c, jobs, { max_slowdown = 100 })
    assert.are.same({ 3, 155 }, { loose.link.jobs, loose.link.peak })
    assert.are.same({ "3" }, loose.link.over)
    -- with the link's own license of 1000 units: the same, finer
    local lc = cfg()
    lc.link.license = { name = "xsite_link", count = 1000 }
    local fine = replay.run(lc, jobs, { max_slowdown = 100 })
    assert.are.same({ "xsite_link", 1000, 1 + 764 + 764 }, { fine.link.license, fine.link.count, fine.link.peak })
    assert.are.same({ "3" }, fine.link.over)
  end)

  it("tells what another MaxSlowdown changes, and what it costs and saves", function()
    local c = cfg()
    local pinned = record(c, { nodes = 2, profile = "chatty" })
    local spanned = record(c, { nodes = 2, profile = "quiet" })
    local user = record(c, { nodes = 2, profile = "chatty", affinity = "a" })
    local jobs = assert(replay.parse_sacct(table.concat({
      line("1", "2", "01:00:00", "02:00:00", "a[1-2]", pinned),
      line("2", "2", "01:00:00", "00:00:00", "a1,b1", spanned),
      line("3", "2", "01:00:00", "00:00:00", "a[1-2]", user),
      line("4", "2", "01:00:00", "00:00:00", "a[1-2]", ""),
    }, "\n")))
    local same = replay.run(c, jobs)
    assert.are.equal(2, same.replayed)
    assert.are.same({}, same.changed)

    local loose = replay.run(c, jobs, { max_slowdown = 100, spans = function(j) return j.nodelist == "a1,b1" end })
    assert.are.equal(1, #loose.changed)
    assert.are.same({ "1", "pin", "span" }, { loose.changed[1].id, loose.changed[1].before, loose.changed[1].after })
    assert.are.same({ span = 2 }, loose.after)
    assert.are.equal(1, loose.skipped["the user chose the placement (user-site)"])
    assert.are.equal(1, loose.skipped["no xsite record"])
    -- job 1 waited 2 h on 2 nodes pinned: at most 4 node-hours saved
    assert.are.equal(4, loose.queue_node_hours)
    -- job 1 ran 1 h at one site and would lose (slowdown - 1) of it on 2 nodes;
    -- job 2 ran 1 h across, so 1/slowdown of it at one site
    local s1 = policy.decide({ cfg = c, nodes = 2, profile = "chatty" }).prediction.slowdown
    local s2 = policy.decide({ cfg = c, nodes = 2, profile = "quiet" }).prediction.slowdown
    local want = 2 * 1 * (s1 - 1) + 2 * (1 / s2) * (s2 - 1)
    assert.is_true(math.abs(loose.node_hours_lost - want) < 1e-9)
  end)
end)
