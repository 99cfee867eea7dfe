--- The placement policy: keep a job at one site, or let it span both.
--
-- `decide` is a pure function: a job request, a configuration and the link's
-- state in; a decision out (what to do, the constraint to set, the reason, the
-- line for the user and the record for `admin_comment`).  It never raises on
-- bad user input: a bad flag value becomes a `reject` decision whose message
-- names the flag.  job_submit.lua applies the decision; `xsite explain` prints it.
-- @module xsite.policy

local model = require("xsite.model")
local profile = require("xsite.profile")
local units = require("xsite.units")
local hostlist = require("xsite.hostlist")

local M = {}

--- Version of the record written to admin_comment.
M.RECORD_VERSION = 1

-- Why codes in the record, and the text a user reads for each.
local WHY = {
  off = "xsite policy is off",
  ["one-node"] = "a one-node job is always at one site",
  within = "spanning would be %s slower than one site (within the limit %s)",
  slowdown = "spanning would be %s slower than one site (limit %s)",
  ["user-site"] = "you asked for site %s",
  ["user-pin"] = "you asked for one site",
  ["user-span"] = "you asked to span both sites",
  ["user-constraint"] = "your --constraint already selects site %s",
  ["user-nodes"] = "you asked for nodes by name (--nodelist) at %s",
  ["link-down"] = "the link between the sites is down",
  oversize = "no single site has %d nodes",
}

local function ratio(x)
  return string.format("%.2fx", x)
end

-- The effective link: configured, or as measured and written to the link
-- state.  The same configuration and state give the same table, so that
-- evaluations can be remembered by link.
local links = setmetatable({}, { __mode = "k" })
local NO_STATE = {}

local function effective_link(cfg, state)
  local by_state = links[cfg]
  if not by_state then
    by_state = setmetatable({}, { __mode = "k" })
    links[cfg] = by_state
  end
  local eff = by_state[state or NO_STATE]
  if eff then return eff end
  local link = cfg.link
  eff = { bandwidth = link.bandwidth, latency = link.latency,
    channels = link.channels, state = "up", source = "config" }
  if state then
    eff.state = state.state or "up"
    if state.bandwidth then eff.bandwidth, eff.source = state.bandwidth, "measured" end
    if state.latency then eff.latency, eff.source = state.latency, "measured" end
  end
  by_state[state or NO_STATE] = eff
  return eff
end
M.effective_link = effective_link

