--- siteinfo: what tests/testbed/xsite-testbed needs from a site config.
-- Loads the config through the project's one parser (lua/xsite/config.lua)
-- and prints, one record a line:
--   site NAME FEATURE CORES NODE...
--   link LATENCY_SECONDS BANDWIDTH_BYTES_PER_SECOND
-- With --quantity, it reads one quantity of the command line through the
-- same units module (xsite.units) and prints it in base units.
-- LUADIR is the directory holding the library (xsite/*.lua): the source
-- tree's lua/, or where a package installed it.
-- Usage: lua5.1 siteinfo.lua LUADIR CONFIG
--        lua5.1 siteinfo.lua LUADIR --quantity time|bandwidth VALUE
local luadir, path = arg[1], arg[2]
if not luadir or not path then
  io.stderr:write("xsite-testbed: siteinfo.lua: usage: siteinfo.lua LUADIR CONFIG\n")
  os.exit(2)
end
package.path = luadir .. "/?.lua;" .. package.path

if path == "--quantity" then
  local units = require("xsite.units")
  local v, qerr = units.parse(arg[4] or "", arg[3], { zero = true })
  if not v then
    io.stderr:write(qerr, "\n")
    os.exit(1)
  end
  io.write(string.format("%.9g\n", v))
  os.exit(0)
end

local ok, config = pcall(require, "xsite.config")
if not ok then
  io.stderr:write("xsite-testbed: cannot load the config module xsite.config: "
    .. tostring(config) .. "\n")
  os.exit(1)
end

local cfg, err = config.load(path)
if not cfg then
  -- one error a line, each naming the tool
  io.stderr:write("xsite-testbed: " .. tostring(err):gsub("\n", "\nxsite-testbed: ") .. "\n")
  os.exit(1)
end

local out = {}
for _, site in ipairs(cfg.sites or {}) do
  local line = { "site", site.name, site.feature or ("site_" .. site.name),
    string.format("%d", site.cores or 1) }
  for _, node in ipairs(site.nodes or {}) do line[#line + 1] = node end
  out[#out + 1] = table.concat(line, " ")
end
local link = cfg.link or (cfg.links and cfg.links[1])
if link then
  out[#out + 1] = string.format("link %.9g %.9g", link.latency or 0, link.bandwidth or 0)
end
io.write(table.concat(out, "\n"), "\n")
