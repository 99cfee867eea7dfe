--- Application profiles: how a job communicates.
--
-- A `--comm-profile` value is one of: the name of a profile of xsite.conf
-- (`ProfileName=gromacs …`), a class (`low`, `medium`, `high`, defined by the
-- admin with `ClassName=`), or explicit model parameters
-- `op=…,b=…,x=…[,steps=…][,pattern=…]` (see xsite.model).
-- @module xsite.profile

local units = require("xsite.units")
local config = require("xsite.config")
local keep = require("xsite.keep")

local M = {}

local find, match, sub = string.find, string.match, string.sub

-- Keys of an explicit spec: field, kind of quantity, required.
local EXPLICIT = {
  op = { "ops", "count", true },
  b = { "bytes", "bytes", true },
  x = { "exchange", "bytes", true, { zero = true } },
  steps = { "steps", "count", false, { zero = true } },
}
local REQUIRED = {}
for key, e in pairs(EXPLICIT) do
  if e[3] then REQUIRED[#REQUIRED + 1] = key end
end
table.sort(REQUIRED)
local PATTERNS = {}
for _, p in ipairs(config.PATTERNS) do PATTERNS[p] = true end

--- Parse an explicit spec `op=…,b=…,x=…[,steps=…][,pattern=…]`.
-- @return profile, or nil and a message naming the bad field
function M.parse_explicit(spec)
  if type(spec) ~= "string" or spec == "" then
    return nil, "empty profile"
  end
  local prof = { name = spec, kind = "explicit" }
  -- each item up to a comma (an empty one too) in one match from where the
  -- last ended: a new explicit profile is parsed under slurmctld's locks
  local pos, n = 1, #spec
  while pos <= n + 1 do
    local key, value, after = match(spec, "^%s*([%a_]+)%s*=%s*([^,]*)()", pos)
    if not key then
      local comma = find(spec, ",", pos, true)
      return nil, string.format("'%s' is not key=value", sub(spec, pos, comma and comma - 1 or n))
    end
    pos = after + 1
    -- the trailing blanks off in one pass ("^(.-)%s*$" backtracks over
    -- them once for every character before them)
    if value:find("%s$") then value = value:match("^(.*%S)") or "" end
    local e = EXPLICIT[key]
    if not e and key ~= "pattern" then
      key = key:lower()
      e = EXPLICIT[key]
    end
    if key == "pattern" then
      if prof.pattern then return nil, "pattern: given twice" end
      if not PATTERNS[value:lower()] then
        return nil, string.format("pattern: '%s' is not one of %s", value,
          table.concat(config.PATTERNS, ", "))
      end
      prof.pattern = value:lower()
    elseif not e then
      return nil, string.format("%s: unknown field (op, b, x, steps, pattern)", key)
    else
      if prof[e[1]] then return nil, key .. ": given twice" end
      local v, err = units.parse(value, e[2], e[4])
      if not v then return nil, key .. ": " .. err end
      if key == "steps" and v ~= math.floor(v) then
        return nil, string.format("steps: '%s' is not a whole number", value)
      end
      prof[e[1]] = v
    end
  end
  for _, key in ipairs(REQUIRED) do
    if not prof[EXPLICIT[key][1]] then
      return nil, string.format("%s: missing (op=, b= and x= are required)", key)
    end
  end
  prof.steps = prof.steps or 0
  prof.pattern = prof.pattern or "alltoall"
  prof.label = spec:find("%s") and spec:gsub("%s", "") or spec
  return prof
end

--- The longest `--comm-profile` value resolved (a profile's name or an
-- explicit spec is far shorter): a longer one is refused before it is
-- parsed or kept.  The policy in slurmctld and the report in root's
-- slurmstepd, which reads the value from the job's environment, both
-- resolve through here.
M.MAX_TEXT = 256

--- The most explicit `--comm-profile` texts kept parsed (a full cache keeps
-- no new text, and starts over at most every xsite.keep.RESTART_AFTER
-- seconds).
M.EXPLICIT_CACHE_MAX = 256

local explicit_cache, explicit_count = {}, keep.new()

-- A profile with the measured fields of its profile state entry, made once
-- per entry (so that the model's remembered evaluations stay valid).
local function tuned_profile(p, entry)
  local merged = entry.merged
  if merged and merged.base == p then return merged.profile end
  local t = {}
  for k, v in pairs(p) do t[k] = v end
  t.exchange = entry.exchange or p.exchange
  t.steps = entry.steps or p.steps
  t.measured = true
  entry.merged = { base = p, profile = t }
  return t
end

--- How many explicit profile texts are kept parsed now (for tests).
function M.explicit_cached()
  return explicit_count.kept
end

--- Resolve a `--comm-profile` value against a configuration.
-- @param spec the value, or nil for the configuration's DefaultProfile
-- @param cfg a configuration from xsite.config
-- @param tuned optional profile state (xsite.state.parse_profiles):
--   a named profile there takes its measured Exchange and Steps
-- @return profile, or nil and a message.  An explicit profile the cache
--   did not keep has `transient` set: it is parsed again the next time, so
--   what is worked out from it (xsite.model.evaluate_cached) is not kept
--   either.
function M.resolve(spec, cfg, tuned)
  if spec == nil or spec == "" then
    spec = cfg.policy.default_profile
    if not spec then return nil, "no --comm-profile given and no DefaultProfile configured" end
  end
  if type(spec) ~= "string" then return nil, "profile must be a string" end
  if #spec > M.MAX_TEXT then
    return nil, string.format("%d characters, more than the %d it may have", #spec, M.MAX_TEXT)
  end
  if spec:find("=") then
    -- explicit specs repeat (job arrays, scripts): parse each text once,
    -- keeping the profile or the message (a string)
    local hit = explicit_cache[spec]
    if hit then
      if type(hit) == "string" then return nil, hit end
      return hit
    end
    local prof, err = M.parse_explicit(spec)
    local kept = keep.admit(explicit_count, M.EXPLICIT_CACHE_MAX)
    if kept == "restart" then explicit_cache = {} end
    if kept then
      explicit_cache[spec] = prof or err
    elseif prof then
      prof.transient = true
    end
    return prof, err
  end
  local p = cfg.profile_by_name[spec]
  if not p then
    local names = {}
    for _, q in ipairs(cfg.profiles) do names[#names + 1] = q.name end
    table.sort(names)
    return nil, string.format("unknown profile '%s' (known: %s; or op=…,b=…,x=…)", spec,
      #names > 0 and table.concat(names, ", ") or "none")
  end
  if tuned and tuned[spec] and not p.template then return tuned_profile(p, tuned[spec]) end
  return p
end

--- A profile in one word, for records and messages: its name, or an
-- explicit spec without blanks (it resolves to the same profile again).
function M.label(prof)
  return prof.label or prof.name
end

return M
