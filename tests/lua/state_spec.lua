-- Specs for xsite.state: the link state and profile state files.

local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")

local state = require("xsite.state")
local fs = require("xsite.fs")

local near = h.near

describe("xsite.state.parse_link", function()
  it("reads state, bandwidth, latency and time in base units", function()
    local st = assert(state.parse_link("State=degraded Bandwidth=800MB/s Latency=150us Time=1700000000\n"))
    assert.are.equal("degraded", st.state)
    near(800e6, st.bandwidth, "Bandwidth")
    near(150e-6, st.latency, "Latency")
    assert.are.equal(1700000000, st.time)
  end)

  it("reads keys and the state in any case, over several lines with comments", function()
    local st = assert(state.parse_link("# written by xsite calibrate\nstate=DOWN\nLATENCY=4.5ms # one way\n"))
    assert.are.equal("down", st.state)
    near(4.5e-3, st.latency, "Latency")
    assert.is_nil(st.bandwidth)
  end)

  it("names file, line and key of a bad value", function()
    local st, err = state.parse_link("State=up\nBandwidth=fast\n", "/run/xsite/link.state")
    assert.is_nil(st)
    assert.are.equal("/run/xsite/link.state:2: Bandwidth: 'fast' is not a number with a unit "
      .. "(B/s, MB/s, GB/s, MiB/s, Mb/s, Gb/s, Mbit/s, Gbit/s)", err)
    st, err = state.parse_link("State=sideways\n", "ls")
    assert.is_nil(st)
    assert.are.equal("ls:1: State: 'sideways' is not one of up, degraded, down", err)
    st, err = state.parse_link("State=up Time=1.5\n", "ls")
    assert.is_nil(st)
    assert.are.equal("ls:1: Time: '1.5' is not a whole number", err)
  end)

  it("names an unknown key and a line that is not Key=Value", function()
    local st, err = state.parse_link("State=up Colour=red\n", "ls")
    assert.is_nil(st)
    assert.are.equal("ls:1: Colour: unknown key", err)
    st, err = state.parse_link("\nup\n", "ls")
    assert.is_nil(st)
    assert.are.equal("ls:2: 'up' is not Key=Value", err)
  end)

  it("requires State, and calls the file 'link state' when no name is given", function()
    local st, err = state.parse_link("Bandwidth=1GB/s\n")
    assert.is_nil(st)
    assert.are.equal("link state: State: missing", err)
    st, err = state.parse_link(nil)
    assert.is_nil(st)
    assert.are.equal("link state: State: missing", err)
  end)
end)

describe("xsite.state.load_link", function()
  local path
  before_each(function() path = os.tmpname() end)
  after_each(function() os.remove(path) end)

  it("gives nil and no message when there is no file", function()
    os.remove(path)
    local st, err = state.load_link(path)
    assert.is_nil(st)
    assert.is_nil(err)
  end)

  it("reads the file", function()
    local f = assert(io.open(path, "wb"))
    f:write("State=up Bandwidth=930MB/s Latency=145us\n")
    f:close()
    local st = assert(state.load_link(path))
    assert.are.equal("up", st.state)
    near(930e6, st.bandwidth, "Bandwidth")
  end)

  it("names the file and the reason when the file cannot be read", function()
    local st, err = state.load_link(h.root .. "/tests/lua")  -- a directory: never opened
    assert.is_nil(st)
    assert.are.equal(h.root .. "/tests/lua" .. ": a directory, not a regular file; not read", err)
  end)

  it("names the file in the message of a bad file", function()
    local f = assert(io.open(path, "wb"))
    f:write("State=maybe\n")
    f:close()
    local st, err = state.load_link(path)
    assert.is_nil(st)
    assert.are.equal(path .. ":1: State: 'maybe' is not one of up, degraded, down", err)
  end)
end)

describe("xsite.state versions", function()
  it("writes Version=1 and reads files with it, without it, and refuses a later one", function()
    local text = state.format_link({ state = "up", bandwidth = 1e8, latency = 1e-3, time = 5 }, "c")
    assert.are.equal("# c\nVersion=1 State=up Bandwidth=1e+08B/s Latency=0.001s Time=5\n", text)
    assert.are.equal("up", assert(state.parse_link(text)).state)
    assert.are.equal("down", assert(state.parse_link("State=down\n")).state)
    local st, err = state.parse_link("Version=2 State=up\n", "ls")
    assert.is_nil(st)
    assert.are.equal("ls:1: Version: 2, this xsite reads version 1", err)
    st, err = state.parse_profiles("Version=2\nProfileName=a Exchange=1\n", "ps")
    assert.is_nil(st)
    assert.are.equal("ps:1: Version: 2, this xsite reads version 1", err)
  end)

  it("writes a profile state that it reads back, and sets one profile keeping the others", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -m 0700 " .. dir))
    local path = dir .. "/profiles.state"
    assert(state.set_profile(path, "halo", { exchange = 5e8, steps = 40 }))
    assert(state.set_profile(path, "fft", { exchange = 1e9 }))
    assert(state.set_profile(path, "halo", { exchange = 6e8, steps = 41 }))
    local text = assert(fs.read_capped(path, 4096))
    assert.matches("^# written by xsite tune[^\n]*\nVersion=1\nProfileName=fft Exchange=1000000000\n"
      .. "ProfileName=halo Exchange=600000000 Steps=41\n$", text)
    local p = assert(state.load_profiles(path))
    assert.are.equal(6e8, p.halo.exchange)
    assert.are.equal(41, p.halo.steps)
    assert.is_nil(p.fft.steps)
    local f = assert(io.open(path, "w"))
    f:write("ProfileName=halo Colour=red\n")
    f:close()
    local ok, err = state.set_profile(path, "fft", { exchange = 1 })
    assert.is_nil(ok)
    assert.matches("Colour: unknown key .*%(not overwritten%)$", err)
    os.execute("rm -rf " .. dir)
  end)
end)

