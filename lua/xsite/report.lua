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
--                             "matrix": [[…], …] | null } | null,
--                    "notes": [ … ] } ],
--       "notes": [ … ] }
-- @module xsite.report

local json = require("xsite.json")
local hostlist = require("xsite.hostlist")
local model = require("xsite.model")
local profile = require("xsite.profile")
local policy = require("xsite.policy")
local replay = require("xsite.replay")

local M = {}

M.SCHEMA = "xsite-report"
M.VERSION = 1
--- The name of the record in a job's directory of ReportDir.
M.FILE = "report.json"

local function is_num(v) return type(v) == "number" and v == v and v >= 0 and v < math.huge end
-- A field that is there: neither absent nor JSON null.
local function present(v) return v ~= nil and v ~= json.null end

-- Nodes of a host list per site of the configuration.
-- @return { total, split = { nA, nB }, outside }, or nil and a message
local function place(cfg, nodelist)
  local names, err = hostlist.expand(nodelist)
  if not names then return nil, err end
  local split, outside = {}, 0
  for i = 1, #cfg.sites do split[i] = 0 end
  local index = {}
  for i, s in ipairs(cfg.sites) do index[s] = i end
  for _, n in ipairs(names) do
    local s = cfg.site_of_node[n]
    if s then split[index[s]] = split[index[s]] + 1 else outside = outside + 1 end
  end
  return { total = #names, split = json.array(split), outside = outside }
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
-- @param state the link state (xsite.config.load_link_state), or nil
-- @param tuned the profile state (xsite.config.load_profile_state), or nil
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
    notes[#notes + 1] = "no prediction: " .. perr
  end
  rec.steps = json.array({ { step = a.step, nodes = step_nodes, start = a.start,
    mpi = json.null, notes = json.array({}) } })
  return rec
end

local function check(cond, field, msg)
  if not cond then error({ report = field .. ": " .. msg }, 0) end
end

-- The MPI part of a step from libxsite's traffic record (its version 1).
local function mpi_from_traffic(t, job)
  check(type(t) == "table", "traffic record", "not a JSON object")
  check(t.version == 1, "traffic record: version", "not 1 (" .. tostring(t.version) .. ")")
  check(tostring(t.job) == tostring(job), "traffic record: job",
    string.format("%s, not this job (%s)", tostring(t.job), tostring(job)))
  local c = t.cross
  check(type(c) == "table", "traffic record: cross", "missing")
  for _, k in ipairs({ "bytes", "messages", "p2p_bytes", "p2p_messages", "coll_bytes", "coll_messages" }) do
    check(is_num(c[k]), "traffic record: cross." .. k, "not a count")
  end
  check(is_num(t.ranks) and t.ranks >= 1, "traffic record: ranks", "not a count")
  local m = { ranks = t.ranks, cross_bytes = c.bytes, cross_messages = c.messages,
    p2p_bytes = c.p2p_bytes, p2p_messages = c.p2p_messages, coll_bytes = c.coll_bytes,
    coll_messages = c.coll_messages, sites = type(t.sites) == "table" and t.sites or json.null,
    matrix = json.null }
  if present(t.matrix) then
    check(#t.matrix == t.ranks, "traffic record: matrix", "not ranks x ranks")
    for i, row in ipairs(t.matrix) do
      check(type(row) == "table" and #row == t.ranks, "traffic record: matrix row " .. i, "not ranks long")
    end
    m.matrix = t.matrix
  end
  return m
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
-- @return the record, or nil and "SOURCE: message"
function M.decode(text, source)
  local rec, err = json.decode(text)
  if rec == nil then return nil, string.format("%s: not JSON (%s)", source, err) end
  local ok, verr = M.validate(rec)
  if not ok then return nil, string.format("%s: %s", source, verr) end
  return rec
end

--- The job's record with a step that has ended.
-- @param start the step's record from `step_start`, as JSON text
-- @param finish epoch seconds
-- @param traffic libxsite's traffic record (text), or nil
-- @param traffic_note why there is no traffic record, or nil
-- @param existing the job's record so far (text), or nil
-- @return the job's record (a table), and an array of things to log
function M.step_end(start, finish, traffic, traffic_note, existing)
  local log = {}
  local rec = assert(M.decode(start, "step record"))
  local step = rec.steps[1]
  step.finish = finish
  step.elapsed = math.max(0, finish - (step.start or finish))
  if traffic and traffic ~= "" then
    local t, err = json.decode(traffic)
    local ok, m = false, nil
    if t ~= nil then ok, m = pcall(mpi_from_traffic, t, rec.job) end
    if ok then
      step.mpi = m
    else
      local why = t == nil and "not JSON (" .. err .. ")" or (type(m) == "table" and m.report or tostring(m))
      step.notes[#step.notes + 1] = "MPI traffic record ignored: " .. why
      log[#log + 1] = string.format("job %s step %s: MPI traffic record ignored: %s", rec.job, step.step, why)
    end
  elseif traffic_note then
    step.notes[#step.notes + 1] = traffic_note
  end
  if existing and existing ~= "" then
    local old, err = M.decode(existing, M.FILE)
    if old and old.job == rec.job then
      local kept = json.array({})
      for _, s in ipairs(old.steps) do
        if s.step ~= step.step then kept[#kept + 1] = s end
      end
      kept[#kept + 1] = step
      old.steps = kept
      return old, log
    end
    local why = old and "another job's record" or err
    rec.notes[#rec.notes + 1] = "the previous record was unreadable and is replaced: " .. why
    log[#log + 1] = string.format("job %s: the previous record was unreadable and is replaced: %s", rec.job, why)
  end
  return rec, log
end

--- What a record says once its steps are summed up.
-- @param rec a record
-- @param acct optional { elapsed = seconds, state, record = the parsed
--   AdminComment (xsite.policy.parse_record) } from accounting
-- @return { elapsed, mpi_steps, cross_bytes, cross_messages, predicted_bytes,
--   traffic_ratio, link_time, cost, predicted_cost }
function M.assess(rec, acct)
  local a = { mpi_steps = 0, cross_bytes = 0, cross_messages = 0 }
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
    a.link_time = a.cross_bytes / 2 / rate + steps * l.latency
    local rest = a.elapsed - a.link_time
    if rest > 0 then a.cost = a.link_time / rest end
  end
  return a
end

--- The sacct fields `xsite report` asks for, in this order (AdminComment last).
M.SACCT_FIELDS = { "JobID", "User", "State", "Elapsed", "AdminComment" }

--- What accounting says of a job: sacct's parsable line (M.SACCT_FIELDS,
-- tab-separated, -X), or `scontrol show job -o` when there is no accounting.
-- @param text the command's output
-- @param kind "sacct" or "scontrol"
-- @return { user, state, elapsed, record (parsed AdminComment or nil) }, or nil
function M.parse_accounting(text, kind)
  if kind == "sacct" then
    local line = (text or ""):match("[^\n]+")
    if not line then return nil end
    local f = {}
    for v in (line .. "\t"):gmatch("([^\t]*)\t") do f[#f + 1] = v end
    if #f < #M.SACCT_FIELDS then return nil end
    local comment = table.concat(f, "\t", #M.SACCT_FIELDS)
    return { user = f[2], state = f[3], elapsed = replay.seconds(f[4]),
      record = (policy.parse_record(comment)) }
  end
  local state = (text or ""):match("JobState=(%S+)")
  if not state then return nil end
  return { user = text:match("UserId=([^%(%s]+)"), state = state,
    elapsed = replay.seconds(text:match("RunTime=(%S+)")),
    record = (policy.parse_record(text:match("AdminComment=(.-) %u%a+=") or text:match("AdminComment=(.*)"))) }
end

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
  local label = present(rec.profile) and rec.profile.label or nil
  if not rec.spanning then
    local where = rec.nodes.split[1] > 0 and rec.sites[1] or rec.sites[2]
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

--- The report as text lines.
-- @param rec a record
-- @param acct as for `assess`, may be nil
-- @param max_slowdown the policy's MaxSlowdown
-- @return the text
function M.text(rec, acct, max_slowdown)
  local a = M.assess(rec, acct)
  local L = {}
  local function add(...) L[#L + 1] = string.format(...) end
  add("job %s (%s)%s", rec.job, rec.user or ("uid " .. tostring(rec.uid)),
    acct and acct.state and ", " .. acct.state or "")
  local d = acct and present(acct.record) and acct.record
  if d then
    add("  decision:   %s (%s)%s", d.action or "?", d.why or "?",
      d.slowdown and ", predicted slowdown " .. d.slowdown .. " at submission" or "")
  else
    add("  decision:   unknown (no AdminComment record from accounting or slurmctld)")
  end
  add("  placement:  %s:%d + %s:%d nodes%s", rec.sites[1], rec.nodes.split[1], rec.sites[2],
    rec.nodes.split[2], rec.spanning and ", across the link" or "")
  local l = rec.link
  add("  link:       %s, %s one way, %s/s x %d (%s)", l.state, seconds(l.latency), si(l.bandwidth, "B"),
    l.channels or 1, l.source)
  local p = rec.prediction
  if present(p) then
    add("  profile:    %s", rec.profile.label)
    add("  predicted:  t_one %s, t_span %s, slowdown %.2fx; %s across the link", seconds(p.t_one),
      seconds(p.t_span), p.slowdown, si(p.crossing_bytes, "B"))
  else
    add("  predicted:  nothing (no profile)")
  end
  add("  measured:   elapsed %s; %d step(s), %d with an MPI traffic record", seconds(a.elapsed), #rec.steps,
    a.mpi_steps)
  if a.mpi_steps > 0 then
    add("              %s in %d messages across the link%s", si(a.cross_bytes, "B"), a.cross_messages,
      a.traffic_ratio and string.format(" (%s the prediction)", M.ratio_text(a.traffic_ratio)) or "")
  end
  for _, s in ipairs(rec.steps) do
    local m = present(s.mpi) and s.mpi
    add("    step %-11s %s:%d + %s:%d nodes, %s%s", s.step, rec.sites[1], s.nodes.split[1], rec.sites[2],
      s.nodes.split[2], s.elapsed and seconds(s.elapsed) or "running",
      m and string.format(", %d ranks, %s across (p2p %s, collectives %s)", m.ranks, si(m.cross_bytes, "B"),
        si(m.p2p_bytes, "B"), si(m.coll_bytes, "B")) or "")
    for _, n in ipairs(s.notes or {}) do add("      note: %s", n) end
  end
  for _, n in ipairs(rec.notes or {}) do add("  note: %s", n) end
  add("  verdict:    %s", M.verdict(rec, a, max_slowdown))
  return table.concat(L, "\n") .. "\n"
end

--- The report as one JSON object: the record, the decision, what was
-- measured and the verdict.
function M.json(rec, acct, max_slowdown)
  local a = M.assess(rec, acct)
  return json.encode({ record = rec, decision = acct and acct.record or json.null,
    state = acct and acct.state or json.null, assessment = a,
    verdict = M.verdict(rec, a, max_slowdown) })
end

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

--- Where the time went, as SVG: the predicted time across the link split
-- into compute, network inside the sites, link bandwidth and link latency,
-- next to the measured elapsed time split into the link's share (from
-- the traffic that crossed) and the rest.
function M.svg(rec, acct, max_slowdown)
  local a = M.assess(rec, acct)
  local p = present(rec.prediction) and rec.prediction or nil
  local bars = {}
  if p then
    bars[#bars + 1] = { "predicted", {
      { "compute", p.parts.compute, "#1b6ca8" }, { "network in the sites", p.parts.network, "#2e8b57" },
      { "link bandwidth", p.parts.link, "#edae49" }, { "link latency", p.parts.latency, "#d1495b" } } }
  end
  local lt = a.link_time or 0
  bars[#bars + 1] = { "measured", {
    { "compute and network in the sites", math.max(0, a.elapsed - lt), "#6a4c93" },
    { "link (from the traffic that crossed)", lt, "#d1495b" } } }
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
    esc(string.format("job %s: where the time went (%s:%d + %s:%d nodes)", rec.job, rec.sites[1],
      rec.nodes.split[1], rec.sites[2], rec.nodes.split[2])))
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

return M
