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
-- A file without `Version` is of version 1; one of a later version is
-- refused, naming it.
-- @module xsite.state

local config = require("xsite.config")
local fs = require("xsite.fs")

local M = {}

--- The version this xsite writes and reads.
M.VERSION = 1

local check = config.checkers

local VERSION_KEY = { "Version", "version", check.integer(1) }

local LINK_KEYS = {
  version = VERSION_KEY,
  state = { "State", "state", check.enum({ "up", "degraded", "down" }) },
  bandwidth = { "Bandwidth", "bandwidth", check.quantity("bandwidth") },
  latency = { "Latency", "latency", check.quantity("time") },
  time = { "Time", "time", check.integer(0) },
}

local function version_ok(v)
  if v > M.VERSION then
    return nil, string.format("Version: %d, this xsite reads version %d", v, M.VERSION)
  end
  return true
end

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
      if e == VERSION_KEY then
        local vok, vmsg = version_ok(v)
        if not vok then return nil, vmsg end
      else
        st[e[2]] = v
      end
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
      return version_ok(v)
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
