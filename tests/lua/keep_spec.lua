dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local keep = require("xsite.keep")

describe("xsite.keep", function()
  local now
  local function clock() return now end
  before_each(function() now = 1000 end)

  it("keeps entries up to the bound, then none, and starts over once RESTART_AFTER has passed", function()
    local c = keep.new(clock)
    for i = 1, 3 do
      assert.are.equal("keep", keep.admit(c, 3))
      assert.are.equal(i, c.kept)
    end
    -- full: a flood of new keys is kept nowhere, however long it lasts
    for _ = 1, 1000 do assert.is_nil(keep.admit(c, 3)) end
    now = now + keep.RESTART_AFTER - 1
    assert.is_nil(keep.admit(c, 3))
    now = now + 1
    assert.are.equal("restart", keep.admit(c, 3))
    assert.are.equal(1, c.kept)
    assert.are.equal("keep", keep.admit(c, 3))
    assert.are.equal("keep", keep.admit(c, 3))
    -- the time counts from when it was found full again
    now = now + 10 * keep.RESTART_AFTER
    assert.is_nil(keep.admit(c, 3))
    now = now + keep.RESTART_AFTER - 1
    assert.is_nil(keep.admit(c, 3))
    now = now + 1
    assert.are.equal("restart", keep.admit(c, 3))
  end)

  it("takes the bound at every call, and a bound of 0 keeps nothing ever", function()
    local c = keep.new(clock)
    assert.are.equal("keep", keep.admit(c, 2))
    assert.is_nil(keep.admit(c, 1))
    local none = keep.new(clock)
    for _ = 1, 3 do
      assert.is_nil(keep.admit(none, 0))
      now = now + keep.RESTART_AFTER
    end
    assert.are.equal(0, none.kept)
  end)

  it("reset forgets the count and when it was full", function()
    local c = keep.new(clock)
    keep.admit(c, 1)
    assert.is_nil(keep.admit(c, 1))
    keep.reset(c)
    assert.are.equal(0, c.kept)
    assert.are.equal("keep", keep.admit(c, 1))
  end)
end)
