--- The glue between slurmctld's job_submit/lua and the placement policy.
--
-- `job_submit` reads the job's request (node count, constraint, time limit,
-- and the xsite flags the SPANK plugin put in `spank_job_env`), asks
-- xsite.policy, writes the decision into the job (`features`, `req_switch`,
-- `wait4switch`, `admin_comment`) and tells the user in one line.  It runs
-- inside slurmctld under its locks: it never raises, never blocks on I/O per
-- job (the configuration and the link state are cached, see
-- xsite.config.cache), and a broken configuration never stops job submission
-- unless the last good one said `FailMode=closed`.
-- @module xsite.submit

local config = require("xsite.config")
local policy = require("xsite.policy")

local M = {}

--- Slurm's "no value" markers (slurm.h).
M.NO_VAL = 0xfffffffe
M.NO_VAL16 = 0xfffe
M.INFINITE = 0xffffffff

--- Error codes of slurm_errno.h (22.05 and later) that job_submit/lua does
-- not export to Lua in every release.
M.ESLURM_INVALID_NODE_COUNT = 2006
M.ESLURM_INVALID_FEATURE = 2029

-- Where the xsite flags sit in spank_job_env: the SPANK plugin sets
-- XSITE_* there (spank_job_control_setenv; Slurm adds a SPANK_ prefix only
-- for prolog and epilog) for flags and their environment twins; Slurm itself
-- forwards registered options as _SLURM_SPANK_OPTION_*, an option given
-- without its optional value as "(null)".
local FLAGS = {
  { "affinity", "XSITE_SITE_AFFINITY", "_SLURM_SPANK_OPTION_xsite_site_affinity" },
  { "profile", "XSITE_COMM_PROFILE", "_SLURM_SPANK_OPTION_xsite_comm_profile" },
  { "report", "XSITE_REPORT", "_SLURM_SPANK_OPTION_xsite_xsite_report" },
}

--- The xsite flags of a job, from its spank_job_env (a table indexed from 0,
-- so it is walked with pairs).
-- @return { affinity, profile, report } (absent flags are nil)
function M.flags(spank_job_env)
  local env = {}
  if type(spank_job_env) == "table" then
    for _, entry in pairs(spank_job_env) do
      if type(entry) == "string" then
        local k, v = entry:match("^([^=]+)=(.*)$")
        if k then env[k] = v end
      end
    end
  end
  local out = {}
  for _, f in ipairs(FLAGS) do
    local v = env[f[2]] or env[f[3]]
    if v == "(null)" and f[1] == "report" then v = "." end
    if v ~= nil and v ~= "" then out[f[1]] = v end
  end
  return out
end

local function set(v)
  return v ~= nil and v ~= M.NO_VAL and v ~= M.INFINITE and v ~= M.NO_VAL16
end

--- The node count a job asks for: min_nodes, or, without it, enough nodes of
-- the larger site's size for its tasks.
function M.node_count(job_desc, cfg)
  local n = job_desc.min_nodes
  if set(n) and n > 0 then return n end
  local tasks = job_desc.num_tasks
  if set(tasks) and tasks > 0 then
    local cores = math.max(cfg.sites[1].cores, cfg.sites[2].cores)
    local cpt = job_desc.cpus_per_task
    if set(cpt) and cpt > 0 then tasks = tasks * cpt end
    return math.ceil(tasks / cores)
  end
  return 1
end

--- Put the record into admin_comment, replacing an earlier xsite record and
-- keeping anything else the admin wrote there.
function M.with_record(admin_comment, record)
  if not admin_comment or admin_comment == "" then return record end
  local kept = admin_comment:gsub("%s*xsite v=%d+[^;]*", ""):gsub("^%s*;%s*", ""):gsub("%s*;%s*$", "")
  if kept == "" then return record end
  return kept .. "; " .. record
end

-- Per-process state: the caches of the configuration and the link state,
-- created on first use for the configuration's path.
local state = {}

--- Whether slurm.conf configures topology/tree (read once, at set-up).
function M.uses_topology_tree(slurm_conf)
  local f = slurm_conf and io.open(slurm_conf, "r")
  if not f then return false end
  local text = f:read("*a")
  f:close()
  for line in text:gmatch("[^\n]+") do
    local v = line:gsub("#.*", ""):match("^%s*[Tt]opology[Pp]lugin%s*=%s*(%S+)")
    if v then return v == "topology/tree" or v == "tree" end
  end
  return false
end

--- Set up for one slurmctld: the configuration to read (job_submit.lua passes
-- the xsite.conf beside itself, that is beside slurm.conf), and slurm.conf.
-- @param conf_path xsite.conf
-- @param opts optional: `slurm_conf` (to find topology/tree), `interval`
--   and `clock` for the caches (see xsite.config.cache)
function M.setup(conf_path, opts)
  opts = opts or {}
  state.conf = config.cache(conf_path, opts.interval, opts.clock)
  state.files = {}
  state.interval, state.clock = opts.interval, opts.clock
  state.topology = M.uses_topology_tree(opts.slurm_conf)
end

-- The files `xsite calibrate` and `xsite tune --apply` write, each cached
-- like the configuration: the key naming it, its parser, what it holds.
local STATE_FILES = {
  link = { "link_state_file", config.parse_link_state, "link state" },
  profiles = { "profile_state_file", config.parse_profile_state, "profile state" },
}

