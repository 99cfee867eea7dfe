-- Specs for xsite.config: the one parser of xsite.conf and its cache.
-- Fixtures are in tests/lua/fixtures/, named by what they show.

local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local FIXTURES = h.fixtures

local config = require("xsite.config")

local near = h.near

-- The number of the first line of a fixture that contains `text`, found
-- independently of the parser.
local function line_of(file, text)
  local n = 0
  for line in io.lines(FIXTURES .. file) do
    n = n + 1
    if line:find(text, 1, true) then return n end
  end
  error("no line with " .. text .. " in " .. file)
end

local function load_fixture(file)
  return config.load(FIXTURES .. file)
end

-- Load a bad fixture; return its array of errors.
local function errors_of(file)
  local cfg, msg, errs = load_fixture(file)
  assert.is_nil(cfg, file .. " should not load")
  assert.is_string(msg)
  assert.is_table(errs)
  assert.are.equal(table.concat(errs, "\n"), msg)
  return errs
end

-- Assert that the errors of a fixture are exactly the expected
-- "file:line: Key: message" lines.
local function assert_errors(file, expected)
  local errs = errors_of(file)
  local want = {}
  for i, e in ipairs(expected) do want[i] = FIXTURES .. file .. ":" .. e end
  assert.are.same(want, errs)
end

local SITE_A = "SiteName=a Nodes=a[1-4] CoresPerNode=8 CorePeak=10GF MemBandwidth=20GB/s "
  .. "NetBandwidth=10GB/s NetLatency=2us"
local SITE_B = "SiteName=b Nodes=b[1-4] CoresPerNode=8 CorePeak=10GF MemBandwidth=20GB/s "
  .. "NetBandwidth=10GB/s NetLatency=2us"
local LINK = "LinkName=ab Bandwidth=1GB/s Latency=9ms"

-- Parse lines given as an array; line numbers are the array indices.
local function parse_lines(lines)
  return config.parse(table.concat(lines, "\n") .. "\n", "t.conf")
end

local function parse_errors(lines)
  local cfg, msg, errs = parse_lines(lines)
  assert.is_nil(cfg, "expected errors")
  assert.is_string(msg)
  return errs
end

