-- The source of docs/architecture.svg: how a job flows through xsite.
--
--   lua5.1 docs/architecture.lua > docs/architecture.svg
--
-- (tests/lint/docs.sh checks that the SVG in the tree is this script's
-- output.)  Boxes are placed on a grid of two rows; each arrow names what
-- passes along it.  Plain Lua, any version from 5.1 on, no modules.

local W, H = 1180, 470
local BW, BH = 200, 118

-- { id, column, row, title, lines... }; row 1 runs left to right, row 2
-- right to left, as the job goes
local boxes = {
  { "flags", 1, 1, "sbatch / salloc / srun", "--site-affinity, --comm-profile,", "--xsite-report",
    "SPANK plugin xsite.so (allocator)" },
  { "policy", 2, 1, "slurmctld: job_submit.lua", "xsite.submit -> xsite.policy", "xsite.model, xsite.constraint,",
    "xsite.hostlist (never blocks)" },
  { "job", 3, 1, "the job in Slurm", "Features (the pin), req_switch,", "AdminComment: the record",
    "\"xsite v=1 action=... why=...\"" },
  { "step", 4, 1, "slurmstepd (root)", "xsite.so remote side, Lua bridge", "task environment XSITE_*,",
    "MPI settings (tune_mpi=yes)" },
  { "mpi", 4, 2, "the MPI job", "xsite-run: ranks site by site", "libxsite: collectives cross the",
    "link once; counts what crosses" },
  { "traffic", 3, 2, "traffic file (the user's)", "JSON, version 1, at MPI_Finalize",
    "XSITE_TRAFFIC_FILE, read by root",
    "capped, checked, never followed" },
  { "report", 2, 2, "per-job report (root's)", "ReportDir/JOBID/report.json,", "schema xsite-report v1;",
    "xsite report: predicted vs measured" },
  { "admin", 1, 2, "admin tools", "xsite tune -> ProfileStateFile", "xsite calibrate -> LinkStateFile",
    "xsite replay: policy over sacct" },
}

-- { from, to, label lines... }: short lines, a horizontal arrow's label
-- stands in the gap between two boxes
local arrows = {
  { "flags", "policy", "spank_job_env", "XSITE_*" },
  { "policy", "job", "decision" },
  { "job", "step", "record,", "flags" },
  { "step", "mpi", "XSITE_SITE, XSITE_SITES,", "XSITE_TRAFFIC_FILE, ..." },
  { "mpi", "traffic", "bytes across,", "matrix" },
  { "traffic", "report", "at step", "end" },
  { "report", "admin", "measured" },
  { "admin", "policy", "state files (read, cached)" },
}

local function esc(s)
  return (s:gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

local pos = {}
local function place(b)
  local gap = (W - 4 * BW) / 5
  local x = gap + (b[2] - 1) * (BW + gap)
  local y = b[3] == 1 and 70 or 300
  pos[b[1]] = { x = x, y = y }
end

local out = {}
local function put(fmt, ...)
  out[#out + 1] = string.format(fmt, ...)
end

put('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" ' ..
  'font-family="DejaVu Sans, Arial, sans-serif">', W, H, W, H)
put('<title>xsite: how a job flows</title>')
put('<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" ' ..
  'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#444"/></marker></defs>')
put('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>', W, H)
put('<text x="%d" y="32" font-size="18" text-anchor="middle" font-weight="bold">%s</text>', W / 2,
  esc("xsite: a job from its flags to the report, and back into the policy"))

for _, b in ipairs(boxes) do place(b) end

for _, b in ipairs(boxes) do
  local p = pos[b[1]]
  put('<rect x="%.1f" y="%d" width="%d" height="%d" rx="8" fill="#eef4fa" stroke="#1b6ca8" stroke-width="1.5"/>',
    p.x, p.y, BW, BH)
  put('<text x="%.1f" y="%d" font-size="14" font-weight="bold" text-anchor="middle">%s</text>',
    p.x + BW / 2, p.y + 24, esc(b[4]))
  for i = 5, #b do
    put('<text x="%.1f" y="%d" font-size="11.5" text-anchor="middle">%s</text>',
      p.x + BW / 2, p.y + 24 + (i - 4) * 20, esc(b[i]))
  end
end

for _, a in ipairs(arrows) do
  local f, t = pos[a[1]], pos[a[2]]
  local x1, y1, x2, y2, lx, ly, anchor
  if f.y == t.y then
    -- along a row, right or left
    local right = t.x > f.x
    x1 = right and f.x + BW or f.x
    x2 = right and t.x or t.x + BW
    y1, y2 = f.y + BH / 2, t.y + BH / 2
    lx, ly, anchor = (x1 + x2) / 2, y1 - 6, "middle"
  else
    -- between the rows, centre to centre; the label beside the arrow, on
    -- the side with room
    x1, x2 = f.x + BW / 2, t.x + BW / 2
    y1 = f.y < t.y and f.y + BH or f.y
    y2 = f.y < t.y and t.y or t.y + BH
    if x1 > W / 2 then
      lx, anchor = x1 - 8, "end"
    else
      lx, anchor = x1 + 8, "start"
    end
    ly = (y1 + y2) / 2 + 4
  end
  put('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444" stroke-width="1.5" marker-end="url(#head)"/>',
    x1, y1, x2, y2)
  local n = #a - 2
  for i = 3, #a do
    local y = f.y == t.y and ly - (n - (i - 2)) * 13 or ly + (i - 3) * 13
    put('<text x="%.1f" y="%.1f" font-size="10.5" text-anchor="%s" fill="#333">%s</text>', lx, y, anchor,
      esc(a[i]))
  end
end

put('<text x="%d" y="%d" font-size="11" fill="#555">%s</text>', 20, H - 14,
  esc("Generated by docs/architecture.lua. Row 1: submission and placement; row 2: the run and what is learnt."))
put('</svg>')
io.write(table.concat(out, "\n"), "\n")
