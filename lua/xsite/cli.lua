--- The `xsite` command: a dispatcher to its subcommands, one module each
-- (xsite.cli.<name>, `tune-mpi` in xsite.cli.tune_mpi).  `M.main(args, io_)`
-- returns the exit status: 0 success, 1 a failed check or a rejected
-- request, 2 a usage error.  See xsite(1).
--
-- A subcommand's module holds `summary` (one line for `xsite --help`),
-- `usage` (its --help), `options` (option name -> true when it takes a
-- value, false for a flag; parsed by xsite.cli.common.parse), optionally
-- `args` ({ name, min, max, missing, extra }: its positional arguments,
-- as the usage names them, how many, and what to say when there are too few
-- or too many; none when absent) and `run(opts, pos, io_, global)`.
-- @module xsite.cli

local common = require("xsite.cli.common")

local out, err = common.out, common.err

local M = {}

--- The subcommands, in the order `xsite --help` lists them.
M.COMMANDS = {
  "check", "config", "model", "explain", "map", "tune-mpi", "calibrate", "load", "replay", "report", "tune",
}

--- Defaults the installed command sets (lua/bin/xsite.in).
M.defaults = common.defaults

--- The module of a subcommand, or nil for an unknown name.
function M.command(name)
  for _, c in ipairs(M.COMMANDS) do
    if c == name then return require("xsite.cli." .. name:gsub("-", "_")) end
  end
  return nil
end

local function usage()
  local lines = {
    "Usage: xsite [--config FILE] COMMAND [OPTIONS]",
    "",
    "Placement of Slurm jobs on two sites joined by an extender link.",
    "",
    "Commands:",
  }
  for _, name in ipairs(M.COMMANDS) do
    local cmd = M.command(name)
    local words = name .. (cmd.args and cmd.args.name and " " .. cmd.args.name or "")
    lines[#lines + 1] = string.format("  %-16s %s", words, cmd.summary)
  end
  lines[#lines + 1] = [[

Options:
  --config FILE  xsite.conf to use (default: $XSITE_CONF, else xsite.conf
                 next to $SLURM_CONF, else /etc/slurm/xsite.conf)
  -h, --help     this help; `xsite COMMAND --help` for a command
]]
  return table.concat(lines, "\n")
end

-- Run one subcommand: its options, its --help, its positional arguments.
local function run(name, cmd, args, io_, global)
  local opts, pos = common.parse(args, cmd.options or {})
  if not opts then
    err(io_, "xsite %s: %s\n", name, pos)
    return 2
  end
  if opts.help then
    out(io_, "%s", cmd.usage)
    return 0
  end
  local a = cmd.args or { min = 0, max = 0 }
  if #pos < a.min then
    err(io_, "xsite %s: %s\n", name, a.missing)
    return 2
  end
  if #pos > a.max then
    err(io_, "xsite %s: %s\n", name, a.extra or string.format("unexpected argument '%s'", pos[a.max + 1]))
    return 2
  end
  return cmd.run(opts, pos, io_, global)
end

--- Run the command line.
-- @param args array of arguments
-- @param io_ optional { stdout, stderr } (default io.stdout, io.stderr)
-- @return exit status
function M.main(args, io_)
  io_ = io_ or { stdout = io.stdout, stderr = io.stderr }
  -- --config FILE may stand before or after the command; take it out first
  local global, rest = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--config" or a:match("^%-%-config=") then
      local v = a:match("^%-%-config=(.*)$")
      if not v then
        i = i + 1
        v = args[i]
      end
      if v == nil or v == "" then err(io_, "xsite: --config needs a file\n") return 2 end
      global.config = v
    else
      rest[#rest + 1] = a
    end
    i = i + 1
  end
  local name = table.remove(rest, 1)
  if name == "-h" or name == "--help" or name == "help" then
    out(io_, "%s", usage())
    return 0
  end
  if name == nil then
    err(io_, "%s", usage())
    return 2
  end
  if name:sub(1, 1) == "-" then
    err(io_, "xsite: unknown option %s (try: xsite --help)\n", name)
    return 2
  end
  local cmd = M.command(name)
  if not cmd then
    err(io_, "xsite: unknown command '%s' (try: xsite --help)\n", name)
    return 2
  end
  return run(name, cmd, rest, io_, global)
end

return M
