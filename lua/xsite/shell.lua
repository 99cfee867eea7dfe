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

-- The sh command line for argv and opts (see run), its exit status
-- printed last ("xsite-rc=N").
local function command(argv, opts)
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
  return cmd .. '; echo "xsite-rc=$?"'
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
  local p = io.popen(command(argv, opts), "r")
  if not p then return "", false, nil end
  local text = p:read("*a") or ""
  p:close()
  local body, rc = text:match("^(.-)\n?xsite%-rc=(%d+)\n$")
  if not body then return text, false, nil end
  if text:sub(#body + 1, #body + 1) == "\n" then body = body .. "\n" end
  rc = tonumber(rc)
  return body, rc == 0, rc
end

--- Run a command and hand each line it prints to `each` as it comes, in
-- bounded memory and work: for output that others wrote (squeue's lines
-- end with a job owner's text).
-- @param argv, opts as for run, and: `max_bytes` (stop reading past this
--   many bytes), `max_line` (a longer line comes cut to this length; the
--   rest of it is not kept)
-- @param each function(line, cut): line without its newline, cut true when
--   it was longer than max_line; returning true stops the reading
-- @return how it ended: "ok" (exited 0), "failed" (another status, or one
--   that could not be learnt), "cut" (more than max_bytes), "stopped" (by
--   `each`); and its exit status when known
function M.each_line(argv, opts, each)
  opts = opts or {}
  local max_bytes, max_line = opts.max_bytes or math.huge, opts.max_line or math.huge
  -- kept of a line: room for the exit status after a last line without
  -- its newline
  local keep = max_line + 16
  local p = io.popen(command(argv, opts), "r")
  if not p then return "failed", nil end
  -- a line is handed on once the next one has come: the last is the
  -- exit status
  local pending, pending_cut, part, part_cut, read, how = nil, false, {}, false, 0, nil
  local len = 0
  local function hand(line, cut)
    if #line > max_line then line, cut = line:sub(1, max_line), true end
    return each(line, cut)
  end
  local function line_done()
    local stop = pending and hand(pending, pending_cut)
    pending, pending_cut = table.concat(part), part_cut
    part, part_cut, len = {}, false, 0
    return stop
  end
  while not how do
    local chunk = p:read(65536)
    if not chunk then break end
    read = read + #chunk
    local at = 1
    while at <= #chunk do
      local nl = chunk:find("\n", at, true)
      local piece = chunk:sub(at, (nl or #chunk + 1) - 1)
      if len + #piece > keep then
        piece, part_cut = piece:sub(1, keep - len), true
      end
      if #piece > 0 then part[#part + 1], len = piece, len + #piece end
      if not nl then break end
      at = nl + 1
      if line_done() then how = "stopped" break end
    end
    if not how and read > max_bytes then how = "cut" end
  end
  p:close()
  if how then return how, nil end
  -- the last line: "xsite-rc=N", after a last line without its newline
  local body, rc = (pending or ""):match("^(.-)xsite%-rc=(%d+)$")
  if not body or pending_cut then return "failed", nil end
  if body ~= "" and hand(body, false) then return "stopped", nil end
  rc = tonumber(rc)
  return rc == 0 and "ok" or "failed", rc
end

return M