local function state_file(cfg, slurm, which)
  local f = STATE_FILES[which]
  local path = cfg.policy[f[1]]
  if not path then return nil end
  local c = state.files[which]
  if not c or c.filename ~= path then
    c = config.cache(path, state.interval, state.clock, { parse = f[2], missing_ok = true })
    state.files[which] = c
  end
  local st, err, fresh = c.get()
  if fresh then
    slurm.log_error("xsite: %s; using the last good %s", err, f[3])
  end
  return st
end

-- Apply a decision to the job description.
local function apply(job_desc, d)
  if d.features then job_desc.features = d.features end
  if d.req_switch then
    job_desc.req_switch = d.req_switch
    job_desc.wait4switch = d.wait4switch
  end
  job_desc.admin_comment = M.with_record(job_desc.admin_comment, d.record)
end

local function decide(job_desc, slurm, flags)
  local cfg, err, fresh = state.conf.get()
  if fresh then
    slurm.log_error("xsite: %s", err:gsub("\n", "; "))
    if cfg then slurm.log_error("xsite: keeping the last good configuration of %s", state.conf.filename) end
  end
  if not cfg then
    slurm.log_info("xsite: no usable configuration (%s); job accepted unchanged", err or "?")
    return slurm.SUCCESS
  end
  if err and cfg.policy.fail_mode == "closed" then
    slurm.log_user("xsite: job rejected: the site configuration is broken (FailMode=closed); "
      .. "please tell the administrators")
    return slurm.ERROR
  end

  local tl = job_desc.time_limit
  local d = policy.decide({
    cfg = cfg,
    nodes = M.node_count(job_desc, cfg),
    affinity = flags.affinity,
    profile = flags.profile,
    features = job_desc.features,
    req_nodes = job_desc.req_nodes,
    time_limit = set(tl) and tl * 60 or nil,
    topology = state.topology,
    link_state = state_file(cfg, slurm, "link"),
    profile_state = state_file(cfg, slurm, "profiles"),
  })
  slurm.log_info("xsite: job of uid %s: %s", tostring(job_desc.user_id), d.record)
  if d.why ~= "off" then slurm.log_user("%s", d.message) end
  if d.action == "reject" then
    if d.why == "oversize" then return M.ESLURM_INVALID_NODE_COUNT end
    return M.ESLURM_INVALID_FEATURE
  end
  apply(job_desc, d)
  return slurm.SUCCESS
end

--- slurm_job_submit: decide and apply.  Never raises.
-- @param job_desc Slurm's job description
-- @param slurm Slurm's `slurm` table (log_user, log_info, log_error, SUCCESS, ERROR)
-- @return a Slurm return code
function M.job_submit(job_desc, slurm)
  if not state.conf then M.setup(config.locate()) end
  local ok, rc = pcall(decide, job_desc, slurm, M.flags(job_desc.spank_job_env))
  if not ok then
    slurm.log_error("xsite: internal error, job accepted unchanged: %s", tostring(rc))
    return slurm.SUCCESS
  end
  return rc
end

--- A constraint every node of the cluster meets: "site_a|site_b".
function M.any_site(cfg)
  local f = {}
  for i, s in ipairs(cfg.sites) do f[i] = s.feature end
  return table.concat(f, "|")
end

--- slurm_job_modify: decide again when a pending job's node count changes.
-- The xsite flags and the user's own constraint come from the job record;
-- the constraint xsite added before is replaced.  Never raises.
function M.job_modify(job_desc, job_rec, slurm)
  if not state.conf then M.setup(config.locate()) end
  local ok, rc = pcall(function()
    if not set(job_desc.min_nodes) then return slurm.SUCCESS end
    local flags = M.flags(job_rec.spank_job_env)
    local prev = policy.parse_record(job_rec.admin_comment)
    local view = setmetatable({
      features = job_desc.features or (prev and prev.constraint) or (not prev and job_rec.features) or nil,
      admin_comment = job_desc.admin_comment or job_rec.admin_comment,
    }, { __index = function(_, k) return job_desc[k] end })
    local rc = decide(view, slurm, flags)
    if rc == slurm.SUCCESS then
      for _, k in ipairs({ "features", "req_switch", "wait4switch", "admin_comment" }) do
        if rawget(view, k) ~= nil then job_desc[k] = rawget(view, k) end
      end
      -- The new decision adds no constraint and the user had none: the one
      -- xsite added before must go.  job_submit/lua cannot clear a
      -- constraint (an empty string means "unchanged"), so it becomes the
      -- OR of every site's feature, which every node has.
      if prev and rawget(view, "features") == nil and job_rec.features and job_rec.features ~= "" then
        local cfg = state.conf.get()
        if cfg then job_desc.features = M.any_site(cfg) end
      end
      -- Likewise the switch count xsite asked topology/tree for: 0 is none.
      if prev and prev.wait4switch and rawget(view, "req_switch") == nil then
        job_desc.req_switch = 0
      end
    end
    return rc
  end)
  if not ok then
    slurm.log_error("xsite: internal error, modification accepted unchanged: %s", tostring(rc))
    return slurm.SUCCESS
  end
  return rc
end

return M
