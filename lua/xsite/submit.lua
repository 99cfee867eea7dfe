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
local constraint = require("xsite.constraint")
local policy = require("xsite.policy")
local record = require("xsite.record")
local states = require("xsite.state")
local fs = require("xsite.fs")

local M = {}

--- Slurm's "no value" markers (slurm.h).
M.NO_VAL = 0xfffffffe
M.NO_VAL16 = 0xfffe
M.INFINITE = 0xffffffff
M.INFINITE16 = 0xffff
--- job_state of a pending job (slurm.h, JOB_PENDING).
M.JOB_PENDING = 0

--- Whether this slurmctld reads a --nodelist of more nodes than the job's
-- own --nodes minimum as the nodes to choose its nodes from (the others
-- excluded), not as nodes it must have: Slurm 23.02 and later (its NEWS:
-- "Allow for --nodelist to contain more nodes than required by --nodes";
-- job_mgr.c, at submission and at a change of a pending job).  job_submit/lua
-- tells no version; the same release began to export every error code of
-- slurm_errno.h to Lua, where 22.05 exported eight, ESLURM_INVALID_NODE_NAME
-- not among them.
-- @param slurm job_submit/lua's `slurm` table, or a Slurm version ("24.11.5":
--   the xsite command's, of the Slurm it was built against)
function M.nodelist_chooses(slurm)
  if type(slurm) == "string" then
    local major, minor = slurm:match("^(%d+)%.(%d+)")
    return major ~= nil and tonumber(major) * 100 + tonumber(minor) >= 2302
  end
  return type(slurm) == "table" and slurm.ESLURM_INVALID_NODE_NAME ~= nil
end

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

-- The fields of a job description Slurm keeps in 16 bits: their "no
-- value" is NO_VAL16.  Every other count is 32 bits, where 0xfffe (65534)
-- is a count like any other (`-N1-65534`).
local U16 = { ntasks_per_node = true, cpus_per_task = true, ntasks_per_tres = true, sockets_per_node = true }

local NO_VAL, NO_VAL16, INFINITE, INFINITE16 = M.NO_VAL, M.NO_VAL16, M.INFINITE, M.INFINITE16

-- Whether field `k`'s value `v` is given.
local function given(k, v)
  if U16[k] then return v ~= nil and v ~= NO_VAL16 and v ~= INFINITE16 end
  return v ~= nil and v ~= NO_VAL and v ~= INFINITE
end

-- A 32-bit count given (not NO_VAL or INFINITE).
local function set(v)
  return v ~= nil and v ~= NO_VAL and v ~= INFINITE
end

