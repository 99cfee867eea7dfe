--- quantity: one quantity of xsite-testbed's command line (`link set
-- --latency 5ms`) in base units, read by the project's one units parser
-- (xsite.units).  LUADIR is the directory holding the library (xsite/*.lua):
-- the source tree's lua/, or where a package installed it.
-- Usage: lua5.1 quantity.lua LUADIR time|bandwidth VALUE
local luadir, kind, value = arg[1], arg[2], arg[3]
if not luadir or not kind then
  io.stderr:write("xsite-testbed: quantity.lua: usage: quantity.lua LUADIR time|bandwidth VALUE\n")
  os.exit(2)
end
package.path = luadir .. "/?.lua;" .. package.path
local units = require("xsite.units")
local v, err = units.parse(value or "", kind, { zero = true })
if not v then
  io.stderr:write(err, "\n")
  os.exit(1)
end
io.write(string.format("%.9g\n", v))
