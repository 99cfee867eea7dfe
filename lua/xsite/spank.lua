--- The library's side of the SPANK plugin spank/xsite.so.
--
-- The plugin embeds Lua and calls these functions; they only call the rest
-- of the library (the one config parser, the profiles, the policy's checks)
-- and shape the results for C: strings, or nil and a message.  One
-- configuration per Lua state, loaded by `load`.
-- @module xsite.spank

local config = require("xsite.config")
local hostlist = require("xsite.hostlist")
local profile = require("xsite.profile")
local policy = require("xsite.policy")
local tune = require("xsite.tune")
local report = require("xsite.report")
local json = require("xsite.json")
local fs = require("xsite.fs")

local M = {}

local cfg

--- Load the configuration.
-- @return true, or nil and the parser's messages
function M.load(path)
  local c, err = config.load(path)
  if not c then return nil, err end
  cfg = c
  return true
end

--- Check a `--site-affinity` value (the same check and message as the policy's).
function M.check_affinity(v)
  return policy.check_affinity(cfg, v)
end

--- Check a `--comm-profile` value.  Without a configuration only explicit
-- profiles can be checked; names are then left to slurmctld.
function M.check_profile(v)
  local p, err
  if cfg then
    p, err = profile.resolve(v, cfg)
  elseif v:find("=") then
    p, err = profile.parse_explicit(v)
  else
    return true
  end
  if not p then return nil, err end
  return true
end

local function number(v)
  return (string.format("%.3f", v):gsub("%.?0+$", ""))
end

--- What a task is told about where it runs.
-- @param host this node's name (a domain is ignored when the short name is a node)
-- @param nodelist the job's SLURM_JOB_NODELIST
-- @return { site, sites, spanning, latency_us, bandwidth_mbps, warning }, or nil and a message
function M.task_env(host, nodelist)
  local env, warn = {}, {}
  local site = cfg.site_of_node[host] or cfg.site_of_node[host:match("^[^.]*")]
  if site then
    env.site = site.name
  else
    warn[#warn + 1] = string.format("node '%s' is in no site of %s; XSITE_SITE not set", host, cfg.file)
  end
  local names, herr = hostlist.expand(nodelist)
  if not names then return nil, "SLURM_JOB_NODELIST: " .. herr end
  local count, outside = {}, 0
  for _, n in ipairs(names) do
    local s = cfg.site_of_node[n]
    if s then count[s] = (count[s] or 0) + 1 else outside = outside + 1 end
  end
  local parts = {}
  for _, s in ipairs(cfg.sites) do
    if count[s] then parts[#parts + 1] = s.name .. ":" .. count[s] end
  end
  if outside > 0 then
    warn[#warn + 1] = string.format("%d node(s) of the job in no site of %s", outside, cfg.file)
  end
  env.sites = table.concat(parts, ",")
  env.spanning = #parts > 1 and "1" or "0"
  local state
  if cfg.policy.link_state_file then
    local st, serr = config.load_link_state(cfg.policy.link_state_file)
    if st then
      state = st
    elseif serr then
      warn[#warn + 1] = serr .. "; using the configured link"
    end
  end
  local link = policy.effective_link(cfg, state)
  env.latency_us = number(link.latency * 1e6)
  env.bandwidth_mbps = number(link.bandwidth * link.channels / 1e6)
  if #warn > 0 then env.warning = table.concat(warn, "; ") end
  return env
end

--- Open MPI tuning for a task of a job that spans the link (tune_mpi=yes):
-- writes the coll/tuned rules file for the link (the measured one of the
-- LinkStateFile, else the configured one) to DIR/xsite-coll-rules.ID (the
-- node's own directory; one file per step, which the plugin removes when the
-- step ends) and gives the environment that points Open MPI at it.
-- @param dir a directory of this node, e.g. "/tmp"
-- @param jobid the job's id (digits), or JOBID.STEP (e.g. 42.0, 42.batch)
-- @return "NAME=VALUE" lines, or nil and a message
function M.tune_env(dir, jobid)
  if type(dir) ~= "string" or dir:sub(1, 1) ~= "/" then
    return nil, "tune_mpi: '" .. tostring(dir) .. "' is not an absolute directory"
  end
  if type(jobid) ~= "string" or not (jobid:match("^%d+$") or jobid:match("^%d+%.%w+$")) then
    return nil, "tune_mpi: '" .. tostring(jobid) .. "' is not a job id"
  end
  local state
  if cfg.policy.link_state_file then state = config.load_link_state(cfg.policy.link_state_file) end
  local link = policy.effective_link(cfg, state)
  if link.state == "down" then return nil, "tune_mpi: the link is down; no MPI tuning" end
  local p, err = tune.plan({ bandwidth = link.bandwidth * link.channels, latency = link.latency },
    { local_bandwidth = math.min(cfg.sites[1].net_bw, cfg.sites[2].net_bw) })
  if not p then return nil, "tune_mpi: " .. err end
  local path = dir:gsub("/+$", "") .. "/xsite-coll-rules." .. jobid
  local ok, werr = fs.write_atomic(path, tune.rules_text(p))
  if not ok then return nil, "tune_mpi: " .. werr end
  return (tune.format(tune.env(p, path), "env"))
end

--- Where the per-job records go (xsite.conf ReportDir).
function M.report_dir()
  return cfg.policy.report_dir
end

--- What bounds root's work on the records: TrafficMaxSize (bytes) and
-- ReportRetention (seconds, 0 for ever), as whole numbers in text.
function M.report_limits()
  return string.format("%.0f", cfg.policy.traffic_max_size), string.format("%.0f", cfg.policy.report_retention)
end

local function link_state()
  if not cfg.policy.link_state_file then return nil end
  return (config.load_link_state(cfg.policy.link_state_file))
end

local function profile_state()
  if not cfg.policy.profile_state_file then return nil end
  return (config.load_profile_state(cfg.policy.profile_state_file))
end

--- The record of a step whose tasks start (xsite.report.step_start), as
-- JSON text the plugin keeps until the step ends.
-- @param profile_value the --comm-profile value, or "" for none
-- @param start epoch seconds, as text
function M.step_start(job, step, user, uid, job_nodes, step_nodes, profile_value, start)
  local rec = report.step_start(cfg, { job = job, step = step, user = user, uid = uid,
    job_nodes = job_nodes, step_nodes = step_nodes,
    profile = profile_value ~= "" and profile_value or nil, start = tonumber(start) }, link_state(),
    profile_state())
  return json.encode(rec)
end

--- The job's record once a step has ended (xsite.report.step_end).
-- @param traffic libxsite's record, or "" when there is none
-- @param note why there is none, or ""
-- @param existing the job's record so far, or ""
-- @return the record as JSON text, and what to log ("" for nothing)
function M.step_end(start, finish, traffic, note, existing)
  local rec, log = report.step_end(start, tonumber(finish), traffic ~= "" and traffic or nil,
    note ~= "" and note or nil, existing ~= "" and existing or nil,
    { max_traffic = cfg.policy.traffic_max_size })
  return json.encode(rec), table.concat(log, "; ")
end

return M
