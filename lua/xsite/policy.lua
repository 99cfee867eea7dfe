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
local constraint = require("xsite.constraint")
local record = require("xsite.record")
local load = require("xsite.load")

local M = {}

-- Why codes in the record, and the text a user reads for each.
local WHY = {
  off = "xsite policy is off",
  ["one-node"] = "a one-node job is always at one site",
  within = "spanning would be %.2fx slower than one site (within the limit %.2fx)",
  slowdown = "spanning would be %.2fx slower than one site (limit %.2fx)",
  ["user-site"] = "you asked for site %s",
  ["user-pin"] = "you asked for one site",
  ["user-span"] = "you asked to span both sites",
  ["user-constraint"] = "your --constraint already keeps the job at site %s",
  ["user-nodes"] = "you asked for nodes by name (--nodelist) at %s",
  het = "a heterogeneous job runs at one site, and its first component is at %s",
  ["het-first"] = "a heterogeneous job runs at one site unless --site-affinity=span",
  ["link-down"] = "the link between the sites is down",
  ["link-busy"] = "the link's licenses are held by other jobs: %s",
  oversize = "no single site has %d nodes",
}

--- The longest --site-affinity or --comm-profile value the policy reads
-- (a site's name or an explicit profile is far shorter): a longer one is
-- refused before it is parsed, kept in a cache or quoted in a message.
-- The same limit as xsite.profile's, which holds wherever a profile is
-- resolved.
M.MAX_FLAG = profile.MAX_TEXT

-- The flags whose values the policy reads as text: request field, flag.
local FLAG_VALUES = { { "affinity", "--site-affinity" }, { "profile", "--comm-profile" } }

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

local function pin_constraint(sites)
  if #sites == 1 then return sites[1].feature end
  local f = {}
  for i, s in ipairs(sites) do f[i] = s.feature end
  return "[" .. table.concat(f, "|") .. "]"
end

-- Site names as the record writes them: "a|b" (either), "a+b" (both).
local function site_names(sites, sep)
  local t = {}
  for i, s in ipairs(sites) do t[i] = s.name end
  return table.concat(t, sep or "|")
end

-- The sites of `list` that are also in `allowed` (a list of sites).
local function within(list, allowed)
  local ok, out = {}, {}
  for _, s in ipairs(allowed) do ok[s] = true end
  for _, s in ipairs(list) do
    if ok[s] then out[#out + 1] = s end
  end
  return out
end

-- Whether `site` is one of the sites of `list`.
local function has(list, site)
  for _, s in ipairs(list) do
    if s == site then return true end
  end
  return false
end

-- Whether every site of `list` is in `allowed` (`#within(list, allowed) ==
-- #list`, without the tables).
local function all_in(list, allowed)
  for _, s in ipairs(list) do
    if not has(allowed, s) then return false end
  end
  return true
end

-- An empty list of sites, shared and never written to: the sites of a job
-- that names no nodes.
local NONE = {}

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

-- A user's text as a message quotes it: at most 60 characters, no control
-- characters.
local function quote(text)
  text = tostring(text)
  if #text > 60 then text = text:sub(1, 57) .. "..." end
  return "'" .. text:gsub("%c", "?") .. "'"
end
M.quote = quote

--- Whether a Slurm license request ("a:2,b", "a|b", "a@db:1", "a=2;b":
-- xsite.units.license_items) names the license `name` (case aside: it
-- must not slip past by its spelling).
function M.names_license(request, name)
  local _, named = units.license_units(request, name)
  return named
end

--- How old (seconds) a link load (LinkLoadFile) may be for the policy to
-- use it; an older one is left out, as if there were none.
M.LOAD_MAX_AGE = 120

--- A share of the link (0 to 1) in units of a license of `count`: rounded
-- up, at least 1, at most `count`.
function M.link_units(share, count)
  return math.min(count, math.max(1, math.ceil(share * count - 1e-9)))
end

-- The steps of `decide` are functions of this module, not closures: one
-- closure a step, and the upvalues they share, would cost slurmctld a few
-- dozen allocations a job.  Before the job's shape is known they take the
-- decision `d` and the request `req`; after, `job`, what decide has found
-- out (see there).

-- The link's license that a job that may span holds a share of, or nil
-- (none configured, or `req.license` is false).
local function link_license(req)
  local link = req.cfg.link
  return req.license ~= false and link and link.license or nil
end

-- A job that may span holds its share of the link in the link's licenses
-- (at least one, at most all of them), added to its own: Slurm starts no
-- more spanning work than the licenses cover.  Nothing when the link has
-- no License=, or when root's own --licenses already name it.
-- @return nil, or why the job must be refused
local function hold_link(d, req)
  local pol, lic = req.cfg.policy, link_license(req)
  local own = req.licenses
  if own == "" then own = nil end
  if not lic or not d.prediction or (own and M.names_license(own, lic.name)) then return nil end
  local held = M.link_units(d.prediction.link_share, lic.count)
  if own and own:find("|", 1, true) and pol.mode == "enforce" then
    return string.format("--licenses %s asks for one of several; this job may span and must also hold %d " ..
      "of the link's licenses (%s), which Slurm cannot add to an OR: use ',' or submit it without --licenses",
      quote(own), held, lic.name)
  end
  d.link_units = held
  d.licenses = (own and own .. "," or "") .. lic.name .. ":" .. held
  d.warning = (d.warning and d.warning .. "; " or "") .. string.format(
    "it %s %d of the link's %d licenses (%s) while it runs",
    pol.mode == "advise" and "would hold" or "holds", held, lic.count, lic.name)
  return nil
end

-- The decision `d` for the request `req`, completed: its action, why, the
-- user's message and the record.
local function finish(d, req, action, why, text)
  local pol = req.cfg.policy
  if pol.mode == "advise" and action == "reject" and why ~= "bad-request" then
    -- advice never rejects for policy reasons: it says what enforce would do
    action, text = "none", "would be rejected under Mode=enforce: " .. text
  end
  if action == "span" then
    local refuse = hold_link(d, req)
    if refuse then action, why, text = "reject", "licenses", refuse end
  end
  d.action, d.why, d.reason = action, why, text
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
    d.features, d.prefer, d.req_switch, d.wait4switch, d.licenses = nil, nil, nil, nil, nil
  end
  d.record = record.format(d)
  return d
end

-- Why a job may not span: the model's slowdown past the limit.
local function slow_text(ev, pol)
  return string.format(WHY.slowdown, ev.slowdown, pol.max_slowdown)
end

-- The link's licenses when too few are free for this job (a fresh link
-- load, License= asked for): how long it would wait for them, and for one
-- of `sites` (nil: never).  Nil when it need not wait.
local function link_busy(job, sites)
  local req, lic = job.req, link_license(job.req)
  local ld = req.link_load
  if not lic or not ld or not ld.license or not req.now or req.now - ld.time > M.LOAD_MAX_AGE then return nil end
  local held = ld.license
  local need = M.link_units(job.ev.link_share, lic.count)
  if held.total - held.used >= need then return nil end
  local b = { need = need, held = held, link = load.link_wait(ld, need, req.now) }
  for _, s in ipairs(sites) do
    local w = load.site_wait(ld, s.name, job.n, req.now)
    if w and (not b.site or w < b.site) then b.site, b.site_name = w, s.name end
  end
  job.d.link_wait, job.d.site_wait = b.link, b.site
  return b
end

local function wait_text(w)
  return w and "about " .. units.round_time(w) or "until the jobs without a time limit end"
end

local function busy_text(b)
  return string.format("%d of %d held, this job needs %d and would wait %s for them", b.held.used,
    b.held.total, b.need, wait_text(b.link))
end

-- Whether the job must be kept at one site by that site's own feature, not
-- by a choice of sites (`[a|b]`): its --nodelist names nodes to choose from
-- at both sites.  Slurm reads such a list as nodes the job must have again
-- whenever a change of the pending job fails half-way (each change starts
-- from the list as given, and only its end reads it as nodes to choose
-- from), and a choice of sites does not hold nodes the job must have to
-- one site (on the testbed, Slurm 24.11: a job of [site_alpha|site_beta]
-- ran on alpha1 and beta1).
local function single_site(job)
  return job.pool ~= nil and #job.named > 1
end

-- Whether the user's own constraint (`a`: the job's ua or pa) keeps the
-- job at one of the sites of `allowed` already.
local function kept_within(job, a, allowed)
  return not job.het and a.one_site and all_in(a.sites, allowed) and (#a.sites == 1 or not single_site(job))
end

-- Add the site constraint `add` for `allowed` to the user's own `own`
-- (`a` its analysis, `flag` its option) as d[field], unless it keeps the
-- job at one of them already.
-- @return nil, or why it cannot take it (the refusal's text)
local function pin_into(job, field, own, a, flag, allowed, add, text)
  if kept_within(job, a, allowed) then return nil end
  local merged, why_not = constraint.combine(own, a, add)
  if not merged then
    return string.format("%s %s: %s; xsite must keep this job at %s (%s)", flag, quote(own), why_not,
      #allowed == 1 and "site " .. allowed[1].name or "one site", text)
  end
  job.d[field] = merged
  return nil
end

-- Keep the job at the sites of `allowed` (one of them), adding to the
-- user's constraint and --prefer; one that cannot take it is refused.
local function keep_at(job, allowed, action, why, text)
  local d, het = job.d, job.het
  d.sites = site_names(allowed)
  if het then d.het = allowed[1].name end
  local add = pin_constraint(het and { allowed[1] } or allowed)
  local refusal = pin_into(job, "features", job.user, job.ua, "--constraint", allowed, add, text) or
    (job.pa and pin_into(job, "prefer", job.prefer, job.pa, "--prefer", allowed, add, text))
  if refusal then return finish(d, job.req, "reject", "constraint", refusal) end
  return finish(d, job.req, action, why, text)
end

-- Why the nodes --nodelist names keep the job from running at `site` alone
-- (the text after "--nodelist names"), or nil: a node of another site the
-- job gets, or, nodes to choose from, fewer than it needs at `site`.
local function nodelist_refuses(job, site)
  if job.pool then
    local k = job.pool[site]
    if k < job.n then
      return string.format("%d node%s at site %s, and the job needs %d", k, k == 1 and "" or "s", site.name, job.n)
    end
    return nil
  end
  for _, s in ipairs(job.named) do
    if s ~= site then return "nodes at site " .. s.name end
  end
  return nil
end

-- The sites that can hold the job and that its constraint and node list
-- allow (nodes to choose from: enough of them there): where it may be kept.
local function one_site_choices(job)
  local sites = within(job.fitting, job.ua.sites)
  if #job.named == 1 then sites = within(sites, job.named) end
  local pool = job.pool
  if pool then
    local out = {}
    for _, s in ipairs(sites) do
      if pool[s] >= job.n then out[#out + 1] = s end
    end
    sites = out
  end
  return sites
end

-- Keep the job at one site that can hold it (and that its constraint and
-- node list allow).
local function pin(job, why, text)
  local sites = one_site_choices(job)
  local het, named, ua = job.het, job.named, job.ua
  if het then sites = { sites[1] } end
  if #sites > 1 and single_site(job) then
    -- the site with the most of the nodes to choose from (the first of
    -- equals)
    local best = sites[1]
    for _, s in ipairs(sites) do
      if job.pool[s] > job.pool[best] then best = s end
    end
    sites = { best }
  end
  if #sites == 0 then
    return finish(job.d, job.req, "reject", why == "user-pin" and "oversize" or why, string.format(
      "%s, and no site can take all %d nodes%s", text, job.n,
      job.pool and " among those --nodelist names" or
      #named == 1 and " with the nodes --nodelist names at " .. named[1].name or
      (#ua.sites < #job.req.cfg.sites and " among those --constraint allows" or "")))
  end
  return keep_at(job, sites, (#sites == 1 and (het or #named == 1 or #ua.sites == 1)) and "site" or "pin",
    why, text)
end

-- May the job span?  Link up, and asked for or within the model's limit.
-- (A job no site can hold spans as OversizeAction says.)
local function may_span(job)
  local d, pol, affinity = job.d, job.req.cfg.policy, job.affinity
  if job.override_span then
    d.override = job.req.override
    return true
  end
  if job.link_down then return false, WHY["link-down"] end
  if affinity == "span" then return true end
  if affinity == "auto" and job.ev.slowdown <= pol.max_slowdown then return true end
  if affinity == "auto" and #job.fitting == 0 and pol.oversize ~= "reject" then
    if pol.oversize == "warn" then d.warning = "running anyway (OversizeAction=warn)" end
    return true
  end
  return false, affinity == "pin" and "--site-affinity=pin" or slow_text(job.ev, pol)
end

--- Decide where a job runs.
-- @param req a table: `cfg` (xsite.config), `nodes` (the fewest nodes the
--   job can get), `max_nodes` (the most it can get; default `nodes`),
--   `topless` (true when the job gave no top to its node count: then a
--   count in its constraint or --prefer lets it get any number of nodes),
--   `affinity` (`--site-affinity`, nil for the configured default),
--   `profile` (`--comm-profile`, nil for the default), `features` (the user's
--   constraint), `prefer` (the user's `--prefer`: Slurm schedules with it
--   instead of `features` where it can, so a pin goes into both),
--   `req_nodes` (the user's `--nodelist`, a hostlist),
--   `nodelist_sites` (instead of `req_nodes`: the sites it named and how
--   many nodes of each, "a:2+b:1", as a record keeps them; "a+b" from an
--   older record), `nodelist_min` (Slurm 23.02 and later: the job's own
--   --nodes minimum, nil when it gave none: a --nodelist of more nodes is
--   the set its nodes are chosen from, not nodes it must have), `het` (a
--   component of a
--   heterogeneous job: `{ offset = k, site = NAME|"span"|nil }`, `site` being
--   where its first component went), `time_limit` (seconds, optional),
--   `topology` (true when topology/tree is configured), `override` (the
--   uid of root or SlurmUser submitting: their `--site-affinity=span` holds
--   even with the link down), `link_state`
--   (optional: `{ state, bandwidth, latency }`), `profile_state` (optional:
--   measured profiles, xsite.state.parse_profiles), `license` (false: ask
--   for no license even with the link's License= set; job_submit.lua passes
--   it when slurm.conf does not declare the license), `licenses` (the
--   user's own `--licenses`: kept, the link's share added to it),
--   `tres_licenses` (the licenses of its `--tres-per-task`, which Slurm
--   23.02 and later add to the job's: a license list),
--   `link_load` (optional: xsite.state.parse_load, used when at most
--   M.LOAD_MAX_AGE old at `now`), `now` (seconds since the epoch),
--   `pin_one_node` (a one-node job is pinned like any other: a job decided
--   again with the link down, so that every job it leaves is at one site)
-- @return a decision: `action` (`span`, `pin`, `site`, `reject` or `none`),
--   `why`, `features` (the new constraint, nil for unchanged), `prefer`
--   (the new `--prefer`, nil for unchanged), `req_switch`,
--   `wait4switch`, `licenses` (for a job that may span, with the link's
--   License= set: "NAME:N", its share of the link; `link_units` is N),
--   `message` (one line for the user), `record`, `prediction`, `het` (for a
--   heterogeneous job's component: the site all its components go to, or
--   "span"), `link_wait` and `site_wait` (seconds, when the link's
--   licenses were all held: the estimated waits for them and for one site;
--   nil for never), `single_site` (true when its --nodelist names nodes to
--   choose from at both sites: only a site's own feature keeps it at one)
function M.decide(req)
  local cfg = req.cfg
  local pol = cfg.policy
  local lic = link_license(req)
  local d = { mode = pol.mode, nodes = req.nodes, max_slowdown = pol.max_slowdown }

  if pol.mode == "off" then return finish(d, req, "none", "off", WHY.off) end

  local n = req.nodes
  if type(n) ~= "number" or n < 1 or n ~= math.floor(n) then
    return finish(d, req, "reject", "bad-request", string.format("node count '%s' is not a positive whole number",
      tostring(n)))
  end

  local affinity = req.affinity
  if affinity == nil or affinity == "" then affinity = pol.default_affinity end
  for _, f in ipairs(FLAG_VALUES) do
    local v = req[f[1]]
    if type(v) == "string" and #v > M.MAX_FLAG then
      return finish(d, req, "reject", "bad-request", string.format("%s: %d characters, more than the %d it may have",
        f[2], #v, M.MAX_FLAG))
    end
  end
  local ok, aerr = M.check_affinity(cfg, affinity)
  if not ok then return finish(d, req, "reject", "bad-request", "--site-affinity: " .. aerr) end
  if lic and pol.mode == "enforce" and req.override == nil then
    for _, own in ipairs({ { req.licenses, "--licenses" }, { req.tres_licenses, "--tres-per-task" } }) do
      if own[1] and M.names_license(own[1], lic.name) then
        return finish(d, req, "reject", "bad-request", string.format("%s %s: %s is the link's share, which xsite " ..
          "gives a job that may span; submit without it", own[2], quote(own[1]), lic.name))
      end
    end
  end
  local target = cfg.site_by_name[affinity]

  -- The user's constraint: which sites it allows, whether it keeps the job
  -- at one site.  The record keeps it, so that a later modification can
  -- decide again from it.
  local user = req.features
  if user == "" then user = nil end
  local ua, cerr = constraint.analyse(user, cfg)
  if not ua then
    return finish(d, req, "reject", "bad-request", string.format("--constraint %s: %s", quote(user), cerr))
  end
  d.constraint = user
  -- --prefer: where Slurm can meet it, it schedules the job with it
  -- instead of --constraint, so what keeps the job at a site must hold
  -- for it too.  The record keeps the user's own, as it keeps the
  -- constraint.
  local prefer = req.prefer
  if prefer == "" then prefer = nil end
  local pa
  if prefer then
    local perr
    pa, perr = constraint.analyse(prefer, cfg)
    if not pa then
      return finish(d, req, "reject", "bad-request", string.format("--prefer %s: %s", quote(prefer), perr))
    end
    d.user_prefer = prefer
    -- A constraint that keeps the job at one site keeps its preference
    -- there too, whatever is decided below (a one-node job's as well), so
    -- that a later change of the job's size finds the preference pinned:
    -- Slurm may apply such a change without the --prefer xsite sets with it.
    if ua.one_site and not req.het and not (pa.one_site and all_in(pa.sites, ua.sites)) then
      local merged, why_not = constraint.combine(prefer, pa, pin_constraint(ua.sites))
      local ma
      if merged then ma, why_not = constraint.analyse(merged, cfg) end
      if not ma then
        return finish(d, req, "reject", "constraint", string.format("--prefer %s: %s; your --constraint keeps the "
          .. "job at %s, and Slurm schedules with --prefer instead where it can, so it must keep the job there too",
          quote(prefer), why_not, #ua.sites == 1 and "site " .. ua.sites[1].name or "one site"))
      end
      prefer, pa, d.prefer = merged, ma, merged
    end
  end

  -- Nodes asked for by name: the sites they are at and how many nodes of
  -- each (a hostlist is never expanded).  The job gets every one of them,
  -- so at least that many nodes; but Slurm 23.02 and later read a list of
  -- more nodes than the job's own minimum as the nodes to choose from
  -- (`pool`: per site, how many it may have there).
  local named, pool = NONE, nil
  local counts, listed
  if req.req_nodes and req.req_nodes ~= "" then
    local sites, count, per = hostlist.sites(req.req_nodes, cfg)
    if not sites then
      return finish(d, req, "reject", "bad-request", string.format("--nodelist %s: %s", quote(req.req_nodes),
        count))
    end
    named, listed, counts = sites, count, per
  elseif req.nodelist_sites then
    named, counts = record.nodelist_sites(cfg, req.nodelist_sites)
    if counts then
      listed = 0
      for si = 1, #counts do listed = listed + counts[si] end
    end
  end
  local choose = listed and req.nodelist_min and listed > req.nodelist_min
  if choose and #named > 0 then
    pool = {}
    for si, s in ipairs(cfg.sites) do pool[s] = counts[si] end
  elseif listed and not choose and listed > n then
    n = listed
  end
  if #named > 0 then d.nodelist_sites = counts and record.nodelist_word(cfg, counts) or site_names(named, "+") end

  -- The profile last of the request's parts: parsing a new explicit one
  -- costs the most, and a request refused for its constraint or node list
  -- does not pay for it.
  local prof, perr = profile.resolve(req.profile, cfg, req.profile_state)
  if not prof then
    return finish(d, req, "reject", "bad-request", "--comm-profile: " .. perr)
  end
  d.profile = profile.label(prof)

  -- The job's real shape: the most nodes it can get, the model's n.
  local most = req.max_nodes
  if type(most) ~= "number" or most < n then most = n end
  local total = 0
  for _, s in ipairs(cfg.sites) do total = total + #s.nodes end
  -- A count (`ib*2`, `[a*1&b*1]`) in the constraint or --prefer of a job
  -- with no top to its node count: Slurm raises the count to the counts'
  -- sum, up to the partition's MaxNodes, so the job may get any number.
  if req.topless and (ua.counts or (pa and pa.counts)) then most = total end
  if most > total then most = math.max(n, total) end
  if choose and most > listed then most = math.max(n, listed) end
  d.nodes, d.min_nodes = most, n

  local het = req.het
  local fitting = {}
  for _, s in ipairs(cfg.sites) do
    if #s.nodes >= n then fitting[#fitting + 1] = s end
  end

  local link = effective_link(cfg, req.link_state)
  d.link = link
  local link_down = link.state == "down"
  local ev = model.evaluate_cached(cfg, prof, most, link)
  d.prediction = ev

  -- What the steps above found out, for the steps below (functions of
  -- the module, not closures: see above link_license): the decision, the
  -- request, the fewest nodes `n`, `het`, the user's constraint `user` and
  -- its analysis `ua`, --prefer (`prefer`, as merged above) and its
  -- analysis `pa`, the sites --nodelist names (`named`) and, when they are
  -- nodes to choose from, how many at each site (`pool`), the sites that can
  -- hold the job (`fitting`), the model's evaluation `ev`, the affinity,
  -- whether the link is down, and whether root or SlurmUser asks to span
  -- (`override_span`: granted even with the link down, as `xsite
  -- calibrate` measures a link that is down, and said in the record).
  local job = { d = d, req = req, n = n, het = het, user = user, ua = ua, prefer = prefer, pa = pa, named = named,
    pool = pool, fitting = fitting, ev = ev, affinity = affinity, link_down = link_down,
    override_span = req.override ~= nil and affinity == "span" }
  d.single_site = single_site(job) or nil

  -- A heterogeneous job's later component: where its first one went.
  if het and (het.offset > 0 or het.site) then
    if het.site == "span" then
      local ok_span, why_not = may_span(job)
      if not ok_span and link_down then
        return finish(d, req, "reject", "link-down", "component " .. het.offset ..
          " of a heterogeneous job that spans: " .. why_not)
      end
      d.sites, d.het = "any", "span"
      return finish(d, req, "span", "het", "the heterogeneous job's first component may span both sites")
    end
    local site = het.site and cfg.site_by_name[het.site]
    if not site then
      return finish(d, req, "reject", "het", string.format("component %d of a heterogeneous job: xsite does not " ..
        "know where its first component went; submit the job again", het.offset))
    end
    if target and target ~= site then
      return finish(d, req, "reject", "het", string.format("--site-affinity=%s: component %d of a heterogeneous " ..
        "job must run at site %s with its first component", affinity, het.offset, site.name))
    end
    local other = nodelist_refuses(job, site)
    if other then
      return finish(d, req, "reject", "het", string.format("--nodelist names %s: component %d of a " ..
        "heterogeneous job must run at site %s with its first component", other, het.offset, site.name))
    end
    if not has(ua.sites, site) then
      return finish(d, req, "reject", "het", string.format("--constraint %s allows no node of site %s, where " ..
        "component %d of this heterogeneous job must run with its first component", quote(user), site.name,
        het.offset))
    end
    if n > #site.nodes then
      return finish(d, req, "reject", "oversize", string.format("component %d of a heterogeneous job asks for %d " ..
        "nodes; site %s, where its first component runs, has %d", het.offset, n, site.name, #site.nodes))
    end
    return keep_at(job, { site }, "site", "het", string.format(WHY.het, site.name))
  end

  -- The user named a site.
  if target then
    if not has(ua.sites, target) then
      return finish(d, req, "reject", "bad-request", string.format(
        "--site-affinity=%s conflicts with --constraint %s, which allows no node of site %s",
        affinity, quote(user), target.name))
    end
    local other = nodelist_refuses(job, target)
    if other then
      return finish(d, req, "reject", "bad-request", string.format(
        "--site-affinity=%s conflicts with --nodelist, which names %s", affinity, other))
    end
    if n > #target.nodes then
      d.sites = target.name
      return finish(d, req, "reject", "oversize", string.format(
        "--site-affinity=%s: site %s has %d nodes, the job asks for %d",
        affinity, target.name, #target.nodes, n))
    end
    return keep_at(job, { target }, "site", "user-site", string.format(WHY["user-site"], target.name))
  end

  -- Nodes to choose from at one site only: the job is there.
  if pool and #named == 1 then
    local site = named[1]
    if not has(ua.sites, site) then
      return finish(d, req, "reject", "bad-request", string.format("--constraint %s allows no node of site %s, " ..
        "where every node --nodelist names is", quote(user), site.name))
    end
    return keep_at(job, named, "site", "user-nodes", string.format(WHY["user-nodes"], site.name))
  end

  -- Nodes named at both sites, all of which the job gets: it spans, or it
  -- may not run.
  if #named > 1 and not pool then
    local ok_span, why_not = may_span(job)
    if het then why_not = why_not or "a heterogeneous job runs at one site unless --site-affinity=span" end
    if not ok_span or (het and affinity ~= "span") then
      return finish(d, req, "reject", "nodelist", string.format(
        "--nodelist names nodes at both sites (%s), but this job may not span: %s",
        site_names(named, " and "), why_not))
    end
    d.sites = site_names(named, "+")
    if het then d.het = "span" end
    return finish(d, req, "span", "user-nodes", string.format(WHY["user-nodes"], site_names(named, " and ")))
  end

  -- The user's constraint (and --prefer, if given) keeps the job at one
  -- site already.
  if kept_within(job, ua, ua.sites) and (not pa or kept_within(job, pa, ua.sites)) and affinity ~= "span" then
    d.sites = site_names(ua.sites)
    return finish(d, req, #ua.sites == 1 and "site" or "pin", "user-constraint",
      string.format(WHY["user-constraint"], site_names(ua.sites, " or ")))
  end

  if most == 1 and not het and not req.pin_one_node then
    -- nodes to choose from at both sites: pinned all the same, as Slurm
    -- may come to read them as nodes the job must have (a change of the
    -- pending job that it refuses half-way leaves them so)
    if pool and #named > 1 then return pin(job, "one-node", WHY["one-node"]) end
    return finish(d, req, "none", "one-node", WHY["one-node"])
  end

  if affinity == "pin" then
    if #fitting == 0 and most > 1 then
      return finish(d, req, "reject", "oversize", "--site-affinity=pin: " .. string.format(WHY.oversize, n))
    end
    return pin(job, "user-pin", WHY["user-pin"])
  end

  if affinity == "span" then
    if job.override_span then d.override = req.override end
    if link_down and not job.override_span then
      if #fitting == 0 then
        return finish(d, req, "reject", "link-down", "--site-affinity=span: " .. WHY["link-down"])
      end
      return pin(job, "link-down", WHY["link-down"] .. "; --site-affinity=span cannot be honoured")
    end
    if ua.one_site then
      return finish(d, req, "reject", "bad-request", string.format(
        "--site-affinity=span conflicts with --constraint %s, which keeps the job at one site", quote(user)))
    end
    local A, B = cfg.sites[1], cfg.sites[2]
    d.sites = A.name .. "+" .. B.name
    if het then
      d.het = "span"
    elseif pool and (pool[A] < ev.nA or pool[B] < ev.nB) then
      d.warning = "the nodes --nodelist names cannot take xsite's split of the nodes; Slurm chooses it"
    elseif user and user:find("^[%w_%-%.&]+$") then
      -- Slurm applies a feature outside a count group to no node of it:
      -- the user's features go inside, with each site's
      d.features = string.format("[(%s&%s)*%d&(%s&%s)*%d]", user, A.feature, ev.nA, user, B.feature, ev.nB)
    elseif not user then
      d.features = string.format("[%s*%d&%s*%d]", A.feature, ev.nA, B.feature, ev.nB)
    else
      d.warning = "your --constraint cannot take xsite's split of the nodes; Slurm chooses it"
    end
    local busy = link_busy(job, NONE)
    if busy then
      d.warning = (d.warning and d.warning .. "; " or "") .. "the link's licenses are held by other jobs: " ..
        busy_text(busy)
    end
    return finish(d, req, "span", "user-span", WHY["user-span"] ..
      string.format(" (%d+%d nodes; predicted %s slower than one site)", ev.nA, ev.nB, ratio(ev.slowdown)))
  end

  -- auto
  if het then
    if #fitting == 0 then
      return finish(d, req, "reject", "oversize", string.format(WHY.oversize, n) .. "; " .. WHY["het-first"])
    end
    return pin(job, "het", WHY["het-first"])
  end
  if link_down then
    if #fitting > 0 then return pin(job, "link-down", WHY["link-down"]) end
  elseif ev.slowdown <= pol.max_slowdown then
    -- The link's licenses all held: pinned when one site is predicted to
    -- finish the job sooner (its wait against the wait for the link plus
    -- what spanning loses), else it waits for them.
    local busy = link_busy(job, one_site_choices(job))
    if busy then
      local loss = (req.time_limit or ev.t_one) * (ev.slowdown - 1)
      local text = busy_text(busy)
      if busy.site and (not busy.link or busy.site <= busy.link + loss) then
        return pin(job, "link-busy", string.format(WHY["link-busy"], string.format(
          "%s; site %s has %d nodes free %s, so one site finishes sooner than spanning (%s slower)",
          text, busy.site_name, n, busy.site > 0 and "in " .. wait_text(busy.site) or "now", ratio(ev.slowdown))))
      end
      d.warning = (d.warning and d.warning .. "; " or "") .. string.format(
        "the link's licenses are held by other jobs: %s; one site would take %s, so spanning finishes sooner",
        text, busy.site and wait_text(busy.site) or "longer")
    end
    d.sites = "any"
    local wait = req.time_limit and math.floor(req.time_limit * (ev.slowdown - 1)) or 0
    if req.topology and #fitting > 0 and wait >= 1 then
      -- Wait for one site for at most the time spanning would lose.
      d.req_switch = 1
      d.wait4switch = wait
    end
    return finish(d, req, "span", "within", string.format(WHY.within, ev.slowdown, pol.max_slowdown))
  elseif #fitting > 0 then
    return pin(job, "slowdown", slow_text(ev, pol))
  end

  -- Larger than any site, and spanning costs too much (or the link is down).
  local why_text = string.format(WHY.oversize, n) .. "; " ..
    (link_down and WHY["link-down"] or slow_text(ev, pol))
  if pol.oversize == "reject" or link_down then
    return finish(d, req, "reject", "oversize", why_text)
  end
  d.sites = "any"
  if pol.oversize == "warn" then
    d.warning = "running anyway (OversizeAction=warn)"
  end
  return finish(d, req, "span", "oversize", why_text)
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
