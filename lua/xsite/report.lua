--- Per-job cross-site reports: what the model predicted for a job, what
-- happened, and whether crossing the link was worth it.
--
-- The SPANK plugin writes one record per job (`ReportDir/JOBID/report.json`,
-- schema below, docs/report.md) and adds each step to it when the step
-- ends: `step_start` on the step's first node when its tasks start (the
-- placement, the prediction for the nodes the job got, the link in force),
-- `step_end` when they have ended (elapsed time, the MPI traffic that
-- libxsite recorded).  `xsite report` reads the record back (`decode`),
-- joins the decision Slurm keeps in the job's AdminComment, and judges
-- (`assess`, `verdict`).
--
-- Record, version 1 (every time in seconds, every size in bytes):
--
--     { "schema": "xsite-report", "version": 1,
--       "job": "42", "user": "alice", "uid": 1001,
--       "sites": ["alpha", "beta"],            -- xsite.conf order
--       "nodes": { "total": 4, "split": [2, 2], "outside": 0 },
--       "spanning": true,
--       "profile": { "label": "medium", "ops": …, "bytes": …, "exchange": …,
--                    "steps": …, "pattern": "halo2d" } | null,
--       "link": { "state": "up", "latency": 0.001, "bandwidth": 1.25e8,
--                 "channels": 1, "source": "config" },
--       "prediction": { "t_one": …, "t_span": …, "slowdown": …,
--                       "crossing_bytes": …, "sync_steps": …,
--                       "parts": { "compute": …, "network": …, "link": …,
--                                  "latency": … } } | null,
--       "steps": [ { "step": "0", "nodes": { "total": 4, "split": [2, 2] },
--                    "start": 1795000000.5, "finish": …, "elapsed": …,
--                    "mpi": { "ranks": 8, "cross_bytes": …, "cross_messages": …,
--                             "p2p_bytes": …, "coll_bytes": …,
--                             "sites": { "alpha": [0, 1, 2, 3], … },
--                             "matrix": [[…], …] | null,
--                             "edges": [i, j, bytes, …] | null } | null,
--                    "notes": [ … ] } ],
--       "steps_dropped": 0,                    -- steps past MAX_STEPS, not kept
--       "notes": [ … ] }
--
-- `nodes`, `spanning` and each step's `nodes` are what the steps read from
-- their environment (SLURM_JOB_NODELIST, SLURM_STEP_NODELIST), which the
-- job's owner can set for a step.  Slurm's word is beside the record, in
-- `ReportDir/JOBID/slurm-nodes.json` (`SLURM_FILE`): once the job has
-- ended, slurmd's epilog (root, in an environment slurmd builds) adds the
-- node list slurmctld gave each of the job's components, by job id
-- (`{ "42": "alpha[1-2],beta[1-2]" }`; one per component of a heterogeneous
-- job, all beside the leader's record) (`add_slurm_nodes`).  Readers attach
-- it to the record as `slurm_nodes` (`read_slurm_nodes`), and
-- `slurm_placement` compares.  (A file of its own: the epilog writes a few
-- bytes, not the whole record again, and the record stays what the steps
-- wrote, which their --xsite-report copies are checked against.)
--
-- Root builds the record from text the job's owner wrote (the traffic
-- record, in a directory of theirs): that text is read only up to
-- TrafficMaxSize (xsite.conf, default 1 MiB), decoded under tight limits
-- (xsite.traffic), checked field by field against libxsite's schema and
-- the configured sites, and every string of it that reaches a log, a note or
-- a terminal goes through xsite.text.printable.  The record itself stays bounded:
-- at most `M.MAX_STEPS` steps, and the per-rank detail of one step (at most
-- `M.MAX_DETAIL` numbers).
-- @module xsite.report

local json = require("xsite.json")
local safe = require("xsite.text")
local xtraffic = require("xsite.traffic")
local hostlist = require("xsite.hostlist")
local model = require("xsite.model")
local profile = require("xsite.profile")
local policy = require("xsite.policy")
local record = require("xsite.record")
local units = require("xsite.units")
local replay = require("xsite.replay")
local fs = require("xsite.fs")
local mapping = require("xsite.mapping")
local shell = require("xsite.shell")

local M = {}

M.SCHEMA = "xsite-report"
M.VERSION = 1
--- The name of the record in a job's directory of ReportDir.
M.FILE = "report.json"

