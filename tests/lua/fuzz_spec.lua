-- Generated-input (fuzz) specs of every parser: hostlist.expand, config.parse,
-- profile.parse_explicit, units.parse (each kind), state.parse_link
-- and json.decode; and what root runs in slurmstepd on a job owner's traffic
-- record, report.step_end (fewer cases: each builds a record), whose record
-- report.text must then print without a control character on every Lua.
--
-- Each parser gets CASES inputs: a third random bytes, a third random tokens
-- of its grammar, a third valid inputs, most of them mutated.  For every case
-- the call must not raise, must return within LIMIT VM instructions, and must
-- give either a valid result or nil and a non-empty message.  The generator is a Park-Miller generator written here,
-- so a seed gives the same cases on every Lua version; the seed is in the
-- test names (set XSITE_FUZZ_SEED to try another).  A failure prints the
-- case number and the input.

local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local FIXTURES = h.fixtures

local hostlist = require("xsite.hostlist")
local config = require("xsite.config")
local states = require("xsite.state")
local profile = require("xsite.profile")
local units = require("xsite.units")
local json = require("xsite.json")

-- Busted runs a spec in an environment whose globals are looked up through
-- metatables; the hot loops below use locals only.
local pcall, type, tostring, ipairs = pcall, type, tostring, ipairs
local string, table, math = string, table, math

local SEED = math.floor(tonumber(os.getenv("XSITE_FUZZ_SEED") or "") or 20261122)
local CASES = 100000

-- Park-Miller "minimal standard" generator, multiplier 48271: every product
-- stays below 2^53, so integers (5.3+) and doubles (5.1, 5.2) agree.
local function new_rng(seed)
  local s = seed % 2147483646 + 1
  return function(n)
    s = (s * 48271) % 2147483647
    return s % n + 1
  end
end

local BYTE = {}
for i = 0, 255 do BYTE[i + 1] = string.char(i) end