describe("xsite.state fidelity files", function()
  local TEXT = "# written by tests/bench/fidelity --xsite\nVersion=1 Time=1795000000\n"
    .. "Case=tree-8B Pattern=tree Latency=5ms Predicted=6.337 Measured=6.447\n"
    .. "Case=a2a-4M Pattern=alltoall Latency=0.009s Predicted=2.91 Measured=3.622\n"

  it("reads the run's time and its cases in base units, and writes what it reads back", function()
    local run = assert(state.parse_fidelity(TEXT, "f"))
    assert.are.equal(1795000000, run.time)
    assert.are.equal(2, #run.cases)
    local c = run.cases[1]
    assert.are.equal("tree-8B", c.name)
    assert.are.equal("tree", c.pattern)
    near(0.005, c.latency, "Latency")
    near(6.337, c.predicted, "Predicted")
    near(6.447, c.measured, "Measured")
    local again = assert(state.parse_fidelity(state.format_fidelity(run, "a\ncomment")))
    assert.are.same(run, again)
    assert.matches("^# a comment\nVersion=1 Time=1795000000\nCase=tree%-8B Pattern=tree Latency=0.005s ",
      state.format_fidelity(run, "a\ncomment"))
  end)

  it("names file, line and key of every flaw, and refuses a later version", function()
    local bad = {
      { "Case=a Pattern=tree Latency=5ms Predicted=1 Measured=1\n", "f: Version=1 Time=EPOCH: missing" },
      { "Version=1\n", "f:1: Time: missing or not an epoch" },
      { "Version=1 Time=5 Colour=red\n", "f:1: Colour: unknown key on a Version line" },
      { "Version=1 Time=5 Time=6\n", "f:1: Time: given twice" },
      { "Version=2 Time=5\n", "f:1: Version: 2, this xsite reads version 1" },
      { "Version=1 Time=5\nCase=a Pattern=tree Latency=5ms Predicted=1\n", "f:2: Measured: missing" },
      { "Version=1 Time=5\nCase=a Pattern=ring Latency=5ms Predicted=1 Measured=1\n",
        "f:2: Pattern: 'ring' is not one of alltoall, halo1d, halo2d, halo3d, tree, none" },
      { "Version=1 Time=5\nCase=a Pattern=tree Latency=5 Predicted=1 Measured=1\n",
        "f:2: Latency: '5' needs a unit (s, ms, us or ns)" },
      { "Version=1 Time=5\nCase=a Pattern=tree Latency=5ms Predicted=1 Measured=-1\n",
        "f:2: Measured: '-1' is not a number with a unit (none)" },
      { "Version=1 Time=5\nCase=a Pattern=tree Latency=5ms Predicted=1 Measured=0\n",
        "f:2: Measured: '0' must be greater than 0" },
      { "Version=1 Time=5\nCase=a Pattern=tree Pattern=tree Latency=5ms Predicted=1 Measured=1\n",
        "f:2: Pattern: given twice" },
      { "Version=1 Time=5\nCase=a/b Pattern=tree Latency=5ms Predicted=1 Measured=1\n",
        "f:2: Case: 'a/b' is not a case name (letters, digits, _ . -; at most 64)" },
      { "Version=1 Time=5\nCase=a Pattern=tree Latency=5ms Predicted=1 Measured=1 Colour=red\n",
        "f:2: Colour: unknown key (Case, Pattern, Latency, Predicted, Measured)" },
      { "Version=1 Time=5\nSite=a\n", "f:2: Site: a line starts with Version= or Case=" },
    }
    for _, b in ipairs(bad) do
      local run, err = state.parse_fidelity(b[1], "f")
      assert.is_nil(run, b[1])
      assert.are.equal(b[2], err)
    end
  end)

  it("reads at most FIDELITY_CASES cases", function()
    local lines = { "Version=1 Time=5" }
    for i = 1, state.FIDELITY_CASES + 1 do
      lines[#lines + 1] = "Case=c" .. i .. " Pattern=tree Latency=5ms Predicted=1 Measured=1"
    end
    local run, err = state.parse_fidelity(table.concat(lines, "\n", 1, state.FIDELITY_CASES + 1), "f")
    assert.are.equal(state.FIDELITY_CASES, #run.cases, err)
    run, err = state.parse_fidelity(table.concat(lines, "\n"), "f")
    assert.is_nil(run)
    assert.are.equal(string.format("f:%d: more than %d cases", state.FIDELITY_CASES + 2, state.FIDELITY_CASES),
      err)
  end)
end)
