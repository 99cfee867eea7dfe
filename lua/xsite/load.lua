--- The link's load: who holds the link's licenses until when, and when
-- each site's nodes come free.  `xsite load` gathers it from Slurm (squeue,
-- sinfo, scontrol: root's tools, run outside slurmctld's locks) into
-- LinkLoadFile (xsite.state); the policy reads that file to weigh, for a
-- job that could span while the link's licenses are all held, its wait for
-- the link against its wait for one site.
--
-- Both waits are estimates from the running jobs' time limits: a job that
-- ends sooner frees its nodes and units sooner, and jobs queued ahead may
-- take them first.  Slurm's own license count, not this estimate, keeps the
-- link from being over-committed.
-- @module xsite.load

local hostlist = require("xsite.hostlist")
local units = require("xsite.units")

local M = {}

--- The fields of squeue's output `gather` reads: time left, nodes,
-- licenses (none of them a user's free text).
M.SQUEUE_FORMAT = "%L|%N|%W"

--- The fields of sinfo's output (one line per node and partition).
M.SINFO_FORMAT = "%N|%T"

-- The states (sinfo's long form, without its suffix) of a node that a new
-- job can get, now or when its jobs end.
local USABLE = { idle = true, mixed = true, allocated = true, completing = true, planned = true }

-- Whether a node in this sinfo state can take a new job: not down, drained,
-- draining, failing, reserved, in maintenance or not responding ("*").
local function usable(st)
  if st:find("*", 1, true) then return false end
  return USABLE[st:gsub("[^%a].*$", ""):lower()] == true
end

-- A list of { time, count } grouped by time and sorted, from a map time -> count.
local function groups(by_time)
  local out = {}
  for t, c in pairs(by_time) do out[#out + 1] = { t, c } end
  table.sort(out, function(a, b) return a[1] < b[1] end)
  return out
end

--- The load from what Slurm printed.
-- @param cfg the configuration (its sites' nodes, the link's License=)
-- @param out { squeue = text of `squeue -a -h -t RUNNING -o M.SQUEUE_FORMAT`,
--   sinfo = text of `sinfo -a -h -N -o M.SINFO_FORMAT`, license = text of
--   `scontrol -o show license NAME` (nil without License=) }
-- @param now the time of the view (seconds since the epoch)
-- @return the table of xsite.state.parse_load, or nil and a message
function M.gather(cfg, out, now)
  -- when each node of a site comes free: idle now, else when its last job ends
  local free, usable_node = {}, {}
  for line in (out.sinfo or ""):gmatch("[^\n]+") do
    local node, st = line:match("^([^|]+)|(%S+)$")
    if not node then return nil, "sinfo: unexpected line: " .. line:sub(1, 200) end
    if cfg.site_of_node[node] then
      -- a node in several partitions: usable when each line says so
      usable_node[node] = usable_node[node] ~= false and usable(st)
      free[node] = free[node] or now
    end
  end
  local lic = cfg.link.license
  local ends = {}
  for line in (out.squeue or ""):gmatch("[^\n]+") do
    -- the licenses last: a request of one of several ("a|b") holds '|'
    local left, nodes, licenses = line:match("^([^|]*)|([^|]*)|(.*)$")
    if not left then return nil, "squeue: unexpected line: " .. line:sub(1, 200) end
    -- a job without a time limit (UNLIMITED) never ends, as far as we
    -- know; the others at the next whole minute of their time left (a few
    -- groups for thousands of jobs and nodes: the file stays small)
    local s = units.slurm_duration(left)
    local t = s and now + math.ceil(s / 60) * 60 or math.huge
    local names = nodes ~= "" and hostlist.expand(nodes) or {}
    for _, n in ipairs(names) do
      if free[n] and t > free[n] then free[n] = t end
    end
    if lic and t ~= math.huge then
      -- a request of one of several ("a:1|xsite_link:2"): the units it
      -- may hold
      local u = units.license_units(licenses, lic.name)
      if u > 0 then ends[t] = (ends[t] or 0) + u end
    end
  end
  local ld = { time = now, sites = {} }
  for _, s in ipairs(cfg.sites) do
    local by_time = {}
    for _, n in ipairs(s.nodes) do
      if usable_node[n] and free[n] ~= math.huge then by_time[free[n]] = (by_time[free[n]] or 0) + 1 end
    end
    ld.sites[s.name] = groups(by_time)
  end
  if lic then
    local total = (out.license or ""):match("Total=(%d+)")
    local used = (out.license or ""):match("Used=(%d+)")
    if not total or not used then
      return nil, string.format("scontrol show license %s: no Total= and Used= in: %s", lic.name,
        (out.license or ""):match("[^\n]*"):sub(1, 200))
    end
    ld.license = { name = lic.name, total = tonumber(total), used = tonumber(used), ends = groups(ends) }
  end
  return ld
end

--- How long until `count` of a list of { time, count } (sorted) have come,
-- counting `have` already there.
-- @return seconds from `now` (0 when enough are there), or nil for never
local function wait_for(list, have, count, now)
  if have >= count then return 0 end
  for _, g in ipairs(list) do
    have = have + g[2]
    if have >= count then return math.max(0, g[1] - now) end
  end
  return nil
end

--- How long a job waits for `need` units of the link's licenses.
-- @param ld the load (xsite.state.parse_load)
-- @return seconds (0: free now), or nil when the running jobs' ends never
--   free that many
function M.link_wait(ld, need, now)
  local lic = ld.license
  return wait_for(lic.ends, lic.total - lic.used, math.min(need, lic.total), now)
end

--- How long a job of `n` nodes waits for site `name`.
-- @return seconds (0: free now), or nil when the site never has that many
function M.site_wait(ld, name, n, now)
  local free = ld.sites[name]
  if not free then return nil end
  return wait_for(free, 0, n, now)
end

return M