local function pick(r, list) return list[r(#list)] end

local function random_bytes(r, maxlen)
  local t = {}
  for i = 1, r(maxlen + 1) - 1 do t[i] = BYTE[r(256)] end
  return table.concat(t)
end

local function random_tokens(r, tokens, maxn)
  local t = {}
  for i = 1, r(maxn) do t[i] = pick(r, tokens) end
  return table.concat(t)
end

-- One to three edits: delete a slice, insert a token, overwrite a byte,
-- duplicate a slice, cut the end.
local function mutate(r, s, tokens)
  for _ = 1, r(3) do
    local n = #s
    local i = r(n + 1)
    local op = r(5)
    if op == 1 and n > 0 then
      s = s:sub(1, i - 1) .. s:sub(i + r(4))
    elseif op == 2 then
      s = s:sub(1, i - 1) .. pick(r, tokens) .. s:sub(i)
    elseif op == 3 and n > 0 then
      s = s:sub(1, i - 1) .. BYTE[r(256)] .. s:sub(i + 1)
    elseif op == 4 and n > 0 then
      local j = math.min(n, i + r(8) - 1)
      s = s:sub(1, j) .. s:sub(i, j) .. s:sub(j + 1)
    else
      s = s:sub(1, i - 1)
    end
  end
  return s
end

-- The inputs of one parser: every third i random bytes (at most `bytes`),
-- every third random tokens (at most `count`), and every third a valid
-- text from `valid(r)`, kept whole once in `keep` times and else mutated.
local function generator(valid, tokens, bytes, count, keep)
  return function(r, i)
    local mode = i % 3
    if mode == 0 then return random_bytes(r, bytes) end
    if mode == 1 then return random_tokens(r, tokens, count) end
    local s = valid(r)
    if r(keep) == 1 then return s end
    return mutate(r, s, tokens)
  end
end

local function finite(v) return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end
local function whole(v) return finite(v) and v == math.floor(v) end

-- nil when (a, b) is "nil and a non-empty message", else why not.
local function is_error(a, b)
  if a ~= nil then return "returned " .. tostring(a) .. " with a message" end
  if type(b) ~= "string" or b == "" then return "nil without a message (" .. tostring(b) .. ")" end
  return nil
end

-- A parser that loops forever would stop the suite: a count hook turns a
-- call that runs more than LIMIT VM instructions into an error.  The slowest
-- good case here takes well under a million.
local LIMIT = 5000000
local in_call = false
local function runaway()
  if in_call then
    error("did not return within " .. LIMIT .. " VM instructions (a loop?)", 0)
  end
end

-- Run CASES cases; `gen(r, i)` makes an input, `call(input)` runs the parser,
-- `check(input, ...)` returns nil for an acceptable outcome or why not.
local function run(salt, gen, call, check, cases)
  local r = new_rng(SEED + salt)
  local failures = {}
  local old_hook, old_mask, old_count = debug.gethook()
  for i = 1, cases or CASES do
    local input = gen(r, i)
    in_call = true
    debug.sethook(runaway, "", LIMIT)  -- also restarts the count
    local ok, a, b, c = pcall(call, input)
    in_call = false
    local why
    if not ok then
      why = "raised: " .. tostring(a)
    else
      why = check(input, a, b, c)
    end
    if why then
      failures[#failures + 1] = string.format("case %d: %s\n  input: %q", i, why, input)
      if #failures == 5 then break end
    end
  end
  debug.sethook(old_hook, old_mask, old_count)
  assert.is_true(#failures == 0, "seed " .. SEED .. ":\n" .. table.concat(failures, "\n"))
end

local read = h.read

-- hostlist --------------------------------------------------------------

local HOST_TOKENS = { "a", "hd", "node", "r", "n", "-ib", ".", "_", "-", "-", "0", "1", "2", "7", "01",
  "001", "10", "99", "140", "[", "[", "]", "]", ",", ",", ",", " ", "\\", '"', "\n", "=", "\195\164",
  "%", "/", "x", "1-3", "3-1", "[1-2]", "[01-10]", "[]" }

local function valid_hostlist(r)
  local items = {}
  for i = 1, r(2) do
    local parts = { pick(r, { "a", "hd", "node", "r", "x-y", "c_d.e" }) }
    for _ = 1, r(3) - 1 do
      local ranges = {}
      for k = 1, r(2) do
        local lo = r(120) - 1
        local width = pick(r, { 0, 0, 2, 3 })
        local f = "%0" .. width .. "d"
        if r(2) == 1 then
          ranges[k] = string.format(f, lo)
        else
          ranges[k] = string.format(f, lo) .. "-" .. string.format(f, lo + r(6) - 1)
        end
      end
      parts[#parts + 1] = "[" .. table.concat(ranges, ",") .. "]"
      if r(2) == 1 then parts[#parts + 1] = pick(r, { "n", "-ib", "x", ".m" }) end
    end
    items[i] = table.concat(parts)
  end
  return table.concat(items, ",")
end

local gen_hostlist = generator(valid_hostlist, HOST_TOKENS, 24, 14, 4)

local sorted_unique = h.sorted_unique

local function same_list(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if a[i] ~= b[i] then return false end
  end
  return true
end

local function check_hostlist(input, names, err)
  if names == nil then return is_error(names, err) end
  if type(names) ~= "table" then return "returned a " .. type(names) end
  if #names == 0 then return "empty list" end
  if #names > hostlist.MAX_HOSTS then return #names .. " names, more than MAX_HOSTS" end
  for _, n in ipairs(names) do
    if type(n) ~= "string" or not n:find("^[%w%-_%.]+$") then return "bad name " .. tostring(n) end
  end
  -- Without brackets the list is the comma-separated names as written.
  if not input:find("[%[%]]") then
    local want = {}
    for item in (input .. ","):gmatch("([^,]*),") do want[#want + 1] = item end
    if not same_list(want, names) then return "names differ from the comma-separated input" end
  end
  -- compress must give back the same set of names.
  if #names <= 32 then
    local c = hostlist.compress(names)
    local back, berr = hostlist.expand(c)
    if not back then return "compress gave '" .. c .. "', which does not expand: " .. berr end
    table.sort(back)
    if not same_list(sorted_unique(names), back) then return "compress gave '" .. c .. "', another set" end
  end
  return nil
end

-- units ------------------------------------------------------------------

local UNIT_TOKENS = { "0", "1", "2", "5", "9", "42", "930", "0.5", ".", ".", "e", "E", "+", "-", "1e3", "e-3",
  "9223372036854775807", "18014398509481984", "1e400", "1e-400", "0x", " ", "\t", "s", "ms", "us",
  "\194\181s", "ns", "B", "kB", "KB", "MB", "GB", "TB", "PB", "EB", "KiB", "MiB", "GiB", "TiB", "PiB",
  "/s", "/s", "ps", "b", "bit", "Gb", "Mbit", "F", "GF", "flop/s", "Flop/s", "FLOPS", "k", "K", "M", "G",
  "T", "P", "i", "/", "inf", "nan", "%", "\0", "," }

local VALID_UNITS = {
  time = { "s", "ms", "us", "\194\181s", "ns" },
  bytes = { "", "B", "kB", "KB", "MB", "GB", "TB", "PB", "EB", "KiB", "MiB", "GiB", "TiB", "PiB" },
  bandwidth = { "B/s", "MB/s", "GB/s", "KiB/s", "GiB/s", "Mb/s", "Gb/s", "Mbit/s", "Gbit/s", "Gbps", "MBps" },
  flops = { "F", "MF", "GF", "TF", "Gflop/s", "GFlop/s", "GFLOPS" },
  count = { "", "k", "K", "M", "G", "T", "P" },
  number = { "" },
}

local function random_number(r)
  local m = r(5)
  if m == 1 then return tostring(r(1000) - 1) end
  if m == 2 then return (r(1000) - 1) .. "." .. r(100) end
  if m == 3 then return r(9) .. "e" .. pick(r, { "", "-", "+" }) .. r(20) end
  if m == 4 then return "." .. r(999) end
  return tostring(r(2147483646))
end

local function gen_unit(kind)
  return generator(function(r)
    return random_number(r) .. (r(6) == 1 and " " or "") .. pick(r, VALID_UNITS[kind])
  end, UNIT_TOKENS, 12, 6, 3)
end

local function check_unit(zero)
  return function(_, v, err)
    if v == nil then return is_error(v, err) end
    if not finite(v) then return "not a finite number: " .. tostring(v) end
    if v < 0 then return "negative: " .. tostring(v) end
    if v == 0 and not zero then return "0 without zero = true" end
    return nil
  end
end

-- profile ----------------------------------------------------------------

local PROFILE_TOKENS = { "op", "b", "x", "steps", "pattern", "OP", "Steps", "PATTERN", "foo", "=", "=", "=",
  ",", ",", ",", " ", "1e12", "8GB", "1GB", "0", "0B", "1.5", "100", "2k", "halo3d", "tree", "none", "ring",
  "\\", '"', "\n", "_", "GB/s", "1e400", "9223372036854775807KiB", "-1" }

local PATTERNS = {}
for _, p in ipairs(config.PATTERNS) do PATTERNS[p] = true end

local function valid_profile(r)
  local fields = {
    "op=" .. random_number(r) .. pick(r, VALID_UNITS.count),
    "b=" .. random_number(r) .. pick(r, VALID_UNITS.bytes),
    "x=" .. random_number(r) .. pick(r, VALID_UNITS.bytes),
  }
  if r(2) == 1 then fields[#fields + 1] = "steps=" .. r(100000) end
  if r(2) == 1 then fields[#fields + 1] = "pattern=" .. pick(r, config.PATTERNS) end
  for k = #fields, 2, -1 do
    local j = r(k)
    fields[k], fields[j] = fields[j], fields[k]
  end
  return table.concat(fields, ",")
end

local gen_profile = generator(valid_profile, PROFILE_TOKENS, 40, 16, 4)

local function check_profile(input, p, err)
  if p == nil then return is_error(p, err) end
  if type(p) ~= "table" then return "returned a " .. type(p) end
  if p.kind ~= "explicit" or p.name ~= input then return "wrong kind or name" end
  if not finite(p.ops) or p.ops <= 0 then return "bad ops " .. tostring(p.ops) end
  if not finite(p.bytes) or p.bytes <= 0 then return "bad bytes " .. tostring(p.bytes) end
  if not finite(p.exchange) or p.exchange < 0 then return "bad exchange " .. tostring(p.exchange) end
  if not whole(p.steps) or p.steps < 0 then return "bad steps " .. tostring(p.steps) end
  if not PATTERNS[p.pattern] then return "bad pattern " .. tostring(p.pattern) end
  return nil
end

-- config -----------------------------------------------------------------

local CONFIG_KEYS = { "SiteName", "Nodes", "Feature", "CoresPerNode", "CorePeak", "MemBandwidth",
  "NetBandwidth", "NetLatency", "LinkName", "Sites", "Bandwidth", "Latency", "Channels", "ProfileName",
  "ClassName", "Description", "Template", "Size", "Iterations", "Ops", "Bytes", "Exchange", "Steps",
  "Pattern", "Mode", "MaxSlowdown", "OversizeAction", "DefaultProfile", "DefaultAffinity",
  "LinkStateFile", "FailMode", "ReportDir", "Colour" }

local CONFIG_VALUES = { "a", "b", "c", "a[1-4]", "b[1-4]", "a[1-2],b1", "x[1-3]-ib", "a,b", "a,c", "8", "0",
  "1.5", "10GF", "20GB/s", "1Gb/s", "2us", "9ms", "1e12", "1GB", "0B", "100k", "low", "medium", "high",
  "halo3d", "tree", "linpack", "enforce", "advise", "off", "auto", "pin", "span", "reject", "warn",
  "/run/x", "open", '"quoted value"', '"', "1.25", "0.5", "a[", "]", "" }

local CONFIG_TOKENS = { " ", " ", " ", "\n", "\n", "\\\n", "#", '"', "\t", "\r\n", "=", ",", "\\" }

local function config_token(r)
  local m = r(4)
  if m <= 2 then
    local key = pick(r, CONFIG_KEYS)
    if r(4) == 1 then key = key:upper() elseif r(4) == 1 then key = key:lower() end
    return key .. "=" .. pick(r, CONFIG_VALUES) .. " "
  elseif m == 3 then
    return pick(r, CONFIG_TOKENS)
  end
  return pick(r, CONFIG_VALUES)
end

local CONFIG_MUTATION_TOKENS = {}
for _, t in ipairs(CONFIG_TOKENS) do CONFIG_MUTATION_TOKENS[#CONFIG_MUTATION_TOKENS + 1] = t end
for _, t in ipairs(CONFIG_VALUES) do CONFIG_MUTATION_TOKENS[#CONFIG_MUTATION_TOKENS + 1] = t end
for _, t in ipairs(CONFIG_KEYS) do CONFIG_MUTATION_TOKENS[#CONFIG_MUTATION_TOKENS + 1] = " " .. t .. "=" end

local function split_lines(text)
  local lines = {}
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
  return lines
end

-- Line edits: drop, repeat or swap lines.
local function mutate_lines(r, text)
  local lines = split_lines(text)
  for _ = 1, r(2) do
    local i, j = r(#lines), r(#lines)
    local op = r(3)
    if op == 1 then
      table.remove(lines, i)
    elseif op == 2 then
      table.insert(lines, j, lines[i])
    else
      lines[i], lines[j] = lines[j], lines[i]
    end
    if #lines == 0 then break end
  end
  return table.concat(lines, "\n")
end

local BASES

local function gen_config(r, i)
  local mode = i % 3
  if mode == 0 then return random_bytes(r, 120) end
  if mode == 1 then
    local t = {}
    for k = 1, r(30) do t[k] = config_token(r) end
    return table.concat(t)
  end
  -- mostly the small base: the full one costs ten times as much to parse
  local base = r(24) == 1 and pick(r, BASES.big) or pick(r, BASES.small)
  local s = base
  if r(3) == 1 then s = mutate_lines(r, s) end
  if r(6) ~= 1 then s = mutate(r, s, CONFIG_MUTATION_TOKENS) end
  return s
end

local PROFILE_KINDS = { "ops", "bytes", "exchange" }

local function check_cfg(cfg)
  if type(cfg) ~= "table" then return "returned a " .. type(cfg) end
  if #cfg.sites ~= 2 then return #cfg.sites .. " sites" end
  local owner = {}
  for _, s in ipairs(cfg.sites) do
    if type(s.name) ~= "string" or cfg.site_by_name[s.name] ~= s then return "site without its name" end
    if type(s.nodes) ~= "table" or #s.nodes == 0 then return "site " .. s.name .. " without nodes" end
    for _, n in ipairs(s.nodes) do
      if owner[n] then return "node " .. n .. " twice (sites " .. owner[n] .. " and " .. s.name .. ")" end
      owner[n] = s.name
      if cfg.site_of_node[n] ~= s then return "site_of_node wrong for " .. n end
    end
    if not whole(s.cores) or s.cores < 1 then return "bad cores" end
    for _, k in ipairs({ "core_peak", "mem_bw", "net_bw", "net_latency" }) do
      if not finite(s[k]) or s[k] <= 0 then return "bad " .. k .. " " .. tostring(s[k]) end
    end
  end
  if cfg.sites[1].feature == cfg.sites[2].feature then return "one feature for two sites" end
  local link = cfg.link
  if type(link) ~= "table" then return "no link" end
  if not finite(link.bandwidth) or link.bandwidth <= 0 then return "bad link bandwidth" end
  if not finite(link.latency) or link.latency <= 0 then return "bad link latency" end
  if not whole(link.channels) or link.channels < 1 then return "bad channels" end
  if type(link.sites) ~= "table" or #link.sites ~= 2 or link.sites[1] == link.sites[2]
    or not cfg.site_by_name[link.sites[1]] or not cfg.site_by_name[link.sites[2]] then
    return "bad link sites"
  end
  local pol = cfg.policy
  if not ({ enforce = true, advise = true, off = true })[pol.mode] then return "bad mode" end
  if not finite(pol.max_slowdown) or pol.max_slowdown < 1 then return "bad MaxSlowdown" end
  if not ({ reject = true, warn = true, allow = true })[pol.oversize] then return "bad OversizeAction" end
  if pol.default_profile and not cfg.profile_by_name[pol.default_profile] then return "unknown DefaultProfile" end
  local aff = pol.default_affinity
  if aff ~= "auto" and aff ~= "pin" and aff ~= "span" and not cfg.site_by_name[aff] then
    return "bad DefaultAffinity"
  end
  for _, p in ipairs(cfg.profiles) do
    if type(p.name) ~= "string" or cfg.profile_by_name[p.name] ~= p then return "profile without its name" end
    if p.template then
      if not finite(p.size) or p.size <= 0 then return "template without size" end
    else
      for _, k in ipairs(PROFILE_KINDS) do
        if not finite(p[k]) or p[k] < 0 or (k ~= "exchange" and p[k] == 0) then return "bad " .. k end
      end
    end
    if p.steps ~= nil and (not whole(p.steps) or p.steps < 0) then return "bad steps" end
    if p.pattern ~= nil and not PATTERNS[p.pattern] then return "bad pattern" end
  end
  return nil
end

local function check_config(input, cfg, msg, errs)
  if cfg ~= nil then return check_cfg(cfg) end
  local why = is_error(cfg, msg)
  if why then return why end
  if type(errs) ~= "table" or #errs == 0 then return "no array of errors" end
  if table.concat(errs, "\n") ~= msg then return "message is not the errors joined" end
  local _, newlines = input:gsub("\n", "")
  for _, e in ipairs(errs) do
    local line = e:match("^fuzz%.conf:(%d+): %S")
    if line then
      line = tonumber(line)
      if line < 1 or line > newlines + 1 then return "line " .. line .. " out of the file: " .. e end
    elseif not e:find("^fuzz%.conf: %S") then
      return "error without file name: " .. e
    end
  end
  return nil
end

-- link state --------------------------------------------------------------

local STATE_TOKENS = { "State", "state", "STATE", "Bandwidth", "Latency", "Time", "time", "=", "=", "up", "down",
  "degraded", "UP", "sideways", "930MB/s", "1GB/s", "145us", "1ms", "1700000000", "-1", "1.5", "0", " ", " ",
  "\n", "#", "\\", '"', "\r", "Colour" }

local function valid_state(r)
  local fields = { "State=" .. pick(r, { "up", "degraded", "down", "UP" }) }
  if r(2) == 1 then fields[#fields + 1] = "Bandwidth=" .. random_number(r) .. pick(r, VALID_UNITS.bandwidth) end
  if r(2) == 1 then fields[#fields + 1] = "Latency=" .. random_number(r) .. pick(r, VALID_UNITS.time) end
  if r(2) == 1 then fields[#fields + 1] = "Time=" .. r(2000000000) end
  for k = #fields, 2, -1 do
    local j = r(k)
    fields[k], fields[j] = fields[j], fields[k]
  end
  return table.concat(fields, pick(r, { " ", "\n", " \\\n" })) .. "\n"
end

local gen_state = generator(valid_state, STATE_TOKENS, 60, 14, 4)

local function check_state(_, st, err)
  if st == nil then
    local why = is_error(st, err)
    if why then return why end
    if not err:find("^fuzz%.state:%d+: %S") and not err:find("^fuzz%.state: %S") then
      return "message without the file name: " .. err
    end
    return nil
  end
  if type(st) ~= "table" then return "returned a " .. type(st) end
  if not ({ up = true, degraded = true, down = true })[st.state] then return "bad state" end
  if st.bandwidth ~= nil and (not finite(st.bandwidth) or st.bandwidth <= 0) then return "bad bandwidth" end
  if st.latency ~= nil and (not finite(st.latency) or st.latency <= 0) then return "bad latency" end
  if st.time ~= nil and (not whole(st.time) or st.time < 0) then return "bad time" end
  return nil
end

-- json ---------------------------------------------------------------------

local JSON_TOKENS = { "{", "}", "[", "]", ":", ",", ",", '"', '"a"', '"key"', "\\", "\\u", "d83d", "\\ude00",
  "\\n", "0", "1", "-", "01", "1.5", "e", "E+", "1e999", "true", "false", "null", "tru", " ", "\n", "\t", "\0",
  "\1", "\194\181" }

local function valid_json(r, depth)
  local m = r(depth > 2 and 4 or 6)
  if m == 1 then return tostring(r(2000) - 1000) end
  if m == 2 then return '"' .. pick(r, { "a", "x y", "\\n", "\\u00b5", "\\ud83d\\ude00", "" }) .. '"' end
  if m == 3 then return pick(r, { "true", "false", "null", "1.5e3", "-0.25" }) end
  if m == 4 then return '"s"' end
  local items = {}
  for k = 1, r(4) - 1 do
    local v = valid_json(r, depth + 1)
    items[k] = m == 5 and v or ('"k' .. k .. '":' .. v)
  end
  if m == 5 then return "[" .. table.concat(items, ",") .. "]" end
  return "{" .. table.concat(items, ",") .. "}"
end

local gen_json = generator(function(r) return valid_json(r, 0) end, JSON_TOKENS, 30, 16, 4)

local function check_json(input, v, err)
  if v == nil then
    local why = is_error(v, err)
    if why then return why end
    local at = tonumber(err:match("^offset (%d+): %S"))
    if not at then return "message without an offset: " .. err end
    if at < 1 or at > #input + 1 then return "offset outside the text: " .. err end
    return nil
  end
  local ok, text = pcall(json.encode, v)
  if not ok then return "decoded value does not encode: " .. tostring(text) end
  local back, berr = json.decode(text)
  if back == nil then return "encode of the decoded value does not decode: " .. berr end
  return nil
end

-- report.step_end on a traffic record: libxsite's, built here, then mutated
-- with tokens of JSON and values a field should never hold.

local report = require("xsite.report")
local safe = require("xsite.text")

local TRAFFIC_TOKENS = { "-1", "1e999", "1.5", "0", "18446744073709551616", '"x"', '"\\u001b[2J"', "null", "[]",
  "{}", "[[[[[[[[[[1]]]]]]]]]]", ",", ":", "{", "}", "[", "]", '"', "\0", "\27", "\255", '"gamma":[0]',
  '"alpha":[0,0]', string.rep("9", 400) }

local TRAFFIC_START

local function gen_traffic(r, i)
  if i % 10 == 0 then return random_bytes(r, 200) end
  local ranks = r(6)
  local sites, matrix, edges = { alpha = json.array({}), beta = json.array({}) }, json.array({}), json.array({})
  for k = 0, ranks - 1 do
    local list = sites[k % 2 == 0 and "alpha" or "beta"]
    list[#list + 1] = k
    local row = json.array({})
    for j = 1, ranks do
      row[j] = r(100000) - 1
      if row[j] % 2 == 0 then edges[#edges + 1], edges[#edges + 2], edges[#edges + 3] = k, j - 1, row[j] end
    end
    matrix[k + 1] = row
  end
  local p2p, coll, pm, cm = r(1e6), r(1e6), r(1e3), r(1e3)
  local s = json.encode({ version = 1, job = r(2) == 1 and 42 or "42", step = 0, ranks = ranks, sites = sites,
    cross = { bytes = p2p + coll, messages = pm + cm, p2p_bytes = p2p, p2p_messages = pm, coll_bytes = coll,
      coll_messages = cm }, matrix = r(3) == 1 and json.null or matrix })
  if r(3) == 1 then s = s:gsub('"matrix":%b[]', '"matrix":null,"edges":' .. json.encode(edges)) end
  if r(5) == 1 then return s end
  return mutate(r, s, TRAFFIC_TOKENS)
end

local function step_end(text)
  return report.step_end(TRAFFIC_START, 1010, text, nil, nil)
end

local function check_traffic(_, rec, log)
  local ok, err = report.validate(rec)
  if not ok then return "not a valid record: " .. err end
  for _, line in ipairs(log) do
    -- printable text is what xsite.text.printable leaves as it is
    if safe.printable(line, #line) ~= line then return "a log line with a control character: " .. line end
  end
  local shown, text = pcall(report.text, rec, nil, 1.1)
  if not shown then return "report.text raised: " .. tostring(text) end
  if text:gsub("\n", ""):find("%c") then return "a control character in report.text" end
  return nil
end

-- the specs ----------------------------------------------------------------

describe("fuzz (seed " .. SEED .. ", " .. CASES .. " cases per parser)", function()
  local saved_max
  setup(function()
    -- Keep one case cheap: at most 20000 names (the limit itself is in hostlist_spec).
    saved_max = hostlist.MAX_HOSTS
    hostlist.MAX_HOSTS = 20000
    BASES = {
      small = { read(FIXTURES .. "minimal.conf"),
        read(FIXTURES .. "minimal.conf") .. "Mode=advise MaxSlowdown=1.5 DefaultProfile=p\n"
          .. "ProfileName=p Ops=1e12 Bytes=1GB Exchange=10MB Steps=100 Pattern=halo2d\n"
          .. "ClassName=low Template=fft2d Size=4k\n" },
      big = { read(FIXTURES .. "full.conf"), read(h.root .. "/site-configs/testbed.conf") },
    }
  end)
  teardown(function() hostlist.MAX_HOSTS = saved_max end)

  it("hostlist.expand returns names or nil and a message, never raises (seed " .. SEED .. ")", function()
    run(1, gen_hostlist, hostlist.expand, check_hostlist)
  end)

  for k, kind in ipairs({ "time", "bytes", "bandwidth", "flops", "count", "number" }) do
    it("units.parse(" .. kind .. ") returns a finite value > 0 (>= 0 with zero) or nil and a message (seed "
      .. SEED .. ")", function()
      local zero = false
      run(10 + k, gen_unit(kind), function(text)
        zero = not zero
        return units.parse(text, kind, zero and { zero = true } or nil)
      end, function(input, v, err)
        return check_unit(zero)(input, v, err)
      end)
    end)
  end

  it("profile.parse_explicit returns a valid profile or nil and a message (seed " .. SEED .. ")", function()
    run(20, gen_profile, profile.parse_explicit, check_profile)
  end)

  it("config.parse returns a consistent configuration or nil and file:line messages (seed " .. SEED .. ")",
    function()
      run(30, gen_config, function(text) return config.parse(text, "fuzz.conf") end, check_config)
    end)

  it("json.decode returns a value that encodes again, or nil and a message with an offset (seed " .. SEED
    .. ")", function()
    run(50, gen_json, json.decode, check_json)
  end)

  it("state.parse_link returns a valid state or nil and a file:line message (seed " .. SEED .. ")",
    function()
      run(40, gen_state, function(text) return states.parse_link(text, "fuzz.state") end, check_state)
    end)

  it("report.step_end takes any traffic record into a valid record that prints clean (seed " .. SEED .. ")",
    function()
      local c = assert(config.parse(read(h.root .. "/site-configs/testbed.conf"), "testbed.conf"))
      TRAFFIC_START = json.encode(report.step_start(c, { job = "42", step = "0", user = "alice", uid = "1001",
        job_nodes = "alpha1,beta1", profile = "medium", start = 1000 }))
      run(60, gen_traffic, step_end, check_traffic, 3000)
    end)
end)
