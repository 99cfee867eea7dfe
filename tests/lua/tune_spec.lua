local h = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helpers.lua")
local tune = require("xsite.tune")
local cli = require("xsite.cli")
local fs = require("xsite.fs")

-- A rules file xsite wrote, read back by the one parser (numbers, '#' to the
-- end of the line, as Open MPI reads it): { [coll id] = array of { comm,
-- rules = array of { size, alg, faninout, segsize } } }.
local function parse_rules(text)
  return (assert(tune.parse_rules(text)))
end

local function lookup(rules, id, c, n)
  local set = rules[id][1]
  for _, s in ipairs(rules[id]) do
    if s.comm <= c then set = s end
  end
  local r = set.rules[1]
  for _, x in ipairs(set.rules) do
    if x[1] <= n then r = x end
  end
  return r
end

local GBIT = 125e6

describe("xsite.tune", function()
  it("sizes TCP buffers from the bandwidth-delay product, within bounds", function()
    -- 1 Gb/s x 2 ms RTT = 250 kB, doubled and rounded up: 512 KiB
    assert.are.equal(512 * 1024, tune.tcp_buffer(GBIT, 1e-3))
    -- 1 Gb/s x 10 ms = 1.25 MB -> 2.5 MB -> 4 MiB
    assert.are.equal(4 * 1024 * 1024, tune.tcp_buffer(GBIT, 5e-3))
    -- a short link: never below 256 KiB
    assert.are.equal(tune.MIN_BUFFER, tune.tcp_buffer(930e6, 1e-6))
    -- 5 GB/s x 18 ms = 90 MB: clamped to 64 MiB
    assert.are.equal(tune.MAX_BUFFER, tune.tcp_buffer(5e9, 9e-3))
  end)

  it("sets the eager limit to the bandwidth-delay product, within bounds", function()
    -- 1 Gb/s x 2 ms RTT = 250 kB -> 256 KiB; x 10 ms = 1.25 MB -> 2 MiB
    assert.are.equal(256 * 1024, tune.eager_limit(GBIT, 1e-3))
    assert.are.equal(2 * 1024 * 1024, tune.eager_limit(GBIT, 5e-3))
    -- a short link keeps Open MPI's default; a long fast one is capped
    assert.are.equal(64 * 1024, tune.eager_limit(GBIT, 1e-5))
    assert.are.equal(tune.MAX_EAGER, tune.eager_limit(5e9, 9e-3))
    assert.are.equal(2 * 1024 * 1024, assert(tune.plan({ bandwidth = GBIT, latency = 5e-3 })).eager)
  end)

  it("refuses a link without a positive bandwidth or latency", function()
    assert.is_nil((tune.plan({ bandwidth = 0, latency = 1e-3 })))
    local p, e = tune.plan({ bandwidth = GBIT, latency = -1 })
    assert.is_nil(p)
    assert.matches("latency", e)
    assert.is_nil((tune.plan({ bandwidth = 0 / 0, latency = 1e-3 })))
    assert.is_nil((tune.plan(nil)))
    assert.is_nil((tune.plan({ bandwidth = GBIT, latency = 1e-3 }, { local_bandwidth = -2 })))
  end)

  it("writes a rules file in Open MPI 4.1's format with the right collective ids", function()
    local p = assert(tune.plan({ bandwidth = GBIT, latency = 1e-3 }, { local_bandwidth = 2e9 }))
    local r = parse_rules(tune.rules_text(p))
    for _, id in ipairs({ 0, 2, 6, 7, 11 }) do
      assert.is_table(r[id], "collective " .. id)
      for _, s in ipairs(r[id]) do
        assert.are.equal(0, s.rules[1][1], "first message size is 0")
        for k = 2, #s.rules do assert.is_true(s.rules[k][1] > s.rules[k - 1][1]) end
      end
    end
    assert.are.equal(2, r[0][1].comm)
    assert.are.equal(tune.MAX_COMM, r[0][#r[0]].comm)
  end)

  it("picks the algorithms of the design by size, and no ring where a ring would cross often", function()
    local p = assert(tune.plan({ bandwidth = GBIT, latency = 1e-3 }, { local_bandwidth = 2e9 }))
    local r = parse_rules(tune.rules_text(p))
    -- allreduce's rings, the double-ring barrier, bcast's chain and
    -- ring-allgather, reduce's chain and pipeline (the pipeline reverses a
    -- non-commutative op)
    local rings = { [2] = { 4, 5 }, [6] = { 2 }, [7] = { 2, 9 }, [11] = { 2, 3 } }
    for id, bad in pairs(rings) do
      for _, s in ipairs(r[id]) do
        for _, x in ipairs(s.rules) do
          for _, b in ipairs(bad) do assert.are_not.equal(b, x[2]) end
        end
      end
    end
    -- 8 ranks (4 per site): allreduce recursive doubling while L + 4n/B + 2n/b
    -- < 2L + n/B + 1.5n/b, i.e. below n = 1 ms / (24.25 ns/B) = 41238 bytes,
    -- then Rabenseifner
    assert.are.same({ 0, 3, 0, 0 }, lookup(r, 2, 8, 8))
    assert.are.equal(3, lookup(r, 2, 8, 41237)[2])
    assert.are.equal(6, lookup(r, 2, 8, 41238)[2])
    assert.are.equal(6, lookup(r, 2, 8, 4 * 1024 * 1024)[2])
    -- 4 ranks: L + 2n/B + n/b vs 2L + n/B + n/b: from L x B = 125000 bytes
    assert.are.equal(3, lookup(r, 2, 4, 124999)[2])
    assert.are.equal(6, lookup(r, 2, 4, 64 * 1024 * 1024)[2])
    -- 2 ranks: one exchange either way, recursive doubling at every size
    assert.are.equal(3, lookup(r, 2, 2, 64 * 1024 * 1024)[2])
    -- bcast, 8 ranks: binomial, then the pipeline in 64 KiB segments from
    -- 6 x 64 KiB / log2 4 = 192 KiB; 2 ranks: binomial at every size
    assert.are.same({ 0, 6, 0, 0 }, lookup(r, 7, 8, 8))
    assert.are.same({ 0, 6, 0, 0 }, lookup(r, 7, 8, 196607))
    assert.are.same({ 196608, 3, 0, 65536 }, lookup(r, 7, 8, 4 * 1024 * 1024))
    assert.are.same({ 0, 6, 0, 0 }, lookup(r, 7, 2, 64 * 1024 * 1024))
    -- reduce: the binomial tree, in 64 KiB segments from 128 KiB
    assert.are.same({ 0, 5, 0, 0 }, lookup(r, 11, 8, 131071))
    assert.are.same({ 131072, 5, 0, 65536 }, lookup(r, 11, 16, 4 * 1024 * 1024))
    -- barrier: recursive doubling
    assert.are.equal(3, lookup(r, 6, 8, 0)[2])
    -- allgather, 8 ranks: recursive doubling below 16 KiB a rank (128 KiB
    -- in all), then the ring; 4 ranks: recursive doubling at every size
    assert.are.equal(3, lookup(r, 0, 8, 131071)[2])
    assert.are.equal(4, lookup(r, 0, 8, 131072)[2])
    assert.are.equal(3, lookup(r, 0, 4, 64 * 1024 * 1024)[2])
    -- 9 ranks use the rule set of 8
    assert.are.equal(4, lookup(r, 0, 9, 131072)[2])
  end)

  it("moves the allreduce threshold with the link latency, never past a few link round trips of data", function()
    local r1 = parse_rules(tune.rules_text(tune.plan({ bandwidth = GBIT, latency = 1e-3 }, { local_bandwidth = 2e9 })))
    local r5 = parse_rules(tune.rules_text(tune.plan({ bandwidth = GBIT, latency = 5e-3 }, { local_bandwidth = 2e9 })))
    -- 5 ms: five times the 1 ms threshold (206186 bytes)
    assert.are.equal(3, lookup(r5, 2, 8, 206185)[2])
    assert.are.equal(6, lookup(r5, 2, 8, 206186)[2])
    -- a 4 MiB allreduce is Rabenseifner at 1 ms and at 5 ms: recursive
    -- doubling would push 4 x 4 MiB each way through the link
    assert.are.equal(6, lookup(r1, 2, 8, 4 * 1024 * 1024)[2])
    assert.are.equal(6, lookup(r5, 2, 8, 4 * 1024 * 1024)[2])
  end)

  it("segments broadcasts and reduces in pieces sent at once, whatever the link", function()
    for _, lat in ipairs({ 145e-6, 1e-3, 5e-3, 9e-3 }) do
      local link = { bandwidth = GBIT, latency = lat }
      local p = tune.plan(link, { local_bandwidth = 2e9 })
      local r = parse_rules(tune.rules_text(p))
      for _, id in ipairs({ 7, 11 }) do
        for _, s in ipairs(r[id]) do
          for _, x in ipairs(s.rules) do
            if x[4] > 0 then
              assert.are.equal(tune.SEGMENT, x[4])
              assert.is_true(x[4] <= p.eager)
              assert.is_true(x[1] >= 2 * x[4])
            end
          end
        end
      end
    end
  end)

  it("starts the broadcast pipeline where its chain fills faster than the tree passes the message on", function()
    assert.is_nil(tune.pipeline_from(2))
    for _, c in ipairs({ 4, 8, 16, 64, 4096 }) do
      local n = tune.pipeline_from(c)
      local tree = function(m) return math.log(c / 2) / math.log(2) * m end
      local chain = (c - 2) * tune.SEGMENT
      assert.is_true(n >= 2 * tune.SEGMENT)
      assert.is_true(chain <= tree(n))
      if n > 2 * tune.SEGMENT then assert.is_true(chain > tree(n - 1)) end
    end
  end)

  it("models the bytes each allreduce algorithm sends across the link", function()
    local link = { bandwidth = GBIT, latency = 1e-3 }
    local n = 4 * 1024 * 1024
    for _, c in ipairs({ 2, 4, 8, 64 }) do
      -- recursive doubling: in the round at distance c/2 each of the c/2
      -- ranks of a site sends its whole vector
      local _, across, crossings, inside = tune.allreduce_cost("recursive_doubling", n, c, link, 2e9)
      assert.are.equal(c / 2 * n, across)
      assert.are.equal(1, crossings)
      assert.are.equal(math.floor(math.log(c / 2) / math.log(2) + 0.5) * n, inside)
      -- Rabenseifner: n/c a rank in the last halving round and the first
      -- doubling round: n each way in all, whatever c
      _, across, crossings = tune.allreduce_cost("rabenseifner", n, c, link, 2e9)
      assert.are.equal(n, across)
      assert.are.equal(2, crossings)
    end
    assert.has_error(function() tune.allreduce_cost("ring", n, 8, link, 2e9) end)
  end)

  it("gives each allreduce size the algorithm its model makes fastest", function()
    for _, lat in ipairs({ 145e-6, 1e-3, 5e-3, 9e-3 }) do
      local link = { bandwidth = GBIT, latency = lat }
      local r = parse_rules(tune.rules_text(tune.plan(link, { local_bandwidth = 2e9 })))
      for _, c in ipairs({ 2, 4, 8, 16, 256 }) do
        local n = 8
        while n <= 64 * 1024 * 1024 do
          local alg = lookup(r, 2, c, n)[2] == 6 and "rabenseifner" or "recursive_doubling"
          local other = alg == "rabenseifner" and "recursive_doubling" or "rabenseifner"
          local t = tune.allreduce_cost(alg, n, c, link, 2e9)
          local u = tune.allreduce_cost(other, n, c, link, 2e9)
          assert.is_true(t <= u * (1 + 1e-9),
            string.format("L=%g c=%d n=%d: %s %.6f s > %s %.6f s", lat, c, n, alg, t, other, u))
          n = n * 2
        end
      end
    end
  end)

  it("gives the OMPI_MCA_ environment, as env lines or shell exports", function()
    local p = assert(tune.plan({ bandwidth = GBIT, latency = 1e-3 }))
    local e = tune.env(p, "/tmp/a b'c")
    assert.are.equal("OMPI_MCA_btl_tcp_sndbuf=524288\nOMPI_MCA_btl_tcp_rcvbuf=524288\n"
      .. "OMPI_MCA_btl_tcp_eager_limit=262144\nOMPI_MCA_coll_han_priority=0\n"
      .. "OMPI_MCA_coll_tuned_use_dynamic_rules=1\nOMPI_MCA_coll_tuned_dynamic_rules_filename=/tmp/a b'c\n",
      tune.format(e, "env"))
    assert.matches("export OMPI_MCA_coll_tuned_dynamic_rules_filename='/tmp/a b'\\''c'\n$",
      tune.format(e, "shell"))
    assert.are.equal(3, #tune.env(p, nil))
    assert.is_nil((tune.format(e, "json")))
  end)

  it("writes a file whole and replaces a symlink instead of following it", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local target = dir .. "/victim"
    local f = assert(io.open(target, "w"))
    f:write("keep\n")
    f:close()
    assert(os.execute("ln -s " .. target .. " " .. dir .. "/rules"))
    assert(fs.write_atomic(dir .. "/rules", "1\n"))
    assert.are.equal("keep\n", assert(io.open(target)):read("*a"))
    assert.are.equal("1\n", assert(io.open(dir .. "/rules")):read("*a"))
    local ok, e = fs.write_atomic(dir .. "/no/such/dir/rules", "x")
    assert.is_nil(ok)
    assert.is_string(e)
    os.execute("rm -rf " .. dir)
  end)

  it("reads the kernel's socket buffer caps", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir .. "/net/core"))
    local f = assert(io.open(dir .. "/net/core/wmem_max", "w"))
    f:write("212992\n")
    f:close()
    local w, r = tune.kernel_caps(dir)
    os.execute("rm -rf " .. dir)
    assert.are.equal(212992, w)
    assert.is_nil(r)
  end)
end)

