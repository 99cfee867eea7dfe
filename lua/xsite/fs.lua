--- Checked file I/O: reading files that root code trusts, and writing files
-- whole.
--
-- Plain Lua can neither stat a file nor open one with O_EXCL, and slurmctld
-- gives job_submit.lua no more than plain Lua.  So the checks go through
-- coreutils: `stat` (an lstat: a symbolic link is seen as a link, a FIFO as
-- a FIFO, before anything opens it) and `mktemp` (O_CREAT|O_EXCL, a random
-- name, mode 0600).  They run only where a file is read anew (the caches of
-- xsite.config re-read a file at most every few seconds) or written (the
-- xsite command), never once per job.
--
-- A file is trusted when it is a regular file, owned by root or by the
-- process's own user (slurmctld's SlurmUser, root in slurmstepd, the admin
-- running `xsite`), writable by nobody else, no larger than its cap, and
-- its directory is owned by one of them and writable by nobody else (or
-- sticky, as /tmp: then no one else can replace the file).
-- @module xsite.fs

local shell = require("xsite.shell")

local M = {}

--- The most bytes of a state file (`xsite calibrate`, `xsite tune --apply`)
-- root reads: far more than any real one.
M.STATE_MAX = 1048576

--- How long one `stat` or `mktemp` may take (seconds), then it is killed.
M.TIMEOUT = 5

-- The first line a command prints (stderr dropped), or nil.
local function first_line(argv)
  return (shell.run(argv, { timeout = M.TIMEOUT, stderr = "drop" }):match("^[^\n]+"))
end

local function dirname(path)
  local d = path:match("^(.*)/[^/]*$")
  if d == nil then return "." end
  if d == "" then return "/" end
  return d
end
M.dirname = dirname

local euid
--- The process's effective uid (`id -u`, asked once).
function M.euid()
  if euid == nil then euid = tonumber(first_line({ "id", "-u" }) or "") or false end
  return euid or nil
end

-- st_mode & S_IFMT: S_IFREG, S_IFDIR, S_IFLNK, S_IFIFO
local KIND = { [0x8000] = "regular file", [0x4000] = "directory", [0xA000] = "symbolic link", [0x1000] = "FIFO" }

--- lstat(2) of a path, through stat(1).
-- @return { kind ("regular file", "directory", "symbolic link", "FIFO" or
--   "special file"), uid, perm (the permission bits, a number), size }, or
--   nil, a message naming path, and `true` as third value when there is
--   nothing at path (a path that cannot be looked at is not "nothing")
function M.lstat(path)
  local out, ok, rc = shell.run({ "stat", "-c", "%f %u %s", "--", path },
    { env = { LC_ALL = "C" }, timeout = M.TIMEOUT })
  local mode, uid, size = out:match("^(%x+) (%d+) (%d+)\n$")
  if not ok or not mode then
    if rc == 1 and out:find(": No such file or directory\n$") then
      return nil, path .. ": cannot open: No such file or directory", true
    end
    local why = out:match("^stat: [^\n]*: ([^\n]*)\n")
    if not why then why = rc and ("stat exited " .. rc) or "stat did not run" end
    return nil, string.format("%s: cannot look at it: %s; not read", path, why)
  end
  mode = tonumber(mode, 16)
  local perm = mode % 0x1000
  return { kind = KIND[mode - perm] or "special file", uid = tonumber(uid), perm = perm, size = tonumber(size) }
end

--- Whether permission bits let group or others write (020 or 002).
function M.writable_by_others(perm)
  return math.floor(perm / 16) % 2 == 1 or math.floor(perm / 2) % 2 == 1
end
local writable_by_others = M.writable_by_others

local function sticky(perm)
  return math.floor(perm / 512) % 2 == 1   -- 01000
end

--- The owners a file root trusts may have: root and this process's user
-- (a set of uids).
function M.default_owners()
  local t = { [0] = true }
  local me = M.euid()
  if me then t[me] = true end
  return t
end

