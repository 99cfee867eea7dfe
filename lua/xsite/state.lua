--- The state files: what xsite measured, for the policy's next decisions.
-- This module is the one that writes and reads them, in xsite.conf's
-- syntax (xsite.config.each_line), and reads them only once xsite.fs
-- trusts them (root's or the reader's own, no link, no other writer, a
-- size cap).
--
-- Link state (LinkStateFile), written by `xsite calibrate` or by hand:
--
--     [Version=1] State=up|degraded|down [Bandwidth=…B/s] [Latency=…s] [Time=EPOCH]
--
-- Profile state (ProfileStateFile), written by `xsite tune --apply`: an
-- optional `Version=1` line, then one line a profile of xsite.conf:
--
--     ProfileName=NAME [Exchange=BYTES] [Steps=N]
--
-- Link load (LinkLoadFile), written by `xsite load --write` (from squeue,
-- sinfo and scontrol, every few seconds, by a timer): who holds the link's
-- licenses until when, and when each site's nodes come free.
--
--     Version=1 Time=EPOCH
--     License=NAME Total=N Used=N [Ends=EPOCH*UNITS,…]
--     Site=NAME [Free=EPOCH*NODES,…]
--
-- `Ends`: the running jobs holding the license, grouped by the end of their
-- time limit (units held until then); `Free`: the site's usable nodes,
-- grouped by when they come free (Time for an idle node; a node down or
-- drained is in no group).  Both sorted by time.
--
-- Fidelity (FidelityFile), written by `tests/bench/fidelity --write`: how
-- far the model's predicted slowdown was from the measured one, case by
-- case, in the latest fidelity run (xsite.model.expected_error reads it).
--
--     Version=1 Time=EPOCH
--     Case=NAME Pattern=P Latency=SECONDS Predicted=SLOWDOWN Measured=SLOWDOWN
--
-- A file without `Version` is of version 1; one of a later version is
-- refused, naming it.
-- @module xsite.state

local config = require("xsite.config")
local fs = require("xsite.fs")

local M = {}

--- The version this xsite writes and reads.
M.VERSION = 1

local check = config.checkers

-- Version=N: a whole number, none later than this xsite reads
local VERSION_KEY = { "Version", "version", function(text)
  local v, err = check.integer(1)(text)
  if v and v > M.VERSION then
    return nil, string.format("%d, this xsite reads version %d", v, M.VERSION)
  end
  return v, err
end }

-- The Time of a "Version=N Time=EPOCH" line, its version checked: the
-- values of its two keys (either may be nil).
-- @return the time, or nil and a message
local function version_time(version, time)
  local v, verr = config.check_value(VERSION_KEY, version)
  if v == nil then return nil, verr end
  local t = tonumber(time and time:match("^%d+$"))
  if not t then return nil, "Time: missing or not an epoch" end
  return t
end

local LINK_KEYS = {
  version = VERSION_KEY,
  state = { "State", "state", check.enum({ "up", "degraded", "down" }) },
  bandwidth = { "Bandwidth", "bandwidth", check.quantity("bandwidth") },
  latency = { "Latency", "latency", check.quantity("time") },
  time = { "Time", "time", check.integer(0) },
}

--- Parse a link state file.
-- @return { state, bandwidth, latency, time } (the last three may be
--   absent), or nil and a message naming file:line and key
function M.parse_link(text, filename)
  filename = filename or "link state"
  local st = {}
  local ok, err = config.each_line(text, filename, function(_, kv)
    for _, pair in ipairs(kv) do
      local e = LINK_KEYS[pair[1]:lower()]
      if not e then return nil, pair[1] .. ": unknown key" end
      local v, verr = config.check_value(e, pair[2])
      if v == nil then return nil, verr end
      if e ~= VERSION_KEY then st[e[2]] = v end
    end
    return true
  end)
  if not ok then return nil, err end
  if not st.state then return nil, filename .. ": State: missing" end
  return st
end

