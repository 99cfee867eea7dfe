--- Running other programs (stat, mktemp, srun, sacct, scontrol, find): one
-- way to quote a word for sh and one way to run a command and read what it
-- printed and how it ended, on every Lua from 5.1 (whose io.popen gives no
-- exit status).
-- @module xsite.shell

local M = {}

--- A word as sh reads it back unchanged: bare when it is made of characters
-- sh gives no meaning to, else in single quotes.
function M.quote(s)
  s = tostring(s)
  if s:match("^[%w%._/:,+=@%-]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- Run a command and read everything it prints.
-- @param argv the program and its arguments, a list of words (each quoted)
-- @param opts optional: `env` (a table NAME -> value put before the
--   command), `timeout` (seconds; then timeout(1) kills it, and KILLs it a
--   second later), `stderr` ("keep": with stdout, the default; "drop")
-- @return what it printed, true when it exited 0, and its exit status
--   (nil when it could not be learnt)
function M.run(argv, opts)
  opts = opts or {}
  local words = {}
  if opts.env then
    local names = {}
    for k in pairs(opts.env) do names[#names + 1] = k end
    table.sort(names)
    for _, k in ipairs(names) do words[#words + 1] = k .. "=" .. M.quote(opts.env[k]) end
  end
  if opts.timeout then words[#words + 1] = "timeout -k 1 " .. math.floor(opts.timeout) end
  for _, a in ipairs(argv) do words[#words + 1] = M.quote(a) end
  local cmd = table.concat(words, " ") .. (opts.stderr == "drop" and " 2>/dev/null" or " 2>&1")
  local p = io.popen(cmd .. '; echo "xsite-rc=$?"', "r")
  if not p then return "", false, nil end
  local text = p:read("*a") or ""
  p:close()
  local body, rc = text:match("^(.-)\n?xsite%-rc=(%d+)\n$")
  if not body then return text, false, nil end
  if text:sub(#body + 1, #body + 1) == "\n" then body = body .. "\n" end
  rc = tonumber(rc)
  return body, rc == 0, rc
end

return M
