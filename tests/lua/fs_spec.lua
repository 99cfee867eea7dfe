local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local fs = require("xsite.fs")

local function sh(cmd)
  local a = os.execute(cmd)
  assert(a == true or a == 0, cmd)
end

-- A new directory of this user's (mode 0755).
local function tmpdir()
  local d = os.tmpname()
  os.remove(d)
  sh("mkdir -m 0755 " .. d)
  return d
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local slurp = h.read

describe("xsite.fs reading a file root trusts", function()
  local d
  before_each(function() d = tmpdir() end)
  after_each(function() sh("rm -rf " .. d) end)

  it("reads a regular file of this user's", function()
    write(d .. "/ok", "State=up\n")
    sh("chmod 0644 " .. d .. "/ok")
    assert.are.equal("State=up\n", (fs.read_trusted(d .. "/ok")))
  end)

  it("says when there is no file, and that it is missing", function()
    local t, err, missing = fs.read_trusted(d .. "/none")
    assert.is_nil(t)
    assert.matches("/none: cannot open: No such file or directory", err)
    assert.is_true(missing)
  end)

  it("refuses a symbolic link, a FIFO and a directory without opening them", function()
    write(d .. "/target", "State=up\n")
    sh("ln -s " .. d .. "/target " .. d .. "/link && mkfifo " .. d .. "/fifo && mkdir " .. d .. "/dir")
    for name, kind in pairs({ link = "symbolic link", fifo = "FIFO", dir = "directory" }) do
      local t, err, missing = fs.read_trusted(d .. "/" .. name)
      assert.is_nil(t)
      assert.are.equal(string.format("%s/%s: a %s, not a regular file; not read", d, name, kind), err)
      assert.is_nil(missing)
    end
  end)

  it("refuses a file others may write, or in a directory others may write", function()
    write(d .. "/w", "State=up\n")
    sh("chmod 0666 " .. d .. "/w")
    assert.are.equal(d .. "/w: writable by group or others (mode 666); not read", select(2, fs.read_trusted(d .. "/w")))
    sh("chmod 0644 " .. d .. "/w && chmod 0777 " .. d)
    assert.are.equal(d .. ": writable by group or others (mode 777) and not sticky; " .. d .. "/w not read",
      select(2, fs.read_trusted(d .. "/w")))
    -- sticky, as /tmp: no one else can replace the file
    sh("chmod 1777 " .. d)
    assert.are.equal("State=up\n", (fs.read_trusted(d .. "/w")))
  end)

  it("refuses a file of another owner than root or this process's user", function()
    write(d .. "/f", "x")
    sh("chmod 0644 " .. d .. "/f")
    local t, err = fs.read_trusted(d .. "/f", { owners = { [123456] = true } })
    assert.is_nil(t)
    assert.matches("/f: owned by uid %d+, not by root or this process's user; not read", err)
  end)

  it("refuses a file over its cap from its size, without reading it", function()
    write(d .. "/big", string.rep("x", 2048))
    sh("chmod 0644 " .. d .. "/big")
    assert.are.equal(d .. "/big: 2048 bytes, over the 1024 a state file may have; not read",
      select(2, fs.read_trusted(d .. "/big", { max = 1024 })))
    assert.are.equal(d .. "/big: over 1024 bytes; not read", select(2, fs.read_capped(d .. "/big", 1024)))
    assert.are.equal(2048, #fs.read_capped(d .. "/big", 2048))
    write(d .. "/big", string.rep("x", fs.STATE_MAX + 1))
    assert.are.equal(string.format("%s/big: %d bytes, over the %d a state file may have; not read", d,
      fs.STATE_MAX + 1, fs.STATE_MAX), select(2, fs.read_trusted(d .. "/big")))
  end)
end)

describe("xsite.fs writing a file whole", function()
  local d
  before_each(function() d = tmpdir() end)
  after_each(function() sh("rm -rf " .. d) end)

  it("replaces a symbolic link at the path instead of writing through it", function()
    write(d .. "/victim", "keep\n")
    sh("ln -s " .. d .. "/victim " .. d .. "/rules")
    assert(fs.write_atomic(d .. "/rules", "1\n"))
    assert.are.equal("keep\n", slurp(d .. "/victim"))
    assert.are.equal("1\n", slurp(d .. "/rules"))
    assert.are.equal("regular file", fs.lstat(d .. "/rules").kind)
  end)

  it("gives the mode asked for (0644 by default) and leaves no temporary file", function()
    assert(fs.write_atomic(d .. "/a", "x\n"))
    assert(fs.write_atomic(d .. "/b", "y\n", "0600"))
    assert.are.equal(tonumber("644", 8), fs.lstat(d .. "/a").perm)
    assert.are.equal(tonumber("600", 8), fs.lstat(d .. "/b").perm)
    local p = io.popen("ls -A " .. d)
    local names = p:read("*a")
    p:close()
    assert.are.equal("a\nb\n", names)
  end)

  it("names the file it cannot write", function()
    local ok, err = fs.write_atomic(h.root .. "/no/such/dir/link.state", "State=up\n")
    assert.is_nil(ok)
    assert.matches("/no/such/dir/link.state: cannot write", err)
  end)
end)