--- The text of a link state file.
-- @param st { state, bandwidth, latency, time } (bandwidth and latency may
--   be nil for a dead link)
-- @param comment optional first-line comment
function M.format_link(st, comment)
  local out = {}
  if comment then out[#out + 1] = "# " .. comment:gsub("\n", " ") end
  local line = string.format("Version=%d State=%s", M.VERSION, st.state)
  if st.bandwidth then line = line .. string.format(" Bandwidth=%.6gB/s", st.bandwidth) end
  if st.latency then line = line .. string.format(" Latency=%.6gs", st.latency) end
  if st.time then line = line .. string.format(" Time=%d", st.time) end
  out[#out + 1] = line
  return table.concat(out, "\n") .. "\n"
end

--- Parse a profile state file: the measured values of xsite.conf's
-- profiles (xsite.fit), with xsite.conf's checks.
-- @return a table name -> { name, exchange, steps, line }, or nil and a
--   message naming file:line and key
function M.parse_profiles(text, filename)
  filename = filename or "profile state"
  local out = {}
  local ok, err = config.each_line(text, filename, function(line, kv)
    if #kv == 0 then return true end
    local first = kv[1][1]:lower()
    if first == "version" and #kv == 1 then
      local v, verr = config.check_value(VERSION_KEY, kv[1][2])
      if v == nil then return nil, verr end
      return true
    end
    if first ~= "profilename" then return nil, kv[1][1] .. ": a line starts with ProfileName=" end
    local entry = { line = line }
    for i, pair in ipairs(kv) do
      local key = pair[1]:lower()
      local e = config.key("profile", key)
      if not e or (i > 1 and key ~= "exchange" and key ~= "steps") then
        return nil, pair[1] .. ": unknown key (ProfileName, Exchange, Steps)"
      end
      local v, verr = config.check_value(e, pair[2])
      if v == nil then return nil, verr end
      entry[e[2]] = v
    end
    if out[entry.name] then
      return nil, string.format("ProfileName: %s given twice (first at line %d)", entry.name,
        out[entry.name].line)
    end
    out[entry.name] = entry
    return true
  end)
  if not ok then return nil, err end
  return out
end

--- The line of one profile in a profile state file (and in xsite.conf).
-- @param name the profile
-- @param e { exchange (bytes), steps } (either may be nil)
function M.profile_line(name, e)
  return string.format("ProfileName=%s%s%s", name,
    e.exchange and string.format(" Exchange=%.0f", e.exchange) or "",
    e.steps and string.format(" Steps=%d", e.steps) or "")
end

--- The text of a profile state file.
-- @param profiles name -> { exchange, steps }
-- @param comment optional first-line comment
function M.format_profiles(profiles, comment)
  local out = {}
  if comment then out[#out + 1] = "# " .. comment:gsub("\n", " ") end
  out[#out + 1] = string.format("Version=%d", M.VERSION)
  local names = {}
  for n in pairs(profiles) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do out[#out + 1] = M.profile_line(n, profiles[n]) end
  return table.concat(out, "\n") .. "\n"
end

--- The most groups an `Ends` or `Free` list may have (one per distinct
-- time: a cluster of 100,000 nodes has fewer).
M.LOAD_GROUPS = 100000

-- "EPOCH*COUNT,…" sorted by time: a list of { time, count }
local function parse_groups(key, text)
  local out, n = {}, 0
  if text == "" then return out end
  for item in (text .. ","):gmatch("([^,]*),") do
    n = n + 1
    if n > M.LOAD_GROUPS then return nil, string.format("%s: more than %d groups", key, M.LOAD_GROUPS) end
    local t, c = item:match("^(%d+)%*(%d+)$")
    t, c = tonumber(t), tonumber(c)
    if not t or t > 2 ^ 40 or c > 2 ^ 31 then
      return nil, string.format("%s: '%s' is not EPOCH*COUNT", key, item)
    end
    if n > 1 and t < out[n - 1][1] then
      return nil, string.format("%s: '%s' is earlier than the one before", key, item)
    end
    out[n] = { t, c }
  end
  return out
end

local function format_groups(groups)
  local words = {}
  for i, g in ipairs(groups) do words[i] = string.format("%d*%d", g[1], g[2]) end
  return table.concat(words, ",")
end

local LOAD_LINES = {
  version = { time = true },
  license = { total = true, used = true, ends = true },
  site = { free = true },
}

--- Parse a link load file.
-- @return { time, license = { name, total, used, ends } or nil,
--   sites = { NAME = free } } (`ends` and `free` lists of { time, count }),
--   or nil and a message naming file:line and key
function M.parse_load(text, filename)
  filename = filename or "link load"
  local ld = { sites = {} }
  local ok, err = config.each_line(text, filename, function(_, kv)
    if #kv == 0 then return true end
    local kind = kv[1][1]:lower()
    local allowed = LOAD_LINES[kind]
    if not allowed then return nil, kv[1][1] .. ": a line starts with Version=, License= or Site=" end
    local e = {}
    for i, pair in ipairs(kv) do
      local key = pair[1]:lower()
      if i > 1 and not allowed[key] then return nil, pair[1] .. ": unknown key on a " .. kv[1][1] .. " line" end
      if e[key] then return nil, pair[1] .. ": given twice" end
      e[key] = pair[2]
    end
    if kind == "version" then
      local terr
      ld.time, terr = version_time(e.version, e.time)
      if not ld.time then return nil, terr end
    elseif kind == "license" then
      if ld.license then return nil, "License: a second License line" end
      local total, used = tonumber(e.total and e.total:match("^%d+$")), tonumber(e.used and e.used:match("^%d+$"))
      if not total or not used then return nil, "Total, Used: each a whole number" end
      local ends, gerr = parse_groups("Ends", e.ends or "")
      if not ends then return nil, gerr end
      ld.license = { name = e.license, total = total, used = used, ends = ends }
    else
      if ld.sites[e.site] then return nil, "Site: " .. e.site .. " given twice" end
      local free, gerr = parse_groups("Free", e.free or "")
      if not free then return nil, gerr end
      ld.sites[e.site] = free
    end
    return true
  end)
  if not ok then return nil, err end
  if not ld.time then return nil, filename .. ": Version=1 Time=EPOCH: missing" end
  return ld
end

-- The first lines of a file whose Version line has the Time of what it
-- holds: the comment, if any, and "Version=1 Time=EPOCH".
local function versioned_head(comment, time)
  local out = {}
  if comment then out[#out + 1] = "# " .. comment:gsub("\n", " ") end
  out[#out + 1] = string.format("Version=%d Time=%d", M.VERSION, time)
  return out
end

--- The text of a link load file (the table of `parse_load`).
function M.format_load(ld, comment)
  local out = versioned_head(comment, ld.time)
  local lic = ld.license
  if lic then
    out[#out + 1] = string.format("License=%s Total=%d Used=%d%s", lic.name, lic.total, lic.used,
      #lic.ends > 0 and " Ends=" .. format_groups(lic.ends) or "")
  end
  local names = {}
  for n in pairs(ld.sites) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    local free = ld.sites[n]
    out[#out + 1] = "Site=" .. n .. (#free > 0 and " Free=" .. format_groups(free) or "")
  end
  return table.concat(out, "\n") .. "\n"
end

--- The most cases a fidelity file may have (a run has a few dozen).
M.FIDELITY_CASES = 1000

local FIDELITY_KEYS = {
  case = { "Case", "name", function(text)
    if #text <= 64 and text:find("^[%w_.%-]+$") then return text end
    return nil, string.format("'%s' is not a case name (letters, digits, _ . -; at most 64)", text:sub(1, 64))
  end },
  pattern = { "Pattern", "pattern", check.enum(config.PATTERNS) },
  latency = { "Latency", "latency", check.quantity("time") },
  predicted = { "Predicted", "predicted", check.quantity("number") },
  measured = { "Measured", "measured", check.quantity("number") },
}

local FIDELITY_ORDER = { "case", "pattern", "latency", "predicted", "measured" }

--- Parse a fidelity file.
-- @return { time, cases = { { name, pattern, latency, predicted,
--   measured }, … } }, or nil and a message naming file:line and key
function M.parse_fidelity(text, filename)
  filename = filename or "fidelity"
  local run = { cases = {} }
  local ok, err = config.each_line(text, filename, function(_, kv)
    if #kv == 0 then return true end
    local kind = kv[1][1]:lower()
    if kind == "version" then
      if run.time then return nil, "Version: a second Version line" end
      for i = 2, #kv do
        if kv[i][1]:lower() ~= "time" then return nil, kv[i][1] .. ": unknown key on a Version line" end
        if i > 2 then return nil, kv[i][1] .. ": given twice" end
      end
      local terr
      run.time, terr = version_time(kv[1][2], kv[2] and kv[2][2])
      if not run.time then return nil, terr end
      return true
    end
    if kind ~= "case" then return nil, kv[1][1] .. ": a line starts with Version= or Case=" end
    if #run.cases >= M.FIDELITY_CASES then return nil, string.format("more than %d cases", M.FIDELITY_CASES) end
    local c = {}
    for _, pair in ipairs(kv) do
      local e = FIDELITY_KEYS[pair[1]:lower()]
      if not e then return nil, pair[1] .. ": unknown key (Case, Pattern, Latency, Predicted, Measured)" end
      if c[e[2]] then return nil, pair[1] .. ": given twice" end
      local v, verr = config.check_value(e, pair[2])
      if v == nil then return nil, verr end
      c[e[2]] = v
    end
    for _, key in ipairs(FIDELITY_ORDER) do
      if c[FIDELITY_KEYS[key][2]] == nil then return nil, FIDELITY_KEYS[key][1] .. ": missing" end
    end
    run.cases[#run.cases + 1] = c
    return true
  end)
  if not ok then return nil, err end
  if not run.time then return nil, filename .. ": Version=1 Time=EPOCH: missing" end
  return run
end

--- The text of a fidelity file (the table of `parse_fidelity`).
function M.format_fidelity(run, comment)
  local out = versioned_head(comment, run.time)
  for _, c in ipairs(run.cases) do
    out[#out + 1] = string.format("Case=%s Pattern=%s Latency=%.6gs Predicted=%.6g Measured=%.6g", c.name,
      c.pattern, c.latency, c.predicted, c.measured)
  end
  return table.concat(out, "\n") .. "\n"
end

-- A state file read with its parser, once xsite.fs trusts it: nil when it
-- does not exist.
local function load(filename, parse)
  local text, err, missing = fs.read_trusted(filename)
  if not text then
    if missing then return nil end
    return nil, err
  end
  return parse(text, filename)
end

--- Read the link state file, if there is one.
-- @return the state, or nil when the file does not exist, or nil and a message
function M.load_link(filename)
  return load(filename, M.parse_link)
end

--- Read the profile state file, if there is one.
-- @return the table of `parse_profiles`, or nil when the file does not
--   exist, or nil and a message
function M.load_profiles(filename)
  return load(filename, M.parse_profiles)
end

--- Read the link load file, if there is one.
-- @return the table of `parse_load`, or nil when the file does not exist,
--   or nil and a message
function M.load_load(filename)
  return load(filename, M.parse_load)
end

--- Read the fidelity file, if there is one.
-- @return the table of `parse_fidelity`, or nil when the file does not
--   exist, or nil and a message
function M.load_fidelity(filename)
  return load(filename, M.parse_fidelity)
end

--- Write the link state file (xsite.fs.write_atomic).
-- @return true, or nil and a message naming the file
function M.write_link(path, st, comment)
  return fs.write_atomic(path, M.format_link(st, comment))
end

--- Set one profile's measured values in the profile state file, keeping
-- the others; a file that does not parse is not overwritten.
-- @param e { exchange, steps }
-- @return true, or nil and a message naming the file
function M.set_profile(path, name, e)
  local text, rerr, missing = fs.read_trusted(path)
  local profiles = {}
  if text then
    local perr
    profiles, perr = M.parse_profiles(text, path)
    if not profiles then return nil, perr .. " (not overwritten)" end
  elseif not missing then
    return nil, rerr
  end
  profiles[name] = e
  return fs.write_atomic(path, M.format_profiles(profiles,
    "written by xsite tune: measured Exchange and Steps of xsite.conf's profiles"))
end

return M