--- The largest record read back (as XSITE_MAX_RECORD of spank/report.h).
M.MAX_RECORD = 64 * 1048576
--- How a record is decoded (root's own file, but made of users' data).
M.RECORD_JSON = { max_depth = 16, max_string = 65536 }
--- How `decode` reads a record without its notes (`lean`): their text
-- holds what users wrote, and Lua 5.1 hashes strings with a fixed seed, so
-- notes built to share a hash chain, kept from many records at once, cost
-- each new one a walk of all the others (20 records of 1000 steps: 7 s).
M.RECORD_JSON_LEAN = { max_depth = 16, max_string = 65536, skip = { notes = true } }
--- The most steps one record keeps (later steps are counted in steps_dropped).
M.MAX_STEPS = 1000
--- Slurm's node lists of a job, beside its record: the file's name, the
-- most components it keeps (Slurm's MAX_HET_JOB_COMPONENTS), the longest
-- list it keeps (a longer one is left out, and the slurmd log says so), the
-- most bytes it may have (as XSITE_MAX_SLURM_NODES of spank/report.h), and
-- how it is decoded.
M.SLURM_FILE = "slurm-nodes.json"
M.MAX_SLURM_LISTS = 128
M.MAX_SLURM_NODES = 65536
M.MAX_SLURM_FILE = 9 * 1048576
M.SLURM_JSON = { max_depth = 1, max_string = M.MAX_SLURM_NODES }

--- The most numbers of per-rank detail (a traffic matrix or its edges, and
-- the sites' rank lists) a step keeps; a step past it keeps its totals only.
M.MAX_DETAIL = 1048576

local function is_num(v) return type(v) == "number" and v == v and v >= 0 and v < math.huge end
-- A field that is there: neither absent nor JSON null.
local present = json.present

local printable = safe.printable

local whole = safe.whole

-- Nodes of a host list per site of the configuration (the list is never
-- expanded: it comes from the step's environment); with `unique`, a node
-- named twice counts once (xsite.hostlist.site_counts).
-- @return { total, split = { nA, nB }, outside }, or nil and a message
local function place(cfg, nodelist, unique)
  local split, total, outside = hostlist.site_counts(nodelist, cfg, unique)
  if not split then return nil, total end
  return { total = total, split = json.array(split), outside = outside }
end
M.place = place

local function profile_fields(p)
  local app = model.app(p, 1)
  return { label = profile.label(p), source = p.measured and "measured" or "config", ops = app.ops, bytes = app.bytes,
    exchange = p.template and json.null or app.exchange, steps = app.steps,
    pattern = app.pattern, template = p.template or json.null, size = p.size or json.null }
end

--- The prediction for a job of nA nodes at the first site and nB at the
-- second: t_one for all its nodes at one site, t_span for the split it got
-- (equal when it did not span).
function M.predict(cfg, prof, nA, nB, link)
  local n = nA + nB
  local t_one = model.t_one(cfg, prof, n)
  local t_span, parts = model.t_span(cfg, prof, nA, nB, link)
  local app = model.app(prof, n)
  return { t_one = t_one, t_span = t_span, slowdown = t_span / t_one,
    crossing_bytes = parts.crossing_bytes or 0, sync_steps = app.steps,
    parts = { compute = parts.compute, network = parts.network, link = parts.link or 0,
      latency = parts.latency } }
end

--- The record of a step whose tasks start now, with the job's placement
-- and prediction.
-- @param cfg the configuration
-- @param a { job, step, user, uid, job_nodes, step_nodes, profile (the
--   --comm-profile value, may be nil), start (epoch seconds) }
-- @param state the link state (xsite.state.load_link), or nil
-- @param tuned the profile state (xsite.state.load_profiles), or nil
-- @return the record (a table)
function M.step_start(cfg, a, state, tuned)
  local notes = json.array({})
  local nodes, err = place(cfg, a.job_nodes)
  if not nodes then error("SLURM_JOB_NODELIST: " .. err, 0) end
  local step_nodes = a.step_nodes and a.step_nodes ~= "" and place(cfg, a.step_nodes) or nodes
  local link = policy.effective_link(cfg, state)
  local rec = {
    schema = M.SCHEMA, version = M.VERSION, job = a.job, user = a.user, uid = tonumber(a.uid),
    sites = json.array({ cfg.sites[1].name, cfg.sites[2].name }),
    nodes = nodes, spanning = nodes.split[1] > 0 and nodes.split[2] > 0,
    link = { state = link.state, latency = link.latency, bandwidth = link.bandwidth,
      channels = link.channels or 1, source = link.source },
    profile = json.null, prediction = json.null, notes = notes,
  }
  if nodes.outside > 0 then
    notes[#notes + 1] = string.format("%d node(s) of the job are in no site of %s", nodes.outside, cfg.file)
  end
  local prof, perr = profile.resolve(a.profile, cfg, tuned)
  if prof then
    rec.profile = profile_fields(prof)
    if nodes.split[1] + nodes.split[2] > 0 then
      rec.prediction = M.predict(cfg, prof, nodes.split[1], nodes.split[2], link)
    end
  else
    local given = type(a.profile) == "string" and a.profile ~= ""
    notes[#notes + 1] = "no prediction: " .. (given and "--comm-profile: " or "") .. printable(perr, 300)
  end
  rec.steps = json.array({ { step = a.step, nodes = step_nodes, start = a.start,
    mpi = json.null, notes = json.array({}) } })
  return rec
end

local function check(cond, field, msg)
  if not cond then error({ report = field .. ": " .. msg }, 0) end
end

--- Check a record's shape (what `xsite report` and `xsite tune` rely on).
-- @return true, or nil and "field: message"
function M.validate(rec)
  local ok, e = pcall(function()
    check(type(rec) == "table", "record", "not a JSON object")
    check(rec.schema == M.SCHEMA, "schema", "not '" .. M.SCHEMA .. "'")
    check(rec.version == M.VERSION, "version", string.format("%s, this xsite reads version %d",
      tostring(rec.version), M.VERSION))
    check(type(rec.job) == "string" and rec.job:match("^%d+$"), "job", "not a job id")
    check(type(rec.sites) == "table" and #rec.sites == 2, "sites", "not two site names")
    check(type(rec.nodes) == "table" and type(rec.nodes.split) == "table" and #rec.nodes.split == 2
      and is_num(rec.nodes.split[1]) and is_num(rec.nodes.split[2]), "nodes.split", "not two counts")
    check(type(rec.link) == "table" and is_num(rec.link.latency) and is_num(rec.link.bandwidth),
      "link", "latency and bandwidth missing")
    if present(rec.prediction) then
      for _, k in ipairs({ "t_one", "t_span", "slowdown", "crossing_bytes" }) do
        check(is_num(rec.prediction[k]), "prediction." .. k, "not a number")
      end
    end
    check(type(rec.steps) == "table", "steps", "not a list")
    for i, s in ipairs(rec.steps) do
      check(type(s) == "table" and type(s.step) == "string", "steps[" .. i .. "].step", "missing")
      check(s.elapsed == nil or is_num(s.elapsed), "steps[" .. i .. "].elapsed", "not a number")
    end
  end)
  if ok then return true end
  return nil, type(e) == "table" and e.report or tostring(e)
end

--- Decode a record.
-- @param text the file's text
-- @param source its name, for messages
-- @param lean optional: leave out the notes (of the job and of each step),
--   for a reader that keeps many records and shows no notes
-- @return the record, or nil and "SOURCE: message"
function M.decode(text, source, lean)
  local rec, err = json.decode(text, lean and M.RECORD_JSON_LEAN or M.RECORD_JSON)
  if rec == nil then return nil, string.format("%s: not JSON (%s)", source, err) end
  local ok, verr = M.validate(rec)
  if not ok then return nil, string.format("%s: %s", source, verr) end
  return rec
end

-- The numbers of per-rank detail a step's MPI part holds.
local function detail_of(mpi)
  if not present(mpi) then return 0 end
  local n = 0
  if type(mpi.sites) == "table" then
    for _, list in pairs(mpi.sites) do n = n + (type(list) == "table" and #list or 0) end
  end
  if type(mpi.matrix) == "table" then n = n + #mpi.matrix * #mpi.matrix end
  if type(mpi.edges) == "table" then n = n + #mpi.edges end
  return n
end

-- A step's per-rank detail (sites, matrix or edges) taken out, with a note why.
local function drop_detail(step, why)
  step.mpi.sites, step.mpi.matrix, step.mpi.edges = json.null, json.null, json.null
  step.notes[#step.notes + 1] = "per-rank detail (sites, matrix, edges) not kept: " .. why
end

-- The record keeps the per-rank detail of one step: of those that hold it
-- (`holders`, in order, then the step that ended, `new`, when it has
-- some), the one with the most ranks, the latest of those with as many.
-- Every step's end reads the whole record back and writes it again: with
-- one step's detail, that costs what one traffic record does
-- (TrafficMaxSize), however many steps the job runs.
local function keep_one_detail(holders, new)
  if new then holders[#holders + 1] = new end
  local best
  for i, s in ipairs(holders) do
    if not best or (tonumber(s.mpi.ranks) or 0) >= (tonumber(holders[best].mpi.ranks) or 0) then best = i end
  end
  for i, s in ipairs(holders) do
    if i ~= best then
      local b = holders[best]
      drop_detail(s, string.format("a record keeps one step's, step %s's (%s ranks)", tostring(b.step),
        tostring(b.mpi.ranks)))
    end
  end
end

--- The job's record with a step that has ended.
-- @param start the step's record from `step_start`, as JSON text
-- @param finish epoch seconds
-- @param traffic libxsite's traffic record (text), or nil
-- @param traffic_note why there is no traffic record, or nil
-- @param existing the job's record so far (text), or nil
-- @param opts optional: `max_traffic` (TrafficMaxSize, bytes; default
--   xsite.traffic.MAX_SIZE): a longer traffic record is not read
-- @return the job's record (a table), and an array of things to log
function M.step_end(start, finish, traffic, traffic_note, existing, opts)
  local log = {}
  local rec = assert(M.decode(start, "step record"))
  local step = rec.steps[1]
  step.finish = finish
  step.elapsed = math.max(0, finish - (step.start or finish))
  local function ignored(why)
    step.notes[#step.notes + 1] = "MPI traffic record ignored: " .. why
    log[#log + 1] = string.format("job %s step %s: MPI traffic record ignored: %s", rec.job, step.step, why)
  end
  if traffic and traffic ~= "" then
    local m, why = xtraffic.decode(traffic, { job = rec.job, sites = rec.sites,
      max_size = opts and opts.max_traffic })
    if m then step.mpi = m else ignored(why) end
  elseif traffic_note then
    step.notes[#step.notes + 1] = traffic_note
  end
  local detail = present(step.mpi) and step.mpi.detail or 0
  if present(step.mpi) then step.mpi.detail = nil end
  if detail > M.MAX_DETAIL then
    drop_detail(step, string.format("more than %d numbers", M.MAX_DETAIL))
    detail = 0
  end
  local out = rec
  if existing and existing ~= "" then
    local old, err = M.decode(existing, M.FILE)
    if old and old.job == rec.job then
      local kept, replaced, holders = json.array({}), false, {}
      for _, s in ipairs(old.steps) do
        if s.step ~= step.step then
          kept[#kept + 1] = s
          if detail_of(s.mpi) > 0 then holders[#holders + 1] = s end
        else
          replaced = true
        end
      end
      if #kept >= M.MAX_STEPS and not replaced then
        old.steps_dropped = (tonumber(old.steps_dropped) or 0) + 1
        log[#log + 1] = string.format("job %s step %s: not recorded: the record holds %d steps already",
          rec.job, step.step, M.MAX_STEPS)
        return old, log
      end
      keep_one_detail(holders, detail > 0 and step or nil)
      kept[#kept + 1] = step
      old.steps = kept
      return old, log
    end
    local why = old and "another job's record" or err
    rec.notes[#rec.notes + 1] = "the previous record was unreadable and is replaced: " .. why
    log[#log + 1] = string.format("job %s: the previous record was unreadable and is replaced: %s", rec.job, why)
  end
  return out, log
end

--- Decode Slurm's node lists of a job (`SLURM_FILE`): an object of job ids
-- to node lists, at most `MAX_SLURM_LISTS` of them.
-- @param text the file's text
-- @param source its name, for messages
-- @return the lists (a table), or nil and "SOURCE: message"
function M.decode_slurm_nodes(text, source)
  local t, err = json.decode(text or "", M.SLURM_JSON)
  if t == nil then return nil, string.format("%s: not JSON (%s)", source, err) end
  if type(t) ~= "table" or #t > 0 then return nil, source .. ": not an object" end
  local n = 0
  for k, v in pairs(t) do
    n = n + 1
    if type(k) ~= "string" or not k:match("^%d+$") or type(v) ~= "string" then
      return nil, source .. ": not job ids to node lists"
    end
  end
  if n > M.MAX_SLURM_LISTS then return nil, string.format("%s: more than %d lists", source, M.MAX_SLURM_LISTS) end
  return t
end

--- Slurm's node lists of a job with one more component's, as slurmd's
-- epilog had it (root, on the first node of the list it was given).  A
-- component's list that is there already is joined with the new one, not
-- replaced: slurmd runs the epilog also on the nodes a running job gives
-- up (`scontrol update JobId=J NodeList=...`: the list is those nodes
-- only), and the job then ends on the rest.  Readers count each node once.
-- @param existing the lists so far (`SLURM_FILE`'s text), or nil
-- @param job the component's job id (the job's own for a job that is not
--   heterogeneous)
-- @param nodes its node list (SLURM_NODELIST of the epilog's environment)
-- @return the lists (a table), and a message to log or nil (lists so far
--   that cannot be read, root's own file, are started anew, and said so);
--   or nil and a message for a job id that is not one
function M.add_slurm_nodes(existing, job, nodes)
  if type(job) ~= "string" or not job:match("^%d+$") then
    return nil, "slurm_nodes: '" .. printable(job, 32) .. "' is not a job id"
  end
  local list = {}
  if existing then
    local err
    list, err = M.decode_slurm_nodes(existing, M.SLURM_FILE)
    if not list then
      local lists, log = M.add_slurm_nodes(nil, job, nodes)
      return lists, err .. ": started anew" .. (log and "; " .. log or "")
    end
  end
  local had = list[job]
  if had == nil then
    local n = 0
    for _ in pairs(list) do n = n + 1 end
    if n >= M.MAX_SLURM_LISTS then
      return list, string.format("%s: %d node lists kept already: job %s's not kept", M.SLURM_FILE, n, job)
    end
  end
  -- a list that cannot be kept leaves the component's entry empty (`""`):
  -- its nodes are not known whole, and readers compare nothing
  local why
  if type(nodes) ~= "string" or nodes == "" then
    why = string.format("slurmd gave the epilog no node list of job %s", job)
  elseif #nodes > M.MAX_SLURM_NODES then
    why = string.format("job %s: Slurm's node list has %d characters, more than the %d kept", job, #nodes,
      M.MAX_SLURM_NODES)
  elseif had and (had == "" or ("," .. had .. ","):find("," .. nodes .. ",", 1, true)) then
    -- not known whole already, or this list is in it
    return list
  elseif had and #had + 1 + #nodes > M.MAX_SLURM_NODES then
    why = string.format("job %s: its node lists would have more than %d characters with %s", job,
      M.MAX_SLURM_NODES, printable(nodes, 60))
  elseif had then
    nodes = had .. "," .. nodes
  end
  if why then
    list[job] = ""
    return list, string.format("%s: %s: not kept (the job's entry left empty: not compared)", M.SLURM_FILE, why)
  end
  list[job] = nodes
  return list
end

--- Read Slurm's node lists beside a record (`SLURM_FILE` in the job's
-- directory) into it, as `rec.slurm_nodes`, when the file is there and may
-- be trusted (xsite.fs.check: a regular file of root's or this user's in a
-- directory nobody else may write, at most `MAX_SLURM_FILE` bytes).
-- @param rec the record (changed)
-- @param dir the job's directory
-- @return true, or nil and a message (the file is there and not believed)
function M.read_slurm_nodes(rec, dir)
  local path = dir .. "/" .. M.SLURM_FILE
  local text, err, missing = fs.read_trusted(path, { max = M.MAX_SLURM_FILE })
  if not text then
    if missing then return true end
    return nil, err
  end
  local lists, derr = M.decode_slurm_nodes(text, path)
  if not lists then return nil, derr end
  rec.slurm_nodes = lists
  return true
end

--- Slurm's placement of the job (its node list, per site) where it is not
-- the record's.  The record has it from the job's steps, which read
-- SLURM_JOB_NODELIST from an environment the job's owner can change (an
-- srun of `SLURM_JOB_NODELIST=a1 srun -w a1` in a job on a1 and b1 makes a
-- record of a job at one site).  Slurm's word is `rec.slurm_nodes`
-- (`read_slurm_nodes`: every component's list, each node once: a
-- heterogeneous job's steps name all its components' nodes), once the job
-- has ended; before that, or without them, squeue's or sacct's list
-- (`acct`), which for a heterogeneous job is one component's: not compared.
-- @param cfg the configuration
-- @param rec a record
-- @param acct from `parse_accounting`, its `nodes` and `het` from
--   `parse_squeue` while slurmctld holds the job; or nil
-- @return { total, split, outside }, or nil when they agree or nothing is
--   known to compare; or nil and a message when Slurm's lists cannot be
--   counted (not to be taken as agreeing)
function M.slurm_placement(cfg, rec, acct)
  local slurm, err
  if type(rec.slurm_nodes) == "table" and next(rec.slurm_nodes) ~= nil then
    local lists = {}
    for k, v in pairs(rec.slurm_nodes) do
      if v == "" then return nil, string.format("Slurm's node list of job %s was not kept whole", k) end
      lists[#lists + 1] = v
    end
    slurm, err = place(cfg, table.concat(lists, ","), true)
    if not slurm then return nil, "Slurm's node lists of the job cannot be counted: " .. err end
  elseif acct and acct.nodes and not acct.het then
    slurm = place(cfg, acct.nodes)
  end
  local mine = rec.nodes
  if not slurm or (slurm.split[1] == mine.split[1] and slurm.split[2] == mine.split[2]
      and slurm.outside == mine.outside) then
    return nil
  end
  return slurm
end

--- What a record says once its steps are summed up.
-- @param rec a record
-- @param acct optional { elapsed = seconds, state, record = the parsed
--   AdminComment (xsite.policy.parse_record), slurm_nodes (`slurm_placement`),
--   unchecked (why Slurm's node lists could not be compared) } from accounting
-- @return { elapsed, slurm_nodes and unchecked (acct's), mpi_steps, cross_bytes,
--   cross_messages, predicted_bytes, traffic_ratio, link_bytes_time (the
--   measured bytes across at the link's rate), link_time (that and a
--   latency per synchronising step of the profile), cost, predicted_cost,
--   link_share and predicted_link_share (the part of the link's capacity,
--   each way, the job used over its run, measured and predicted) }
function M.assess(rec, acct)
  local a = { mpi_steps = 0, cross_bytes = 0, cross_messages = 0, slurm_nodes = acct and acct.slurm_nodes,
    unchecked = acct and acct.unchecked }
  local first, last, sum = nil, nil, 0
  for _, s in ipairs(rec.steps) do
    if s.start and (not first or s.start < first) then first = s.start end
    if s.finish and (not last or s.finish > last) then last = s.finish end
    sum = sum + (s.elapsed or 0)
    if present(s.mpi) then
      a.mpi_steps = a.mpi_steps + 1
      a.cross_bytes = a.cross_bytes + s.mpi.cross_bytes
      a.cross_messages = a.cross_messages + s.mpi.cross_messages
    end
  end
  -- the steps' own clocks (milliseconds) before accounting's (seconds)
  a.elapsed = (first and last and last - first) or (acct and acct.elapsed) or sum
  local p = present(rec.prediction) and rec.prediction or nil
  if p then
    a.predicted_bytes = p.crossing_bytes
    a.predicted_cost = p.slowdown - 1
    if rec.spanning and a.mpi_steps > 0 and p.crossing_bytes > 0 then
      a.traffic_ratio = a.cross_bytes / p.crossing_bytes
    end
  end
  if rec.spanning and a.mpi_steps > 0 then
    -- what the link cost, from what crossed it: the bytes at the link's rate
    -- (half in each direction), plus one one-way latency per synchronising
    -- step of the profile (the messages that crossed overlap too much to
    -- count one latency each)
    local l = rec.link
    local rate = (l.channels or 1) * l.bandwidth
    local steps = p and p.sync_steps or 0
    -- the part of it that is measured: the bytes that crossed, at the
    -- link's rate (the latency term counts the profile's steps, a model)
    a.link_bytes_time = a.cross_bytes / 2 / rate
    a.link_time = a.link_bytes_time + steps * l.latency
    -- the job's share of the link, each way, over its run (what its
    -- licenses stand for: docs/model.md, "The link is shared")
    if a.elapsed > 0 then a.link_share = a.link_bytes_time / a.elapsed end
    if p and is_num(p.crossing_bytes) and is_num(p.t_span) and p.t_span > 0 then
      a.predicted_link_share = p.crossing_bytes / 2 / rate / p.t_span
    end
    local rest = a.elapsed - a.link_time
    if rest > 0 then a.cost = a.link_time / rest end
  end
  return a
end

-- A node list Slurm printed, or nil for none ("None assigned", "(null)",
-- nothing).
local function node_list(text)
  return text:find("^[%w%-%_%.%[%],]+$") and text or nil
end

--- The sacct fields `xsite report` asks for, in this order (AdminComment last).
M.SACCT_FIELDS = { "JobID", "User", "State", "Elapsed", "Start", "End", "NodeList", "AdminComment" }

--- The most other spanning jobs a report names (the count says the rest).
M.MAX_OVERLAPS = 8

--- The other spanning jobs that ran while this one did: jobs whose record
-- lets them span (action=span) and whose run overlaps [start, finish].
-- @param id this job's id (left out)
-- @param start, finish this job's start and end (seconds)
-- @param jobs xsite.replay.parse_sacct's jobs (a job still running: no end,
--   counted to `now`)
-- @return array of { id, units (its license units, or nil), seconds (of
--   overlap) }, the longest first
function M.overlaps(id, start, finish, jobs, now)
  local out = {}
  for _, j in ipairs(jobs) do
    local r = j.record
    if j.id ~= id and r and r.action == "span" and j.start then
      local a, b = math.max(start, j.start), math.min(finish, j.end_ or now)
      if b > a then
        out[#out + 1] = { id = j.id, units = tonumber(r.lic), seconds = b - a }
      end
    end
  end
  table.sort(out, function(x, y)
    if x.seconds ~= y.seconds then return x.seconds > y.seconds end
    return x.id < y.id
  end)
  return out
end

--- What accounting says of a job: sacct's parsable line (M.SACCT_FIELDS,
-- tab-separated, -X), or `scontrol show job -o` when there is no accounting.
--
-- scontrol's one line is `Key=Value` words in a fixed order whose values may
-- hold blanks, and several of them are the user's to choose (JobName,
-- Command, WorkDir, Comment, StdOut, ...): a job named
-- "x JobState=COMPLETED AdminComment=xsite v=1 action=span" puts those words
-- in the line too.  So a key is only believed when it occurs exactly once
-- (UserId, JobState, RunTime and WorkDir are always printed: a second one is
-- the user's), in scontrol's order; AdminComment, printed after WorkDir and
-- only when set, is looked for after that WorkDir only and must occur there
-- at most once.  A line that breaks a rule gives no value for that key, and
-- a `note` says why.  What remains: for a job without an AdminComment, a
-- WorkDir, Comment or StdOut holding " AdminComment=xsite ..." cannot be
-- told from a real one (cli.lua asks sacct first, whose line is unambiguous).
-- sacct's line has no such problem: the fields are tab-separated, the user's
-- own fields are not asked for, and AdminComment comes last.
-- @param text the command's output
-- @param kind "sacct" or "scontrol"
-- @return { user, state, elapsed, start, finish, nodes and het (sacct
--   only: seconds, nil while unknown; the job's node list, nil while it has
--   none; whether it is a heterogeneous job's component), record (parsed
--   AdminComment or nil), note (why a value was not believed, or nil) }, or
--   nil
function M.parse_accounting(text, kind)
  if kind == "sacct" then
    local line = (text or ""):match("[^\n]+")
    if not line then return nil end
    local f = {}
    for v in (line .. "\t"):gmatch("([^\t]*)\t") do f[#f + 1] = v end
    if #f < #M.SACCT_FIELDS then return nil end
    local comment = table.concat(f, "\t", #M.SACCT_FIELDS)
    return { user = f[2], state = f[3], elapsed = units.slurm_duration(f[4]),
      start = replay.timestamp(f[5]), finish = replay.timestamp(f[6]),
      nodes = node_list(f[7]),
      het = f[1]:find("+", 1, true) ~= nil,
      record = (record.parse(comment)) }
  end
  local line
  for l in (text or ""):gmatch("[^\n]+") do
    if l:find("^JobId=%d") then line = l break end
  end
  if not line then return nil end
  -- where "Key=" starts a word of the line
  local function at(key)
    local out, init = {}, 1
    while true do
      local s = line:find(key .. "=", init, true)
      if not s then return out end
      if s == 1 or line:sub(s - 1, s - 1) == " " then out[#out + 1] = s end
      init = s + 1
    end
  end
  local pos, bad = {}, {}
  for _, key in ipairs({ "UserId", "JobState", "RunTime", "WorkDir" }) do
    local p = at(key)
    if #p == 1 then pos[key] = p[1] else bad[#bad + 1] = key end
  end
  local order = { "UserId", "JobState", "RunTime", "WorkDir" }
  for i = 2, #order do
    local a, b = pos[order[i - 1]], pos[order[i]]
    if a and b and a > b then
      return { note = "scontrol's line is not in scontrol's order: nothing in it is believed" }
    end
  end
  local function value(key, pattern)
    local p = pos[key]
    return p and line:match(pattern, p + #key + 1) or nil
  end
  local out = { user = value("UserId", "^([^%(%s]+)"), state = value("JobState", "^(%S+)"),
    elapsed = units.slurm_duration(value("RunTime", "^(%S+)")) }
  -- AdminComment: only after the one WorkDir (one before it is in a field
  -- of the user's, such as JobName or Command)
  local ac = {}
  for _, p in ipairs(at("AdminComment")) do
    if pos.WorkDir and p > pos.WorkDir then ac[#ac + 1] = p end
  end
  if #ac > 1 then
    bad[#bad + 1] = "AdminComment"
  elseif #ac == 1 then
    -- scontrol ends the value with a blank, then starts the next key with one
    local v = line:match("^(.-)  ", ac[1] + #"AdminComment=") or line:sub(ac[1] + #"AdminComment=")
    out.record = (record.parse(v))
  end
  if #bad > 0 then
    out.note = string.format("scontrol's line holds %s more than once or out of place (a field the job's"
      .. " owner sets, such as JobName, repeats it): not believed", table.concat(bad, ", "))
  end
  if not out.state and not out.user then return out.note and out or nil end
  return out
end

--- Slurm's node list of a job from `squeue -h -t all -j ID -o '%i %N'`
-- (M.SQUEUE_FORMAT: two fields that hold no blank, so nothing of the
-- user's can pose as them), for as long as slurmctld holds the job.
-- @return { nodes (nil while it has none), het (a heterogeneous job: a line
--   per component, "ID+OFFSET") }, or nil when squeue does not show it
function M.parse_squeue(text)
  local id, nodes = (text or ""):match("^(%S+) (%S*)\n")
  if not id then return nil end
  return { nodes = node_list(nodes), het = id:find("+", 1, true) ~= nil }
end
M.SQUEUE_FORMAT = "%i %N"

local function pct(x) return string.format("%.0f %%", x * 100) end

--- A ratio of measured to predicted for people: "2.50x", or "1/3052 of" when
-- far below one (0.00x would say nothing).
function M.ratio_text(r)
  if r >= 0.1 then return string.format("%.2fx", r) end
  if r <= 0 then return "none of" end
  return string.format("1/%.0f of", 1 / r)
end

--- The verdict in one line.
-- @param rec a record
-- @param a from `assess`
-- @param max_slowdown the policy's MaxSlowdown
function M.verdict(rec, a, max_slowdown)
  local label = present(rec.profile) and printable(rec.profile.label, 64) or nil
  if a.slurm_nodes then
    return "none: the record's placement is not the one Slurm gave the job (its steps' SLURM_JOB_NODELIST "
      .. "was not the job's)"
  end
  if a.unchecked then
    return "none: the record's placement could not be checked against Slurm's (" .. printable(a.unchecked, 120)
      .. ")"
  end
  if not rec.spanning then
    local where = printable(rec.nodes.split[1] > 0 and rec.sites[1] or rec.sites[2], 64)
    if a.mpi_steps > 0 and a.cross_bytes == 0 then
      return string.format("ran at %s only: nothing crossed the link", where)
    end
    return string.format("ran at %s only: the link was not used", where)
  end
  if a.mpi_steps == 0 then
    return "spanned both sites; no MPI traffic record (libxsite not loaded): only the time is measured"
  end
  if a.traffic_ratio and (a.traffic_ratio > 2 or a.traffic_ratio < 0.5) then
    local how = a.traffic_ratio > 1 and "underestimated" or "overestimated"
    local r = a.traffic_ratio > 1 and a.traffic_ratio or 1 / a.traffic_ratio
    return string.format("model %s link traffic %.1fx: profile %s needs updating (xsite tune --profile %s)",
      how, r, label or "?", label or "?")
  end
  if not a.cost then
    return "spanned both sites; the job was too short to judge the link's cost"
  end
  local within = 1 + a.cost <= max_slowdown
  return string.format("spanning cost %s%s — %s", pct(a.cost),
    a.predicted_cost and string.format(" (predicted %s)", pct(a.predicted_cost)) or "",
    within and string.format("within policy (MaxSlowdown %.2f)", max_slowdown)
      or string.format("above MaxSlowdown %.2f: this job would run faster at one site", max_slowdown))
end

local function si(v, unit)
  local prefixes = { { 1e12, "T" }, { 1e9, "G" }, { 1e6, "M" }, { 1e3, "k" } }
  for _, p in ipairs(prefixes) do
    if math.abs(v) >= p[1] then return string.format("%.3g %s%s", v / p[1], p[2], unit) end
  end
  return string.format("%.3g %s", v, unit)
end
M.si = si

local function seconds(v)
  if v >= 1 then return string.format("%.2f s", v) end
  if v >= 1e-3 then return string.format("%.2f ms", v * 1e3) end
  return string.format("%.1f us", v * 1e6)
end

--- The prediction's expected error for a record's job: its profile's
-- pattern at its link's latency, from a fidelity run (model.expected_error).
-- @param rec a record
-- @param run the fidelity run (xsite.state.load_fidelity), or nil
-- @return the expected error, or nil (no run, no prediction)
function M.expected_error(rec, run)
  local prof, link = rec.profile, rec.link
  if not run or not present(rec.prediction) or not present(prof) or type(prof.pattern) ~= "string"
      or type(link) ~= "table" or not is_num(link.latency) or link.latency <= 0 then
    return nil
  end
  return model.expected_error(run, prof.pattern, link.latency)
end

--- The report as text lines.  Every string from the record or from
-- accounting goes through `M.printable`: the record holds what the job's
-- owner chose (a profile, a traffic record's names), and a record handed to
-- `xsite report --report-dir` may be anyone's.
-- @param rec a record
-- @param acct as for `assess`, may be nil
-- @param max_slowdown the policy's MaxSlowdown
-- @param ex the prediction's expected error (`M.expected_error`), or nil
-- @return the text
function M.text(rec, acct, max_slowdown, ex)
  local a = M.assess(rec, acct)
  local P = printable
  local L = {}
  local function add(...) L[#L + 1] = string.format(...) end
  local function split(nodes)
    local sp = type(nodes) == "table" and type(nodes.split) == "table" and nodes.split or {}
    return string.format("%s:%s + %s:%s nodes", P(rec.sites[1], 64), whole(sp[1]), P(rec.sites[2], 64),
      whole(sp[2]))
  end
  add("job %s (%s)%s", P(rec.job, 32), P(rec.user or ("uid " .. whole(rec.uid)), 64),
    acct and acct.state and ", " .. P(acct.state, 32) or "")
  local d = acct and present(acct.record) and acct.record
  if d then
    add("  decision:   %s (%s)%s", P(d.action or "?", 32), P(d.why or "?", 64),
      d.slowdown and ", predicted slowdown " .. P(d.slowdown, 32) .. " at submission" or "")
  elseif acct and acct.note then
    add("  decision:   unknown (%s)", P(acct.note, 200))
  else
    add("  decision:   unknown (no AdminComment record from accounting or slurmctld)")
  end
  add("  placement:  %s%s", split(rec.nodes), rec.spanning and ", across the link" or "")
  if a.slurm_nodes then
    add("  Slurm gave: %s: the job's steps took other nodes from their environment (SLURM_JOB_NODELIST, "
      .. "which the job's owner can set)", split(a.slurm_nodes))
  elseif a.unchecked then
    add("  Slurm gave: not compared: %s", P(a.unchecked, 200))
  end
  local l = rec.link
  add("  link:       %s, %s one way, %s/s x %s (%s)", P(l.state, 32), seconds(l.latency), si(l.bandwidth, "B"),
    whole(l.channels or 1), P(l.source, 32))
  local p = rec.prediction
  if present(p) then
    add("  profile:    %s", P(present(rec.profile) and rec.profile.label or "?"))
    add("  predicted:  t_one %s, t_span %s, slowdown %.2fx; %s across the link", seconds(p.t_one),
      seconds(p.t_span), p.slowdown, si(p.crossing_bytes, "B"))
    add("              expected error %s", ex and P(model.error_text(ex, rec.profile.pattern), 300) or
      "unknown (no fidelity run)")
  else
    add("  predicted:  nothing (no profile)")
  end
  add("  measured:   elapsed %s; %d step(s), %d with an MPI traffic record", seconds(a.elapsed), #rec.steps,
    a.mpi_steps)
  if a.mpi_steps > 0 then
    add("              %s in %s messages across the link%s", si(a.cross_bytes, "B"), whole(a.cross_messages),
      a.traffic_ratio and string.format(" (%s the prediction)", M.ratio_text(a.traffic_ratio)) or "")
  end
  if a.link_share then
    local function share(x) return x and string.format("%.1f %%", x * 100) or "nothing" end
    add("  link share: %s of the link each way over the run, measured; %s predicted%s", share(a.link_share),
      share(a.predicted_link_share),
      d and d.lic and string.format("; it held %s unit%s of the link's license", P(d.lic, 16),
        d.lic == "1" and "" or "s") or "")
  end
  local ov = acct and acct.overlaps
  if ov and rec.spanning then
    if #ov == 0 then
      add("  on the link: no other spanning job ran while it did (as accounting shows you)")
    else
      local words = {}
      for i = 1, math.min(#ov, M.MAX_OVERLAPS) do
        local o = ov[i]
        words[i] = string.format("%s (%s%s)", P(o.id, 32), units.round_time(o.seconds),
          o.units and string.format(", %d unit%s", o.units, o.units == 1 and "" or "s") or "")
      end
      add("  on the link: %d other spanning job%s ran while it did: %s%s", #ov, #ov == 1 and "" or "s",
        table.concat(words, ", "), #ov > M.MAX_OVERLAPS and string.format(" and %d more", #ov - M.MAX_OVERLAPS)
        or "")
    end
  end
  for _, s in ipairs(rec.steps) do
    local m = present(s.mpi) and s.mpi
    add("    step %-11s %s, %s%s", P(s.step, 32), split(s.nodes), is_num(s.elapsed) and seconds(s.elapsed)
      or "running", m and string.format(", %s ranks, %s across (p2p %s, collectives %s)", whole(m.ranks),
        si(m.cross_bytes, "B"), si(m.p2p_bytes, "B"), si(m.coll_bytes, "B")) or "")
    for _, n in ipairs(type(s.notes) == "table" and s.notes or {}) do add("      note: %s", P(n, 300)) end
  end
  if is_num(rec.steps_dropped) and rec.steps_dropped > 0 then
    add("  note: %s later step(s) not recorded (a record keeps %d)", whole(rec.steps_dropped), M.MAX_STEPS)
  end
  for _, n in ipairs(type(rec.notes) == "table" and rec.notes or {}) do add("  note: %s", P(n, 300)) end
  add("  verdict:    %s", M.verdict(rec, a, max_slowdown))
  return table.concat(L, "\n") .. "\n"
end

--- The report as one JSON object: the record, the decision, what was
-- measured and the verdict.
function M.json(rec, acct, max_slowdown, ex)
  local a = M.assess(rec, acct)
  return json.encode({ record = rec, decision = acct and acct.record or json.null,
    expected_error = ex or json.null,
    state = acct and acct.state or json.null, assessment = a,
    overlaps = acct and acct.overlaps and json.array(acct.overlaps) or json.null,
    verdict = M.verdict(rec, a, max_slowdown) })
end

-- Text for the SVG: printable ASCII (as M.printable), then XML's escapes.
local function esc(s)
  return (printable(s, 200):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

--- Where the time went, as SVG: the predicted time across the link split
-- into compute, network inside the sites, link bandwidth and link latency,
-- next to what was measured: the elapsed time, of which the bytes that
-- crossed took their time at the link's rate (at most all of it).  Nothing
-- of the measured bar comes from the model.
function M.svg(rec, acct, max_slowdown)
  local a = M.assess(rec, acct)
  local p = present(rec.prediction) and rec.prediction or nil
  local bars = {}
  if p then
    bars[#bars + 1] = { "predicted", {
      { "compute", p.parts.compute, "#1b6ca8" }, { "network in the sites", p.parts.network, "#2e8b57" },
      { "link bandwidth", p.parts.link, "#edae49" }, { "link latency", p.parts.latency, "#d1495b" } } }
  end
  local lt = math.min(a.link_bytes_time or 0, a.elapsed)
  bars[#bars + 1] = { "measured", {
    { "the rest of the elapsed time", a.elapsed - lt, "#6a4c93" },
    { "the bytes that crossed, at the link's rate", lt, "#d1495b" } } }
  local tmax = 0
  for _, b in ipairs(bars) do
    local t = 0
    for _, seg in ipairs(b[2]) do t = t + seg[2] end
    if t > tmax then tmax = t end
  end
  if tmax <= 0 then tmax = 1 end
  local W, left, right, top, barh, gap = 760, 100, 40, 70, 36, 50
  local H = top + #bars * (barh + gap) + 60
  local pw = W - left - right
  local o = {}
  local function add(...) o[#o + 1] = string.format(...) end
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d"'
    .. ' font-family="sans-serif" font-size="12">', W, H, W, H)
  add('<rect width="100%%" height="100%%" fill="white"/>')
  add('<text x="%d" y="24" font-size="15">%s</text>', left,
    esc(string.format("job %s: where the time went (%s:%s + %s:%s nodes)", printable(rec.job, 32),
      printable(rec.sites[1], 64), whole(rec.nodes.split[1]), printable(rec.sites[2], 64),
      whole(rec.nodes.split[2]))))
  add('<text x="%d" y="44" fill="#444">%s</text>', left, esc(M.verdict(rec, a, max_slowdown)))
  for i, b in ipairs(bars) do
    local y = top + (i - 1) * (barh + gap)
    add('<text x="%d" y="%.1f" text-anchor="end">%s</text>', left - 8, y + barh / 2 + 4, esc(b[1]))
    local x, total = left, 0
    for _, seg in ipairs(b[2]) do
      local w = seg[2] / tmax * pw
      if w > 0 then
        add('<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>',
          x, y, w, barh, seg[3], esc(seg[1]), esc(seconds(seg[2])))
      end
      x = x + w
      total = total + seg[2]
    end
    add('<text x="%.1f" y="%.1f">%s</text>', left, y + barh + 14, esc(seconds(total) .. ": " ..
      (function()
        local parts = {}
        for _, seg in ipairs(b[2]) do parts[#parts + 1] = seg[1] .. " " .. seconds(seg[2]) end
        return table.concat(parts, ", ")
      end)()))
  end
  add("</svg>")
  return table.concat(o, "\n") .. "\n"
end

--- The most job directories of ReportDir that `earlier_traffic` reads (the
-- newest job ids first).
M.MAX_EARLIER = 64

--- The communication graph of the latest earlier run of a profile: in the
-- newest records of ReportDir that the caller can read, the last step with
-- a traffic matrix or edges (xsite.mapping.graph_of_traffic) of `ranks`
-- ranks, of a job of `uid` run with the profile `label`.  Runs as the user
-- (xsite map, for xsite-run): records of other users' jobs are not readable
-- and are passed over.
-- @param dir ReportDir
-- @param label the profile's label (as the record has it: a name, a class,
--   or an explicit spec without blanks)
-- @param ranks the rank count the step must have
-- @param uid the job owner's uid
-- @return the graph and the job id, or nil and why none was found
function M.earlier_traffic(dir, label, ranks, uid)
  local text, ok = shell.run({ "find", dir, "-mindepth", "1", "-maxdepth", "1", "-type", "d",
    "-name", "[0-9]*", "-printf", "%f\n" }, { timeout = 30, stderr = "drop" })
  if not ok then return nil, string.format("cannot list %s", dir) end
  local ids = {}
  for id in text:gmatch("[^\n]+") do
    if id:match("^%d+$") then ids[#ids + 1] = id end
  end
  table.sort(ids, function(a, b) return #a > #b or (#a == #b and a > b) end)
  for i = 1, math.min(#ids, M.MAX_EARLIER) do
    local body = fs.read_capped(string.format("%s/%s/%s", dir, ids[i], M.FILE), M.MAX_RECORD)
    local rec = body and M.decode(body, ids[i])
    if rec and rec.uid == uid and present(rec.profile) and rec.profile.label == label then
      for k = #rec.steps, 1, -1 do
        local mpi = rec.steps[k].mpi
        local g = present(mpi) and mpi.ranks == ranks and mapping.graph_of_traffic(mpi)
        if g then return g, rec.job end
      end
    end
  end
  return nil, string.format("no record of an earlier run of profile '%s' with %d ranks among the %d newest in %s",
    label, ranks, math.min(#ids, M.MAX_EARLIER), dir)
end

return M
