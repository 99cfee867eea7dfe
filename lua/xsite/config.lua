--- xsite.conf: the one parser of the site configuration.
--
-- The file uses Slurm's own line syntax: `Key=Value` pairs separated by blanks,
-- `#` comments, a trailing `\` continues a line, keys are case-insensitive,
-- values may be double-quoted.  A line whose first key is `SiteName`,
-- `LinkName`, `ProfileName` or `ClassName` describes one such object; any other
-- line sets global keys (`Mode=enforce MaxSlowdown=1.10`).  See xsite.conf(5).
--
-- `parse` and `load` never raise on bad input: they return `nil`, a message
-- holding every error as `file:line: Key: message` (one per line), and the
-- array of those errors.
-- @module xsite.config

local units = require("xsite.units")
local hostlist = require("xsite.hostlist")

local M = {}

--- Communication patterns the model knows (see xsite.model).
M.PATTERNS = { "alltoall", "halo1d", "halo2d", "halo3d", "tree", "none" }
--- Application templates the model knows (see xsite.model).
M.TEMPLATES = { "scalar", "matmul", "linpack", "fft2d", "stencil", "alltoall" }
--- Reserved class names.
M.CLASSES = { "low", "medium", "high" }

local function set_of(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

-- Value checkers: each takes the text and returns the value or nil, message.
local function quantity(kind, opts)
  return function(text) return units.parse(text, kind, opts) end
end

local function integer(min)
  return function(text)
    local v, err = units.parse_integer(text, { zero = true })
    if not v then return nil, err end
    if v < min then return nil, string.format("'%s' must be at least %d", text, min) end
    return v
  end
end

local function enum(list)
  local s = set_of(list)
  return function(text)
    local v = text:lower()
    if not s[v] then
      return nil, string.format("'%s' is not one of %s", text, table.concat(list, ", "))
    end
    return v
  end
end

local function name(text)
  if not text:find("^[%a_][%w_%-%.]*$") then
    return nil, string.format("'%s' is not a valid name (letters, digits, '_', '-', '.')", text)
  end
  return text
end

local function name_list(text)
  local out = {}
  for item in (text .. ","):gmatch("([^,]*),") do
    local v, err = name(item)
    if not v then return nil, err end
    out[#out + 1] = v
  end
  return out
end

local function path(text)
  if text:sub(1, 1) ~= "/" then
    return nil, string.format("'%s' is not an absolute path", text)
  end
  return text
end

-- A Slurm license and its count, as slurm.conf's Licenses= writes one:
-- NAME:COUNT (NAME@SERVER:COUNT for one that sacctmgr keeps in slurmdbd).
M.LICENSE_MAX = 1000000

local function license(text)
  local lname, count = text:match("^([%a_][%w_%-%.]*@?[%w_%-%.]*):(%d+)$")
  if not lname or lname:sub(-1) == "@" then
    return nil, string.format("'%s' is not a license and its count (NAME:COUNT, e.g. xsite_link:100)", text)
  end
  count = tonumber(count)
  if count < 1 or count > M.LICENSE_MAX then
    return nil, string.format("'%s': the count must be 1 to %d", text, M.LICENSE_MAX)
  end
  return { name = lname, count = count }
end

local function nodes(text)
  local list, err = hostlist.expand(text)
  if not list then return nil, err end
  return list
end

local function max_slowdown(text)
  local v, err = units.parse(text, "number")
  if not v then return nil, err end
  if v < 1 then return nil, string.format("'%s' must be at least 1.0 (a slowdown factor)", text) end
  return v
end

local function affinity(text)
  local v = text:lower()
  if v == "auto" or v == "pin" or v == "span" then return v end
  return name(text)
end

-- The schema: for each kind of line, its keys in canonical spelling, the field
-- they fill, their checker and whether they are required.
local SCHEMA = {
  site = {
    { "SiteName", "name", name, true },
    { "Nodes", "nodes", nodes, true },
    { "Feature", "feature", name },
    { "CoresPerNode", "cores", integer(1), true },
    { "CorePeak", "core_peak", quantity("flops"), true },
    { "MemBandwidth", "mem_bw", quantity("bandwidth"), true },
    { "NetBandwidth", "net_bw", quantity("bandwidth"), true },
    { "NetLatency", "net_latency", quantity("time"), true },
  },
  link = {
    { "LinkName", "name", name, true },
    { "Sites", "sites", name_list },
    { "Bandwidth", "bandwidth", quantity("bandwidth"), true },
    { "Latency", "latency", quantity("time"), true },
    { "Channels", "channels", integer(1) },
    { "License", "license", license },
  },
  profile = {
    { "ProfileName", "name", name, true },
    { "ClassName", "name", enum(M.CLASSES), true },
    { "Description", "description", function(t) return t end },
    { "Template", "template", enum(M.TEMPLATES) },
    { "Size", "size", quantity("count") },
    { "Iterations", "iterations", integer(1) },
    { "Ops", "ops", quantity("count") },
    { "Bytes", "bytes", quantity("bytes") },
    { "Exchange", "exchange", quantity("bytes", { zero = true }) },
    { "Steps", "steps", integer(0) },
    { "Pattern", "pattern", enum(M.PATTERNS) },
  },
  global = {
    { "Mode", "mode", enum({ "enforce", "advise", "off" }) },
    { "MaxSlowdown", "max_slowdown", max_slowdown },
    { "OversizeAction", "oversize", enum({ "reject", "warn", "allow" }) },
    { "DefaultProfile", "default_profile", name },
    { "DefaultAffinity", "default_affinity", affinity },
    { "LinkStateFile", "link_state_file", path },
    { "LinkLoadFile", "link_load_file", path },
    { "FidelityFile", "fidelity_file", path },
    { "FailMode", "fail_mode", enum({ "open", "closed" }) },
    { "ReportDir", "report_dir", path },
    { "ProfileStateFile", "profile_state_file", path },
    { "TrafficMaxSize", "traffic_max_size", function(text)
      local v, err = units.parse(text, "bytes")
      if v and v > 2 ^ 30 then return nil, string.format("'%s' is more than 1GiB", text) end
      return v and math.floor(v), err
    end },
    -- slurmdbd.conf's Purge*After style: 30days, 12hours, 6months; 0 keeps all
    { "ReportRetention", "report_retention", function(text)
      local n, unit = text:match("^(%d+)(%a*)$")
      local f = unit and ({ hour = 3600, hours = 3600, day = 86400, days = 86400, month = 2592000,
        months = 2592000 })[unit:lower()]
      if n and (f or tonumber(n) == 0) then return tonumber(n) * (f or 0) end
      return nil, string.format("'%s' is not a time to keep records (e.g. 30days, 12hours, 6months; 0 for ever)",
        text)
    end },
  },
}

--- Defaults of the global keys.
M.DEFAULTS = {
  mode = "enforce",
  max_slowdown = 1.10,
  oversize = "warn",
  default_affinity = "auto",
  fail_mode = "open",
  report_dir = "/var/spool/xsite",
  traffic_max_size = 1048576,
  report_retention = 30 * 86400,
}

--- The keys of each kind of line ("site", "link", "profile", "global"):
-- { Key, field, checker (text -> value, or nil and a message), required }.
-- For reading only.
M.SCHEMA = SCHEMA

local KEYS = {}  -- kind -> lower-case key -> schema entry
for kind, entries in pairs(SCHEMA) do
  KEYS[kind] = {}
  for _, e in ipairs(entries) do KEYS[kind][e[1]:lower()] = e end
end

local RECORD_KIND = {
  sitename = "site",
  linkname = "link",
  profilename = "profile",
  classname = "profile",
}

--- A line without its comment: from the first '#' outside double quotes
-- (inside them '#' is part of the value).
function M.strip_comment(line)
  if not line:find("#", 1, true) then return line end
  local quoted = false
  for i = 1, #line do
    local c = line:sub(i, i)
    if c == '"' then
      quoted = not quoted
    elseif c == "#" and not quoted then
      return line:sub(1, i - 1)
    end
  end
  return line
end

--- Split the text into logical lines: comments removed, continuations joined.
-- @return array of { line = first physical line number, last = the last
--   one, text = joined text }
local function logical_lines(text)
  local out, pending, start = {}, nil, nil
  local n = 0
  for raw in (text .. "\n"):gmatch("([^\n]*)\n") do
    n = n + 1
    raw = raw:gsub("\r$", "")
    local body = M.strip_comment(raw)
    local cont = body:find("\\%s*$") ~= nil
    if cont then body = body:gsub("\\%s*$", "") end
    if pending then
      pending = pending .. " " .. body
    else
      pending, start = body, n
    end
    if not cont then
      out[#out + 1] = { line = start, last = n, text = pending }
      pending = nil
    end
  end
  if pending then out[#out + 1] = { line = start, last = n, text = pending } end
  return out
end

--- Split one logical line into Key=Value pairs.
-- @return array of { key, value }, or nil and a message
local function tokenize(text)
  local pairs_ = {}
  local pos = 1
  while true do
    local s = text:find("%S", pos)
    if not s then break end
    local key, eq = text:match("^([%a][%w]*)()=", s)
    if not key then
      local word = text:match("^%S+", s)
      return nil, string.format("'%s' is not Key=Value", word)
    end
    local value
    if text:sub(eq + 1, eq + 1) == '"' then
      local close = text:find('"', eq + 2, true)
      if not close then return nil, string.format("%s: unterminated quoted value", key) end
      value = text:sub(eq + 2, close - 1)
      pos = close + 1
      if text:find("^%S", pos) then
        return nil, string.format("%s: text after the closing quote", key)
      end
    else
      value = text:match("^[^%s]*", eq + 1)
      pos = eq + 1 + #value
      if value == "" then return nil, string.format("%s: empty value", key) end
    end
    pairs_[#pairs_ + 1] = { key, value }
  end
  return pairs_
end

--- Parse the text of a configuration.
-- @param text the file's contents
-- @param filename the name to put in messages
-- @return the configuration, or nil, the messages joined by newlines, and their array
function M.parse(text, filename)
  if type(text) ~= "string" then
    return nil, "xsite.conf: no text"
  end
  filename = filename or "xsite.conf"
  local errs = {}
  local function fail(line, key, msg)
    if not line or line == 0 then
      errs[#errs + 1] = string.format("%s: %s: %s", filename, key, msg)
    elseif key then
      errs[#errs + 1] = string.format("%s:%d: %s: %s", filename, line, key, msg)
    else
      errs[#errs + 1] = string.format("%s:%d: %s", filename, line, msg)
    end
  end

  local cfg = {
    file = filename,
    sites = {}, site_by_name = {}, site_of_node = {},
    links = {}, profiles = {},
    policy = {}, policy_lines = {},
    broken = {},  -- kinds of line with an error: no checks across them
  }
  for k, v in pairs(M.DEFAULTS) do cfg.policy[k] = v end

  for _, l in ipairs(logical_lines(text)) do
    local kv, terr = tokenize(l.text)
    if not kv then
      fail(l.line, nil, terr)
    elseif #kv > 0 then
      local kind = RECORD_KIND[kv[1][1]:lower()] or "global"
      local obj = { line = l.line }
      local seen = {}
      local ok = true
      for i, pair in ipairs(kv) do
        local key, value = pair[1], pair[2]
        local entry = KEYS[kind][key:lower()]
        if not entry or (i > 1 and RECORD_KIND[key:lower()]) then
          if RECORD_KIND[key:lower()] then
            fail(l.line, key, "must start its own line")
          elseif kind == "global" then
            fail(l.line, key, "unknown key")
          else
            fail(l.line, key, string.format("unknown key in a %s line", kv[1][1]))
          end
          ok = false
        elseif seen[entry[2]] then
          fail(l.line, entry[1], "given twice")
          ok = false
        else
          local v, verr = entry[3](value)
          if v == nil then
            fail(l.line, entry[1], verr)
            ok = false
          else
            seen[entry[2]] = true
            obj[entry[2]] = v
            if kind == "global" then
              local first = cfg.policy_lines[entry[2]]
              if first then
                fail(l.line, entry[1], string.format("already set at line %d", first))
              else
                cfg.policy_lines[entry[2]] = l.line
              end
            end
          end
        end
      end
      if kind == "global" then
        for k, v in pairs(obj) do
          if k ~= "line" then cfg.policy[k] = v end
        end
      else
        if ok then
          for _, e in ipairs(SCHEMA[kind]) do
            if e[4] and obj[e[2]] == nil and not (kind == "profile" and e[2] == "name") then
              fail(l.line, e[1], string.format("missing (required in a %s line)", kv[1][1]))
              ok = false
            end
          end
        end
        if not ok then
          cfg.broken[kind] = true  -- no checks across lines of this kind
        elseif kind == "profile" then
          obj.class = kv[1][1]:lower() == "classname"
          cfg.profiles[#cfg.profiles + 1] = obj
        else
          local list = kind == "site" and cfg.sites or cfg.links
          list[#list + 1] = obj
        end
      end
    end
  end

  M._validate(cfg, fail)
  if #errs > 0 then
    return nil, table.concat(errs, "\n"), errs
  end
  return cfg
end

-- Checks across lines.
function M._validate(cfg, fail)
  local feature_of = {}
  cfg.site_by_feature = feature_of
  for _, s in ipairs(cfg.sites) do
    if cfg.site_by_name[s.name] then
      fail(s.line, "SiteName", string.format("site '%s' already defined at line %d",
        s.name, cfg.site_by_name[s.name].line))
    else
      cfg.site_by_name[s.name] = s
    end
    s.feature = s.feature or s.name
    if feature_of[s.feature] then
      fail(s.line, "Feature", string.format("feature '%s' already names site '%s'",
        s.feature, feature_of[s.feature].name))
    end
    feature_of[s.feature] = s
    s.hostlist = hostlist.compress(s.nodes)
    for _, node in ipairs(s.nodes) do
      local other = cfg.site_of_node[node]
      if other == s then
        fail(s.line, "Nodes", string.format("node '%s' is listed twice", node))
      elseif other then
        fail(s.line, "Nodes", string.format("node '%s' is already in site '%s' (line %d)",
          node, other.name, other.line))
      end
      cfg.site_of_node[node] = s
    end
  end
  if #cfg.sites ~= 2 and not cfg.broken.site then
    local at = cfg.sites[math.min(#cfg.sites, 3)]
    fail(at and at.line or 0, "SiteName",
      string.format("xsite needs exactly two sites, found %d", #cfg.sites))
  end

  if #cfg.links == 0 and not cfg.broken.link then
    fail(0, "LinkName", "no link between the sites")
  elseif #cfg.links > 1 then
    fail(cfg.links[2].line, "LinkName", "only one link between the two sites is supported")
  end
  local link = cfg.links[1]
  if link then
    link.channels = link.channels or 1
    if not link.sites and #cfg.sites == 2 then
      link.sites = { cfg.sites[1].name, cfg.sites[2].name }
    elseif link.sites then
      if #link.sites ~= 2 or link.sites[1] == link.sites[2] then
        fail(link.line, "Sites", "must name the two sites, e.g. Sites=hd,ma")
      else
        for _, n in ipairs(link.sites) do
          if not cfg.site_by_name[n] then
            fail(link.line, "Sites", string.format("unknown site '%s'", n))
          end
        end
      end
    end
    cfg.link = link
  end

  local by_name = {}
  for _, p in ipairs(cfg.profiles) do
    if by_name[p.name] then
      fail(p.line, p.class and "ClassName" or "ProfileName",
        string.format("'%s' already defined at line %d", p.name, by_name[p.name].line))
    elseif not p.class and set_of(M.CLASSES)[p.name] then
      fail(p.line, "ProfileName", string.format("'%s' is a class name: use ClassName=%s", p.name, p.name))
    end
    by_name[p.name] = p
    if p.template then
      if not p.size then fail(p.line, "Size", "missing (required with Template)") end
      for _, k in ipairs({ { "ops", "Ops" }, { "bytes", "Bytes" }, { "exchange", "Exchange" } }) do
        if p[k[1]] then fail(p.line, k[2], "cannot be given with Template") end
      end
    else
      for _, k in ipairs({ { "ops", "Ops" }, { "bytes", "Bytes" }, { "exchange", "Exchange" } }) do
        if not p[k[1]] then fail(p.line, k[2], "missing (required without Template)") end
      end
      if p.size then fail(p.line, "Size", "only meaningful with Template") end
    end
  end
  cfg.profile_by_name = by_name

  local pol = cfg.policy
  if pol.default_profile and not by_name[pol.default_profile] and not cfg.broken.profile then
    fail(cfg.policy_lines.default_profile, "DefaultProfile",
      string.format("unknown profile '%s'", pol.default_profile))
  end
  local aff = pol.default_affinity
  if aff ~= "auto" and aff ~= "pin" and aff ~= "span" and not cfg.site_by_name[aff] then
    fail(cfg.policy_lines.default_affinity, "DefaultAffinity",
      string.format("'%s' is not auto, pin, span or a site name", aff))
  end
end

--- Read a whole file.
-- @return its text, or nil, "FILE: cannot open|read: reason", and whether
--   the file does not exist
function M.read_file(filename)
  local f, err, code = io.open(filename, "rb")
  if not f then
    return nil, string.format("%s: cannot open: %s", filename, (tostring(err):gsub("^[^:]*: ", ""))),
      code == 2
  end
  local text, rerr = f:read("*a")
  f:close()
  if not text then
    return nil, string.format("%s: cannot read: %s", filename, tostring(rerr)), false
  end
  return text
end

--- Read and parse a file.
-- @return the configuration, or nil, message, array of messages
function M.load(filename)
  local text, err = M.read_file(filename)
  if not text then return nil, err, { err } end
  return M.parse(text, filename)
end

--- Where xsite.conf is: `$XSITE_CONF`, else next to `$SLURM_CONF`, else /etc/slurm.
-- @param getenv optional, defaults to os.getenv
function M.locate(getenv)
  getenv = getenv or os.getenv
  local explicit = getenv("XSITE_CONF")
  if explicit and explicit ~= "" then return explicit end
  local slurm_conf = getenv("SLURM_CONF")
  if slurm_conf and slurm_conf ~= "" then
    local dir = slurm_conf:match("^(.*)/[^/]*$")
    if not dir then return "xsite.conf" end
    return dir .. "/xsite.conf"
  end
  return "/etc/slurm/xsite.conf"
end

--- slurm.conf's value of a key (the last one; nil when absent), from
-- slurm.conf's text.
function M.slurm_conf_value(text, key)
  local value
  key = key:lower()
  for line in text:gmatch("[^\n]+") do
    local k, v = line:gsub("#.*", ""):match("^%s*([%w]+)%s*=%s*(%S+)")
    if k and k:lower() == key then value = v end
  end
  return value
end

--- The partitions slurm.conf's text defines (its PartitionName= lines, a
-- line ending in `\` joined with the next, as Slurm does; not those of
-- files it includes): name -> MinNodes (a line without one takes the last
-- `PartitionName=DEFAULT` line's, else 1), and `default`, the name of the
-- one with Default=YES (or true, or 1).
-- @return { min = { name -> MinNodes }, default = name or nil }
function M.slurm_partitions(text)
  local out, default_min = { min = {} }, 1
  for line in text:gsub("\\\r?\n", " "):gmatch("[^\n]+") do
    local l = line:gsub("#.*", "")
    local part = l:match("^%s*[Pp][Aa][Rr][Tt][Ii][Tt][Ii][Oo][Nn][Nn][Aa][Mm][Ee]%s*=%s*(%S+)")
    if part then
      local low = l:lower()
      local v = tonumber(low:match("%f[%w]minnodes%s*=%s*(%d+)"))
      if v and v >= 1e9 then v = nil end
      if part:lower() == "default" then
        default_min = v or default_min
      else
        out.min[part] = v or default_min
        local d = low:match("%f[%w]default%s*=%s*(%w+)")
        if d == "yes" or d == "true" or d == "1" then out.default = part end
      end
    end
  end
  return out
end

--- The licenses slurm.conf's text declares (Licenses=a:2,b; read as
-- xsite.units.license_items reads a list), name -> count (an item whose
-- count is not a whole number is left out).
function M.slurm_licenses(text)
  local out = {}
  for _, item in ipairs(units.license_items(M.slurm_conf_value(text, "Licenses") or "")) do
    if item[2] then out[item[1]] = (out[item[1]] or 0) + item[2] end
  end
  return out
end

--- Whether slurm.conf declares the link's license as xsite.conf's License=
-- has it (a NAME@SERVER license lives in slurmdbd: not looked for).
-- @param licenses slurm.conf's, from `slurm_licenses`
-- @return true, or false and what slurm.conf says instead
function M.license_declared(cfg, licenses)
  local lic = cfg.link and cfg.link.license
  if not lic or lic.name:find("@", 1, true) then return true end
  local count = licenses[lic.name]
  if count == lic.count then return true end
  return false, count and string.format("slurm.conf says %s:%d", lic.name, count)
    or "slurm.conf declares no license " .. lic.name
end

--- A cached configuration: re-read at most every `interval` seconds and parsed
-- again only when the text changed.  A bad new text keeps the last good
-- configuration in force.
-- @param filename the file
-- @param interval seconds between checks (default 5)
-- @param clock optional function returning seconds (default os.time)
-- @param opts optional: `parse` (function(text, filename), default
--   `M.parse`), `missing_ok` (a missing file is no error and drops the
--   last good value: for the link state file), `read` (function(filename)
--   returning text or nil, message, missing; default `M.read_file`)
-- @return an object with method `get()` returning the value (the last good
--   one, or nil), the error message of the last read if it failed, and
--   `true` as third value the first time an error is given
function M.cache(filename, interval, clock, opts)
  clock = clock or os.time
  interval = interval or 5
  local parse = opts and opts.parse
  local missing_ok = opts and opts.missing_ok
  local read = opts and opts.read or M.read_file
  local self = { filename = filename }
  local text, good, last_err
  local checked = nil
  function self.get()
    local now = clock()
    if checked and now - checked < interval then
      return good, last_err, false
    end
    checked = now
    local new_text, msg, missing = read(filename)
    if new_text == nil then
      text = nil
      if missing and missing_ok then
        good, last_err = nil, nil
        return nil, nil, false
      end
      local fresh = msg ~= last_err
      last_err = msg
      return good, last_err, fresh
    end
    if new_text == text then
      return good, last_err, false
    end
    text = new_text
    local value, perr = (parse or M.parse)(new_text, filename)
    if value then
      good, last_err = value, nil
      return good, nil, false
    end
    last_err = perr
    return good, perr, true
  end
  return self
end

--- A configuration's text with keys of the global (policy) lines set:
-- each key given is taken out of the line that sets it (the other keys of
-- that line stay; its comments go) and written on a line of its own at the
-- end.  What deployments and the testbed use to point a configuration at
-- their own files (e.g. LinkStateFile, ReportDir) through the one parser.
-- @param text the configuration's text (it must be valid)
-- @param filename its name, for messages
-- @param settings array of { key, value } (keys of the global lines)
-- @return the new text, or nil and the messages (file:line, or the key)
function M.set_global(text, filename, settings)
  local cfg, err = M.parse(text, filename)
  if not cfg then return nil, err end
  local set = {}
  for _, kv in ipairs(settings) do
    local e = KEYS.global[kv[1]:lower()]
    if not e then return nil, string.format("%s: not a key of xsite.conf's global lines", kv[1]) end
    local v, verr = e[3](kv[2])
    if v == nil then return nil, e[1] .. ": " .. verr end
    if kv[2]:find('[%s"#]') then return nil, e[1] .. ": a value with a blank, '\"' or '#' cannot be written" end
    set[e[1]:lower()] = e[1] .. "=" .. kv[2]
  end
  local physical = {}
  for raw in (text .. "\n"):gmatch("([^\n]*)\n") do physical[#physical + 1] = raw end
  if physical[#physical] == "" then physical[#physical] = nil end
  local replace = {}  -- first physical line -> the logical line without the keys set
  for _, l in ipairs(logical_lines(text)) do
    local kv = assert(tokenize(l.text))
    if #kv > 0 and not RECORD_KIND[kv[1][1]:lower()] then
      local kept, hit = {}, false
      for _, pair in ipairs(kv) do
        if set[pair[1]:lower()] then
          hit = true
        else
          kept[#kept + 1] = pair[1] .. "=" .. (pair[2]:find('[%s#]') and '"' .. pair[2] .. '"' or pair[2])
        end
      end
      if hit then replace[l.line] = { last = l.last, text = table.concat(kept, " ") } end
    end
  end
  local out, i = {}, 1
  while i <= #physical do
    local r = replace[i]
    if r then
      if r.text ~= "" then out[#out + 1] = r.text end
      i = r.last + 1
    else
      out[#out + 1] = physical[i]
      i = i + 1
    end
  end
  for _, kv in ipairs(settings) do
    local line = set[kv[1]:lower()]
    if line then
      out[#out + 1] = line
      set[kv[1]:lower()] = nil
    end
  end
  local new = table.concat(out, "\n") .. "\n"
  local ok, nerr = M.parse(new, filename)
  if not ok then return nil, nerr end
  return new
end

--- The syntax of xsite.conf for the other files written in it (the state
-- files of xsite.state): call fn(line number, key=value pairs) for each
-- logical line of text, until it returns nil and a message.
-- @return true, or nil and "file:line: message"
function M.each_line(text, filename, fn)
  for _, l in ipairs(logical_lines(text or "")) do
    local kv, terr = tokenize(l.text)
    if not kv then return nil, string.format("%s:%d: %s", filename, l.line, terr) end
    local ok, err = fn(l.line, kv)
    if not ok then return nil, string.format("%s:%d: %s", filename, l.line, err) end
  end
  return true
end

--- A value checked by a schema entry { Key, field, checker } (an entry of
-- `M.key`, or one made with `M.checkers`).
-- @return the value, or nil and "Key: message"
function M.check_value(e, text)
  local v, verr = e[3](text)
  if v == nil then return nil, e[1] .. ": " .. verr end
  return v
end

--- The schema entry of a key of xsite.conf: kind ("site", "link",
-- "profile", "global") and the key in lower case.
function M.key(kind, key)
  return KEYS[kind] and KEYS[kind][key]
end

--- The value checkers of xsite.conf, for other files in its syntax:
-- `quantity(kind, opts)`, `integer(min)`, `enum(list)`.
M.checkers = { quantity = quantity, integer = integer, enum = enum }

return M
