--- The library's side of the SPANK plugin spank/xsite.so.
--
-- The plugin embeds Lua and calls `M.handle(name, request)` (spank/lua_bridge.c):
-- a request is a table of named strings, and every answer is a table with
-- `code` ("ok", or what went wrong: "invalid" for a bad value, "config" for
-- no usable configuration, "io" for a file that could not be written,
-- "unavailable" for what cannot be done now, "internal" for a bug), a
-- `message` when it is not "ok", and named strings.  The functions only
-- call the rest of the library (the one config parser, the profiles, the
-- policy's checks).  One configuration per Lua state, loaded by `load`.
-- @module xsite.spank

local config = require("xsite.config")
local hostlist = require("xsite.hostlist")
local profile = require("xsite.profile")
local policy = require("xsite.policy")
local tune = require("xsite.tune")
local report = require("xsite.report")
local json = require("xsite.json")
local states = require("xsite.state")
local text = require("xsite.text")

local M = {}

local cfg

local function fail(code, message)
  return { code = code, message = message }
end

-- A request's field that is absent or empty: nil.
local function given(v)
  if v == nil or v == "" then return nil end
  return v
end

local handlers = {}

--- Load the configuration.  `{ path }` -> `{}`
function handlers.load(req)
  local c, err = config.load(req.path)
  if not c then
    cfg = nil
    return fail("config", err)
  end
  cfg = c
  return {}
end

--- Check a `--site-affinity` value (the same check and message as the
-- policy's).  `{ value }` -> `{}`
function handlers.check_affinity(req)
  if not cfg then return fail("config", "no configuration loaded") end
  local ok, err = policy.check_affinity(cfg, req.value)
  if not ok then return fail("invalid", err) end
  return {}
end

--- Check a `--comm-profile` value.  Without a configuration only explicit
-- profiles can be checked; names are then left to slurmctld.  `{ value }` -> `{}`
function handlers.check_profile(req)
  local v = req.value or ""
  local p, err
  if cfg then
    p, err = profile.resolve(v, cfg)
  elseif v:find("=") then
    p, err = profile.parse_explicit(v)
  else
    return {}
  end
  if not p then return fail("invalid", err) end
  return {}
end

-- The measured link of LinkStateFile: nil without one, and nil and a
-- message for one that cannot be used.
local function link_state()
  if not cfg.policy.link_state_file then return nil end
  return states.load_link(cfg.policy.link_state_file)
end

local function number(v)
  return (string.format("%.3f", v):gsub("%.?0+$", ""))
end

--- What a task is told about where it runs.
-- `{ host, nodelist }` (this node's name, a domain ignored when the short
-- name is a node; the job's SLURM_JOB_NODELIST) -> `{ site, sites, spanning,
-- latency_us, bandwidth_mbps, warning }`
function handlers.task_env(req)
  if not cfg then return fail("config", "no configuration loaded") end
  local host, nodelist = req.host or "", req.nodelist or ""
  local env, warn = {}, {}
  local site = cfg.site_of_node[host] or cfg.site_of_node[host:match("^[^.]*")]
  if site then
    env.site = site.name
  else
    warn[#warn + 1] = string.format("node '%s' is in no site of %s; XSITE_SITE not set", host, cfg.file)
  end
  -- counted from its ranges, never expanded (the step's environment is
  -- its owner's)
  local count, err, outside = hostlist.site_counts(nodelist, cfg)
  if not count then return fail("invalid", "SLURM_JOB_NODELIST: " .. err) end
  local parts = {}
  for si, s in ipairs(cfg.sites) do
    if count[si] > 0 then parts[#parts + 1] = s.name .. ":" .. count[si] end
  end
  if outside > 0 then
    warn[#warn + 1] = string.format("%d node(s) of the job in no site of %s", outside, cfg.file)
  end
  env.sites = table.concat(parts, ",")
  env.spanning = #parts > 1 and "1" or "0"
  local state, serr = link_state()
  if serr then warn[#warn + 1] = serr .. "; using the configured link" end
  local link = policy.effective_link(cfg, state)
  env.latency_us = number(link.latency * 1e6)
  env.bandwidth_mbps = number(link.bandwidth * link.channels / 1e6)
  if #warn > 0 then env.warning = table.concat(warn, "; ") end
  return env
end

--- Open MPI tuning for a task of a job that spans the link (tune_mpi=yes):
-- the coll/tuned rules for the link (the measured one of the LinkStateFile,
-- else the configured one) and the environment that points Open MPI at
-- them in `path`, the file the plugin made for them on this node (as the
-- job's user, with a name of its own: one file per step, which it removes
-- when the step ends) and writes them to.  Nothing is written here: in
-- user_init the plugin runs as the user with root's real uid, and a shell
-- (Debian's dash) would drop to that.
-- `{ path }` (absolute) -> `{ env, rules }` ("NAME=VALUE" lines; the
-- rules file's text)
function handlers.tune_env(req)
  if not cfg then return fail("config", "no configuration loaded") end
  local path = req.path
  if type(path) ~= "string" or path:sub(1, 1) ~= "/" or path:find("[%c=]") then
    return fail("invalid", "tune_mpi: '" .. text.printable(path) .. "' is not an absolute file name")
  end
  local link = policy.effective_link(cfg, (link_state()))
  if link.state == "down" then return fail("unavailable", "tune_mpi: the link is down; no MPI tuning") end
  local p, err = tune.plan({ bandwidth = link.bandwidth * link.channels, latency = link.latency },
    { local_bandwidth = math.min(cfg.sites[1].net_bw, cfg.sites[2].net_bw) })
  if not p then return fail("invalid", "tune_mpi: " .. err) end
  return { env = (tune.format(tune.env(p, path), "env")), rules = tune.rules_text(p) }
end

--- Where the per-job records go, and what bounds root's work on them.
-- `{}` -> `{ dir, traffic_max_size, retention }`: ReportDir, TrafficMaxSize
-- (bytes) and ReportRetention (seconds, 0 for ever), whole numbers in text
function handlers.report_settings()
  if not cfg then return fail("config", "no configuration loaded") end
  return { dir = cfg.policy.report_dir, traffic_max_size = string.format("%.0f", cfg.policy.traffic_max_size),
    retention = string.format("%.0f", cfg.policy.report_retention) }
end

local function profile_state()
  if not cfg.policy.profile_state_file then return nil end
  return (states.load_profiles(cfg.policy.profile_state_file))
end

--- The record of a step whose tasks start (xsite.report.step_start), as
-- JSON text the plugin keeps until the step ends.
-- `{ job, step, user, uid, job_nodes, step_nodes, profile, start }`
-- (profile: the --comm-profile value, absent for none; start: epoch
-- seconds) -> `{ record }`
function handlers.step_start(req)
  if not cfg then return fail("config", "no configuration loaded") end
  local rec = report.step_start(cfg, { job = req.job, step = req.step, user = req.user, uid = req.uid,
    job_nodes = req.job_nodes, step_nodes = req.step_nodes, profile = given(req.profile),
    start = tonumber(req.start) }, (link_state()), profile_state())
  return { record = json.encode(rec) }
end

--- The job's record once a step has ended (xsite.report.step_end).
-- `{ start, finish, traffic, note, existing }` (the step's start record;
-- epoch seconds; libxsite's record, absent when there is none; why there is
-- none; the job's record so far) -> `{ record, log }` (log: what to log,
-- absent for nothing)
function handlers.step_end(req)
  if not cfg then return fail("config", "no configuration loaded") end
  local rec, log = report.step_end(req.start, tonumber(req.finish), given(req.traffic), given(req.note),
    given(req.existing), { max_traffic = cfg.policy.traffic_max_size })
  return { record = json.encode(rec), log = #log > 0 and table.concat(log, "; ") or nil }
end

--- Whether this node keeps Slurm's node list of its job (or of its
-- heterogeneous job's component) beside the job's record: the list's first
-- node does, so that one node per component reads and writes the file.
-- `{ nodes, node }` (SLURM_NODELIST and SLURMD_NODENAME of slurmd's epilog)
-- -> `{ first = "1" | "0" }`
function handlers.first_node(req)
  local first, err = hostlist.first(req.nodes)
  if not first then return fail("invalid", "SLURM_NODELIST: " .. err) end
  return { first = first == req.node and "1" or "0" }
end

--- Slurm's node lists of a job with one more component's
-- (xsite.report.add_slurm_nodes), the text of xsite.report.SLURM_FILE.
-- `{ existing, job, nodes }` (existing absent: none yet) -> `{ lists, log }`
-- (log absent for nothing)
function handlers.slurm_nodes(req)
  local lists, log = report.add_slurm_nodes(given(req.existing), req.job, req.nodes)
  if not lists then return fail("invalid", log) end
  return { lists = json.encode(lists) .. "\n", log = log }
end

--- Answer one request of the plugin: never raises.
-- @param name the function
-- @param req the request, a table of named strings
-- @return the answer: a table with `code`, `message` unless "ok", and fields
function M.handle(name, req)
  local f = handlers[name]
  if not f then return fail("internal", "xsite.spank has no function '" .. tostring(name) .. "'") end
  local ok, ans = pcall(f, type(req) == "table" and req or {})
  if not ok then return fail("internal", tostring(ans)) end
  ans.code = ans.code or "ok"
  return ans
end

return M