describe("xsite.config.parse", function()
  describe("a full valid configuration", function()
    local cfg
    setup(function()
      local err
      cfg, err = load_fixture("full.conf")
      assert(cfg, err)
    end)

    it("has two sites, in file order, with their nodes", function()
      assert.are.equal(2, #cfg.sites)
      local hd, ma = cfg.sites[1], cfg.sites[2]
      assert.are.equal("hd", hd.name)
      assert.are.equal("ma", ma.name)
      assert.are.equal(140, #hd.nodes)
      assert.are.equal("hd001", hd.nodes[1])
      assert.are.equal("hd140", hd.nodes[140])
      assert.are.same({ "ma1", "ma2", "ma3", "ma10-ib", "ma11-ib" }, ma.nodes)
      assert.are.equal(hd, cfg.site_by_name.hd)
      assert.are.equal(ma, cfg.site_of_node["ma10-ib"])
      assert.are.equal(hd, cfg.site_of_node.hd077)
      assert.are.equal("hd[001-140]", hd.hostlist)
    end)

    it("stores the site hardware in base units", function()
      local hd, ma = cfg.sites[1], cfg.sites[2]
      assert.are.equal("site_hd", hd.feature)
      assert.are.equal(16, hd.cores)
      near(8.5e9, hd.core_peak, "CorePeak=8.5GF")
      near(40e9, hd.mem_bw, "MemBandwidth=40GB/s")
      near(5e9, hd.net_bw, "NetBandwidth=5GB/s")
      near(1.5e-6, hd.net_latency, "NetLatency=1.5us")
      assert.are.equal("site_ma", ma.feature)
      assert.are.equal(24, ma.cores)
      near(2.5e9, ma.core_peak, "CorePeak=2.5Gflop/s")
      near(60 * 1024 ^ 3, ma.mem_bw, "MemBandwidth=60GiB/s")
      near(5e9, ma.net_bw, "NetBandwidth=40Gb/s")
      near(900e-9, ma.net_latency, "NetLatency=900ns")
    end)

    it("stores the link in base units", function()
      assert.are.equal(1, #cfg.links)
      assert.are.equal(cfg.links[1], cfg.link)
      assert.are.equal("longbow", cfg.link.name)
      assert.are.same({ "hd", "ma" }, cfg.link.sites)
      near(930e6, cfg.link.bandwidth, "Bandwidth=930MB/s")
      near(145e-6, cfg.link.latency, "Latency=145us")
      assert.are.equal(2, cfg.link.channels)
    end)

    it("stores the global keys, enums in lower case, quoted values without quotes", function()
      local p = cfg.policy
      assert.are.equal("advise", p.mode)
      near(1.25, p.max_slowdown, "MaxSlowdown")
      assert.are.equal("reject", p.oversize)
      assert.are.equal("gromacs", p.default_profile)
      assert.are.equal("pin", p.default_affinity)
      assert.are.equal("/run/xsite/link.state", p.link_state_file)
      assert.are.equal("closed", p.fail_mode)
      assert.are.equal("/var/spool/xsite reports", p.report_dir)
    end)

    it("stores classes and profiles", function()
      assert.are.equal(5, #cfg.profiles)
      local low, medium, gromacs, hpl = cfg.profile_by_name.low, cfg.profile_by_name.medium,
        cfg.profile_by_name.gromacs, cfg.profile_by_name.hpl
      assert.is_true(low.class)
      assert.are.equal(0, low.exchange)
      assert.are.equal("tree", low.pattern)
      assert.is_true(medium.class)
      near(1e12, medium.ops, "Ops=1T")
      near(1024 ^ 3, medium.bytes, "Bytes=1GiB")
      near(10e6, medium.exchange, "Exchange=10MB")
      assert.are.equal(1000, medium.steps)
      assert.are.equal("halo3d", medium.pattern)
      assert.is_false(gromacs.class)
      assert.are.equal("GROMACS, 1M atoms", gromacs.description)
      near(2e15, gromacs.ops, "Ops=2e15")
      near(8e9, gromacs.bytes, "Bytes=8GB")
      near(1e9, gromacs.exchange, "Exchange=1GB")
      assert.are.equal(50000, gromacs.steps)
      assert.are.equal("linpack", hpl.template)
      near(1e5, hpl.size, "Size=100k")
      assert.are.equal(3, hpl.iterations)
    end)

    it("records the first physical line of a continued line", function()
      assert.are.equal(line_of("full.conf", "SiteName=hd"), cfg.sites[1].line)
      assert.are.equal(line_of("full.conf", "siteNAME=ma"), cfg.sites[2].line)
      assert.are.equal(line_of("full.conf", "ProfileName=gromacs"), cfg.profile_by_name.gromacs.line)
      assert.are.equal(line_of("full.conf", "ProfileName=hpl"), cfg.profile_by_name.hpl.line)
    end)

    it("names the file it came from", function()
      assert.are.equal(FIXTURES .. "full.conf", cfg.file)
    end)
  end)

  describe("defaults", function()
    it("fills the global keys not given, derives Feature and the link's sites and channels", function()
      local cfg = assert(load_fixture("minimal.conf"))
      assert.are.equal("enforce", cfg.policy.mode)
      assert.are.equal(1.10, cfg.policy.max_slowdown)
      assert.are.equal("warn", cfg.policy.oversize)
      assert.are.equal("auto", cfg.policy.default_affinity)
      assert.are.equal("open", cfg.policy.fail_mode)
      assert.are.equal("/var/spool/xsite", cfg.policy.report_dir)
      assert.is_nil(cfg.policy.default_profile)
      assert.is_nil(cfg.policy.link_state_file)
      assert.are.equal("a", cfg.sites[1].feature)
      assert.are.same({ "a", "b" }, cfg.link.sites)
      assert.are.equal(1, cfg.link.channels)
      assert.are.same({}, cfg.profiles)
    end)

    it("does not let one configuration change the defaults of the next", function()
      assert(load_fixture("full.conf"))
      assert.are.equal("enforce", assert(load_fixture("minimal.conf")).policy.mode)
      assert.are.equal("enforce", config.DEFAULTS.mode)
    end)
  end)

  describe("line syntax", function()
    it("joins continuation lines, also with blanks after the backslash and a comment after it", function()
      local cfg = assert(parse_lines({
        "SiteName=a Nodes=a[1-4] \\",
        "  CoresPerNode=8 \\   ",
        "  CorePeak=10GF MemBandwidth=20GB/s \\ # the memory",
        "  NetBandwidth=10GB/s NetLatency=2us",
        SITE_B, LINK,
      }))
      assert.are.equal(8, cfg.sites[1].cores)
      assert.are.equal(1, cfg.sites[1].line)
      assert.are.equal(5, cfg.sites[2].line)
    end)

    it("ignores comments, blank lines and lines of blanks", function()
      local cfg = assert(parse_lines({ "# head", "", "   ", SITE_A .. "   # trailing", "\t", SITE_B, LINK }))
      assert.are.equal(4, cfg.sites[1].line)
    end)

    it("reads CRLF line ends like LF", function()
      local cfg = assert(config.parse(SITE_A .. "\r\n" .. SITE_B .. "\r\n" .. LINK .. "\r\nMode=advise\r\n"))
      assert.are.equal("advise", cfg.policy.mode)
      near(9e-3, cfg.link.latency, "Latency=9ms")
    end)

    it("reads a file without a final newline", function()
      local cfg = assert(config.parse(SITE_A .. "\n" .. SITE_B .. "\n" .. LINK))
      near(9e-3, cfg.link.latency, "Latency=9ms")
    end)

    it("treats keys case-insensitively and values of enums case-insensitively", function()
      local cfg = assert(parse_lines({ SITE_A, SITE_B, LINK, "MODE=Advise maxslowdown=1.5 oversizeACTION=ALLOW" }))
      assert.are.equal("advise", cfg.policy.mode)
      assert.are.equal(1.5, cfg.policy.max_slowdown)
      assert.are.equal("allow", cfg.policy.oversize)
    end)

    it("keeps blanks and '=' inside a quoted value", function()
      local cfg = assert(parse_lines({ SITE_A, SITE_B, LINK,
        'ProfileName=x Description="a = b  c" Ops=1 Bytes=1B Exchange=1B' }))
      assert.are.equal("a = b  c", cfg.profile_by_name.x.description)
    end)

    it("uses 'xsite.conf' in messages when no file name is given", function()
      local cfg, msg = config.parse("Colour=blue\n" .. SITE_A .. "\n" .. SITE_B .. "\n" .. LINK)
      assert.is_nil(cfg)
      assert.are.equal("xsite.conf:1: Colour: unknown key", msg)
    end)

    it("returns nil and a message for a missing text", function()
      local cfg, msg = config.parse(nil)
      assert.is_nil(cfg)
      assert.are.equal("xsite.conf: no text", msg)
    end)
  end)

  describe("every error names file:line: Key:", function()
    it("unknown key", function()
      assert_errors("unknown-key.conf", { line_of("unknown-key.conf", "Colour") .. ": Colour: unknown key" })
    end)

    it("ReportRetention that is not a number and a unit (not a Lua error), and its singular units", function()
      for _, v in ipairs({ "abc", "days", "-1days", "1.5days", "30weeks" }) do
        assert.are.same({ "t.conf:4: ReportRetention: '" .. v .. "' is not a time to keep records "
          .. "(e.g. 30days, 12hours, 6months; 0 for ever)" },
          parse_errors({ SITE_A, SITE_B, LINK, "ReportRetention=" .. v }))
      end
      local cfg = assert(parse_lines({ SITE_A, SITE_B, LINK, "ReportRetention=1Month" }))
      assert.are.equal(2592000, cfg.policy.report_retention)
    end)

    it("every key's checker, given a value that is no value of it, returns an error, never raises", function()
      local junk = { "", "abc", "-1", "1e999", "nan", "inf", "-inf", "1.5", "%", "0", "99999999999999999999", "1x",
        ":", "@", "0x10", "1e-400", "a:b", '""', "days", "1.5days", "MB/s", "1/s", string.rep("9", 400) }
      local n = 0
      for kind, entries in pairs(config.SCHEMA) do
        for _, e in ipairs(entries) do
          for _, v in ipairs(junk) do
            local ok, value, msg = pcall(e[3], v)
            assert(ok, string.format("%s %s=%s: %s", kind, e[1], v, tostring(value)))
            assert(value ~= nil or type(msg) == "string",
              string.format("%s %s=%s: no value, no message", kind, e[1], v))
            n = n + 1
          end
        end
      end
      assert.is_true(n > 500)
    end)

    it("unknown key on a site line says which kind of line", function()
      assert.are.same({ "t.conf:1: Colour: unknown key in a SiteName line" },
        parse_errors({ SITE_A .. " Colour=blue", SITE_B, LINK }))
    end)

    it("a record key that does not start its line (the keys after it are then unknown)", function()
      local errs = parse_errors({ SITE_A, SITE_B, "Mode=enforce LinkName=ab Bandwidth=1GB/s Latency=9ms", LINK })
      assert.are.same({ "t.conf:3: LinkName: must start its own line", "t.conf:3: Bandwidth: unknown key",
        "t.conf:3: Latency: unknown key" }, errs)
    end)

    it("missing required key", function()
      assert_errors("missing-required-key.conf", { line_of("missing-required-key.conf", "SiteName=b")
        .. ": NetLatency: missing (required in a SiteName line)" })
    end)

    it("missing required key on the link line, and nothing else", function()
      assert.are.same({ "t.conf:3: Latency: missing (required in a LinkName line)" },
        parse_errors({ SITE_A, SITE_B, "LinkName=ab Bandwidth=1GB/s" }))
    end)

    it("a link's License= that is not NAME:COUNT, or counts none or too many", function()
      for _, v in ipairs({ "xsite_link", "xsite_link:", ":5", "\"a b:3\"", "xsite_link@:4", "x:0", "x:1000001",
        "x:2.5" }) do
        local errs = parse_errors({ SITE_A, SITE_B, LINK .. " License=" .. v })
        assert.are.equal(1, #errs)
        assert.matches("^t%.conf:3: License: '", errs[1])
      end
      local cfg = assert(parse_lines({ SITE_A, SITE_B, LINK .. " License=link@dbd:1000000" }))
      assert.are.same({ name = "link@dbd", count = 1000000 }, cfg.link.license)
      cfg = assert(parse_lines({ SITE_A, SITE_B, LINK }))
      assert.is_nil(cfg.link.license)
    end)

    it("bad unit", function()
      assert_errors("bad-unit.conf", { line_of("bad-unit.conf", "LinkName")
        .. ": Bandwidth: '930MB': unknown unit 'MB' (B/s, MB/s, GB/s, MiB/s, Mb/s, Gb/s, Mbit/s, Gbit/s)" })
    end)

    it("node in two sites", function()
      assert_errors("node-in-two-sites.conf", { line_of("node-in-two-sites.conf", "SiteName=b")
        .. ": Nodes: node 'a4' is already in site 'a' (line " .. line_of("node-in-two-sites.conf", "SiteName=a")
        .. ")" })
    end)

    it("node listed twice in one site", function()
      -- a[1-4],a2 names four nodes, not five: an error, or a site of four nodes.
      local cfg, _, errs = load_fixture("node-twice-in-one-site.conf")
      if cfg then
        assert.are.equal(4, #cfg.sites[1].nodes, "site a counted " .. #cfg.sites[1].nodes .. " nodes")
      else
        local line = line_of("node-twice-in-one-site.conf", "SiteName=a")
        assert.matches("node%-twice%-in%-one%-site%.conf:" .. line .. ": Nodes: .*a2", errs[1])
      end
    end)

    it("duplicate site", function()
      local file = "duplicate-site.conf"
      local errs = errors_of(file)
      assert.are.equal(FIXTURES .. file .. ":" .. line_of(file, "SiteName=a Nodes=c")
        .. ": SiteName: site 'a' already defined at line " .. line_of(file, "SiteName=a Nodes=a"), errs[1])
    end)

    it("duplicate feature", function()
      assert.are.same({ "t.conf:2: Feature: feature 'x' already names site 'a'" },
        parse_errors({ SITE_A .. " Feature=x", SITE_B .. " Feature=x", LINK }))
    end)

    it("duplicate profile", function()
      assert_errors("duplicate-profile.conf", { line_of("duplicate-profile.conf", "Ops=2e12")
        .. ": ProfileName: 'cfd' already defined at line " .. line_of("duplicate-profile.conf", "Ops=1e12") })
    end)

    it("duplicate class", function()
      assert.are.same({ "t.conf:5: ClassName: 'low' already defined at line 4" },
        parse_errors({ SITE_A, SITE_B, LINK, "ClassName=low Ops=1 Bytes=1B Exchange=1B",
          "ClassName=low Ops=2 Bytes=1B Exchange=1B" }))
    end)

    it("DefaultProfile unknown", function()
      assert_errors("default-profile-unknown.conf", { line_of("default-profile-unknown.conf", "DefaultProfile=")
        .. ": DefaultProfile: unknown profile 'gromacs'" })
    end)

    it("DefaultAffinity neither a keyword nor a site", function()
      assert.are.same({ "t.conf:4: DefaultAffinity: 'nowhere' is not auto, pin, span or a site name" },
        parse_errors({ SITE_A, SITE_B, LINK, "DefaultAffinity=nowhere" }))
      assert(parse_lines({ SITE_A, SITE_B, LINK, "DefaultAffinity=b" }))
      assert.are.equal("span", assert(parse_lines({ SITE_A, SITE_B, LINK, "DefaultAffinity=SPAN" }))
        .policy.default_affinity)
    end)

    it("not exactly two sites: three", function()
      assert_errors("three-sites.conf", { line_of("three-sites.conf", "SiteName=c")
        .. ": SiteName: xsite needs exactly two sites, found 3" })
    end)

    it("not exactly two sites: one", function()
      assert_errors("one-site.conf", { line_of("one-site.conf", "SiteName=a")
        .. ": SiteName: xsite needs exactly two sites, found 1" })
    end)

    it("not exactly two sites: none, and no link (no line to name: file and key)", function()
      local cfg, msg = config.parse("Mode=enforce\n", "t.conf")
      assert.is_nil(cfg)
      assert.matches("^t%.conf:%d*:? ?SiteName: xsite needs exactly two sites, found 0", msg)
      assert.matches("\nt%.conf:%d*:? ?LinkName: no link between the sites", msg)
    end)

    it("link naming an unknown site", function()
      assert_errors("link-unknown-site.conf", { line_of("link-unknown-site.conf", "LinkName")
        .. ": Sites: unknown site 'c'" })
    end)

    it("link naming one site, or the same site twice", function()
      local msg = "t.conf:3: Sites: must name the two sites, e.g. Sites=hd,ma"
      assert.are.same({ msg }, parse_errors({ SITE_A, SITE_B, "LinkName=ab Sites=a Bandwidth=1GB/s Latency=9ms" }))
      assert.are.same({ msg }, parse_errors({ SITE_A, SITE_B, "LinkName=ab Sites=a,a Bandwidth=1GB/s Latency=9ms" }))
    end)

    it("a second link", function()
      assert.are.same({ "t.conf:4: LinkName: only one link between the two sites is supported" },
        parse_errors({ SITE_A, SITE_B, LINK, "LinkName=cd Bandwidth=1GB/s Latency=9ms" }))
    end)

    it("ProfileName using a class name", function()
      assert_errors("profile-named-like-class.conf", { line_of("profile-named-like-class.conf", "ProfileName")
        .. ": ProfileName: 'high' is a class name: use ClassName=high" })
    end)

    it("ClassName not one of low, medium, high", function()
      assert.are.same({ "t.conf:4: ClassName: 'huge' is not one of low, medium, high" },
        parse_errors({ SITE_A, SITE_B, LINK, "ClassName=huge Ops=1 Bytes=1B Exchange=1B" }))
    end)

    it("Template without Size", function()
      assert_errors("template-without-size.conf", { line_of("template-without-size.conf", "Template")
        .. ": Size: missing (required with Template)" })
    end)

    it("Template with explicit totals, and explicit totals missing or with Size", function()
      assert.are.same({ "t.conf:4: Ops: cannot be given with Template" },
        parse_errors({ SITE_A, SITE_B, LINK, "ProfileName=x Template=fft2d Size=1k Ops=1" }))
      assert.are.same({ "t.conf:4: Exchange: missing (required without Template)" },
        parse_errors({ SITE_A, SITE_B, LINK, "ProfileName=x Ops=1 Bytes=1B" }))
      assert.are.same({ "t.conf:4: Size: only meaningful with Template" },
        parse_errors({ SITE_A, SITE_B, LINK, "ProfileName=x Ops=1 Bytes=1B Exchange=1B Size=5" }))
    end)

    it("a key given twice on one line, in any spelling", function()
      assert_errors("key-given-twice.conf", { line_of("key-given-twice.conf", "LinkName")
        .. ": Latency: given twice" })
    end)

    it("a global key given on two lines", function()
      local file = "global-key-on-two-lines.conf"
      local cfg, _, errs = load_fixture(file)
      assert.is_nil(cfg, "Mode=enforce and Mode=off were both accepted; Mode is " ..
        (cfg and cfg.policy.mode or "?"))
      assert.are.equal(1, #errs)
      assert.are.equal(FIXTURES .. file .. ":" .. line_of(file, "Mode=off") .. ": Mode: ",
        errs[1]:sub(1, #FIXTURES + #file + #(": Mode: ") + #tostring(line_of(file, "Mode=off")) + 1))
    end)

    it("bad values of every checker name their key", function()
      local cases = {
        { "CoresPerNode=0", "CoresPerNode: '0' must be at least 1" },
        { "CoresPerNode=1.5", "CoresPerNode: '1.5' is not a whole number" },
        { "NetLatency=2", "NetLatency: '2' needs a unit" },
        { "Feature=9x", "Feature: '9x' is not a valid name" },
      }
      for _, c in ipairs(cases) do
        local line = SITE_A:gsub(c[1]:match("^%a+") .. "=%S+", "") .. " " .. c[1]
        local errs = parse_errors({ line, SITE_B, LINK })
        assert.matches("^t%.conf:1: " .. c[2]:gsub("%p", "%%%0"), errs[1])
      end
      local global = {
        { "MaxSlowdown=0.9", "MaxSlowdown: '0.9' must be at least 1.0 (a slowdown factor)" },
        { "Mode=on", "Mode: 'on' is not one of enforce, advise, off" },
        { "FailMode=maybe", "FailMode: 'maybe' is not one of open, closed" },
        { "LinkStateFile=run/link", "LinkStateFile: 'run/link' is not an absolute path" },
        { "ReportDir=spool", "ReportDir: 'spool' is not an absolute path" },
        { "OversizeAction=drop", "OversizeAction: 'drop' is not one of reject, warn, allow" },
      }
      for _, c in ipairs(global) do
        assert.are.same({ "t.conf:4: " .. c[2] }, parse_errors({ SITE_A, SITE_B, LINK, c[1] }))
      end
    end)

    it("a word that is not Key=Value, and an empty value", function()
      assert.are.same({ "t.conf:4: 'enforce' is not Key=Value" },
        parse_errors({ SITE_A, SITE_B, LINK, "Mode=advise enforce" }))
      assert.are.same({ "t.conf:4: Mode: empty value" }, parse_errors({ SITE_A, SITE_B, LINK, "Mode=" }))
    end)

    it("an unterminated quote, and text after a closing quote", function()
      assert_errors("unterminated-quote.conf", { line_of("unterminated-quote.conf", "ProfileName")
        .. ": Description: unterminated quoted value" })
      assert.are.same({ 't.conf:4: Description: text after the closing quote' },
        parse_errors({ SITE_A, SITE_B, LINK, 'ProfileName=x Description="a"b Ops=1 Bytes=1B Exchange=1B' }))
    end)
  end)

  it("gives every error of every bad fixture as file:line: Key: message", function()
    local bad = { "bad-unit.conf", "default-profile-unknown.conf", "duplicate-profile.conf",
      "duplicate-site.conf", "global-key-on-two-lines.conf", "key-given-twice.conf", "link-unknown-site.conf",
      "missing-required-key.conf", "node-in-two-sites.conf", "node-twice-in-one-site.conf", "one-site.conf",
      "profile-named-like-class.conf", "several-errors.conf", "template-without-size.conf", "three-sites.conf",
      "unknown-key.conf", "unterminated-quote.conf" }
    for _, file in ipairs(bad) do
      local prefix = (FIXTURES .. file):gsub("%p", "%%%0")
      for _, e in ipairs(errors_of(file)) do
        assert.matches("^" .. prefix .. ":%d+: %u%a+: %S", e)
      end
    end
  end)

  it("reports several errors, one per line, in file order", function()
    local file = "several-errors.conf"
    assert_errors(file, {
      line_of(file, "SiteName=b") .. ": Nodes: unclosed '[' in 'b[1-4'",
      line_of(file, "MaxSlowdown") .. ": MaxSlowdown: '0.5' must be at least 1.0 (a slowdown factor)",
      line_of(file, "ProfileName") .. ": Pattern: 'ring' is not one of alltoall, halo1d, halo2d, halo3d, tree, none",
      line_of(file, "Mode=") .. ": Mode: 'sometimes' is not one of enforce, advise, off",
    })
  end)

  it("reports every bad key of one line", function()
    assert.are.same({ "t.conf:1: CoresPerNode: 'x' is not a number with a unit (a plain number, or k, M, G, T, P)",
      "t.conf:1: NetLatency: '2' needs a unit (s, ms, us or ns)" },
      parse_errors({ (SITE_A:gsub("CoresPerNode=8", "CoresPerNode=x"):gsub("NetLatency=2us", "NetLatency=2")),
        SITE_B, LINK }))
  end)
end)

describe("xsite.config.load", function()
  it("names the file that cannot be opened", function()
    local cfg, msg, errs = config.load(FIXTURES .. "no-such.conf")
    assert.is_nil(cfg)
    assert.matches("no%-such%.conf: cannot open: ", msg)
    assert.is_table(errs)
  end)

  it("names the file and the reason, with the array of errors, when the file cannot be read", function()
    local cfg, msg, errs = config.load(h.root .. "/tests/lua")  -- a directory opens but cannot be read
    assert.is_nil(cfg)
    assert.matches("^" .. (h.root .. "/tests/lua"):gsub("%p", "%%%0") .. ": cannot ", msg)
    assert.are.same({ msg }, errs)
  end)

  it("loads the testbed configuration shipped in site-configs/", function()
    local cfg = assert(config.load(h.root .. "/site-configs/testbed.conf"))
    assert.are.equal(2, #cfg.sites)
    near(1e9 / 8, cfg.link.bandwidth, "Bandwidth=1Gb/s")
    near(1e-3, cfg.link.latency, "Latency=1ms")
  end)
end)

describe("xsite.config.locate", function()
  local function env(t) return function(k) return t[k] end end

  it("takes XSITE_CONF first", function()
    assert.are.equal("/opt/x.conf", config.locate(env({ XSITE_CONF = "/opt/x.conf",
      SLURM_CONF = "/etc/slurm-llnl/slurm.conf" })))
  end)

  it("takes xsite.conf next to SLURM_CONF when XSITE_CONF is unset or empty", function()
    assert.are.equal("/etc/slurm-llnl/xsite.conf", config.locate(env({ SLURM_CONF = "/etc/slurm-llnl/slurm.conf" })))
    assert.are.equal("/etc/slurm-llnl/xsite.conf", config.locate(env({ XSITE_CONF = "",
      SLURM_CONF = "/etc/slurm-llnl/slurm.conf" })))
    assert.are.equal("/xsite.conf", config.locate(env({ SLURM_CONF = "/slurm.conf" })))
  end)

  it("takes /etc/slurm/xsite.conf when neither is set", function()
    assert.are.equal("/etc/slurm/xsite.conf", config.locate(env({})))
    assert.are.equal("/etc/slurm/xsite.conf", config.locate(env({ XSITE_CONF = "", SLURM_CONF = "" })))
  end)

  it("takes xsite.conf in the current directory for a SLURM_CONF without a directory", function()
    local where = config.locate(env({ SLURM_CONF = "slurm.conf" }))
    assert.is_true(where == "xsite.conf" or where == "./xsite.conf", "got " .. where)
  end)

  it("reads the real environment by default", function()
    assert.is_string(config.locate())
  end)
end)

describe("xsite.config.cache", function()
  local path, now
  local function clock() return now end
  local function write(text)
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
  end
  local GOOD = SITE_A .. "\n" .. SITE_B .. "\n" .. LINK .. "\n"
  local GOOD2 = GOOD .. "Mode=advise\n"
  local BAD = GOOD .. "Mode=sometimes\n"

  before_each(function()
    path = os.tmpname()
    now = 1000
  end)
  after_each(function() os.remove(path) end)

  it("reads and parses the file on the first call", function()
    write(GOOD)
    local c = config.cache(path, 5, clock)
    local cfg, err, fresh = c.get()
    assert.is_table(cfg)
    assert.is_nil(err)
    assert.is_false(fresh)
    assert.are.equal(path, cfg.file)
  end)

  it("does not look at the file again before the interval has passed", function()
    write(GOOD)
    local c = config.cache(path, 5, clock)
    local first = c.get()
    write(GOOD2)
    now = 1004
    assert.are.equal(first, (c.get()))
    now = 1005
    local second = c.get()
    assert.are_not.equal(first, second)
    assert.are.equal("advise", second.policy.mode)
  end)

  it("parses again only when the text changed", function()
    write(GOOD)
    local c = config.cache(path, 5, clock)
    local real_parse, parses = config.parse, 0
    config.parse = function(...)
      parses = parses + 1
      return real_parse(...)
    end
    local ok, e = pcall(function()
      local first = c.get()
      now = now + 10
      assert.are.equal(first, (c.get()))
      now = now + 10
      assert.are.equal(first, (c.get()))
      assert.are.equal(1, parses)
      write(GOOD2)
      now = now + 10
      assert.are_not.equal(first, (c.get()))
      assert.are.equal(2, parses)
    end)
    config.parse = real_parse
    assert(ok, e)
  end)

  it("keeps the last good configuration when the new text is bad and says so once", function()
    write(GOOD)
    local c = config.cache(path, 5, clock)
    local good = c.get()
    write(BAD)
    now = now + 5
    local cfg, err, fresh = c.get()
    assert.are.equal(good, cfg)
    assert.are.equal(path .. ":4: Mode: 'sometimes' is not one of enforce, advise, off", err)
    assert.is_true(fresh)
    now = now + 1  -- within the interval
    cfg, err, fresh = c.get()
    assert.are.equal(good, cfg)
    assert.are.equal(path .. ":4: Mode: 'sometimes' is not one of enforce, advise, off", err)
    assert.is_false(fresh)
    now = now + 10  -- re-read, same bad text
    cfg, err, fresh = c.get()
    assert.are.equal(good, cfg)
    assert.is_string(err)
    assert.is_false(fresh)
  end)

  it("reports a different bad text as a fresh error", function()
    write(GOOD)
    local c = config.cache(path, 5, clock)
    c.get()
    write(BAD)
    now = now + 5
    local _, _, fresh = c.get()
    assert.is_true(fresh)
    write(GOOD .. "MaxSlowdown=0\n")
    now = now + 5
    local _, err
    _, err, fresh = c.get()
    assert.matches("MaxSlowdown", err)
    assert.is_true(fresh)
  end)

  it("clears the error when the file is fixed", function()
    write(GOOD)
    local c = config.cache(path, 5, clock)
    c.get()
    write(BAD)
    now = now + 5
    assert.is_string(select(2, c.get()))
    write(GOOD2)
    now = now + 5
    local cfg, err, fresh = c.get()
    assert.are.equal("advise", cfg.policy.mode)
    assert.is_nil(err)
    assert.is_false(fresh)
  end)

  it("has no configuration and an error when the first text is bad", function()
    write(BAD)
    local c = config.cache(path, 5, clock)
    local cfg, err, fresh = c.get()
    assert.is_nil(cfg)
    assert.matches("Mode", err)
    assert.is_true(fresh)
  end)

  it("reports a missing file once and keeps the last good configuration", function()
    write(GOOD)
    local c = config.cache(path, 5, clock)
    local good = c.get()
    os.remove(path)
    now = now + 5
    local cfg, err, fresh = c.get()
    assert.are.equal(good, cfg)
    assert.matches("cannot open", err)
    assert.is_true(fresh)
    now = now + 5
    cfg, err, fresh = c.get()
    assert.are.equal(good, cfg)
    assert.matches("cannot open", err)
    assert.is_false(fresh)
    write(GOOD)
    now = now + 5
    cfg, err = c.get()
    assert.is_table(cfg)
    assert.is_nil(err)
  end)

  it("names the file and the reason when the file cannot be read", function()
    local dir = h.root .. "/tests/lua"  -- a directory opens but cannot be read
    local c = config.cache(dir, 5, clock)
    local cfg, err, fresh = c.get()
    assert.is_nil(cfg)
    assert.matches("^" .. dir:gsub("%p", "%%%0") .. ": cannot ", err)
    assert.not_matches(": nil$", err)
    assert.is_true(fresh)
  end)

  it("parses with opts.parse, e.g. the link state file", function()
    write("State=up Bandwidth=800MB/s\n")
    local c = config.cache(path, 5, clock, { parse = require("xsite.state").parse_link })
    local st, err = c.get()
    assert.is_nil(err)
    assert.are.equal("up", st.state)
    near(800e6, st.bandwidth, "Bandwidth")
    write("State=sideways\n")
    now = now + 5
    local again, err2, fresh = c.get()
    assert.are.equal(st, again)
    assert.are.equal(path .. ":1: State: 'sideways' is not one of up, degraded, down", err2)
    assert.is_true(fresh)
  end)

  it("with opts.missing_ok, takes a missing file as no value and no error", function()
    write("State=down\n")
    local c = config.cache(path, 5, clock, { parse = require("xsite.state").parse_link, missing_ok = true })
    assert.are.equal("down", c.get().state)
    os.remove(path)
    now = now + 5
    local st, err, fresh = c.get()
    assert.is_nil(st)
    assert.is_nil(err)
    assert.is_false(fresh)
    write("State=up\n")
    now = now + 5
    assert.are.equal("up", c.get().state)
  end)

  it("checks every call with interval 0", function()
    write(GOOD)
    local c = config.cache(path, 0, clock)
    c.get()
    write(GOOD2)
    assert.are.equal("advise", c.get().policy.mode)
  end)
end)

describe("xsite.config.slurm_licenses", function()
  it("reads slurm.conf's Licenses= as Slurm does: ',' or ';' between items, ':' or '=' before a count", function()
    assert.are.same({ a = 2, xsite_link = 100, b = 1 },
      config.slurm_licenses("SlurmUser=slurm\nLicenses=a:2;xsite_link=100,b\n"))
    assert.are.same({}, config.slurm_licenses("SlurmUser=slurm\n"))
  end)
end)

describe("xsite.config.slurm_partitions", function()
  it("reads each partition's MinNodes (DEFAULT's for those without) and the default partition", function()
    assert.are.same({ min = { debug = 1, wide = 2, big = 3, Huge = 8, odd = 3 }, default = "debug" },
      config.slurm_partitions("PartitionName=debug Nodes=ALL Default=YES\n"
        .. "partitionname = wide minnodes = 2 # MinNodes=9\n"
        .. "PartitionName=DEFAULT MinNodes=3\nPartitionName=big Nodes=a[1-4]\n"
        .. "  PartitionName=Huge MaxNodes=9 MinNodes=8\n#PartitionName=gone MinNodes=50\n"
        .. "PartitionName=odd MinNodes=99999999999 Default=NO\n"))
    assert.are.same({ min = {} }, config.slurm_partitions("SlurmUser=slurm\n"))
    -- a line continued with `\`, as Slurm joins it; Default=true
    assert.are.same({ min = { gpu = 4, cpu = 3 }, default = "gpu" },
      config.slurm_partitions("PartitionName=DEFAULT \\\n  MinNodes=3\nPartitionName=gpu Nodes=g[1-4] \\\r\n"
        .. "  MinNodes=4 Default=true\nPartitionName=cpu\n"))
  end)
end)

describe("xsite.config.set_global", function()
  local base = assert(io.open(h.root .. "/site-configs/testbed.conf")):read("*a")
    :gsub("\nMode=enforce\n", "\n"):gsub("\nMaxSlowdown=1.10\n", "\n")

  it("takes a key out of a continued line, keeps the line's other keys, and appends it", function()
    local text = base .. "Mode=advise \\\n  ReportDir=/old # here\nMaxSlowdown=1.5\n"
    local new = assert(config.set_global(text, "t.conf", { { "reportdir", "/new" }, { "MaxSlowdown", "2" } }))
    assert.is_nil(new:find("/old", 1, true))
    assert.is_nil(new:find("MaxSlowdown=1.5", 1, true))
    assert.matches("\nMode=advise\n", new)
    assert.matches("\nReportDir=/new\nMaxSlowdown=2\n$", new)
    local cfg = assert(config.parse(new, "t.conf"))
    assert.are.equal("/new", cfg.policy.report_dir)
    assert.are.equal(2, cfg.policy.max_slowdown)
    assert.are.equal("advise", cfg.policy.mode)
  end)

  it("refuses a key of a record line, a bad value and a value it cannot write", function()
    local ok, err = config.set_global(base, "t.conf", { { "Nodes", "x" } })
    assert.is_nil(ok)
    assert.are.equal("Nodes: not a key of xsite.conf's global lines", err)
    ok, err = config.set_global(base, "t.conf", { { "Mode", "sometimes" } })
    assert.is_nil(ok)
    assert.matches("^Mode: 'sometimes' is not one of", err)
    ok, err = config.set_global(base, "t.conf", { { "ReportDir", "/a b" } })
    assert.is_nil(ok)
    assert.matches("cannot be written", err)
  end)
end)