-- Site features named by a user constraint.
local function sites_in_constraint(cfg, features)
  local found = {}
  if not features or features == "" then return found end
  for word in features:gmatch("[%w_%-%.]+") do
    local s = cfg.site_by_feature[word]
    if s then found[#found + 1] = s end
  end
  return found
end

-- Combine the user's constraint with the one xsite adds.  Slurm allows one
-- bracket group per constraint: when the user already has one, xsite keeps
-- the user's constraint whole and says so.
-- @return the combined constraint, or nil and why
local function merge(user, add)
  if not add then return user end
  if not user or user == "" then return add end
  if user:find("[%[%]]") then
    return nil, "your --constraint has its own [...] group"
  end
  if user:find("[|]") then user = "(" .. user .. ")" end
  return user .. "&" .. add
end
M.merge = merge

local function pin_constraint(sites)
  if #sites == 1 then return sites[1].feature end
  local f = {}
  for i, s in ipairs(sites) do f[i] = s.feature end
  return "[" .. table.concat(f, "|") .. "]"
end

local function fitting_sites(cfg, n)
  local out = {}
  for _, s in ipairs(cfg.sites) do
    if #s.nodes >= n then out[#out + 1] = s end
  end
  return out
end

-- Site names as the record writes them: "a|b" (either), "a+b" (both).
local function site_names(sites)
  local t = {}
  for i, s in ipairs(sites) do t[i] = s.name end
  return table.concat(t, "|")
end

-- The admin_comment record: one line of key=value words, documented in
-- docs/admin-guide.md and parsed by `M.parse_record`.  Built with one
-- format call: slurmctld runs this for every job under its locks.
local function record(d)
  local head = string.format("xsite v=%d action=%s why=%s mode=%s n=%s", M.RECORD_VERSION,
    d.action, d.why, d.mode, tostring(d.nodes))
  local e, l = d.prediction, d.link
  if not e then return head end
  return string.format("%s sites=%s profile=%s split=%d+%d t_one=%.6g t_span=%.6g slowdown=%.4f max=%.4g" ..
    " link=%s,%.6g,%.6g,%s%s%s", head, d.sites or "none", d.profile, e.nA, e.nB, e.t_one, e.t_span,
    e.slowdown, d.max_slowdown, l.state, l.bandwidth, l.latency, l.source,
    d.wait4switch and " wait4switch=" .. d.wait4switch or "",
    d.constraint and " constraint=" .. d.constraint or "")
end

--- Parse a record written by `decide` back into a table (values as strings).
-- @return table, or nil and a message
function M.parse_record(text)
  if type(text) ~= "string" then return nil, "no record" end
  local body = text:match("xsite v=%d+[^\n;]*")
  if not body then return nil, "no xsite record in the text" end
  local out = {}
  for k, v in body:gmatch("(%w+)=(%S+)") do out[k] = v end
  return out
end

--- Check a `--site-affinity` value: auto, pin, span or a site's name.
-- @return true, or nil and a message listing the valid values
function M.check_affinity(cfg, value)
  if value == "auto" or value == "pin" or value == "span" or cfg.site_by_name[value] then
    return true
  end
  local valid = { "auto", "pin", "span" }
  for _, s in ipairs(cfg.sites) do valid[#valid + 1] = s.name end
  return nil, string.format("unknown site '%s' (valid: %s)", tostring(value), table.concat(valid, ", "))
end

--- Decide where a job runs.
-- @param req a table: `cfg` (xsite.config), `nodes` (the job's node count),
--   `affinity` (`--site-affinity`, nil for the configured default),
--   `profile` (`--comm-profile`, nil for the default), `features` (the user's
--   constraint), `time_limit` (seconds, optional), `topology` (true when
--   topology/tree is configured), `link_state` (optional: `{ state, bandwidth, latency }`),
--   `profile_state` (optional: measured profiles, xsite.config.parse_profile_state)
-- @return a decision: `action` (`span`, `pin`, `site`, `reject` or `none`),
--   `why`, `features` (the new constraint, nil for unchanged), `req_switch`,
--   `wait4switch`, `message` (one line for the user), `record`, `prediction`
function M.decide(req)
  local cfg = req.cfg
  local pol = cfg.policy
  local d = { mode = pol.mode, nodes = req.nodes, max_slowdown = pol.max_slowdown }
  -- the user's own constraint, kept in the record so that a later
  -- modification can decide again from it
  if req.features and req.features ~= "" and not req.features:find("%s") then
    d.constraint = req.features
  end
  local function finish(action, why, text)
    if pol.mode == "advise" and action == "reject" and why ~= "bad-request" then
      -- advice never rejects for policy reasons: it says what enforce would do
      action, text = "none", "would be rejected under Mode=enforce: " .. text
    end
    d.action, d.why = action, why
    d.reason = text
    if action == "reject" then
      d.message = "xsite: job rejected: " .. text
    else
      local verb
      if action == "span" then
        verb = "may span both sites"
      elseif action == "pin" then
        verb = "pinned to one site (" .. d.sites:gsub("|", " or ") .. ")"
      elseif action == "site" then
        verb = "pinned to site " .. d.sites
      else
        verb = "no placement change"
      end
      d.message = string.format("xsite: %s%s: %s", verb,
        pol.mode == "advise" and action ~= "none" and " (advice only, Mode=advise)" or "", text)
      if d.warning then d.message = d.message .. "; " .. d.warning end
    end
    if pol.mode == "advise" and action ~= "reject" then
      d.features, d.req_switch, d.wait4switch = nil, nil, nil
    end
    d.record = record(d)
    return d
  end

  if pol.mode == "off" then return finish("none", "off", WHY.off) end

  local n = req.nodes
  if type(n) ~= "number" or n < 1 or n ~= math.floor(n) then
    return finish("reject", "bad-request", string.format("node count '%s' is not a positive whole number",
      tostring(n)))
  end

  local affinity = req.affinity
  if affinity == nil or affinity == "" then affinity = pol.default_affinity end
  local ok, aerr = M.check_affinity(cfg, affinity)
  if not ok then return finish("reject", "bad-request", "--site-affinity: " .. aerr) end
  local target = cfg.site_by_name[affinity]

  local prof, perr = profile.resolve(req.profile, cfg, req.profile_state)
  if not prof then
    return finish("reject", "bad-request", "--comm-profile: " .. perr)
  end
  d.profile = profile.label(prof)

  local fitting = fitting_sites(cfg, n)
  -- Requests that cannot be met need no prediction.
  if target and n > #target.nodes then
    d.sites = target.name
    return finish("reject", "oversize", string.format(
      "--site-affinity=%s: site %s has %d nodes, the job asks for %d",
      affinity, target.name, #target.nodes, n))
  end
  if affinity == "pin" and #fitting == 0 and n > 1 then
    return finish("reject", "oversize", "--site-affinity=pin: " .. string.format(WHY.oversize, n))
  end

  local link = effective_link(cfg, req.link_state)
  d.link = link
  local link_down = link.state == "down"
  local ev = model.evaluate_cached(cfg, prof, n, link)
  d.prediction = ev

  local user_sites = sites_in_constraint(cfg, req.features)

  -- Nodes asked for by name: the user has placed the job already.
  if req.req_nodes and req.req_nodes ~= "" then
    local names = hostlist.expand(req.req_nodes)
    local seen, list = {}, {}
    for _, name in ipairs(names or {}) do
      local s = cfg.site_of_node[name]
      if s and not seen[s] then seen[s], list[#list + 1] = true, s end
    end
    if #list > 0 then
      d.sites = site_names(list)
      return finish(#list > 1 and "span" or "site", "user-nodes",
        string.format(WHY["user-nodes"], d.sites:gsub("|", " and ")))
    end
  end

  local function constrain(add)
    local merged, why = merge(req.features, add)
    if merged == nil then
      d.warning = why .. ": xsite added no site constraint"
      return
    end
    d.features = merged
  end

  local function pin(why, text)
    d.sites = site_names(fitting)
    constrain(pin_constraint(fitting))
    return finish("pin", why, text)
  end

  -- The user named a site, or constrained the job to one already.
  if target then
    d.sites = target.name
    if #user_sites > 0 and user_sites[1] ~= target then
      return finish("reject", "bad-request", string.format(
        "--site-affinity=%s conflicts with --constraint naming feature %s of site %s",
        affinity, user_sites[1].feature, user_sites[1].name))
    end
    if #user_sites == 0 then constrain(target.feature) end
    return finish("site", "user-site", string.format(WHY["user-site"], target.name))
  end
  if #user_sites == 1 and affinity ~= "span" then
    d.sites = user_sites[1].name
    return finish("site", "user-constraint", string.format(WHY["user-constraint"], user_sites[1].name))
  end

  if n == 1 then return finish("none", "one-node", WHY["one-node"]) end

  local slow_text = string.format(WHY.slowdown, ratio(ev.slowdown), ratio(pol.max_slowdown))

  if affinity == "pin" then return pin("user-pin", WHY["user-pin"]) end

  if affinity == "span" then
    if link_down then
      if #fitting == 0 then
        return finish("reject", "link-down", "--site-affinity=span: " .. WHY["link-down"])
      end
      return pin("link-down", WHY["link-down"] .. "; --site-affinity=span cannot be honoured")
    end
    if #user_sites > 0 then
      return finish("reject", "bad-request", string.format(
        "--site-affinity=span conflicts with --constraint naming feature %s of site %s",
        user_sites[1].feature, user_sites[1].name))
    end
    local A, B = cfg.sites[1], cfg.sites[2]
    d.sites = A.name .. "+" .. B.name
    local user = req.features
    if user and user ~= "" and user:find("^[%w_%-%.&]+$") then
      -- Slurm applies a feature outside a count group to no node of it:
      -- the user's features go inside, with each site's
      d.features = string.format("[(%s&%s)*%d&(%s&%s)*%d]", user, A.feature, ev.nA, user, B.feature, ev.nB)
    else
      constrain(string.format("[%s*%d&%s*%d]", A.feature, ev.nA, B.feature, ev.nB))
    end
    return finish("span", "user-span", WHY["user-span"] ..
      string.format(" (%d+%d nodes; predicted %s slower than one site)", ev.nA, ev.nB, ratio(ev.slowdown)))
  end

  -- auto: the model decides.
  if link_down then
    if #fitting > 0 then return pin("link-down", WHY["link-down"]) end
  elseif ev.slowdown <= pol.max_slowdown then
    d.sites = "any"
    local wait = req.time_limit and math.floor(req.time_limit * (ev.slowdown - 1)) or 0
    if req.topology and #fitting > 0 and wait >= 1 then
      -- Wait for one site for at most the time spanning would lose.
      d.req_switch = 1
      d.wait4switch = wait
    end
    return finish("span", "within", string.format(WHY.within, ratio(ev.slowdown), ratio(pol.max_slowdown)))
  elseif #fitting > 0 then
    return pin("slowdown", slow_text)
  end

  -- Larger than any site, and spanning costs too much (or the link is down).
  local why_text = string.format(WHY.oversize, n) .. "; " ..
    (link_down and WHY["link-down"] or slow_text)
  if pol.oversize == "reject" then
    return finish("reject", "oversize", why_text)
  end
  d.sites = "any"
  if pol.oversize == "warn" then
    d.warning = "running anyway (OversizeAction=warn)"
  end
  return finish("span", "oversize", why_text)
end

--- A text summary of a decision's prediction for `xsite explain`.
function M.describe(d)
  local e = d.prediction
  if not e then return d.message end
  return string.format("%s\n  nodes %d (split %d+%d)  t_one %s  t_span %s  slowdown %s  limit %s  link %s, %s (%s)",
    d.message, e.n, e.nA, e.nB, units.format_time(e.t_one), units.format_time(e.t_span),
    ratio(e.slowdown), ratio(d.max_slowdown), units.format_bandwidth(d.link.bandwidth),
    units.format_time(d.link.latency), d.link.state)
end

return M