--- Whether path may be trusted (see the module's description).
-- @param path the file
-- @param opts optional: `owners` (a set of uids; default root and the
--   process's user), `max` (bytes; default STATE_MAX)
-- @return the lstat of the file, or nil and a message naming path, and
--   `true` as third value when there is no file at all
function M.check(path, opts)
  opts = opts or {}
  local owners = opts.owners or M.default_owners()
  local max = opts.max or M.STATE_MAX
  local st, err, missing = M.lstat(path)
  if not st then return nil, err, missing end
  if st.kind ~= "regular file" then
    return nil, string.format("%s: a %s, not a regular file; not read", path, st.kind)
  end
  if not owners[st.uid] then
    return nil, string.format("%s: owned by uid %d, not by root or this process's user; not read", path, st.uid)
  end
  if writable_by_others(st.perm) then
    return nil, string.format("%s: writable by group or others (mode %03o); not read", path, st.perm)
  end
  if st.size > max then
    return nil, string.format("%s: %d bytes, over the %d a state file may have; not read", path, st.size, max)
  end
  local dir = dirname(path)
  local d, derr = M.lstat(dir)
  if not d then return nil, derr end
  if d.kind ~= "directory" then return nil, string.format("%s: not a directory; %s not read", dir, path) end
  if not owners[d.uid] then
    return nil, string.format("%s: owned by uid %d, not by root or this process's user; %s not read", dir, d.uid, path)
  end
  if writable_by_others(d.perm) and not sticky(d.perm) then
    return nil, string.format("%s: writable by group or others (mode %03o) and not sticky; %s not read", dir,
      d.perm % 0x200, path)
  end
  return st
end

--- Read a whole file of at most `max` bytes (what is beyond is not read: a
-- longer file is an error).
-- @return text, or nil, a message naming path, and `true` as third value
--   when the file does not exist
function M.read_capped(path, max)
  local f, err, code = io.open(path, "rb")
  if not f then
    return nil, string.format("%s: cannot open: %s", path, (tostring(err):gsub("^[^:]*: ", ""))), code == 2
  end
  local text, rerr = f:read(max + 1)
  f:close()
  if text == nil and rerr == nil then text = "" end
  if not text then return nil, string.format("%s: cannot read: %s", path, tostring(rerr)), false end
  if #text > max then return nil, string.format("%s: over %d bytes; not read", path, max), false end
  return text
end

--- Read a file root trusts: `check`, then `read_capped`.
-- @param opts as for `check`
-- @return text, or nil, a message naming path, and `true` as third value
--   when the file does not exist
function M.read_trusted(path, opts)
  local st, err, missing = M.check(path, opts)
  if not st then return nil, err, missing end
  return M.read_capped(path, (opts and opts.max) or M.STATE_MAX)
end

--- Write a file whole: a new file with a random name beside it (mktemp:
-- O_EXCL, so nothing planted there is written through), given `mode`, then
-- renamed over path, so that a reader sees the old text or the new, and a
-- symbolic link at path is replaced, not followed.
-- @param path the file
-- @param text its new contents
-- @param mode optional, octal text (default "0644": state files are read by
--   slurmctld's SlurmUser and rules files by the job's tasks)
-- @return true, or nil and a message naming the file
function M.write_atomic(path, text, mode)
  mode = mode or "0644"
  local dir, base = dirname(path), path:match("([^/]*)$")
  local script = 't=$(mktemp -p "$1" ".$2.XXXXXXXXXX") && chmod "$3" "$t" && printf "%s\\n" "$t"'
  local tmp = first_line({ "sh", "-c", script, "sh", dir, base, mode })
  if not tmp or tmp == "" then return nil, string.format("%s: cannot write: cannot make a file in %s", path, dir) end
  local f, err = io.open(tmp, "wb")
  if not f then
    os.remove(tmp)
    return nil, string.format("%s: cannot write: %s", path, tostring(err))
  end
  local ok, werr = f:write(text)
  local cok, cerr = f:close()
  if not ok or not cok then
    os.remove(tmp)
    return nil, string.format("%s: cannot write: %s", path, tostring(werr or cerr))
  end
  local rok, rerr = os.rename(tmp, path)
  if not rok then
    os.remove(tmp)
    return nil, string.format("%s: cannot replace: %s", path, tostring(rerr))
  end
  return true
end

return M
