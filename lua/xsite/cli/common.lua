--- What the subcommands of `xsite` share: the one option parser, output,
-- and the configuration and its state files (other programs run through
-- xsite.shell).
-- A subcommand is a module xsite.cli.<name> (see xsite.cli).
-- @module xsite.cli.common

local config = require("xsite.config")
local states = require("xsite.state")
local units = require("xsite.units")
local replay = require("xsite.replay")
local shell = require("xsite.shell")

local M = {}

--- Defaults the installed command sets (lua/bin/xsite.in): `pingpong`.
M.defaults = {}

function M.out(io_, ...) io_.stdout:write(string.format(...)) end
function M.err(io_, ...) io_.stderr:write(string.format(...)) end

--- Parse a command line: `spec` maps option names to true (takes a value:
-- `--name VALUE` or `--name=VALUE`), "list" (takes a value, and may be
-- given again: the values in order) or false (a flag).  `-h`/`--help` is
-- always known.  The other words are positional arguments.
-- @return opts, positional arguments; or nil and a message naming the option
function M.parse(args, spec)
  local opts, pos = {}, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-h" or a == "--help" then
      opts.help = true
    elseif a:sub(1, 2) == "--" then
      local name, value = a:match("^%-%-([^=]+)=(.*)$")
      name = name or a:sub(3)
      if spec[name] == nil then return nil, "unknown option --" .. name end
      if spec[name] then
        if value == nil then
          i = i + 1
          value = args[i]
          if value == nil then return nil, "--" .. name .. " needs a value" end
        end
        if spec[name] == "list" then
          opts[name] = opts[name] or {}
          table.insert(opts[name], value)
        else
          opts[name] = value
        end
      else
        if value ~= nil then return nil, "--" .. name .. " takes no value" end
        opts[name] = true
      end
    else
      pos[#pos + 1] = a
    end
    i = i + 1
  end
  return opts, pos
end

--- A --format value: the given one, else the first of formats; nil after
-- naming the bad value on stderr.
function M.output_format(cmd, value, formats, io_)
  if value == nil then return formats[1] end
  for _, f in ipairs(formats) do
    if value == f then return f end
  end
  M.err(io_, "xsite %s: --format: '%s' is not %s or %s\n", cmd, value,
    table.concat(formats, ", ", 1, #formats - 1), formats[#formats])
  return nil
end

--- The configuration --config names (else the one xsite.config.locate
-- finds); nil after printing its errors.
function M.load_config(path, io_)
  path = path or config.locate()
  local cfg, msg = config.load(path)
  if not cfg then
    M.err(io_, "xsite: %s\n", msg:gsub("\n", "\nxsite: "))
    return nil
  end
  return cfg
end

--- Past jobs from accounting, with each one's xsite record: sacct -a -X
-- over a window (xsite.replay.FIELDS, the names of this Slurm).
-- @param window { since, until_ (sacct's syntax), states (optional, sacct's
--   --state) }
-- @return sacct's text, or nil and why it failed
function M.sacct_jobs(window)
  -- the field names of this Slurm (Reserved became Planned in 23.11)
  local helpformat = shell.run({ "sacct", "--helpformat" }, { stderr = "drop" })
  local argv = { "sacct", "-a", "-X", "-n", "-P", "--delimiter=" .. replay.DELIMITER,
    "--starttime=" .. window.since, "--endtime=" .. window.until_,
    "--format=" .. table.concat(replay.sacct_fields(helpformat), ",") }
  if window.states then table.insert(argv, 6, "--state=" .. window.states) end
  local text, ok = shell.run(argv, { timeout = 60 })
  -- sacct says why it failed in a line without the field delimiter
  local first = text:match("[^\n]+")
  if not ok or (first and not first:find(replay.DELIMITER, 1, true)) then
    return nil, string.format("sacct failed (is accounting through slurmdbd configured?): %s",
      first or "no output")
  end
  return text
end

--- The --timeout option of a command: whole seconds, else `default`.
-- @return seconds, or nil once the error is on stderr
function M.timeout(opts, cmd, default, io_)
  if not opts.timeout then return default end
  local t, e = units.parse_integer(opts.timeout)
  if not t then M.err(io_, "xsite %s: --timeout: %s\n", cmd, e) end
  return t
end

--- The state files the policy reads besides xsite.conf: the measured link
-- (LinkStateFile), the measured profiles (ProfileStateFile) and the link's
-- load (LinkLoadFile).  A broken one is named on stderr and left out, as
-- the policy does.
-- @return link state or nil, profile state or nil, link load or nil
function M.state_files(cfg, cmd, io_)
  local link, profiles, ld, e
  if cfg.policy.link_state_file then
    link, e = states.load_link(cfg.policy.link_state_file)
    if e then M.err(io_, "xsite %s: %s (using the configured link)\n", cmd, e) end
  end
  if cfg.policy.profile_state_file then
    profiles, e = states.load_profiles(cfg.policy.profile_state_file)
    if e then M.err(io_, "xsite %s: %s (using the configured profiles)\n", cmd, e) end
  end
  if cfg.policy.link_load_file then
    ld, e = states.load_load(cfg.policy.link_load_file)
    if e then M.err(io_, "xsite %s: %s (deciding without the link's load)\n", cmd, e) end
  end
  return link, profiles, ld
end

--- The latest fidelity run (FidelityFile), or nil: none configured, none
-- written yet, or one that cannot be read (named on stderr).
function M.fidelity(cfg, cmd, io_)
  if not cfg.policy.fidelity_file then return nil end
  local run, e = states.load_fidelity(cfg.policy.fidelity_file)
  if e then M.err(io_, "xsite %s: %s (no expected error)\n", cmd, e) end
  return run
end

return M
