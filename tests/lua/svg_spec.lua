-- Specs for xsite.svg: standalone SVG line charts.

local HERE = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = HERE .. "/../../lua/?.lua;" .. package.path

local svg = require("xsite.svg")

-- Well-formedness without external tools: every tag closed in order, no
-- stray '<' or '&' in text, attributes quoted.  Returns true or false, why.
local function balanced(doc)
  local body = doc:gsub("^<%?xml[^>]*%?>%s*", "", 1)
  local stack = {}
  local pos = 1
  while true do
    local s, e, close, name, attrs, empty = body:find("<(/?)([%a_][%w_:%-%.]*)([^<>]-)(/?)>", pos)
    local text = body:sub(pos, (s or #body + 1) - 1)
    if text:find("<") or text:find(">") then return false, "stray angle bracket near " .. text:sub(1, 40) end
    for amp in text:gmatch("&[^;]*;?") do
      if not amp:find("^&[%a#][%w]*;$") then return false, "bad entity " .. amp end
    end
    if not s then break end
    if close == "/" then
      if stack[#stack] ~= name then return false, "</" .. name .. "> closes <" .. tostring(stack[#stack]) .. ">" end
      stack[#stack] = nil
    else
      local rest = attrs:gsub('%s+[%a_][%w_:%-%.]*%s*=%s*"[^"<]*"', "")
      if rest:find("%S") then return false, "bad attributes in <" .. name .. attrs .. ">" end
      if empty ~= "/" then stack[#stack + 1] = name end
    end
    pos = e + 1
  end
  if #stack > 0 then return false, "unclosed <" .. stack[#stack] .. ">" end
  return true
end

local function have_xmllint()
  local p = io.popen("command -v xmllint 2>/dev/null")
  if not p then return false end
  local out = p:read("*a")
  p:close()
  return out:find("%S") ~= nil
end

-- Run xmllint on the document; returns true, or false and its messages.
local function xmllint(doc)
  local path = os.tmpname()
  local f = assert(io.open(path, "wb"))
  f:write(doc)
  f:close()
  local p = assert(io.popen("xmllint --noout '" .. path .. "' 2>&1; echo \"rc=$?\""))
  local out = p:read("*a")
  p:close()
  os.remove(path)
  return out:find("^rc=0%s*$") ~= nil, out
end

local function assert_xml(doc)
  local ok, why = balanced(doc)
  assert.is_true(ok, why)
  if have_xmllint() then
    local lint_ok, out = xmllint(doc)
    assert.is_true(lint_ok, out)
  end
end

-- The text contents of <text> elements with a given attribute pattern.
local function texts(doc, attr_pattern)
  local out = {}
  for attrs, content in doc:gmatch("<text([^>]*)>([^<]*)</text>") do
    if not attr_pattern or attrs:find(attr_pattern) then out[#out + 1] = content end
  end
  return out
end

local function contains(list, value)
  for _, v in ipairs(list) do
    if v == value then return true end
  end
  return false
end

local CHART = {
  title = "Speed-up of profile gromacs",
  xlabel = "nodes (split evenly between the sites)",
  ylabel = "speed-up over one node",
  series = {
    { label = "one site (no link)", points = { { 1, 1 }, { 2, 2 }, { 4, 3.5 }, { 8, 4 } }, dashed = true },
    { label = "930 MB/s, 145 us", points = { { 1, 1 }, { 2, 1.8 }, { 4, 2.9 }, { 8, 3.2 } } },
    { label = "10 GB/s, 4.5 ms", points = { { 1, 1 }, { 2, 1.2 }, { 4, 1.1 }, { 8, 0.9 } } },
  },
}

describe("xsite.svg.line_chart", function()
  local doc
  setup(function() doc = svg.line_chart(CHART) end)

  it("gives well-formed XML (xmllint when installed, and balanced tags)", function()
    assert.is_string(doc)
    assert_xml(doc)
  end)

  it("is an SVG document with the size asked for, 760x460 by default", function()
    assert.matches('^<%?xml version="1.0" encoding="UTF%-8"%?>\n<svg xmlns="http://www.w3.org/2000/svg" '
      .. 'width="760" height="460"', doc)
    local sized = svg.line_chart({ title = "t", series = CHART.series, width = 1000, height = 600 })
    assert.matches('<svg [^>]*width="1000" height="600" viewBox="0 0 1000 600"', sized)
    assert_xml(sized)
  end)

  it("holds the title as <title> and as visible text", function()
    assert.matches("<title>Speed%-up of profile gromacs</title>", doc)
    assert.is_true(contains(texts(doc, 'font%-weight="bold"'), CHART.title))
  end)

  it("holds both axis labels", function()
    local all = texts(doc)
    assert.is_true(contains(all, CHART.xlabel))
    assert.is_true(contains(all, CHART.ylabel))
    assert.matches('transform="rotate%(%-90[^"]*">speed%-up over one node</text>', doc)
  end)

  it("labels every series at its right end, in the series colour", function()
    local labels = texts(doc, "fill=\"#")
    for _, s in ipairs(CHART.series) do
      assert.is_true(contains(labels, s.label), "no label " .. s.label)
    end
    assert.are.equal(#CHART.series, #labels)
  end)

  it("draws one polyline per series, with one point per data point, dashed when asked", function()
    local lines = {}
    for line in doc:gmatch("<polyline[^>]*/>") do lines[#lines + 1] = line end
    assert.are.equal(3, #lines)
    local dashed = 0
    for _, line in ipairs(lines) do
      local pts = line:match('points="([^"]*)"')
      local n = 0
      for _ in pts:gmatch("[-%d.]+,[-%d.]+") do n = n + 1 end
      assert.are.equal(4, n)
      if line:find("stroke%-dasharray") then dashed = dashed + 1 end
    end
    assert.are.equal(1, dashed)
  end)

  it("keeps every point inside the plot area", function()
    -- 760x460 with margins left 70, right 190, top 50, bottom 60.
    for pts in doc:gmatch('points="([^"]*)"') do
      for x, y in pts:gmatch("([-%d.]+),([-%d.]+)") do
        x, y = tonumber(x), tonumber(y)
        assert.is_true(x >= 70 and x <= 570, "x " .. x)
        assert.is_true(y >= 50 and y <= 400, "y " .. y)
      end
    end
  end)

  it("puts ticks at round steps from 0: y 0..4 by 1, x 0..8 by 1 for these data", function()
    assert.are.same({ "0", "1", "2", "3", "4" }, texts(doc, 'text%-anchor="end"'))
    local x = {}
    for _, t in ipairs(texts(doc, 'text%-anchor="middle"')) do
      if t:find("^%d+$") then x[#x + 1] = t end
    end
    assert.are.same({ "0", "1", "2", "3", "4", "5", "6", "7", "8" }, x)
  end)

  it("pushes labels of lines that end at the same height apart", function()
    local d = svg.line_chart({ title = "t", xlabel = "x", ylabel = "y", series = {
      { label = "first", points = { { 1, 1 }, { 2, 2 } } },
      { label = "second", points = { { 1, 1 }, { 2, 2 } } },
      { label = "third", points = { { 1, 2 }, { 2, 2 } } },
    } })
    local ys = {}
    for y in d:gmatch('<text x="[%d.]+" y="([%d.]+)" fill="#') do ys[#ys + 1] = tonumber(y) end
    assert.are.equal(3, #ys)
    table.sort(ys)
    assert.is_true(ys[2] - ys[1] >= 14 - 0.05 and ys[3] - ys[2] >= 14 - 0.05,
      "labels at " .. table.concat(ys, ", "))
  end)

  it("escapes &, <, > and quotes in title, axis labels and series labels", function()
    local d = svg.line_chart({ title = 'a & b <c> "d"', xlabel = "x<1", ylabel = "y&z",
      series = { { label = "R&D <fast>", points = { { 1, 1 }, { 2, 2 } } } } })
    assert_xml(d)
    assert.matches("<title>a &amp; b &lt;c&gt; &quot;d&quot;</title>", d)
    assert.is_true(contains(texts(d), "x&lt;1"))
    assert.is_true(contains(texts(d), "y&amp;z"))
    assert.is_true(contains(texts(d), "R&amp;D &lt;fast&gt;"))
  end)

  it("gives a valid chart without series, for a series without points, and for one point", function()
    assert_xml(svg.line_chart({ title = "empty", series = {} }))
    local d = svg.line_chart({ title = "t", series = { { label = "nothing", points = {} },
      { label = "one", points = { { 4, 2 } } } } })
    assert_xml(d)
    assert.is_false(contains(texts(d), "nothing"))
    assert.is_true(contains(texts(d), "one"))
  end)

  it("cycles colours for more series than it has colours", function()
    local series = {}
    for i = 1, 10 do series[i] = { label = "s" .. i, points = { { 1, i }, { 2, i } } } end
    local d = svg.line_chart({ title = "many", series = series })
    assert_xml(d)
    local labels = texts(d, "fill=\"#")
    assert.are.equal(10, #labels)
    local colour = {}
    for fill, label in d:gmatch('<text [^>]*fill="(#%x+)">(s%d+)</text>') do colour[label] = fill end
    assert.are.equal(colour.s1, colour.s9)
    assert.are_not.equal(colour.s1, colour.s2)
  end)
end)

describe("the well-formedness check of this spec", function()
  it("finds unclosed, misnested and unescaped markup", function()
    assert.is_true((balanced('<?xml version="1.0"?>\n<a><b x="1"/>t &amp; u</a>')))
    assert.is_false((balanced("<a><b></a></b>")))
    assert.is_false((balanced("<a>")))
    assert.is_false((balanced("<a>x & y</a>")))
    assert.is_false((balanced("<a>x < y</a>")))
    assert.is_false((balanced("<a x=1></a>")))
  end)

  it("finds xmllint errors when xmllint is installed", function()
    if not have_xmllint() then
      pending("xmllint is not installed: the SVG specs check balanced tags only")
      return
    end
    assert.is_false((xmllint("<a><b></a>")))
    assert.is_true((xmllint("<a/>")))
  end)
end)
