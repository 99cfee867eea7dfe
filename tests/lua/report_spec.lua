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

  it("parses no --comm-profile from the job's environment longer than profile.MAX_TEXT", function()
    -- the value comes from the job's environment, past slurmctld's check
    local long = "op=1" .. string.rep(" ", 100000) .. "x "
    local rec = start(h.two_sites(2, 2), { profile = long })
    assert.are.equal(json.null, rec.prediction)
    assert.matches("no prediction: --comm-profile: 100006 characters, more than the 256 it may have",
      table.concat(rec.notes, "; "), 1, true)
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

  it("keeps the edges libxsite writes beyond XSITE_MATRIX_MAX ranks, and counts them as detail", function()
    local edges = { 0, 1, 5000, 1, 0, 7 }
    local rec, log = ended(cfg(), nil, traffic(5000, 10, { matrix = json.null, edges = edges }))
    assert.are.same({}, log)
    assert.are.same(edges, rec.steps[1].mpi.edges)
    assert.are.equal(json.null, rec.steps[1].mpi.matrix)
    assert.is_true(report.validate(rec))
    local max_detail = report.MAX_DETAIL
    report.MAX_DETAIL = 2 + 5 -- the sites' 2 ranks, and one number less than the record's edges
    local ok, err = pcall(function()
      rec = ended(cfg(), nil, traffic(5000, 10, { matrix = json.null, edges = edges }))
      assert.are.equal(json.null, rec.steps[1].mpi.edges)
      assert.are.same({ "per-rank detail (sites, matrix, edges) not kept: more than 7 numbers" }, rec.steps[1].notes)
    end)
    report.MAX_DETAIL = max_detail
    assert(ok, err)
  end)

  it("keeps the note when there is no traffic record", function()
    local rec = ended(cfg(), nil, nil, "no MPI traffic record (libxsite not loaded)")
    assert.are.equal(json.null, rec.steps[1].mpi)
    assert.are.same({ "no MPI traffic record (libxsite not loaded)" }, rec.steps[1].notes)
  end)

  -- the traffic record as text, with some of its fields replaced by raw JSON
  local function traffic_raw(fields)
    local t = json.decode(traffic(10, 2))
    local parts = {}
    for k, v in pairs(t) do
      parts[#parts + 1] = json.encode(k) .. ":" .. (fields[k] or json.encode(v))
    end
    for k, v in pairs(fields) do
      if t[k] == nil then parts[#parts + 1] = json.encode(k) .. ":" .. v end
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end

  for name, case in pairs({
    ["not JSON"] = { "{\"version\":", "not JSON" },
    ["another job's"] = { traffic(1, 1, { job = 7 }), "traffic record: job: 7, not this job %(42%)" },
    ["another version"] = { traffic(1, 1, { version = 2 }), "traffic record: version: not 1" },
    ["a negative count"] = { traffic(-5, 1), "traffic record: cross.bytes: not a count" },
    ["a short matrix"] = { traffic(1, 1, { matrix = { { 0 } } }), "traffic record: matrix: not ranks x ranks" },
    ["naming a site the configuration does not have"] = { traffic(1, 1, { sites = { a = { 0 }, zz = { 1 } } }),
      "traffic record: sites: 'zz' is not a site of the configuration %(a, b%)" },
    ["giving a rank twice"] = { traffic(1, 1, { sites = { a = { 0 }, b = { 0 } } }),
      "traffic record: sites%.%a: not distinct ranks" },
    ["listing a site's ranks out of order"] = { traffic(1, 1, { sites = { a = { 1, 0 } } }),
      "traffic record: sites%.a: ranks not in increasing order" },
    ["giving a rank twice at one site"] = { traffic(1, 1, { sites = { a = { 0, 0 } } }),
      "traffic record: sites%.a: ranks not in increasing order" },
    ["giving a rank past the last"] = { traffic(1, 1, { sites = { a = { 0 }, b = { 2 } } }),
      "traffic record: sites%.b: not distinct ranks from 0 to ranks %- 1" },
    ["with sites as a list"] = { traffic(1, 1, { sites = { { 0 }, { 1 } } }), "traffic record: sites: not an object" },
    ["with a matrix row that is an object"] = { traffic_raw({ matrix = '[{"1":0,"2":1},[0,0]]' }),
      "traffic record: matrix row 1: not ranks long" },
    ["with a negative byte count in the matrix"] = { traffic_raw({ matrix = "[[0,-1],[0,0]]" }),
      "traffic record: matrix row 1: not byte counts" },
    ["with a fraction of a byte in the matrix"] = { traffic_raw({ matrix = "[[0,0.5],[0,0]]" }),
      "traffic record: matrix row 1: not byte counts" },
    ["with both a matrix and edges"] = { traffic(1, 1, { edges = { 0, 1, 1 } }),
      "traffic record: edges: beside a matrix %(one or the other%)" },
    ["with an edge to a rank past the last"] = { traffic(1, 1, { matrix = json.null, edges = { 0, 1, 1, 0, 2, 1 } }),
      "traffic record: edges: triple 2 is not rank, rank, bytes" },
    ["with edges not in triples"] = { traffic(1, 1, { matrix = json.null, edges = { 0, 1, 1, 0, 1 } }),
      "traffic record: edges: not a list of i, j, bytes triples" },
    ["with a negative byte count in an edge"] = { traffic_raw({ matrix = "null", edges = "[0,1,-1]" }),
      "traffic record: edges: triple 1 is not rank, rank, bytes" },
    ["with an edge that is a list"] = { traffic_raw({ matrix = "null", edges = "[[0,1,1],1,1]" }),
      "traffic record: edges: triple 1 is not rank, rank, bytes" },
    ["with edges as an object"] = { traffic_raw({ matrix = "null", edges = '{"0":0,"1":1,"2":1}' }),
      "traffic record: edges: not a list of i, j, bytes triples" },
    ["with a fraction of a count"] = { traffic_raw({ cross = '{"bytes":1.5,"messages":1,"p2p_bytes":1.5,'
      .. '"p2p_messages":1,"coll_bytes":0,"coll_messages":0}' }), "traffic record: cross%.bytes: not a count" },
    ["with an infinite count"] = { traffic_raw({ cross = '{"bytes":1e999,"messages":1,"p2p_bytes":1e999,'
      .. '"p2p_messages":1,"coll_bytes":0,"coll_messages":0}' }), "traffic record: cross%.bytes: not a count" },
    ["with a count past 2^64"] = { traffic_raw({ cross = '{"bytes":1,"messages":1e300,"p2p_bytes":1,'
      .. '"p2p_messages":1e300,"coll_bytes":0,"coll_messages":0}' }), "traffic record: cross%.messages: not a count" },
    ["with a fraction of a rank"] = { traffic(1, 1, { ranks = 1.5, matrix = json.null }),
      "traffic record: ranks: not a count of ranks" },
    ["whose totals are not the sums of their parts"] = { traffic_raw({ cross = '{"bytes":5,"messages":1,'
      .. '"p2p_bytes":1,"p2p_messages":1,"coll_bytes":1,"coll_messages":0}' }),
      "traffic record: cross%.bytes: not the sum of p2p_bytes and coll_bytes" },
    ["with no ranks"] = { traffic(1, 1, { ranks = 0, matrix = json.null }),
      "traffic record: ranks: not a count of ranks" },
    ["nested deeper than a traffic record is"] = { traffic_raw({ extra = string.rep("[", 9) .. string.rep("]", 9) }),
      "not JSON %(offset %d+: nested too deep %(more than 8 levels%)%)" },
    ["holding a string longer than a name"] = { traffic_raw({ host = json.encode(string.rep("h", 257)) }),
      "not JSON %(offset %d+: string longer than 256 bytes%)" },
    ["a JSON list"] = { "[1,2,3]", "traffic record: not a JSON object" },
    ["binary junk"] = { "\0\255\27[2J\1", "not JSON %(offset 1: unexpected byte 0x00%)" },
    ["truncated"] = { traffic(1, 1):sub(1, 40), "not JSON %(offset %d+: unterminated string%)" },
  }) do
    it("ignores a traffic record (" .. name .. "), and says why", function()
      local rec, log = ended(cfg(), nil, case[1])
      assert.are.equal(json.null, rec.steps[1].mpi)
      assert.matches("MPI traffic record ignored: .*" .. case[2], rec.steps[1].notes[1])
      assert.are.equal(1, #log)
      assert.matches("job 42 step 0", log[1])
    end)
  end

  it("reads no traffic record over TrafficMaxSize, and says so in one line", function()
    local text = traffic(10, 2)
    local rec, log = report.step_end(json.encode(start(cfg())), 1010, text, nil, nil, { max_traffic = #text - 1 })
    assert.are.equal(json.null, rec.steps[1].mpi)
    assert.are.same({ string.format("MPI traffic record ignored: %d bytes, over TrafficMaxSize (%d bytes); not read",
      #text, #text - 1) }, rec.steps[1].notes)
    assert.are.equal(1, #log)
    rec = report.step_end(json.encode(start(cfg())), 1010, text, nil, nil, { max_traffic = #text })
    assert.are.equal(10, rec.steps[1].mpi.cross_bytes)
    -- the default is 1 MiB
    assert.are.equal(1048576, require("xsite.traffic").MAX_SIZE)
    rec = report.step_end(json.encode(start(cfg())), 1010, text .. string.rep(" ", 1048576), nil, nil)
    assert.matches("over TrafficMaxSize %(1048576 bytes%)", rec.steps[1].notes[1])
  end)

  it("reads no traffic record built to collide in Lua's string table, and says so in one line", function()
    -- 28000 distinct 32-byte keys that differ only in bytes Lua 5.1 to 5.3
    -- leave out of a long string's hash: decoding them took 8 s of root's
    -- CPU in slurmstepd on Lua 5.1, growing with the square of their number
    local keys = {}
    for i = 1, 28000 do
      local b = { string.rep("k", 32):byte(1, -1) }
      local v = i
      for pos = 1, 31, 2 do  -- a 32-byte string's hash reads bytes 2, 4, ..., 32
        b[pos] = 97 + v % 26
        v = math.floor(v / 26)
      end
      keys[i] = '"' .. string.char((unpack or table.unpack)(b)) .. '":0'
    end
    local text = "{" .. table.concat(keys, ",") .. "}"
    assert.is_true(#text < 1048576)
    local t0 = os.clock()
    local rec = report.step_end(json.encode(start(cfg())), 1010, text, nil, nil)
    assert.is_true(os.clock() - t0 < 1, "refused before any string of it is made")
    assert.are.equal(json.null, rec.steps[1].mpi)
    assert.matches("MPI traffic record ignored: not JSON %(more than 4096 strings of 32 bytes or more%)",
      rec.steps[1].notes[1])
    -- the same with numbers of 32 digits and an exponent, differing in
    -- every other digit (6.7 s of CPU on Lua 5.1): no number of a traffic
    -- record is longer than 31 characters
    local nums = {}
    for i = 1, 29000 do
      local d = { string.rep("1", 32):byte(1, -1) }
      local v, pos = i, 31
      while v > 0 do
        d[pos] = 48 + v % 10
        v, pos = math.floor(v / 10), pos - 2
      end
      nums[i] = string.char((unpack or table.unpack)(d)) .. "e0"
    end
    t0 = os.clock()
    rec = report.step_end(json.encode(start(cfg())), 1010, "[" .. table.concat(nums, ",") .. "]", nil, nil)
    assert.is_true(os.clock() - t0 < 1)
    assert.matches("MPI traffic record ignored: not JSON %(offset 2: a number longer than 31 characters%)",
      rec.steps[1].notes[1])
  end)

  it("makes a few dozen strings of a traffic record: its numbers and per_rank are read, not made", function()
    -- Lua 5.1 hashes a string with the same seed in every process: texts
    -- built offline to share a hash chain made one step's end cost 45 s of
    -- root's CPU (80000 keys of 8 bytes) or 18 s (80000 numbers of 13
    -- digits in the matrix); a decode now makes at most 4096 strings
    local n = 100
    local rows = {}
    for i = 1, n do
      local row = {}
      for j = 1, n do row[j] = i == j and 0 or 1000000000000 + i * 1000 + j end
      rows[i] = row
    end
    local sites = { a = {}, b = {} }
    for r = 0, n - 1 do table.insert(r < n / 2 and sites.a or sites.b, r) end
    local per_rank = {}
    for r = 0, n * 50 - 1 do
      per_rank[#per_rank + 1] = string.format('{"rank":%d,"site":"a","host":"node%05d","cross_bytes":%d}', r, r, r * 7)
    end
    local text = traffic(10, 2, { ranks = n, sites = sites, matrix = rows })
    text = text:sub(1, -2) .. ',"per_rank":[' .. table.concat(per_rank, ",") .. "]}"
    local rec = report.step_end(json.encode(start(cfg())), 1010, text, nil, nil)
    assert.are.same({}, rec.steps[1].notes)
    assert.are.equal(1000000000000 + 2 * 1000 + 1, rec.steps[1].mpi.matrix[2][1])
    -- 4097 distinct strings elsewhere: refused
    local keys = {}
    for k = 1, 4097 do keys[k] = string.format('"k%d":0', k) end
    rec = report.step_end(json.encode(start(cfg())), 1010, traffic(10, 2, {}):sub(1, -2) ..
      ',"pad":{' .. table.concat(keys, ",") .. "}}", nil, nil)
    assert.are.equal(json.null, rec.steps[1].mpi)
    assert.matches("^MPI traffic record ignored: not JSON %(offset %d+: more than 4096 strings and keys%)$",
      rec.steps[1].notes[1])
  end)

  it("shows what the user wrote escaped and cut short in notes and log lines", function()
    local rec, log = ended(cfg(), nil, traffic(1, 1, { version = "\27]0;owned\7\n" .. string.rep("v", 100) }))
    local note = rec.steps[1].notes[1]
    assert.matches("version: not 1 %(\\x1b%]0;owned\\x07\\x0avvv", note)
    assert.matches("%.%.%.%)$", note)
    assert.is_nil(note:find("[%c\128-\255]"))
    assert.is_nil(log[1]:find("[%c\128-\255]"))
    rec = ended(cfg(), nil, traffic(1, 1, { job = "4\n2" }))
    assert.matches("job: 4\\x0a2, not this job %(42%)", rec.steps[1].notes[1])
  end)

  it("escapes control characters, C1 and broken UTF-8, and keeps well-formed UTF-8 (xsite.text)", function()
    local printable = require("xsite.text").printable
    assert.are.equal("abc", printable("abc"))
    assert.are.equal("a\\x1b[31m\\x0a", printable("a\27[31m\n"))
    assert.are.equal("caf\195\169", printable("caf\195\169"))
    assert.are.equal("\\xc2\\x9b", printable("\194\155"))
    assert.are.equal("\\xed\\xa0\\x80", printable("\237\160\128"))
    -- U+2028 (a new line to some viewers), U+202E and U+2066 (they reorder
    -- what follows); U+2014 stays
    assert.are.equal("a\\xe2\\x80\\xa8b\\xe2\\x80\\xaec\\xe2\\x81\\xa6d\226\128\148",
      printable("a\226\128\168b\226\128\174c\226\129\166d\226\128\148"))
    assert.are.equal("\\xff", printable("\255"))
    assert.are.equal("a\\b", printable("a\\b"))
    assert.are.equal("a\\x1b", printable(printable("a\27")))
    assert.are.equal("xxxx...", printable("xxxxxxxx", 4))
    assert.are.equal("(an object)", printable({}))
    assert.are.equal("null", printable(json.null))
    assert.are.equal("12", printable(12.0))
  end)

  -- a step's end with a traffic record of at most 1 MiB, in fewer than 40
  -- million Lua VM instructions
  local function step_end_bounded(text)
    assert.is_true(#text <= 1048576, #text)
    local hook, mask, count = debug.gethook()
    local instructions = 0
    debug.sethook(function() instructions = instructions + 1000 end, "", 1000)
    local rec = report.step_end(json.encode(start(cfg())), 1010, text, nil, nil)
    debug.sethook(hook, mask, count)
    assert.is_true(instructions < 40e6, instructions .. " VM instructions")
    return rec
  end

  it("decodes and checks a 1 MiB traffic record with bounded work", function()
    -- the worst case for work: a matrix of zeros, as many numbers as fit
    local n = 720
    local row = "[" .. string.rep("0,", n - 1) .. "0]"
    local sites = {}
    for i = 0, n - 1 do sites[#sites + 1] = i end
    local text = traffic_raw({ ranks = tostring(n), matrix = "[" .. string.rep(row .. ",", n - 1) .. row .. "]",
      sites = json.encode({ a = sites }) })
    local rec = step_end_bounded(text)
    assert.are.equal(n, rec.steps[1].mpi.ranks)
  end)

  it("decodes and checks a 1 MiB traffic record of edges with bounded work", function()
    -- as many edges of one byte as fit in TrafficMaxSize
    local n, parts = 1000, {}
    for k = 0, 100000 do parts[#parts + 1] = string.format("%d,%d,1", k % n, (k * 7 + 1) % n) end
    local text = traffic_raw({ ranks = tostring(n), matrix = "null", sites = "null",
      edges = "[" .. table.concat(parts, ",") .. "]" })
    local rec = step_end_bounded(text)
    assert.are.equal(3 * 100001, #rec.steps[1].mpi.edges)
  end)

  it("writes a record's edges again in runs of numbers, not a string for each edge its writer chose", function()
    -- Lua 5.1 hashes a short string over all its bytes with a fixed seed:
    -- edges of one string each, chosen offline to share a hash chain, made
    -- each later step's end cost root time that grew with their square
    local n, parts = 1000, {}
    for k = 0, 20000 do parts[#parts + 1] = string.format("%d,%d,%d", k % n, (k * 7 + 1) % n, 100000 + k) end
    local text = traffic_raw({ ranks = tostring(n), matrix = "null", sites = "null",
      edges = "[" .. table.concat(parts, ",") .. "]" })
    local rec = report.step_end(json.encode(start(cfg())), 1010, text, nil, nil)
    local format, calls = string.format, 0
    string.format = function(...) calls = calls + 1 return format(...) end -- luacheck: ignore 122
    local ok, out = pcall(json.encode, rec)
    string.format = format -- luacheck: ignore 122
    assert(ok, out)
    assert.is_true(calls < 100, calls .. " strings formatted")
    local back = assert(report.decode(out, "x"))
    assert.are.same(rec.steps[1].mpi.edges, back.steps[1].mpi.edges)
  end)

  it("keeps a record bounded: steps past MAX_STEPS are counted, per-rank detail of one step", function()
    local c = cfg()
    local max_steps, max_detail = report.MAX_STEPS, report.MAX_DETAIL
    report.MAX_STEPS, report.MAX_DETAIL = 3, 11
    local three = { ranks = 3, sites = { a = { 0, 1 }, b = { 2 } }, matrix = { { 0, 0, 1 }, { 0, 0, 0 }, { 0, 0, 0 } } }
    local ok, err = pcall(function()
      local text = nil
      -- 2 ranks (2 + 4 numbers of detail), 3 ranks (3 + 9: past MAX_DETAIL),
      -- 2 ranks, 2 ranks, 2 ranks
      for i, extra in ipairs({ {}, three, {}, {}, {} }) do
        local rec, log = ended(c, { step = tostring(i) }, traffic(1, 1, extra), nil, text)
        if i > 3 then assert.matches("not recorded: the record holds 3 steps already", log[1]) end
        text = json.encode(rec)
      end
      local rec = assert(report.decode(text, "x"))
      assert.are.equal(3, #rec.steps)
      assert.are.equal(2, rec.steps_dropped)
      assert.are.equal(json.null, rec.steps[1].mpi.matrix)
      assert.are.equal(json.null, rec.steps[1].mpi.sites)
      assert.are.same(
        { "per-rank detail (sites, matrix, edges) not kept: a record keeps one step's, step 3's (2 ranks)" },
        rec.steps[1].notes)
      assert.are.same({ "per-rank detail (sites, matrix, edges) not kept: more than 11 numbers" }, rec.steps[2].notes)
      assert.are.equal(json.null, rec.steps[2].mpi.matrix)
      assert.are.equal(1, rec.steps[2].mpi.cross_bytes)
      assert.are.same({ { 0, 1 }, { 0, 0 } }, rec.steps[3].mpi.matrix)
      assert.matches("2 later step%(s%) not recorded", report.text(rec, nil, 1.1))
    end)
    report.MAX_STEPS, report.MAX_DETAIL = max_steps, max_detail
    assert(ok, err)
  end)

  it("keeps the per-rank detail of the step with the most ranks (the latest of those), whatever the steps", function()
    local c = cfg()
    local three = { ranks = 3, sites = { a = { 0, 1 }, b = { 2 } }, matrix = { { 0, 0, 7 }, { 0, 0, 0 }, { 0, 0, 0 } } }
    local text, size
    for i = 1, 40 do
      local rec = ended(c, { step = tostring(i) }, traffic(i, 1, i == 5 and three or nil), nil, text)
      text = json.encode(rec)
      -- past the first step with detail, each step adds its totals only
      if i == 6 then size = #text end
    end
    local rec = assert(report.decode(text, "x"))
    local held = {}
    for _, s in ipairs(rec.steps) do
      if s.mpi.matrix ~= json.null then held[#held + 1] = s.step end
    end
    assert.are.same({ "5" }, held)
    assert.are.same({ { 0, 0, 7 }, { 0, 0, 0 }, { 0, 0, 0 } }, rec.steps[5].mpi.matrix)
    assert.matches("a record keeps one step's, step 5's %(3 ranks%)", rec.steps[4].notes[1])
    assert.matches("a record keeps one step's, step 5's %(3 ranks%)", rec.steps[40].notes[1])
    -- read lean (xsite tune, which keeps many records): the same, without notes
    local lean = assert(report.decode(text, "x", true))
    assert.is_nil(lean.notes)
    for k, s in ipairs(lean.steps) do
      assert.is_nil(s.notes)
      s.notes = rec.steps[k].notes
    end
    lean.notes = rec.notes
    assert.are.same(rec, lean)
    assert.is_true(#text < size * 40 / 6, #text .. " bytes after 40 steps, " .. size .. " after 6")
    -- a later step as large takes its place
    rec = ended(c, { step = "41" }, traffic(1, 1, three), nil, text)
    assert.are.equal(json.null, rec.steps[5].mpi.matrix)
    assert.matches("step 41's %(3 ranks%)", rec.steps[5].notes[#rec.steps[5].notes])
    assert.are.same({ { 0, 0, 7 }, { 0, 0, 0 }, { 0, 0, 0 } }, rec.steps[41].mpi.matrix)
  end)

  it("prints no control character of a record's strings, in text or SVG", function()
    local c = cfg()
    local rec = ended(c, { profile = "halo" }, traffic(5000, 10))
    rec.user = "eve\27[2J"
    rec.profile.label = "p\n\27]0;x\7"
    rec.steps[1].notes[1] = "a\rnote\0"
    rec.steps[1].step = "0\n1"
    local acct = { state = "RUN\27NING", record = { action = "span\n", why = "w\8", slowdown = "1\0" } }
    local text = report.text(rec, acct, 1.1)
    assert.is_nil(text:gsub("\n", ""):find("%c"))
    assert.matches("eve\\x1b%[2J", text)
    local svg = report.svg(rec, acct, 1.1)
    assert.is_nil(svg:gsub("\n", ""):find("%c"))
    -- a crafted record with fractions where counts go does not stop the report (Lua 5.3: %d)
    rec.nodes.split[1], rec.steps[1].mpi.ranks, rec.steps[1].mpi.cross_messages = 1.5, 2.5, 1e300
    assert.matches("a:2 %+ b:2", report.text(rec, nil, 1.1))
  end)

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

  it("gives the job's share of the link, measured over its run and predicted, and the units it held", function()
    local c = cfg()
    local p = start(c).prediction
    local bytes = math.floor(p.crossing_bytes)
    -- 10 s: the bytes, half each way at 100 MB/s, took bytes / 2e8 s of it
    local rec = ended(c, nil, traffic(bytes, 10), nil, nil, 1010)
    local a = report.assess(rec)
    assert.is_near(bytes / 2 / 100e6 / 10, a.link_share, 1e-12)
    assert.is_near(p.crossing_bytes / 2 / 100e6 / p.t_span, a.predicted_link_share, 1e-12)
    local acct = { state = "COMPLETED", record = { action = "span", why = "within", lic = "7" } }
    assert.matches(string.format("\n  link share: %.1f %%%% of the link each way over the run, measured; " ..
      "%.1f %%%% predicted; it held 7 units of the link's license\n", 100 * a.link_share,
      100 * a.predicted_link_share), report.text(rec, acct, 1.1))
    -- no traffic record: no measured share, no line
    rec = ended(c, nil, nil, "no record", nil, 1010)
    assert.is_nil(report.assess(rec).link_share)
    assert.is_nil(report.text(rec, acct, 1.1):match("link share"))
  end)

  it("shows a ratio far below one as a fraction", function()
    assert.are.equal("2.50x", report.ratio_text(2.5))
    assert.are.equal("0.25x", report.ratio_text(0.25))
    assert.are.equal("1/100 of", report.ratio_text(0.01))
    assert.are.equal("none of", report.ratio_text(0))
  end)

  -- `scontrol show job -o` of Slurm 22.05, as the testbed prints it
  local function scontrol_line(f)
    return "JobId=42 JobName=" .. (f.name or "x") .. " UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A"
      .. " Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=" .. (f.state or "RUNNING")
      .. " Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0"
      .. " RunTime=00:00:07 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-11-24T21:15:17 Partition=all"
      .. " NodeList=a1 BatchHost=a1 NumNodes=1 NumCPUs=1 Features=(null) Command=" .. (f.command or "(null)")
      .. " WorkDir=" .. (f.workdir or "/home/alice")
      .. (f.admin and " AdminComment=" .. f.admin .. " " or "")
      .. (f.comment and " Comment=" .. f.comment .. " " or "")
      .. " StdErr=/home/alice/slurm-42.out StdIn=/dev/null StdOut=/home/alice/slurm-42.out Power= \n"
  end

  it("reads the decision and the state from sacct, else from scontrol", function()
    local c = cfg()
    local d = policy.decide({ cfg = c, nodes = 4, profile = "halo" })
    local a = report.parse_accounting("42\talice\tCOMPLETED\t00:01:05\t2026-11-26T01:00:00\tUnknown\ta[1-2]\t"
      .. "note; " .. d.record .. "\n", "sacct")
    assert.are.equal("COMPLETED", a.state)
    assert.are.equal(65, a.elapsed)
    assert.are.equal(os.time({ year = 2026, month = 11, day = 26, hour = 1, min = 0, sec = 0 }), a.start)
    assert.is_nil(a.finish)
    assert.are.equal("a[1-2]", a.nodes)
    assert.is_false(a.het)
    assert.are.equal(d.action, a.record.action)
    local s = report.parse_accounting(scontrol_line({ admin = d.record, comment = "x" }), "scontrol")
    assert.are.equal("RUNNING", s.state)
    assert.are.equal(7, s.elapsed)
    assert.are.equal("alice", s.user)
    assert.are.equal(d.why, s.record.why)
    assert.are.equal(d.action, s.record.action)
    assert.is_nil(s.note)
    assert.is_nil(report.parse_accounting("", "sacct"))
    assert.is_nil(report.parse_accounting("slurm_load_jobs error: Invalid job id specified", "scontrol"))
  end)

  it("believes no key of scontrol's line that a field of the user's repeats (JobName, Comment, WorkDir)", function()
    local c = cfg()
    local d = policy.decide({ cfg = c, nodes = 4, profile = "halo" })
    local fake = "xsite v=1 action=reject why=spoofed mode=enforce n=4"
    -- a job name holding a decision: before WorkDir, never taken
    local s = report.parse_accounting(scontrol_line({ name = "x AdminComment=" .. fake }), "scontrol")
    assert.is_nil(s.record)
    s = report.parse_accounting(scontrol_line({ name = "x AdminComment=" .. fake, admin = d.record }), "scontrol")
    assert.are.equal(d.why, s.record.why)
    assert.are_not.equal("spoofed", s.record.why)
    -- a job name holding a state, a user, a run time: the key is not believed
    s = report.parse_accounting(scontrol_line({ name = "x JobState=COMPLETED UserId=root(0) RunTime=9-00:00:00",
      admin = d.record }), "scontrol")
    assert.is_nil(s.state)
    assert.is_nil(s.user)
    assert.is_nil(s.elapsed)
    assert.matches("UserId, JobState, RunTime more than once", s.note)
    assert.are.equal(d.action, s.record.action)
    -- a comment (after the real AdminComment) holding another: neither is believed
    s = report.parse_accounting(scontrol_line({ admin = d.record, comment = "c AdminComment=" .. fake }), "scontrol")
    assert.is_nil(s.record)
    assert.matches("AdminComment more than once", s.note)
    assert.are.equal("RUNNING", s.state)
    -- a working directory holding WorkDir= and AdminComment=: nothing after it is believed
    s = report.parse_accounting(scontrol_line({ workdir = "/x WorkDir=/y AdminComment=" .. fake,
      admin = d.record }), "scontrol")
    assert.is_nil(s.record)
    assert.matches("WorkDir", s.note)
    -- keys out of scontrol's order
    s = report.parse_accounting("JobId=42 JobName=x RunTime=00:00:01 JobState=RUNNING UserId=a(1) WorkDir=/",
      "scontrol")
    assert.is_nil(s.state)
    assert.matches("not in scontrol's order", s.note)
    -- the note reaches the text, escaped; the decision is unknown
    local rec = ended(c)
    local text = report.text(rec, report.parse_accounting(scontrol_line({ name = "\27[2J JobState=X" }),
      "scontrol"), 1.1)
    assert.matches("decision:   unknown %(scontrol's line holds JobState more than once", text)
  end)

  it("reads Slurm's node list, and a heterogeneous component, from squeue and sacct", function()
    assert.are.same({ nodes = "a[1-2],b1", het = false }, report.parse_squeue("42 a[1-2],b1\n"))
    -- a heterogeneous job: a line a component
    assert.are.same({ nodes = "a1", het = true }, report.parse_squeue("42+0 a1\n42+1 b1\n"))
    -- no nodes yet, no such job (squeue prints nothing), junk
    assert.is_nil(report.parse_squeue("42 \n").nodes)
    assert.is_nil(report.parse_squeue("42 (null)\n").nodes)
    assert.is_nil(report.parse_squeue(""))
    assert.is_nil(report.parse_squeue(nil))
    assert.is_nil(report.parse_squeue("slurm_load_jobs error: Invalid job id specified"))
    -- sacct: a pending job has none; a component's id has its offset
    local a = report.parse_accounting("42\talice\tPENDING\t00:00:00\tUnknown\tUnknown\tNone assigned\t\n", "sacct")
    assert.is_nil(a.nodes)
    a = report.parse_accounting("42+1\talice\tCOMPLETED\t00:00:01\tUnknown\tUnknown\tb1\t\n", "sacct")
    assert.is_true(a.het)
    assert.are.equal("b1", a.nodes)
  end)

  it("says where Slurm's placement is not the record's, and gives no verdict then", function()
    local c = cfg()
    -- the job got a1 and b1; its step said a1 (SLURM_JOB_NODELIST=a1 srun -w a1)
    local rec = ended(c, { nodes = "a1" })
    assert.is_false(rec.spanning)
    local acct = { state = "COMPLETED", elapsed = 10, nodes = "a1,b1" }
    acct.slurm_nodes = report.slurm_placement(c, rec, acct)
    assert.are.same({ 1, 1 }, { acct.slurm_nodes.split[1], acct.slurm_nodes.split[2] })
    local text = report.text(rec, acct, 1.1)
    assert.matches("placement:  a:1 %+ b:0 nodes\n  Slurm gave: a:1 %+ b:1 nodes: the job's steps took other nodes",
      text)
    assert.matches("verdict:    none: the record's placement is not the one Slurm gave the job", text)
    local j = assert(json.decode(report.json(rec, acct, 1.1)))
    assert.are.same({ 1, 1 }, j.assessment.slurm_nodes.split)
    assert.matches("^none:", j.verdict)
    -- the same nodes, in another order or form: no word of it
    for _, same in ipairs({ "a1", "a[1]" }) do
      assert.is_nil(report.slurm_placement(c, rec, { nodes = same }))
    end
    -- nothing to compare: no node list, a heterogeneous job's component, a list of no site's nodes counted apart
    assert.is_nil(report.slurm_placement(c, rec, { state = "PENDING" }))
    assert.is_nil(report.slurm_placement(c, rec, { nodes = "a1,b1", het = true }))
    assert.is_nil(report.slurm_placement(c, rec, nil))
    assert.are.equal(1, report.slurm_placement(c, rec, { nodes = "a1,zz9" }).outside)
    assert.matches("verdict:    ran at a only", report.text(rec, { nodes = "a1" }, 1.1))
  end)

  it("keeps Slurm's node list of each component, and believes it before squeue's and sacct's", function()
    local c = cfg()
    -- the job got a1 and b1; its step said a1
    local rec = ended(c, { nodes = "a1" })
    local lists, log = report.add_slurm_nodes(nil, "42", "a1,b1")
    assert.is_nil(log)
    assert.are.same({ ["42"] = "a1,b1" }, lists)
    rec.slurm_nodes = assert(report.decode_slurm_nodes(json.encode(lists), "x"))
    local slurm = report.slurm_placement(c, rec, nil)
    assert.are.same({ 1, 1 }, { slurm.split[1], slurm.split[2] })
    -- Slurm's list wins over squeue's word
    assert.are.same({ 1, 1 }, report.slurm_placement(c, rec, { nodes = "a1" }).split)
    -- a heterogeneous job: one list per component, beside the leader's record, each node once
    rec = ended(c, { nodes = "a1,b1" })
    local function add(job, nodes)
      rec.slurm_nodes = assert(report.add_slurm_nodes(rec.slurm_nodes and json.encode(rec.slurm_nodes), job, nodes))
    end
    add("42", "a1")
    assert.are.same({ 1, 0 }, report.slurm_placement(c, rec, nil).split)
    add("43", "b1")
    assert.is_nil(report.slurm_placement(c, rec, { nodes = "a1", het = true }))
    add("44", "b1,a1")
    assert.is_nil(report.slurm_placement(c, rec, nil))
    add("45", "b2")
    assert.are.same({ 1, 2 }, report.slurm_placement(c, rec, nil).split)
    -- again for the same component: the same entry
    add("45", "b2")
    local n = 0
    for _ in pairs(rec.slurm_nodes) do n = n + 1 end
    assert.are.equal(4, n)
  end)

  it("joins a component's lists (the nodes a running job gave up, then the rest), each list once", function()
    local c = cfg()
    local lists = assert(report.add_slurm_nodes(nil, "42", "b1"))
    lists = assert(report.add_slurm_nodes(json.encode(lists), "42", "a1"))
    assert.are.same({ ["42"] = "b1,a1" }, lists)
    for _, again in ipairs({ "b1", "a1", "b1,a1" }) do
      local same, log = report.add_slurm_nodes(json.encode(lists), "42", again)
      assert.is_nil(log)
      assert.are.same({ ["42"] = "b1,a1" }, same)
    end
    lists = assert(report.add_slurm_nodes(json.encode(lists), "42", "a[1-2]"))
    assert.are.same({ ["42"] = "b1,a1,a[1-2]" }, lists)
    -- each node once: a1 and a2 at a, b1 at b
    local rec = ended(c, { nodes = "a1,b1" })
    rec.slurm_nodes = lists
    assert.are.same({ 2, 1 }, report.slurm_placement(c, rec, nil).split)
    -- bounded: a list that would make the component's too long leaves its
    -- entry empty (not known whole: nothing is compared), and it stays so
    local long = string.rep("a", report.MAX_SLURM_NODES - 10)
    lists = assert(report.add_slurm_nodes(nil, "42", long))
    local kept, log = report.add_slurm_nodes(json.encode(lists), "42", "b1,b2,b3,b4")
    assert.is_true(kept["42"] == "")
    assert.matches("would have more than 65536 characters with b1,b2,b3,b4: not kept (the job's entry left empty",
      log, 1, true)
    kept, log = report.add_slurm_nodes(json.encode(kept), "42", "a1")
    assert.is_true(kept["42"] == "")
    assert.is_nil(log)
    rec.slurm_nodes = { ["42"] = "a1", ["43"] = "" }
    local slurm, err = report.slurm_placement(c, rec, nil)
    assert.is_nil(slurm)
    assert.are.equal("Slurm's node list of job 43 was not kept whole", err)
  end)

  it("takes Slurm's lists that cannot be counted for a placement it cannot compare, not for agreement", function()
    local c = cfg()
    local rec = ended(c, { nodes = "a1,b1" })
    rec.slurm_nodes = { ["42"] = "a[1-2" }
    local slurm, err = report.slurm_placement(c, rec, nil)
    assert.is_nil(slurm)
    assert.matches("^Slurm's node lists of the job cannot be counted: ", err)
    -- the report then gives no verdict on the steps' word
    local acct = { state = "COMPLETED", elapsed = 10, unchecked = err }
    local text = report.text(rec, acct, 1.1)
    assert.matches("\n  Slurm gave: not compared: Slurm's node lists of the job cannot be counted: ", text)
    assert.matches("\n  verdict:    none: the record's placement could not be checked against Slurm's %(", text)
    local j = assert(json.decode(report.json(rec, acct, 1.1)))
    assert.matches("^Slurm's node lists", j.assessment.unchecked)
    assert.matches("^none:", j.verdict)
  end)

  it("keeps Slurm's node lists bounded, and refuses a file that holds others", function()
    -- a list not kept leaves the component's entry empty: not known whole
    local lists, log = report.add_slurm_nodes(nil, "42", "")
    assert.are.same({ ["42"] = "" }, lists)
    assert.matches("no node list", log)
    lists, log = report.add_slurm_nodes('{"41":"a1"}', "42", string.rep("a", report.MAX_SLURM_NODES + 1))
    assert.are.same({ ["41"] = "a1", ["42"] = "" }, lists)
    assert.matches("more than the 65536 kept", log)
    local full = {}
    for i = 1, report.MAX_SLURM_LISTS do full[tostring(1000 + i)] = "a1" end
    lists, log = report.add_slurm_nodes(json.encode(full), "42", "a1")
    assert.is_nil(lists["42"])
    assert.matches("128 node lists kept already", log)
    assert.is_nil(report.add_slurm_nodes(nil, "x42", "a1"))
    -- lists so far that do not decode (root's own file): started anew, said so
    for _, bad in ipairs({ "{", '"a1"', '{"x":"a1"}', '{"42":7}', '{"42":{"a":"b"}}', "[1]" }) do
      local anew, err = report.add_slurm_nodes(bad, "42", "a1")
      assert.are.same({ ["42"] = "a1" }, anew, bad)
      assert.matches("^slurm%-nodes%.json: .*: started anew$", err)
    end
    local anew, err = report.add_slurm_nodes("{", "42", "")
    assert.are.same({ ["42"] = "" }, anew)
    assert.matches("started anew; slurm-nodes.json: slurmd gave the epilog no node list of job 42: not kept", err, 1,
      true)
    full["42"] = "a1"
    assert.matches("more than 128 lists", select(2, report.decode_slurm_nodes(json.encode(full), "f")))
  end)

  it("reads Slurm's node lists beside a record only from a file it may trust", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -m 0755 " .. dir))
    local rec = ended(cfg(), { nodes = "a1" })
    assert.is_true(report.read_slurm_nodes(rec, dir))
    assert.is_nil(rec.slurm_nodes)
    local f = assert(io.open(dir .. "/" .. report.SLURM_FILE, "w"))
    f:write('{"42":"a1,b1"}\n')
    f:close()
    assert(os.execute("chmod 0644 " .. dir .. "/" .. report.SLURM_FILE))
    assert.is_true(report.read_slurm_nodes(rec, dir))
    assert.are.same({ ["42"] = "a1,b1" }, rec.slurm_nodes)
    rec.slurm_nodes = nil
    assert(os.execute("chmod 0666 " .. dir .. "/" .. report.SLURM_FILE))
    local ok, err = report.read_slurm_nodes(rec, dir)
    assert.is_nil(ok)
    assert.matches("writable by group or others", err)
    assert.is_nil(rec.slurm_nodes)
    os.execute("rm -rf " .. dir)
  end)

  it("prints the report, its JSON and its picture", function()
    local c = cfg()
    local rec = ended(c, nil, traffic(5000, 10))
    local d = require("xsite.record").parse(policy.decide({ cfg = c, nodes = 4, profile = "halo" }).record)
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

  it("gives the prediction's expected error for the job's pattern and link latency, from a fidelity run", function()
    local c = cfg()
    local rec = ended(c, nil, traffic(5000, 10))
    local run = { time = 1795000000, cases = {
      { name = "halo-32K", pattern = "halo1d", latency = c.link.latency, predicted = 1.1, measured = 1.0 },
      { name = "tree-8B", pattern = "tree", latency = c.link.latency, predicted = 1.0, measured = 2.0 },
    } }
    local ex = assert(report.expected_error(rec, run))
    assert.are.equal("halo1d", ex.pattern)
    h.near(0.1, ex.error, "halo1d's case")
    assert.matches("\n              expected error about \194\17710 %% %(the fidelity run of [^)]*: 1 halo1d case at ",
      report.text(rec, nil, 1.1, ex))
    assert.matches("expected error unknown %(no fidelity run%)", report.text(rec, nil, 1.1))
    local j = assert(json.decode(report.json(rec, nil, 1.1, ex)))
    h.near(0.1, j.expected_error.error, "JSON")
    assert.are.equal(json.null, json.decode(report.json(rec, nil, 1.1)).expected_error)
    -- a record without a prediction, or with a link latency that is no
    -- latency (a record handed to --report-dir may be anyone's): none
    assert.is_nil(report.expected_error(rec, nil))
    for _, bad in ipairs({ 0, -1, "1ms", json.null }) do
      local r = ended(c, nil, traffic(5000, 10))
      r.link.latency = bad
      assert.is_nil(report.expected_error(r, run))
    end
    local r = ended(c, nil, traffic(5000, 10))
    r.profile.pattern = "\27[2J"
    ex = assert(report.expected_error(r, run))
    assert.is_nil(ex.pattern)
    assert.is_nil(report.text(r, nil, 1.1, ex):find("\27", 1, true))
  end)

  it("draws the measured bar from what was measured only: the elapsed time, the bytes across", function()
    -- a profile of 100000 synchronising steps at 1 ms predicts 100 s of link
    -- latency; the job ran 2 s, and what crossed takes 1 s at the link's rate
    local c = h.two_sites(2, 2, "ProfileName=chatty Ops=1e10 Bytes=1GB Exchange=1GB Steps=100000 Pattern=halo1d\n"
      .. "DefaultProfile=chatty")
    local bw = c.link.bandwidth * c.link.channels
    local rec = ended(c, nil, traffic(2 * bw, 10), nil, nil, 1002)
    local a = report.assess(rec, nil)
    assert.are.equal(2, a.elapsed)
    assert.is_true(a.link_time > 100)
    assert.are.equal(1, a.link_bytes_time)
    local svg = report.svg(rec, nil, 1.1)
    local measured = svg:match('>measured</text>.-<text[^>]*>([^<]*)</text>')
    assert.are.equal("2.00 s: the rest of the elapsed time 1.00 s, the bytes that crossed, at the link's rate 1.00 s",
      measured)
    -- more bytes than the elapsed time can hold: the bar stays the elapsed time
    rec = ended(c, nil, traffic(10 * bw, 10), nil, nil, 1002)
    measured = report.svg(rec, nil, 1.1):match('>measured</text>.-<text[^>]*>([^<]*)</text>')
    assert.matches("^2%.00 s: the rest of the elapsed time 0%.0 us, "
      .. "the bytes that crossed, at the link's rate 2%.00 s$", measured)
  end)
end)

describe("xsite.report.overlaps", function()
  local function job(id, from, to, rec)
    return { id = id, start = from, end_ = to, record = rec }
  end
  local span = { action = "span", lic = "39" }

  it("names the other spanning jobs that ran meanwhile, the longest overlap first", function()
    local jobs = {
      job("10", 100, 200, span),                 -- this job
      job("11", 50, 150, span),                  -- 50 s with it
      job("12", 120, nil, { action = "span" }),  -- still running: to now; no license
      job("13", 150, 300, { action = "pin" }),   -- pinned: not on the link
      job("14", 200, 300, span),                 -- started as it ended
      job("15", 10, 20, span),                   -- before it
      job("16", 110, 190, nil),                  -- no record
    }
    local ov = report.overlaps("10", 100, 200, jobs, 250)
    assert.are.same({ { id = "12", seconds = 80 }, { id = "11", units = 39, seconds = 50 } }, ov)
  end)

  it("says so in the text, with the units each held, and in the JSON", function()
    local c = cfg()
    local rec = ended(c, nil, nil, nil, nil, 1010)
    local ov = { { id = "12", seconds = 80 }, { id = "11", units = 39, seconds = 50 } }
    local text = report.text(rec, { state = "COMPLETED", overlaps = ov }, 1.1)
    assert.matches("\n  on the link: 2 other spanning jobs ran while it did: 12 %(80 s%), 11 %(50 s, 39 units%)\n",
      text)
    assert.are.same(ov, json.decode(report.json(rec, { state = "COMPLETED", overlaps = ov }, 1.1)).overlaps)
    text = report.text(rec, { state = "COMPLETED", overlaps = {} }, 1.1)
    assert.matches("\n  on the link: no other spanning job ran while it did %(as accounting shows you%)\n", text)
    -- a job at one site: no such line
    rec = ended(c, { nodes = "a[1-2]" }, nil, nil, nil, 1010)
    assert.is_nil(report.text(rec, { state = "COMPLETED", overlaps = ov }, 1.1):match("on the link"))
  end)
end)