describe("xsite tune-mpi", function()
  local function buffer()
    local b = { parts = {} }
    function b:write(s) self.parts[#self.parts + 1] = s end
    return b
  end
  local function run(...)
    local o, e = buffer(), buffer()
    local rc = cli.main({ "--config", h.root .. "/site-configs/testbed.conf", ... }, { stdout = o, stderr = e })
    return rc, table.concat(o.parts), table.concat(e.parts)
  end

  it("prints the settings for the configured link and writes the rules file", function()
    local path = os.tmpname()
    local rc, out = run("tune-mpi", "--rules-file", path)
    assert.are.equal(0, rc)
    assert.matches("^OMPI_MCA_btl_tcp_sndbuf=524288\n", out)
    assert.matches("\nOMPI_MCA_btl_tcp_eager_limit=262144\n", out)
    assert.matches("\nOMPI_MCA_coll_tuned_dynamic_rules_filename=" .. path:gsub("%p", "%%%0") .. "\n$", out)
    local r = parse_rules(assert(io.open(path)):read("*a"))
    os.remove(path)
    assert.are.equal(6, lookup(r, 7, 8, 8)[2])
  end)

  it("--check reads a rules file and names FILE:LINE where it is wrong", function()
    local path = os.tmpname()
    assert(run("tune-mpi", "--rules-file", path) == 0)
    local rc, out = run("tune-mpi", "--check", path)
    assert.are.equal(0, rc)
    assert.are.equal(path .. ": rules for 5 collective(s), readable by coll/tuned\n", out)
    local f = assert(io.open(path, "w"))
    f:write("1\n7\n1\n8\n1\n0 42 0 0\n")
    f:close()
    local err
    rc, out, err = run("tune-mpi", "--check", path)
    assert.are.equal(1, rc)
    assert.are.equal("", out)
    assert.are.equal("xsite tune-mpi: " .. path .. ":6: bcast has no algorithm 42\n", err)
    os.remove(path)
    local _
    rc, _, err = run("tune-mpi", "--check", path)
    assert.are.equal(1, rc)
    assert.matches("^xsite tune%-mpi: %-%-check: .*: cannot open: No such file or directory\n$", err)
  end)

  it("--format json gives the link, the rules file and every setting", function()
    local path = os.tmpname()
    local rc, out = run("tune-mpi", "--rules-file", path, "--format", "json")
    os.remove(path)
    assert.are.equal(0, rc)
    local doc = assert(require("xsite.json").decode(out))
    assert.are.equal(path, doc.rules_file)
    assert.are.equal("524288", doc.settings.OMPI_MCA_btl_tcp_sndbuf)
    assert.are.equal(path, doc.settings.OMPI_MCA_coll_tuned_dynamic_rules_filename)
    assert.is_number(doc.link.latency)
  end)

  it("takes the link from the command line", function()
    local rc, out = run("tune-mpi", "--link-bandwidth", "10Gb/s", "--link-latency", "5ms", "--format", "rules")
    assert.are.equal(0, rc)
    assert.matches("# link: 1250000000 bytes/s, one%-way latency 0.005000 s", out)
  end)

  it("rejects bad options with exit 2", function()
    local rc, _, e = run("tune-mpi", "--link-latency", "fast")
    assert.are.equal(2, rc)
    assert.matches("xsite tune%-mpi: %-%-link%-latency:", e)
    rc, _, e = run("tune-mpi", "--format", "yaml")
    assert.are.equal(2, rc)
    assert.matches("'yaml' is not env, shell, rules or json", e)
    rc = run("tune-mpi", "extra")
    assert.are.equal(2, rc)
  end)

  it("fails when the rules file cannot be written", function()
    local rc, _, e = run("tune-mpi", "--rules-file", "/nonexistent/dir/rules")
    assert.are.equal(1, rc)
    assert.matches("%-%-rules%-file:", e)
  end)
end)

describe("xsite.tune.parse_rules", function()
  it("reads what rules_text writes", function()
    local p = assert(tune.plan({ bandwidth = GBIT, latency = 1e-3 }))
    local r = assert(tune.parse_rules(tune.rules_text(p), "x.rules"))
    assert.is_table(r[tune.COLL_ID.bcast])
  end)

  it("names file:line and what is wrong", function()
    for text, msg in pairs({
      [""] = "r:1: the file ends where the number of collectives should be",
      ["1\n7\n1\n8\n1\n0 6 0"] = "r:6: the file ends where a segment size should be",
      ["1 # one\n7\n1\n8\n1\n0 99 0 0\n"] = "r:6: an algorithm: 99 is not between 0 and 63",
      ["1\n7\n1\n8\n1\n0 42 0 0\n"] = "r:6: bcast has no algorithm 42",
      ["1\n7\n2\n8\n1\n0 6 0 0\n4\n1\n0 6 0 0\n"] = "r:7: communicator size 4 after 8: sizes must grow",
      ["1\n7\n1\n8\n2\n0 6 0 0\n0 3 0 0\n"] = "r:7: message size 0 after 0: sizes must grow",
      ["1\n7\n1\n8\n1\n0 6 0 x\n"] = "r:6: a segment size: 'x' is not a whole number",
      ["1\n7\n1\n8\n1\n0 6 0 0\n5\n"] = "r:7: '5' after the last rule",
      ["2\n7\n1\n8\n1\n0 6 0 0\n7\n1\n8\n1\n0 6 0 0\n"] = "r:7: collective 7: given twice",
    }) do
      local r, err = tune.parse_rules(text, "r")
      assert.is_nil(r, text)
      assert.are.equal(msg, err)
    end
  end)
end)
