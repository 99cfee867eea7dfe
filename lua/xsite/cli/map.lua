--- `xsite map`: the site-major rank order of an allocation (for xsite-run).  See xsite(1).
-- @module xsite.cli.map

local common = require("xsite.cli.common")
local hostlist = require("xsite.hostlist")
local json = require("xsite.json")
local fs = require("xsite.fs")
local mapping = require("xsite.mapping")
local profile = require("xsite.profile")
local report = require("xsite.report")
local traffic = require("xsite.traffic")
local units = require("xsite.units")

local out, err = common.out, common.err

local M = {
  summary = "the site-major rank order of an allocation (for xsite-run)",
  options = {
    nodelist = true, ["tasks-per-node"] = true, ["comm-graph"] = true, ["comm-profile"] = true,
    ["report-dir"] = true, format = true, verbose = false,
  },
  usage = [=[
Usage: xsite map [--nodelist LIST] [--tasks-per-node SPEC]
                 [--comm-graph FILE | --comm-profile PROFILE [--report-dir DIR]]
                 [--format hostfile|rankfile|json] [--verbose]

Order an allocation's task slots site by site, for srun's SLURM_HOSTFILE
(--distribution=arbitrary) or Open MPI's rankfile; with --comm-graph, the
traffic a previous run recorded (libxsite's record), choose which
ranks go to which site so that the fewest bytes cross the link (METIS's
gpmetis and, up to 512 ranks, xsite's own Kernighan-Lin: the smaller cut).

  --nodelist LIST        the nodes (default: $SLURM_JOB_NODELIST)
  --tasks-per-node SPEC  e.g. 2(x4) (default: $SLURM_TASKS_PER_NODE)
  --comm-graph FILE      a traffic record with a "matrix" or "edges" of bytes
                         rank to rank
  --comm-profile P       without --comm-graph: the traffic of the latest earlier
                         run of your jobs with profile P and as many ranks, from
                         their reports in ReportDir (none found: site by site)
  --report-dir DIR       where the reports are (default: ReportDir of xsite.conf)
  --format F             hostfile (default), rankfile or json
  --verbose              the map and the bytes across on stderr
]=],
}

-- The communication graph of a libxsite record of `n` ranks, from its
-- matrix or its edges (xsite.traffic reads it; the command runs as the
-- user, so no size cap).
local function read_graph(path, n)
  local f, rerr = io.open(path, "rb")
  if not f then return nil, rerr end
  local text = f:read("*a") or ""
  f:close()
  local t, terr = traffic.decode(text, { max_size = false })
  if not t then return nil, path .. ": " .. terr end
  if t.ranks ~= n then
    return nil, string.format("%s: the record has %d ranks, the allocation %d task slots", path, t.ranks, n)
  end
  if t.matrix == json.null and t.edges == json.null then
    return nil, path .. ": the record has no matrix and no edges (libxsite keeps a matrix up to XSITE_MATRIX_MAX"
      .. " ranks, the edges beyond it up to XSITE_EDGES_MAX of them)"
  end
  local g, gerr = mapping.graph_of_traffic(t)
  if not g then return nil, path .. ": " .. gerr end
  return g
end

function M.run(opts, _, io_, global)
  local format = common.output_format("map", opts.format, { "hostfile", "rankfile", "json" }, io_)
  if not format then return 2 end
  local list = opts.nodelist or os.getenv("SLURM_JOB_NODELIST") or os.getenv("SLURM_NODELIST")
  if not list then
    err(io_, "xsite map: no --nodelist and no SLURM_JOB_NODELIST: run inside an allocation\n")
    return 2
  end
  local nodes, herr = hostlist.expand(list)
  if not nodes then err(io_, "xsite map: --nodelist: %s\n", herr) return 2 end
  local spec = opts["tasks-per-node"] or os.getenv("SLURM_TASKS_PER_NODE")
  local counts
  if spec then
    local terr
    counts, terr = mapping.tasks_per_node(spec)
    if not counts then err(io_, "xsite map: --tasks-per-node: %s\n", terr) return 2 end
    if #counts ~= #nodes then
      err(io_, "xsite map: --tasks-per-node: %d counts for %d nodes\n", #counts, #nodes)
      return 2
    end
  else
    counts = {}
    for i = 1, #nodes do counts[i] = 1 end
  end
  local cfg = common.load_config(global.config, io_)
  if not cfg then return 1 end
  local m, merr = mapping.site_major(cfg, nodes, counts)
  if not m then err(io_, "xsite map: %s\n", merr) return 1 end
  local na = m.per_site[cfg.sites[1].name]
  local ranks, cut, start, method = m.slots, nil, nil, nil
  local g, from, from_job
  if opts["comm-graph"] then
    local gerr
    g, gerr = read_graph(opts["comm-graph"], #m.slots)
    if not g then err(io_, "xsite map: --comm-graph: %s\n", gerr) return 1 end
  elseif opts["comm-profile"] then
    -- the label the job's report has: through the profile's own `label`
    -- (an explicit spec loses its blanks); a profile that does not resolve
    -- is looked for as given
    local p = profile.resolve(opts["comm-profile"], cfg)
    local job_or_why
    g, job_or_why = report.earlier_traffic(opts["report-dir"] or cfg.policy.report_dir,
      p and profile.label(p) or opts["comm-profile"], #m.slots, fs.euid())
    from_job = g and job_or_why
    from = g and string.format("the traffic of job %s (profile %s)", job_or_why, opts["comm-profile"])
    if not g and opts.verbose then err(io_, "xsite map: --comm-profile: %s; site by site\n", job_or_why) end
  end
  if g then
    local side, note
    side, cut, start, method, note = mapping.bisect_graph(g, na)
    if note then err(io_, "xsite map: METIS not used (%s)\n", note) end
    ranks = mapping.assign(m.slots, side, na)
  end
  if opts.verbose then
    for r, slot in ipairs(ranks) do err(io_, "xsite: rank %d -> %s (site %s)\n", r - 1, slot.host, slot.site) end
    if from then err(io_, "xsite: ranks placed by %s\n", from) end
    if cut then
      err(io_, "xsite: predicted bytes across the link: %s (site-major order: %s; placed by %s)\n",
        units.format_bytes(cut), units.format_bytes(start), method)
    end
  end
  if format == "json" then
    local list_ = json.array({})
    for r, slot in ipairs(ranks) do
      list_[r] = { rank = r - 1, host = slot.host, site = slot.site,
        slot = slot["local"] % cfg.site_by_name[slot.site].cores }
    end
    out(io_, "%s\n", json.encode({ ranks = list_, per_site = m.per_site, cross_bytes = cut,
      cross_bytes_site_major = start, placed_by = method, traffic_of_job = from_job }))
  else
    for r, slot in ipairs(ranks) do
      if format == "hostfile" then
        out(io_, "%s\n", slot.host)
      else
        local cores = cfg.site_by_name[slot.site].cores
        out(io_, "rank %d=%s slot=%d\n", r - 1, slot.host, slot["local"] % cores)
      end
    end
  end
  return 0
end

return M
