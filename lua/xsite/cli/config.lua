--- `xsite config`: print a configuration with global keys set.  See xsite(1).
-- @module xsite.cli.config

local common = require("xsite.cli.common")
local config = require("xsite.config")

local out, err = common.out, common.err

local M = {
  summary = "print xsite.conf with global keys set (for deployments)",
  options = { set = "list" },
  args = { name = "[FILE]", min = 0, max = 1, extra = "one file at most" },
  usage = [[
Usage: xsite config [FILE] --set KEY=VALUE [--set KEY=VALUE ...]

Print a configuration (default: the one --config or the environment names)
with keys of its global lines set: each key is taken out of the line that
sets it (the line's other keys stay) and written on a line of its own at
the end.  What a deployment, or the testbed, uses to point a site's
configuration at its own LinkStateFile or ReportDir.  The file must be
valid, and so must the result; nothing is written.

  --set KEY=VALUE  a key of the global lines, e.g. ReportDir=/var/spool/xsite
]],
}

function M.run(opts, pos, io_, global)
  if not opts.set then
    err(io_, "xsite config: --set KEY=VALUE is required\n")
    return 2
  end
  local settings = {}
  for _, s in ipairs(opts.set) do
    local k, v = s:match("^([%a][%w]*)=(.+)$")
    if not k then
      err(io_, "xsite config: --set: '%s' is not KEY=VALUE\n", s)
      return 2
    end
    settings[#settings + 1] = { k, v }
  end
  local path = pos[1] or global.config or config.locate()
  local text, rerr = config.read_file(path)
  if not text then
    err(io_, "xsite config: %s\n", rerr)
    return 1
  end
  local new, serr = config.set_global(text, path, settings)
  if not new then
    err(io_, "xsite config: %s\n", serr:gsub("\n", "\nxsite config: "))
    return 1
  end
  out(io_, "%s", new)
  return 0
end

return M
