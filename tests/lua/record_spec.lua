local _ = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local record = require("xsite.record")

describe("xsite.record", function()
  local d = {
    action = "pin", why = "slowdown", mode = "enforce", nodes = 4, min_nodes = 2, sites = "alpha|beta",
    profile = "op=1e12,b=1GB,x=10MB", max_slowdown = 1.1, constraint = "ib&[a|b] x;y",
    prediction = { nA = 2, nB = 2, t_one = 100, t_span = 250.5, slowdown = 2.505 },
    link = { state = "up", bandwidth = 1.25e8, latency = 1e-3, source = "config" },
  }

  it("writes one line of key=value words, the user's constraint percent-encoded", function()
    local text = record.format(d)
    assert.are.equal("xsite v=1 action=pin why=slowdown mode=enforce n=4 sites=alpha|beta "
      .. "profile=op=1e12,b=1GB,x=10MB split=2+2 t_one=100 t_span=250.5 slowdown=2.5050 max=1.1 "
      .. "link=up,1.25e+08,0.001,config nmin=2 constraint=ib&[a|b]%20x%3By keeps=prefer", text)
    assert.is_nil(text:find("[\n;]"))
  end)

  it("reads back what it writes, from any text around it", function()
    local r = assert(record.parse("the admin's words; " .. record.format(d) .. "; more"))
    assert.are.equal("pin", r.action)
    assert.are.equal("4", r.n)
    assert.are.equal("2", r.nmin)
    assert.are.equal("ib&[a|b] x;y", r.constraint)
    assert.are.equal("up,1.25e+08,0.001,config", r.link)
  end)

  it("leaves out the prediction's words when there is none", function()
    assert.are.equal("xsite v=1 action=reject why=bad-request mode=enforce n=2 keeps=prefer",
      record.format({ action = "reject", why = "bad-request", mode = "enforce", nodes = 2 }))
    -- keeps=prefer only where the policy is enforced
    assert.are.equal("xsite v=1 action=none why=one-node mode=advise n=1",
      record.format({ action = "none", why = "one-node", mode = "advise", nodes = 1 }))
  end)

  it("refuses text without a record, and a record of another version", function()
    local r, err = record.parse("no record here")
    assert.is_nil(r)
    assert.matches("no xsite record", err)
    r, err = record.parse("xsite v=2 action=pin")
    assert.is_nil(r)
    assert.are.equal("an xsite record of version 2; this xsite reads version 1", err)
    assert.is_nil((record.parse(nil)))
  end)

  it("replaces its own record in admin_comment and keeps the admin's text", function()
    assert.are.equal("xsite v=1 a=1", record.put(nil, "xsite v=1 a=1"))
    assert.are.equal("keep me; xsite v=1 a=2", record.put("keep me; xsite v=1 a=1", "xsite v=1 a=2"))
    assert.are.equal("xsite v=1 a=2", record.put("xsite v=1 a=1", "xsite v=1 a=2"))
  end)

  it("sets a word once, or takes it out", function()
    assert.are.equal("xsite v=1 action=pin override=0",
      record.with(record.find("x; xsite v=1 action=pin override=1000; y"), "override", 0))
    assert.are.equal("xsite v=1 action=pin", record.with("xsite v=1 hold=xsite action=pin", "hold", nil))
    assert.are.equal("x; y; xsite v=1 action=pin recheck=down",
      record.put_word("x; xsite v=1 action=pin recheck=up; y", "recheck", "down"))
    assert.are.equal("no record", record.put_word("no record", "hold", "xsite"))
  end)
end)