-- A count of job_desc (or a job's view) given and above 0, or nil (`given`
-- written out: a job's counts are read a dozen times for every job).
local function count(job_desc, k)
  local v = job_desc[k]
  if type(v) ~= "number" or v <= 0 then return nil end
  if U16[k] then
    if v == NO_VAL16 or v == INFINITE16 then return nil end
  elseif v == NO_VAL or v == INFINITE then
    return nil
  end
  return v
end

--- The longest GRES request (tres_per_job) xsite reads; a longer one counts
-- as more units than the cluster has nodes.
M.MAX_GRES = 1024

--- The units a GRES request asks for in all ("gres/gpu:8,gres/gpu:a100:2":
-- 10; an item without a count: 1), or nil for none.  The count is what
-- follows an item's last `=`, else its last `:`, as slurmctld reads it
-- (slurm_get_next_tres, 23.11 and later: `--gpus=a100=8` is
-- "gres/gpu:a100=8", 8 GPUs, and `TresPerJob=gres/gpu=8` is 8); after a
-- `:`, a word that starts with no digit is a type.  A request too long to
-- read, or with a count that is not a plain number, counts as math.huge.
function M.gres_units(text)
  if type(text) ~= "string" or text == "" then return nil end
  if #text > M.MAX_GRES then return math.huge end
  local total = 0
  for item in text:gmatch("[^,]+") do
    local k = item:match("=([^=]*)$")
    if k then
      if not k:find("^%d+$") then return math.huge end
    else
      k = item:match(":([^:]*)$")
    end
    if not k or not k:find("^%d") then
      total = total + 1
    elseif k:find("^%d+$") then
      total = total + tonumber(k)
    else
      return math.huge
    end
  end
  return total
end

--- The licenses a TRES request names ("cpu=2,license/a=1" -> "a=1"; Slurm
-- 23.02 and later add those of --tres-per-task to the job's licenses), a
-- license list, or nil.
function M.tres_licenses(tres)
  if type(tres) ~= "string" then return nil end
  local out = {}
  for item in tres:gmatch("[^,]+") do
    out[#out + 1] = item:match("^%s*[Ll][Ii][Cc][Ee][Nn][Ss][Ee]/(.+)$")
  end
  return #out > 0 and table.concat(out, ",") or nil
end

--- The tasks a job asks for: num_tasks, else, with --ntasks-per-gpu, that
-- many for each GPU of the job (at least one a node; --gpus-per-socket
-- counts for each of --sockets-per-node, as Slurm's GRES count of the job
-- does: gres_job_state_validate, then num_tasks = GPUs x
-- ntasks_per_tres), else, with
-- --ntasks-per-node, that many on each of its fewest nodes (as slurmctld
-- works them out after job_submit: _figure_out_num_tasks, then the GRES
-- for a job's tasks; with more tasks than a node has CPUs, a job with no
-- top to its node count gets more nodes); nil when none is given.
-- @param nodes the job's fewest nodes (default: its min_nodes, or 1)
function M.tasks(job_desc, nodes)
  local tasks = count(job_desc, "num_tasks")
  if tasks then return tasks end
  nodes = nodes or count(job_desc, "min_nodes") or 1
  local per_gpu = count(job_desc, "ntasks_per_tres")
  if per_gpu then
    -- (a count of 0 asks for none: Slurm then gives the tasks GPUs itself)
    local gpus = math.max(nodes, nodes * (M.gres_units(job_desc.tres_per_node) or 1),
      nodes * (count(job_desc, "sockets_per_node") or 1) * (M.gres_units(job_desc.tres_per_socket) or 0),
      M.gres_units(job_desc.tres_per_job) or 0)
    return gpus * per_gpu
  end
  local per = count(job_desc, "ntasks_per_node")
  if per then return nodes * per end
  return nil
end

--- The most partition names xsite reads of a job's `--partition`; a job
-- naming more is judged on every partition (see partition_floor).
M.MAX_PARTITIONS = 64

--- The fewest nodes a job's partitions may give it.  Slurm schedules a job
-- in a partition on at least the partition's MinNodes (get_node_cnts), and
-- in none whose MinNodes is above the job's top: the floor is the largest
-- MinNodes of the partitions the job names (of the default partition when
-- it names none) within its top.  job_submit/lua leaves out of `part_list`
-- the partitions whose AllowGroups do not show the user yet (Slurm may
-- still admit the user later, through their primary group): such a
-- partition's MinNodes is slurm.conf's (`hidden`).  A job naming more than
-- MAX_PARTITIONS names (Slurm drops repeated ones) is judged on every
-- partition of `part_list` and of `hidden`.
-- @param partition the job's --partition (comma-separated), or nil
-- @param part_list job_submit/lua's partitions (name -> partition record)
-- @param top the job's most nodes, or nil for none
-- @param hidden optional: slurm.conf's partitions (xsite.config.slurm_partitions)
-- @return the floor (above 1), or nil
function M.partition_floor(partition, part_list, top, hidden)
  if type(part_list) ~= "table" then return nil end
  local conf = type(hidden) == "table" and hidden.min or {}
  local floor = 1
  local function take(v)
    if v and v > floor and given(nil, v) and (not top or v <= top) then floor = v end
  end
  local function min_of(name)
    local p = rawget(part_list, name)
    if type(p) == "table" then return tonumber(p.min_nodes_orig) or tonumber(p.min_nodes) end
    return conf[name]
  end
  local named = 0
  if type(partition) == "string" and partition ~= "" then
    for name in partition:gmatch("[^,]+") do
      named = named + 1
      if named > M.MAX_PARTITIONS then
        for other in pairs(part_list) do take(min_of(other)) end
        for _, v in pairs(conf) do take(v) end
        break
      end
      take(min_of(name))
    end
  end
  if named == 0 then
    local default
    for name, p in pairs(part_list) do
      if type(p) == "table" and tonumber(p.flag_default) == 1 then default = name end
    end
    take(min_of(default or (type(hidden) == "table" and hidden.default) or ""))
  end
  return floor > 1 and floor or nil
end

--- The node count a job asks for: min_nodes, or, without it, enough nodes of
-- the larger site's size for its tasks; never below its partitions' floor
-- (see partition_floor).
function M.node_count(job_desc, cfg, floor)
  local n = count(job_desc, "min_nodes")
  if not n then
    n = 1
    local tasks = count(job_desc, "num_tasks")
    if tasks then
      local per = count(job_desc, "ntasks_per_node")
      if per then
        n = math.ceil(tasks / per)
      else
        local cores = math.max(cfg.sites[1].cores, cfg.sites[2].cores)
        local cpt = count(job_desc, "cpus_per_task")
        if cpt then tasks = tasks * cpt end
        n = math.ceil(tasks / cores)
      end
    end
  end
  return math.max(n, floor or 1)
end

-- most_nodes, for a job of `n` nodes (node_count's answer: the policy
-- reads it too, and works it out once).
local function most_of(job_desc, n)
  local top = count(job_desc, "max_nodes")
  if top then return math.max(n, top) end
  local most = n
  local tasks = M.tasks(job_desc, n)
  if tasks then
    most = math.max(most, tasks)
  else
    local cpus = count(job_desc, "min_cpus")
    if cpus then most = math.max(most, math.ceil(cpus / (count(job_desc, "cpus_per_task") or 1))) end
  end
  return math.max(most, M.gres_units(job_desc.tres_per_job) or 0)
end

--- The most nodes a job can get: max_nodes (the top of `-N1-8`, or `-N`
-- itself: sbatch sends `-N2` as 2-2); else as many as it may have tasks
-- (one a node: without max_nodes Slurm may spread them whatever min_nodes
-- says, and with `-n` it takes `--ntasks-per-node` as the most tasks a
-- node, not the fewest: `-n2 --ntasks-per-node=2 --spread-job` runs on two
-- nodes), CPUs without a task count (min_cpus over --cpus-per-task), or
-- units of a GRES asked for the whole job (`--gpus=8` may take eight
-- nodes).  Never fewer than `node_count` (`floor` as there).
function M.most_nodes(job_desc, cfg, floor)
  return most_of(job_desc, M.node_count(job_desc, cfg, floor))
end

local function read_small(path, cap)
  return path and (fs.read_capped(path, cap))
end

--- Whether slurm.conf's text configures topology/tree.
function M.uses_topology_tree(text)
  local v = text and config.slurm_conf_value(text, "TopologyPlugin")
  return v == "topology/tree" or v == "tree"
end

--- The uid of slurm.conf's SlurmUser (root's when unset; nil when unknown),
-- from slurm.conf's text and /etc/passwd.
function M.slurm_user_uid(text, passwd)
  local name = text and config.slurm_conf_value(text, "SlurmUser") or "root"
  if name:match("^%d+$") then return tonumber(name) end
  if name == "root" then return 0 end
  local pw = read_small(passwd or "/etc/passwd", 16777216) or ""
  for line in pw:gmatch("[^\n]+") do
    local user, uid = line:match("^([^:]*):[^:]*:(%d+):")
    if user == name then return tonumber(uid) end
  end
  return nil
end

--- The most of slurm.conf xsite reads (a longer one: no topology, no licenses).
M.SLURM_CONF_MAX = 1048576

-- Per-process state: the caches of the configuration and the link state,
-- created on first use for the configuration's path; where the first
-- component of each user's latest heterogeneous job went.
local state = {}

--- Set up for one slurmctld: the configuration to read (job_submit.lua passes
-- the xsite.conf beside itself, that is beside slurm.conf), and slurm.conf.
-- @param conf_path xsite.conf
-- @param opts optional: `slurm_conf` (to find topology/tree and SlurmUser),
--   `interval` and `clock` for the caches (see xsite.config.cache), `passwd`
function M.setup(conf_path, opts)
  -- slurmctld keeps this Lua state for good: the collector starts a new
  -- cycle as soon as one ends (Lua's default waits until the heap has
  -- doubled), so that what users send leaves less garbage in slurmctld
  collectgarbage("setpause", 100)
  opts = opts or {}
  state.conf = config.cache(conf_path, opts.interval, opts.clock)
  state.files = {}
  state.interval, state.clock = opts.interval, opts.clock or os.time
  -- slurm.conf, cached like xsite.conf (an admin who changes its Licenses=
  -- and runs `scontrol reconfigure` keeps this Lua state on Slurm 22.05):
  -- topology/tree and the licenses; SlurmUser once (slurmctld runs as it)
  state.slurm_conf = opts.slurm_conf and config.cache(opts.slurm_conf, opts.interval, opts.clock, {
    missing_ok = true,
    read = function(path) return fs.read_capped(path, M.SLURM_CONF_MAX) end,
    parse = function(text)
      return { topology = M.uses_topology_tree(text), licenses = config.slurm_licenses(text),
        partitions = config.slurm_partitions(text), text = text }
    end,
  })
  local sc = M.slurm_conf()
  state.slurm_user = M.slurm_user_uid(sc.text, opts.passwd)
  state.het, state.het_count = {}, 0
  state.fail_closed = false
end

--- What xsite uses of slurm.conf now: `topology` (topology/tree),
-- `licenses` (xsite.config.slurm_licenses), `text`; an empty table without
-- one.
function M.slurm_conf()
  local c = state.slurm_conf
  return c and c.get() or {}
end

-- The files `xsite calibrate`, `xsite tune --apply` and `xsite load --write`
-- write, each cached like the configuration: the key naming it, its parser,
-- what it holds.
local STATE_FILES = {
  link = { "link_state_file", states.parse_link, "link state" },
  profiles = { "profile_state_file", states.parse_profiles, "profile state" },
  load = { "link_load_file", states.parse_load, "link load" },
}

local function state_file(cfg, slurm, which)
  local f = STATE_FILES[which]
  local path = cfg.policy[f[1]]
  if not path then return nil end
  local c = state.files[which]
  if not c or c.filename ~= path then
    c = config.cache(path, state.interval, state.clock, { parse = f[2], missing_ok = true,
      read = fs.read_trusted })
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
  if d.prefer then job_desc.prefer = d.prefer end
  if d.licenses then job_desc.licenses = d.licenses end
  if d.req_switch then
    job_desc.req_switch = d.req_switch
    job_desc.wait4switch = d.wait4switch
  end
  job_desc.admin_comment = record.put(job_desc.admin_comment, d.record)
end

-- Whether the broken configuration's own text asks for FailMode=closed (read
-- once each time the file's error changes, never per job).
local function says_fail_closed(filename)
  local text = config.read_file(filename)
  if not text or #text > 4194304 then return false end
  for line in text:gmatch("[^\n]+") do
    for v in config.strip_comment(line):gmatch("[Ff][Aa][Ii][Ll][Mm][Oo][Dd][Ee]%s*=%s*(%a+)") do
      if v:lower() == "closed" then return true end
    end
  end
  return false
end

--- How long (seconds) the site of a heterogeneous job's first component is
-- kept for its later ones.  slurmctld asks job_submit for the components
-- of one job one after the other, within milliseconds.
M.HET_WINDOW = 2
--- The most users whose heterogeneous jobs are remembered at once.
M.HET_USERS = 4096

-- Where the first component of this user's heterogeneous job went, if that
-- was a moment ago.
local function het_site(uid)
  local e = state.het[uid or -1]
  if e and state.clock() - e.time <= M.HET_WINDOW then return e.site end
  return nil
end

local function remember_het(uid, site)
  if state.het_count >= M.HET_USERS then state.het, state.het_count = {}, 0 end
  if not state.het[uid] then state.het_count = state.het_count + 1 end
  state.het[uid] = { site = site, time = state.clock() }
end

-- Whether slurm.conf's licenses (`declared`, xsite.config.slurm_licenses)
-- hold the link's license (Licenses=NAME:COUNT, as xsite.conf's License= has
-- it): a job asking for a license Slurm does not know is refused by Slurm,
-- so without it xsite asks for none and says so in slurmctld's log, once
-- for each way they disagree.
-- @return nil (ask for it), or false
local function license_declared(cfg, slurm, declared)
  if not declared then return nil end
  local ok, what = config.license_declared(cfg, declared)
  if ok then
    state.license_said = nil
    return nil
  end
  if state.license_said ~= what then
    state.license_said = what
    local lic = cfg.link.license
    slurm.log_error("xsite: %s has License=%s:%d, but %s; spanning jobs get no license until slurm.conf " ..
      "says Licenses=%s:%d", state.conf.filename, lic.name, lic.count, what, lic.name, lic.count)
  end
  return false
end

-- Decide for a job description (or a view of a pending job being changed):
-- `extra` holds what job_desc does not (het, nodelist_sites, features).
local function decide(job_desc, slurm, flags, extra)
  local cfg, err, fresh = state.conf.get()
  if fresh then
    slurm.log_error("xsite: %s", err:gsub("\n", "; "))
    if cfg then slurm.log_error("xsite: keeping the last good configuration of %s", state.conf.filename) end
    state.fail_closed = says_fail_closed(state.conf.filename)
  elseif not err then
    state.fail_closed = false
  end
  if err and (state.fail_closed or (cfg and cfg.policy.fail_mode == "closed")) then
    slurm.log_user("xsite: job rejected: the site configuration is broken (FailMode=closed); "
      .. "please tell the administrators")
    return slurm.ERROR
  end
  if not cfg then
    slurm.log_info("xsite: no usable configuration (%s); job accepted unchanged", err or "?")
    return slurm.SUCCESS
  end

  local tl = job_desc.time_limit
  local sc = M.slurm_conf()
  local nodes = M.node_count(job_desc, cfg, extra.floor)
  local d = policy.decide({
    cfg = cfg,
    nodes = nodes,
    max_nodes = most_of(job_desc, nodes),
    affinity = flags.affinity,
    profile = flags.profile,
    features = extra.features,
    prefer = extra.prefer,
    req_nodes = extra.req_nodes,
    nodelist_sites = extra.nodelist_sites,
    -- (sbatch -w without -N sends the list's count as the job's minimum:
    -- nodes it must have)
    nodelist_min = M.nodelist_chooses(slurm) and count(job_desc, "min_nodes") or nil,
    topless = extra.topless,
    het = extra.het,
    override = extra.override,
    time_limit = set(tl) and tl * 60 or nil,
    topology = sc.topology,
    licenses = extra.licenses,
    tres_licenses = M.tres_licenses(job_desc.tres_per_task),
    license = license_declared(cfg, slurm, sc.licenses),
    link_state = state_file(cfg, slurm, "link"),
    profile_state = state_file(cfg, slurm, "profiles"),
    link_load = state_file(cfg, slurm, "load"),
    now = state.clock(),
    pin_one_node = extra.pin_one_node,
  })
  if extra.het and extra.het.offset == 0 and not extra.het.site and d.het and d.action ~= "reject"
      and cfg.policy.mode == "enforce" then
    -- the first component: its site holds for the later ones; another
    -- first component of the same user a moment ago went elsewhere
    local other = het_site(job_desc.user_id)
    if other and other ~= d.het then
      slurm.log_user("xsite: job rejected: another heterogeneous job of yours was placed at %s a moment ago; "
        .. "submit this one again in a few seconds", other == "span" and "both sites" or "site " .. other)
      return M.ESLURM_INVALID_FEATURE
    end
    remember_het(job_desc.user_id, d.het)
  end
  slurm.log_info("xsite: job of uid %s: %s", tostring(job_desc.user_id), d.record)
  if d.why ~= "off" then slurm.log_user("%s", d.message) end
  if d.action == "reject" then
    if d.why == "oversize" then return M.ESLURM_INVALID_NODE_COUNT, d end
    return M.ESLURM_INVALID_FEATURE, d
  end
  apply(job_desc, d)
  return slurm.SUCCESS, d
end

-- The policy lines of the configuration in force, or nil; never raises
-- (what an internal error's handling reads).
local function policy_in_force()
  local ok, cfg = pcall(state.conf.get)
  return ok and cfg and cfg.policy or nil
end

-- Whether a job or a change xsite failed to judge (an internal error) is
-- refused: under FailMode=closed, unless root or SlurmUser asks.
local function fails_closed(uid)
  if M.privileged(uid) then return false end
  local pol = policy_in_force()
  return state.fail_closed or (pol ~= nil and pol.fail_mode == "closed")
end

-- An internal error met judging a job or a change (`what`, for the log):
-- refused when `refuse` (the user is told `user_says`), else accepted
-- unchanged; logged either way.
local function internal_error(slurm, err, refuse, what, user_says)
  if refuse then
    slurm.log_error("xsite: internal error, %s refused: %s", what, tostring(err))
    slurm.log_user("xsite: %s: xsite could not judge it (an internal error, logged); please tell the administrators",
      user_says)
    return slurm.ERROR
  end
  slurm.log_error("xsite: internal error, %s accepted unchanged: %s", what, tostring(err))
  return slurm.SUCCESS
end

-- A record's word for a node list (`wsites`, read by xsite.record) for the
-- job's owner: "nodes: 2 at a, 1 at b", or "no node list".
local function list_text(cfg, word)
  if not word then return "no node list" end
  local named, counts = record.nodelist_sites(cfg, word)
  local parts = {}
  for si, s in ipairs(cfg.sites) do
    local k = counts and counts[si] or 0
    if k > 0 then parts[#parts + 1] = k .. " at " .. s.name end
  end
  -- (an older xsite's word has no counts)
  if not counts then
    for _, s in ipairs(named) do parts[#parts + 1] = "some at " .. s.name end
  end
  return "nodes: " .. (#parts > 0 and table.concat(parts, ", ") or word)
end

-- An owner's change refused for where it would leave the job: the reason
-- to the owner and, as scontrol shows none of job_modify's messages, to
-- slurmctld's log.
local function refuse_change(slurm, job_rec, why)
  slurm.log_user("xsite: change refused: %s", why)
  slurm.log_info("xsite: job %s: change refused: %s", tostring(job_rec.job_id), why)
  return slurm.ERROR
end

-- Mode=enforce refuses `--dependency=expand:JOB` of a job's owner (with
-- SchedulerParameters=permit_job_expansion, the job's nodes join JOB,
-- wherever either is): the refusal's text, or nil.
local function refuses_expansion(job_desc, uid)
  local dep = job_desc.dependency
  if type(dep) ~= "string" or not dep:lower():find("expand", 1, true) or M.privileged(uid) then return nil end
  local cfg = state.conf.get()
  if not cfg or cfg.policy.mode ~= "enforce" then return nil end
  return "--dependency=expand: a job that grows another gives it its nodes wherever they are, so xsite cannot "
    .. "keep either at one site; submit the job at its full size instead"
end

-- job_submit's work, under its pcall (no closure a job).
local function submit_job(job_desc, slurm, submit_uid, part_list)
  local why = refuses_expansion(job_desc, submit_uid)
  if why then
    slurm.log_user("xsite: job rejected: %s", why)
    return M.ESLURM_INVALID_FEATURE
  end
  local offset = job_desc.het_job_offset
  return decide(job_desc, slurm, M.flags(job_desc.spank_job_env), {
    floor = M.partition_floor(job_desc.partition, part_list, count(job_desc, "max_nodes"),
      M.slurm_conf().partitions),
    features = job_desc.features,
    prefer = job_desc.prefer,
    req_nodes = job_desc.req_nodes,
    licenses = job_desc.licenses,
    topless = count(job_desc, "max_nodes") == nil,
    het = set(offset) and { offset = offset, site = offset > 0 and het_site(job_desc.user_id) or nil } or nil,
    override = M.privileged(submit_uid) and submit_uid or nil,
  })
end

--- slurm_job_submit: decide and apply.  Never raises.
-- @param job_desc Slurm's job description
-- @param slurm Slurm's `slurm` table (log_user, log_info, log_error, SUCCESS, ERROR)
-- @param submit_uid who submits (slurm_job_submit's third argument): root
--   and SlurmUser may span with the link down
-- @param part_list slurm_job_submit's second argument (the partitions'
--   MinNodes); without it a job is judged on the node count it gives
-- @return a Slurm return code
function M.job_submit(job_desc, slurm, submit_uid, part_list)
  if not state.conf then M.setup(config.locate()) end
  local ok, rc = pcall(submit_job, job_desc, slurm, submit_uid, part_list)
  if not ok then return internal_error(slurm, rc, fails_closed(submit_uid), "job", "job rejected") end
  return rc
end

--- A constraint every node of the cluster meets: "site_a|site_b".
function M.any_site(cfg)
  local f = {}
  for i, s in ipairs(cfg.sites) do f[i] = s.feature end
  return table.concat(f, "|")
end

-- The fields of a job description whose change can move a pending job, and
-- those of them that name where it runs.
local SHAPE = { "min_nodes", "max_nodes", "num_tasks", "ntasks_per_node", "cpus_per_task", "min_cpus",
  "ntasks_per_tres", "tres_per_job", "tres_per_node", "tres_per_task", "tres_per_socket" }
local PLACE = { "features", "prefer", "req_nodes", "exc_nodes", "partition", "licenses" }

--- What job_modify sets a pending job's licenses to for "none": Lua's ""
-- means "unchanged" to job_submit/lua, and Slurm reads "," as an empty
-- list (scontrol shows `Licenses=,`).
M.NO_LICENSES = ","

--- A license request without the license `name` (every item of it); nil
-- when nothing is left.
function M.without_license(request, name)
  if type(request) ~= "string" or request == "" then return nil end
  if not name then return request end
  local kept = {}
  for item in request:gmatch("[^,;]+") do
    if not policy.names_license(item, name) then kept[#kept + 1] = item end
  end
  return #kept > 0 and table.concat(kept, ",") or nil
end

--- Whether `uid` may override a decision: root and SlurmUser.
function M.privileged(uid)
  return uid == 0 or (uid ~= nil and uid == state.slurm_user)
end

--- What root or SlurmUser sets a pending job's AdminComment to for a new
-- decision on the job as it is (`xsite load` does when the link's state
-- changes): "xsite recheck", then "held=user" or "held=admin" when the job
-- is held already.
M.RECHECK = "xsite recheck"

--- The request in an AdminComment being set (see RECHECK), or nil.
-- "xsite recheck[ held=user|admin][ unkept][ wsites=WORD]" (unkept: the
-- job was kept at one site and its constraint or preference or node list
-- no longer keeps it there; wsites: the sites of the job's node list as
-- squeue shows it, the record's word for them or "-" for none, which the
-- job record job_submit/lua shows lacks).
-- @return { held = "user"|"admin"|nil, unkept = true|nil, wsites = WORD|nil }
function M.recheck_request(text)
  if type(text) ~= "string" or text:sub(1, #M.RECHECK) ~= M.RECHECK then return nil end
  local rest = text:sub(#M.RECHECK + 1)
  local req = {}
  local before, wsites = rest:match("^(.-) wsites=([%w_%-%.:+]+)$")
  if before then rest, req.wsites = before, wsites end
  if rest:sub(-7) == " unkept" then
    req.unkept = true
    rest = rest:sub(1, -8)
  end
  if rest == "" then return req end
  local held = rest:match("^ held=(%a+)$")
  if held ~= "user" and held ~= "admin" then return nil end
  req.held = held
  return req
end

-- The link's state the policy uses now ("up", "degraded", "down").
local function link_state(slurm)
  local cfg = state.conf.get()
  local st = cfg and state_file(cfg, slurm, "link")
  return st and st.state or "up"
end

--- The user's own constraint of a pending job, from its constraint now
-- (`features`) and its record (`prev`, xsite.record.parse): the job's
-- when it names no site; the record's when it is the record's; else, when
-- it ends in a site constraint of xsite's form (`&[f1|f2]` or `&f`), what
-- is before it when that names no site (a constraint the owner set since,
-- in the first of the two steps job_modify asks for); else the record's.
function M.own_features(features, prev)
  local cfg = state.conf.get()
  if not prev or not cfg then return features end
  if type(features) ~= "string" or features == "" then return prev.constraint or "" end
  local function names_site(text)
    for word in text:gmatch("[^&|,()%[%]*]+") do
      if cfg.site_by_feature[word] then return true end
    end
    return false
  end
  if not names_site(features) or features == prev.constraint then return features end
  local adds = { "[" .. M.any_site(cfg) .. "]" }
  for _, site in ipairs(cfg.sites) do adds[#adds + 1] = site.feature end
  for _, add in ipairs(adds) do
    local tail = "&" .. add
    if #features > #tail and features:sub(-#tail) == tail then
      local own = features:sub(1, -#tail - 1)
      own = own:match("^%((.*)%)$") or own
      if not names_site(own) then return own end
    end
  end
  return prev.constraint or ""
end

--- slurm_job_modify: decide again whenever a pending job's shape or
-- placement changes (node counts, tasks, CPUs, Features, Prefer,
-- ReqNodeList, ExcNodeList, Partition), from the user's own constraint and
-- preference (kept in the record) and the change; what xsite added before
-- is replaced.  A change of placement by
-- root or SlurmUser is theirs to make: it is applied as given and the
-- record says `override=UID`.  Never raises.
-- @param modify_uid who asks (slurm_job_modify's fourth argument)
-- @param part_list slurm_job_modify's third argument (see job_submit)
function M.job_modify(job_desc, job_rec, slurm, modify_uid, part_list)
  if not state.conf then M.setup(config.locate()) end
  local ok, rc = pcall(function()
    local expands = refuses_expansion(job_desc, modify_uid)
    if expands then
      slurm.log_user("xsite: change refused: %s", expands)
      return slurm.ERROR
    end
    -- a preference the owner brings (xsite writes its own in its place)
    local own_prefer = job_desc.prefer ~= nil and job_desc.prefer ~= ""
    local shape, place = false, false
    for _, k in ipairs(SHAPE) do
      if given(k, job_desc[k]) then shape = true end
    end
    -- a change Slurm sets before the job's constraint (read before xsite
    -- adds to the change)
    local early = shape or job_desc.partition ~= nil or job_desc.req_nodes ~= nil or job_desc.exc_nodes ~= nil
    for _, k in ipairs(PLACE) do
      if job_desc[k] ~= nil then place = true end
    end
    local recheck = M.privileged(modify_uid) and M.recheck_request(job_desc.admin_comment)
    local prev = record.parse(job_rec.admin_comment)
    if recheck then
      -- the request itself is never stored: the job keeps its AdminComment
      -- unless a decision below replaces it
      job_desc.admin_comment = job_rec.admin_comment or ""
      if shape or place then
        slurm.log_user("xsite: AdminComment=%s takes no other change of the job", M.RECHECK)
        return slurm.ERROR
      end
      -- only Mode=enforce decides again (xsite load asks only then; this
      -- slurmctld may read a new Mode= up to a few seconds after it): the
      -- job stays as it is, for the next request
      local pol = policy_in_force()
      if not pol or pol.mode ~= "enforce" then
        slurm.log_info("xsite: job %s: %s ignored: Mode=%s", tostring(job_rec.job_id), M.RECHECK,
          pol and pol.mode or "(no configuration)")
        return slurm.SUCCESS
      end
      -- "degraded" decides like "up"
      recheck.link = link_state(slurm) == "down" and "down" or "up"
    elseif prev and prev.hold and given(nil, job_desc.nice) and not M.privileged(modify_uid) then
      -- Slurm gives a held job a priority again when its nice changes
      slurm.log_user("xsite: Nice: the job is held while the link between the sites is down")
      return M.ESLURM_INVALID_FEATURE
    elseif not shape and not place then
      return slurm.SUCCESS
    end
    -- a running job cannot move (Slurm refuses new features or nodes for it)
    if set(job_rec.job_state) and job_rec.job_state % 256 ~= M.JOB_PENDING then return slurm.SUCCESS end
    if place and M.privileged(modify_uid) then
      if prev then
        job_desc.admin_comment = record.put_word(job_rec.admin_comment, "override", modify_uid)
      end
      slurm.log_info("xsite: job %s: placement changed by uid %s, kept as given (override)",
        tostring(job_rec.job_id), tostring(modify_uid))
      return slurm.SUCCESS
    end
    -- The top of the job's node count: a new one bounds the job whatever
    -- its tasks; 0 or INFINITE (`NumNodes=1-0`, or from libslurm, which
    -- sends what scontrol refuses) means none.
    local top, new_top = job_desc.max_nodes, true
    if top == nil or top == NO_VAL then top, new_top = job_rec.max_nodes, false end
    if not set(top) or top <= 0 then top = nil end
    -- Two changes whose shape xsite cannot know are refused under
    -- Mode=enforce (Mode=advise refuses no change), with what to give too.
    -- Without a top the job may have a node a task, and the job record has
    -- no task count (its CPUs may be fewer: --overcommit, NumCPUs=): a
    -- change that takes the top away brings its task count.  Slurm 26.05
    -- gives a job with a task count and no top to its node count a top of
    -- its own, its task count (JOB_IMPLICIT_MAX_NODES), and raises it with
    -- the tasks after job_modify; job_submit/lua cannot tell it from a top
    -- the owner gave: more tasks than the top without a new top may be
    -- either shape.
    local pol = policy_in_force()
    local tasks, unknown = count(job_desc, "num_tasks"), nil
    if pol and pol.mode == "enforce" then
      if new_top and not top and not tasks then
        unknown = "NumNodes: a node count without a top lets the job have a node for each of its tasks, and xsite "
          .. "cannot see a pending job's tasks; give NumTasks= with it"
      elseif tasks and top and not new_top and tasks > top then
        unknown = string.format("NumTasks=%d: more tasks than the job's top of %d node(s), which Slurm may "
          .. "raise with them; give NumNodes=MIN-MAX with NumTasks", tasks, top)
      end
    end
    if unknown then
      slurm.log_user("xsite: %s", unknown)
      slurm.log_info("xsite: job %s: %s (refused)", tostring(job_rec.job_id), unknown)
      return M.ESLURM_INVALID_NODE_COUNT
    end
    local view = setmetatable({
      admin_comment = not recheck and job_desc.admin_comment or job_rec.admin_comment,
    }, { __index = function(_, k)
      if k == "max_nodes" then
        -- the job record has no task count: the most nodes decided at
        -- submission (the record's n) stays a floor.  Without a top to its
        -- node count a job can get as many nodes as it has tasks, CPUs
        -- (one at least a node) or units of a GRES for the whole job, as
        -- changed now or as it had them.
        local most = prev and tonumber(prev.n) or 0
        if top then return new_top and top or math.max(most, top) end
        local counts = { M.tasks(job_desc, count(job_desc, "min_nodes") or count(job_rec, "min_nodes")),
          count(job_desc, "min_cpus"),
          count(job_rec, "min_cpus"),
          M.gres_units(job_desc.tres_per_job or job_rec.tres_per_job) }
        for i = 1, 4 do
          if counts[i] and counts[i] > most then most = counts[i] end
        end
        return most
      end
      local v = job_desc[k]
      if given(k, v) then return v end
      return job_rec[k]
    end })
    -- the user's own constraint: a new one; else the job's when it names no
    -- site (xsite adds a site to whatever it adds, so the owner set it
    -- since; the record cannot say, only root may change it); else the
    -- record's
    local user = job_desc.features
    if user == nil then user = M.own_features(job_rec.features, prev) end
    -- the user's own licenses: a new request, or the job's without the
    -- link's share xsite gave it
    local cfg = state.conf.get()
    local lic = cfg and cfg.link and cfg.link.license
    local own = job_desc.licenses
    if own == nil then own = M.without_license(job_rec.licenses, lic and lic.name) end
    -- the job record has no --prefer: a new one, or the user's own from
    -- the record
    local prefer = job_desc.prefer
    if prefer == nil and prev then prefer = prev.prefer end
    local extra = { features = user, prefer = prefer, req_nodes = job_desc.req_nodes, licenses = own,
      floor = M.partition_floor(job_desc.partition ~= "" and job_desc.partition or job_rec.partition, part_list,
        top, M.slurm_conf().partitions), pin_one_node = recheck and recheck.link == "down" }
    -- the sites of the job's node list: a new list; else root's request
    -- says them (xsite load reads them from squeue); else the record's
    if extra.req_nodes == nil then
      if recheck and recheck.wsites then
        extra.nodelist_sites = recheck.wsites ~= "-" and recheck.wsites or nil
      elseif prev then
        extra.nodelist_sites = prev.wsites
      end
    end
    extra.topless = top == nil
    local offset = job_rec.het_job_offset
    if set(job_rec.het_job_id) and job_rec.het_job_id > 0 and set(offset) and prev then
      -- the whole heterogeneous job stays where it was placed
      extra.het = { offset = offset, site = prev.het or "?" }
    end
    local rc, d = decide(view, slurm, M.flags(job_rec.spank_job_env), extra)
    if recheck and d and d.action == "reject" then
      local ac = record.find(job_rec.admin_comment) and job_rec.admin_comment or
        record.put(job_rec.admin_comment, d.record)
      if recheck.link == "down" then
        -- refused with the link down (one no site can hold): held until
        -- the link is back, with the record it had (what it is decided
        -- from then).  A hold it was in already becomes an
        -- administrator's, so that its owner cannot release it meanwhile;
        -- held by whom xsite cannot tell (squeue did not say), it stays
        -- held after.
        local who = prev and prev.hold or recheck.held or
          (set(job_rec.priority) and job_rec.priority == 0 and "admin") or "xsite"
        job_desc.priority = 0
        ac = record.put_word(ac, "hold", who)
        slurm.log_info("xsite: job %s held (hold=%s) while the link is down: %s", tostring(job_rec.job_id),
          who, d.message)
      elseif recheck.unkept and prev and prev.mode == "enforce" then
        -- kept at one site under Mode=enforce, no longer so (its owner
        -- changed its constraint or preference while another mode was in
        -- force: xsite load saw it), and not to be kept there now: held,
        -- until its owner submits it again
        job_desc.priority = 0
        ac = record.put_word(ac, "hold", "xsite")
        slurm.log_info("xsite: job %s held: it was kept at one site and no longer is, and cannot be kept there "
          .. "now: %s", tostring(job_rec.job_id), d.message)
      else
        -- refused with the link back, for another reason (the
        -- configuration changed): as it was accepted, no longer held
        if prev and prev.hold == "xsite" then job_desc.priority = M.INFINITE end
        ac = record.put_word(ac, "hold", nil)
        slurm.log_info("xsite: job %s left as it was accepted: %s", tostring(job_rec.job_id), d.message)
      end
      job_desc.admin_comment = record.put_word(ac, "recheck", recheck.link)
      return slurm.SUCCESS
    end
    -- (Mode=advise refuses no change: it promises nothing)
    local enforced = cfg and cfg.policy.mode == "enforce" and not M.privileged(modify_uid)
    -- Every later decision reads the sites of the job's node list from its
    -- record (the job record job_submit/lua shows has no node list), which
    -- only root and SlurmUser may write: an owner's new list must have as
    -- many nodes at each site as the record says.  Taking the list away is
    -- taken: a record naming nodes the job no longer must have only keeps
    -- later decisions to fewer sites.
    if rc == slurm.SUCCESS and d and enforced and job_desc.req_nodes and job_desc.req_nodes ~= "" and
        (d.nodelist_sites or "-") ~= (prev and prev.wsites or "-") then
      return refuse_change(slurm, job_rec, string.format("ReqNodeList: xsite decides each later change of the "
        .. "job from the sites of its node list as its submission recorded them (%s), which only root can "
        .. "change; a list with other nodes at each site needs the job submitted again with --nodelist",
        list_text(cfg, prev and prev.wsites)))
    end
    -- whether the job's Features keep it at one site now (both rules below)
    local now = enforced and job_rec.features and job_rec.features ~= "" and constraint.analyse(job_rec.features, cfg)
    local one_site_now = now and now.one_site or false
    if rc == slurm.SUCCESS and d and (d.action == "pin" or d.action == "site") and early and enforced then
      -- The site constraint goes into Features and Prefer, which Slurm
      -- sets after the partition, node lists and counts of the same change,
      -- and not at all when a field of it fails in between (Slurm keeps
      -- what it set; some fields, Deadline for one, job_submit/lua does
      -- not even show).  Unless the job is kept at one site already, the
      -- change is made in two.  Kept at either site is not enough for a
      -- job whose node list names nodes to choose from at both: Slurm
      -- would hold it to neither once it read them as nodes the job must
      -- have, as it does after a change that fails half-way.
      if d.single_site and one_site_now and #now.sites > 1 then one_site_now = false end
      -- Its Features keep it at one site, and its --prefer with them: a job
      -- decided so from its submission on (keeps=prefer; not one accepted
      -- under Mode=advise or by an earlier xsite, whose preference may not)
      local kept = prev and prev.keeps == "prefer"
      if not (one_site_now and kept) then
        local why = kept and string.format("it needs the job kept at one site, which Slurm would set only after "
          .. "the rest of the change, and not at all were a part of it to fail; make it in two: first scontrol "
          .. "update JobId=%s Features='%s', then the change", tostring(job_rec.job_id),
          rawget(view, "features") or job_desc.features or "[" .. M.any_site(cfg) .. "]") or
          "it needs the job kept at one site, which Slurm would set only after the rest of the change, and its "
          .. "--prefer may not keep it there (accepted before Mode=enforce, or by an earlier xsite); submit the "
          .. "job again with the new shape"
        return refuse_change(slurm, job_rec, why)
      end
    end
    if rc == slurm.SUCCESS then
      -- Slurm lets only root and SlurmUser change admin_comment, even from
      -- job_submit: a change by the job's owner keeps the submission's
      -- record (the new one is in slurmctld's log)
      local keys = { "features", "prefer", "req_switch", "wait4switch", "licenses" }
      if M.privileged(modify_uid) then keys[#keys + 1] = "admin_comment" end
      for _, k in ipairs(keys) do
        if rawget(view, k) ~= nil then job_desc[k] = rawget(view, k) end
      end
      -- The new decision adds no constraint, yet the job has one: the one
      -- xsite added before, or the user's, must give way to the user's new
      -- (or none).  job_submit/lua cannot clear a constraint (an empty
      -- string means "unchanged"), so none becomes the OR of every site's
      -- feature, which every node has.
      if rawget(view, "features") == nil and job_rec.features and job_rec.features ~= ""
          and (prev or job_desc.features ~= nil) then
        local want = user ~= "" and user or (cfg and M.any_site(cfg))
        if want and want ~= job_rec.features then job_desc.features = want end
      end
      -- Likewise the job's --prefer, which Slurm schedules with instead of
      -- the constraint where it can: the user's own from the record, or,
      -- when the record has none, the job's constraint as it now is.  The
      -- job record has no --prefer in Lua, so a preference set since the
      -- submission is unknown here: it may be one xsite pinned before (it
      -- would keep a job that may now span waiting) or one the owner set
      -- while the job could span (it would carry the job across the pin).
      if rawget(view, "prefer") == nil and job_desc.prefer == nil then
        local want = prev and prev.prefer
        if not want then
          want = job_desc.features or job_rec.features
          if not want or want == "" then want = cfg and M.any_site(cfg) end
        end
        job_desc.prefer = want
      end
      -- Likewise the link's share the job held and now must not: its own
      -- licenses without it (none: M.NO_LICENSES).
      if rawget(view, "licenses") == nil and lic and job_rec.licenses
          and policy.names_license(job_rec.licenses, lic.name) then
        job_desc.licenses = own or M.NO_LICENSES
      end
      -- Likewise the switch count xsite asked topology/tree for: 0 is none.
      if prev and prev.wait4switch and rawget(view, "req_switch") == nil then
        job_desc.req_switch = 0
      end
      if recheck then
        -- a job xsite held is released; one its owner held before goes
        -- back to its owner's hold (`xsite load` does that: a job_submit
        -- plugin cannot), an administrator's hold stays
        if prev and prev.hold == "xsite" then job_desc.priority = M.INFINITE end
        job_desc.admin_comment = record.put_word(record.put_word(job_desc.admin_comment, "hold", nil),
          "recheck", recheck.link)
      end
    end
    if rc == slurm.SUCCESS and own_prefer and enforced then
      -- Slurm sets Prefer right after Features, and not at all when it finds
      -- the preference invalid: a change that keeps the job at one site by
      -- its Features from now on (the owner's, or xsite's as written above)
      -- must not bring a preference of the owner's, or a job kept at one
      -- site by its Features could keep an old preference that is not (a
      -- later change of its size trusts the Features, above)
      local after = job_desc.features or job_rec.features
      local a_after = after and after ~= "" and constraint.analyse(after, cfg)
      if a_after and a_after.one_site and not one_site_now then
        local why = string.format("Prefer= with a change that keeps the job at one site: Slurm sets the rest "
          .. "first and keeps it when it finds the preference invalid, and the job's old preference need not keep "
          .. "it there; make it in two: first scontrol update JobId=%s Features='%s', then Prefer=",
          tostring(job_rec.job_id), after)
        return refuse_change(slurm, job_rec, why)
      end
    end
    return rc
  end)
  if not ok then
    if M.recheck_request(job_desc.admin_comment) then job_desc.admin_comment = job_rec.admin_comment or "" end
    -- Mode=enforce: a change xsite cannot judge could take the job out of
    -- its pin; refused, the job stays as it was
    local pol = policy_in_force()
    return internal_error(slurm, rc, fails_closed(modify_uid) or
      (pol ~= nil and pol.mode == "enforce" and not M.privileged(modify_uid)), "modification", "change refused")
  end
  return rc
end

return M
