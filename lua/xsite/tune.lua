--- Open MPI settings for a job that spans the extender link, without preload.
--
-- From the link's bandwidth B (bytes/s) and one-way latency L (s) this module
-- derives the settings below, for Open MPI 4.1 and 5.0 (coll/tuned,
-- btl/tcp; under 5.0 coll/han's priority is lowered so that coll/tuned,
-- and with it the rules, runs the collectives):
--
-- **TCP socket buffers** (`btl_tcp_sndbuf`, `btl_tcp_rcvbuf`): one TCP stream
-- keeps the link busy only if its window holds the bandwidth-delay product
-- B x RTT = B x 2L.  The buffer is twice that (Linux counts its own overhead
-- in the buffer), rounded up to a power of two, and clamped to
-- [`MIN_BUFFER`, `MAX_BUFFER`] = [256 KiB, 64 MiB]: below 256 KiB a fixed
-- buffer would be smaller than what Linux's autotuning already gives a local
-- connection; above 64 MiB memory per connection (ranks x peers) gets out of
-- hand.  The kernel caps the value at net.core.wmem_max / rmem_max: the
-- administrator must raise those (see `kernel_caps`).
--
-- **btl/tcp's eager limit** (`btl_tcp_eager_limit`): Open MPI's ob1 sends a
-- message up to the eager limit (64 KiB by default) at once; a longer one
-- first sends a request and waits for the receiver's answer before the rest
-- follows, so that it pays three one-way latencies, not one.  Up to one
-- bandwidth-delay product (B x 2L bytes) those two extra crossings cost more
-- than the data itself: the eager limit is that product, rounded up to a
-- power of two, within [`MIN_EAGER`, `MAX_EAGER`] = [64 KiB, 4 MiB].  It is a
-- memory choice as well: btl/tcp keeps a free list of eager fragments of
-- that size (8 at start, per process), 32 MiB a rank at the upper bound.
--
-- **A coll/tuned dynamic rules file** (`coll_tuned_use_dynamic_rules=1`,
-- `coll_tuned_dynamic_rules_filename=PATH`) in Open MPI 4.1's classic format:
--
--     <number of collectives>
--     <collective id>            (coll_base_functions.h: allgather 0,
--                                 allreduce 2, barrier 6, bcast 7, reduce 11)
--     <number of communicator sizes>
--     <communicator size>        (the rule set holds from this size up to the next)
--     <number of message sizes>
--     <message size> <algorithm> <fan in/out> <segment size>   (first size 0)
--
-- Message sizes are in bytes as coll/tuned computes them: count x type size,
-- and for allgather count x type size x communicator size.  The algorithms
-- assume ranks placed site by site (xsite-run's order), half of a
-- communicator of size c at each site, so that a chain or a ring through
-- the ranks in order meets the link only at the sites' borders.  Every
-- segment is `SEGMENT` (64 KiB) bytes: with the eager limit set here (at
-- least 256 KiB from 1 Gb/s and 1 ms on) a segment is sent at once.
--
-- - barrier: recursive doubling (3): one of its log2 c rounds crosses.
-- - bcast: binomial tree (6) for short messages: one crossing, log2 c
--   rounds.  From `pipeline_from(c)` bytes the pipeline (3): a chain
--   through the ranks in order, in segments; it crosses once and streams
--   the link while the chain fills ((c-2) segments), where the binomial
--   tree passes the whole message on in each of its log2(c/2) rounds at a
--   site.  coll/tuned's segmented binomial tree is no alternative: on the
--   testbed it moved 1 MiB at 5 ms in 107 ms, the pipeline in 19.
-- - reduce: binomial tree (5: Open MPI's in-order tree, so non-commutative
--   ops stay right; its pipeline, a chain, reverses their order), in
--   segments from two segments on.
-- - allreduce (n bytes a rank): recursive doubling (3) or Rabenseifner's
--   reduce-scatter + allgather (6), whichever `allreduce_cost` models faster.
--   Recursive doubling crosses once, but in that round each of the c/2 ranks
--   of a site sends its whole vector: c/2 x n bytes each way.  Rabenseifner
--   (vector halving, distance doubling) crosses twice with n/c bytes a rank
--   each time: n bytes each way in all.  Time = crossings x L + bytes each
--   way / B + bytes a rank inside the site / b (b the node's network
--   bandwidth); recursive doubling up to the size where the two meet
--   (`allreduce_threshold`), then Rabenseifner.
-- - allgather (N bytes in all): recursive doubling (3) crosses once but in
--   that round c/2 rank pairs each swap N/2 bytes: c N / 4 each way.  The
--   ring (4) sends each rank's block around the ranks in order; it crosses
--   at the two borders in every step, N (c-1)/c bytes each way in all, and
--   as its sends are eager the steps overlap: a block waits for the link
--   twice at most, about 2L a call, not c-1 times.  The ring from
--   `RING_BLOCK` bytes a rank (c >= 8; at c = 4 recursive doubling crosses
--   with N bytes too): measured on the testbed (8 ranks) at 1 and 5 ms,
--   recursive doubling is faster at 4 KiB a rank, the ring at 32 KiB.
--
-- Nothing here raises on bad input: `nil, message`.
-- @module xsite.tune

local shell = require("xsite.shell")

local M = {}

--- Smallest and largest TCP buffer set (bytes).
M.MIN_BUFFER = 256 * 1024
M.MAX_BUFFER = 64 * 1024 * 1024

--- Smallest and largest btl/tcp eager limit set (bytes); the smallest is
-- Open MPI 4.1's own default.
M.MIN_EAGER = 64 * 1024
M.MAX_EAGER = 4 * 1024 * 1024

--- The segment of a pipelined broadcast or a segmented reduce (bytes).
-- Measured at 1 and 5 ms: 64 KiB segments as fast as 128 KiB ones or
-- faster, 256 KiB and 512 KiB ones up to 1.6 times slower.
M.SEGMENT = 64 * 1024

--- Allgather takes the ring from this many bytes a rank (8 ranks or more).
M.RING_BLOCK = 16 * 1024

--- Communicator sizes with a rule set: 2, 4, ... `MAX_COMM`.
M.MAX_COMM = 4096

--- The node's network bandwidth when the caller gives none (bytes/s).
M.DEFAULT_LOCAL_BANDWIDTH = 10e9

--- Open MPI 4.1's collective ids (ompi/mca/coll/base/coll_base_functions.h).
M.COLL_ID = { allgather = 0, allreduce = 2, barrier = 6, bcast = 7, reduce = 11 }

--- Open MPI 4.1 coll/tuned algorithm numbers (coll_tuned_<coll>_algorithm).
M.ALG = {
  allgather = { linear = 1, bruck = 2, recursive_doubling = 3, ring = 4, neighbor = 5, two_proc = 6 },
  allreduce = { basic_linear = 1, nonoverlapping = 2, recursive_doubling = 3, ring = 4,
    segmented_ring = 5, rabenseifner = 6 },
  barrier = { linear = 1, double_ring = 2, recursive_doubling = 3, bruck = 4, two_proc = 5, tree = 6 },
  bcast = { basic_linear = 1, chain = 2, pipeline = 3, split_binary_tree = 4, binary_tree = 5,
    binomial = 6, knomial = 7, scatter_allgather = 8, scatter_allgather_ring = 9 },
  reduce = { linear = 1, chain = 2, pipeline = 3, binary = 4, binomial = 5, in_order_binary = 6,
    rabenseifner = 7 },
}

local ORDER = { "allgather", "allreduce", "barrier", "bcast", "reduce" }

local function positive(v)
  return type(v) == "number" and v > 0 and v == v and v ~= math.huge
end

local function pow2_at_least(x)
  local p = 1
  while p < x do p = p * 2 end
  return p
end

local function log2(x) return math.log(x) / math.log(2) end

--- TCP buffer size for a link.
-- @param bandwidth bytes/s
-- @param latency one-way, seconds
-- @return bytes (a power of two within the bounds)
function M.tcp_buffer(bandwidth, latency)
  local want = 2 * bandwidth * 2 * latency
  local b = pow2_at_least(math.max(want, 1))
  if b < M.MIN_BUFFER then b = M.MIN_BUFFER end
  if b > M.MAX_BUFFER then b = M.MAX_BUFFER end
  return b
end

--- btl/tcp's eager limit for a link: one bandwidth-delay product.
-- @param bandwidth bytes/s
-- @param latency one-way, seconds
-- @return bytes (a power of two within [MIN_EAGER, MAX_EAGER])
function M.eager_limit(bandwidth, latency)
  local e = pow2_at_least(math.max(bandwidth * 2 * latency, 1))
  return math.min(math.max(e, M.MIN_EAGER), M.MAX_EAGER)
end

--- The model of one allreduce algorithm across the link, ranks site by
-- site, half of the c ranks at each site.
-- @param alg "recursive_doubling" or "rabenseifner"
-- @param n bytes of one rank's vector
-- @param c communicator size (a power of two)
-- @param link { bandwidth = B bytes/s, latency = L one-way seconds }
-- @param local_bw the node's network bandwidth b (bytes/s)
-- @return seconds, bytes that cross the link each way, crossings (rounds
--   that pay L), bytes a rank sends inside its site
function M.allreduce_cost(alg, n, c, link, local_bw)
  local half = c / 2
  local across, crossings, inside
  if alg == "recursive_doubling" then
    -- log2 c rounds of the whole vector; the round at distance c/2 crosses
    across, crossings, inside = half * n, 1, log2(half) * n
  elseif alg == "rabenseifner" then
    -- reduce-scatter: rounds at distance 1, 2, ... c/2 with n/2, n/4, ...
    -- n/c bytes; the last one crosses; the allgather mirrors it
    across, crossings, inside = 2 * half * (n / c), 2, 2 * n * (1 - 2 / c)
  else
    error("allreduce_cost: unknown algorithm " .. tostring(alg))
  end
  local t = crossings * link.latency + across / link.bandwidth + inside / local_bw
  return t, across, crossings, inside
end

--- The message size (bytes a rank) from which Rabenseifner's allreduce is
-- modelled faster than recursive doubling, or nil if it never is (c < 4).
function M.allreduce_threshold(c, link, local_bw)
  -- both times are L x crossings + n x slope: they meet at L / (slope difference)
  local t0rd = M.allreduce_cost("recursive_doubling", 0, c, link, local_bw)
  local t0rs = M.allreduce_cost("rabenseifner", 0, c, link, local_bw)
  local srd = M.allreduce_cost("recursive_doubling", 1, c, link, local_bw) - t0rd
  local srs = M.allreduce_cost("rabenseifner", 1, c, link, local_bw) - t0rs
  if c < 4 or srd <= srs then return nil end
  return math.ceil((t0rs - t0rd) / (srd - srs))
end

--- The broadcast size (bytes) from which the pipeline beats the binomial
-- tree for c ranks, or nil (c < 4: one message either way).  Both cross
-- once with the whole message (L + n/B); at the sites the tree passes n on
-- in log2(c/2) rounds, the chain fills in c-2 segments: the pipeline from
-- n = (c-2) x SEGMENT / log2(c/2), and from two segments.  The node's
-- bandwidth divides both sides: the size does not depend on the link.
function M.pipeline_from(c)
  if c < 4 then return nil end
  return math.max(2 * M.SEGMENT, math.ceil((c - 2) * M.SEGMENT / log2(c / 2)))
end

-- The rules of one collective for communicators of size c: array of
-- { size, alg, faninout, segsize }, first size 0, consecutive equal rules merged.
local function rules_for(coll, c, link, local_bw)
  local A = M.ALG[coll]
  local r
  if coll == "barrier" then
    r = { { 0, A.recursive_doubling, 0, 0 } }
  elseif coll == "bcast" then
    r = { { 0, A.binomial, 0, 0 } }
    local from = M.pipeline_from(c)
    if from then r[2] = { from, A.pipeline, 0, M.SEGMENT } end
  elseif coll == "reduce" then
    r = { { 0, A.binomial, 0, 0 }, { 2 * M.SEGMENT, A.binomial, 0, M.SEGMENT } }
  elseif coll == "allreduce" then
    r = { { 0, A.recursive_doubling, 0, 0 } }
    local from = M.allreduce_threshold(c, link, local_bw)
    if from then r[2] = { from, A.rabenseifner, 0, 0 } end
  elseif coll == "allgather" then
    r = { { 0, A.recursive_doubling, 0, 0 } }
    if c >= 8 then r[2] = { c * M.RING_BLOCK, A.ring, 0, 0 } end
  end
  return r
end

--- The tuning for a link.
-- @param link { bandwidth = bytes/s, latency = one-way seconds }
-- @param opts optional { local_bandwidth = bytes/s (the nodes' network),
--   max_comm = largest communicator size with its own rule set }
-- @return { sndbuf, rcvbuf, eager, link, local_bandwidth, rules = { [coll] =
--   array of { comm = c, rules = array of { size, alg, faninout, segsize } } } },
--   or nil and a message
function M.plan(link, opts)
  opts = opts or {}
  if type(link) ~= "table" then return nil, "no link" end
  if not positive(link.bandwidth) then return nil, "link bandwidth: not a positive number" end
  if not positive(link.latency) then return nil, "link latency: not a positive number" end
  local local_bw = opts.local_bandwidth or M.DEFAULT_LOCAL_BANDWIDTH
  if not positive(local_bw) then return nil, "local bandwidth: not a positive number" end
  local max_comm = opts.max_comm or M.MAX_COMM
  if type(max_comm) ~= "number" or max_comm < 2 then return nil, "max_comm: less than 2" end
  local buf = M.tcp_buffer(link.bandwidth, link.latency)
  local p = { sndbuf = buf, rcvbuf = buf, eager = M.eager_limit(link.bandwidth, link.latency),
    link = link, local_bandwidth = local_bw, rules = {} }
  for _, coll in ipairs(ORDER) do
    local sets = {}
    local c = 2
    while c <= max_comm do
      sets[#sets + 1] = { comm = c, rules = rules_for(coll, c, link, local_bw) }
      c = c * 2
    end
    p.rules[coll] = sets
  end
  return p
end

local function name_of(coll, alg)
  for k, v in pairs(M.ALG[coll]) do
    if v == alg then return k end
  end
  return "?"
end

--- The rules file of a plan (Open MPI 4.1 classic format, with comments).
-- @return string
function M.rules_text(p)
  local out = {}
  local function w(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  w("# Open MPI coll/tuned dynamic rules from xsite tune-mpi (xsite.tune)")
  w("# link: %.0f bytes/s, one-way latency %.6f s; node network %.0f bytes/s",
    p.link.bandwidth, p.link.latency, p.local_bandwidth)
  w("# ranks assumed site by site: chains and rings meet the link at the sites' borders only")
  w("%d # collectives", #ORDER)
  for _, coll in ipairs(ORDER) do
    local sets = p.rules[coll]
    w("%d # %s", M.COLL_ID[coll], coll)
    w("%d # communicator sizes", #sets)
    for _, s in ipairs(sets) do
      w("%d # communicator size", s.comm)
      w("%d # message sizes", #s.rules)
      for _, r in ipairs(s.rules) do
        w("%d %d %d %d # %s", r[1], r[2], r[3], r[4], name_of(coll, r[2]))
      end
    end
  end
  return table.concat(out, "\n") .. "\n"
end

--- The most collectives, communicator sizes a collective and message sizes
-- a communicator size a rules file may list.
M.RULES_MAX = 4096

--- Read a coll/tuned dynamic rules file (the classic format above, as
-- `rules_text` writes it and as an administrator may write one by hand):
-- the one parser of the format.  Open MPI itself ignores a file it cannot
-- read, silently; this says what is wrong and where.
-- @param text the file's text
-- @param filename for messages (default "rules")
-- @return { [collective id] = array of { comm, rules = array of { size,
--   algorithm, fan, segment } } }, or nil and "file:line: message"
function M.parse_rules(text, filename)
  filename = filename or "rules"
  local toks, line_no = {}, 0
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    line_no = line_no + 1
    for tok in line:gsub("#.*$", ""):gmatch("%S+") do
      toks[#toks + 1] = { tok, line_no }
    end
  end
  local last_line, i = line_no, 0
  local function fail(at, fmt, ...)
    return nil, string.format("%s:%d: %s", filename, at, string.format(fmt, ...))
  end
  -- the next whole number, at least lo (and at most hi), as `what`
  local function nxt(what, lo, hi)
    i = i + 1
    local t = toks[i]
    if not t then return fail(last_line, "the file ends where %s should be", what) end
    if not t[1]:match("^%d+$") then return fail(t[2], "%s: '%s' is not a whole number", what, t[1]) end
    local v = tonumber(t[1])
    if v < lo or (hi and v > hi) then
      return fail(t[2], "%s: %s is not between %d and %d", what, t[1], lo, hi or math.huge)
    end
    return v, t[2]
  end
  -- the next of a list of sizes, each larger than the one before (prev)
  local function larger(what, lo, prev)
    local v, at = nxt(what, lo)
    if v and prev and v <= prev then return fail(at, "%s %d after %d: sizes must grow", what, v, prev) end
    return v, at
  end
  local ids = {}
  for name, id in pairs(M.COLL_ID) do ids[id] = name end
  local out = {}
  local ncoll, e = nxt("the number of collectives", 1, M.RULES_MAX)
  if not ncoll then return nil, e end
  for _ = 1, ncoll do
    local id, at = nxt("a collective id", 0, 63)
    if not id then return nil, at end
    if out[id] then return fail(at, "collective %d: given twice", id) end
    local name = ids[id]
    local nsets, e2 = nxt("the number of communicator sizes", 1, M.RULES_MAX)
    if not nsets then return nil, e2 end
    local sets, prev = {}, nil
    for _ = 1, nsets do
      local comm, cat = larger("communicator size", 1, prev)
      if not comm then return nil, cat end
      prev = comm
      local nrules, e3 = nxt("the number of message sizes", 1, M.RULES_MAX)
      if not nrules then return nil, e3 end
      local rules, psize = {}, nil
      for _ = 1, nrules do
        local size, sat = larger("message size", 0, psize)
        if not size then return nil, sat end
        psize = size
        local alg, aat = nxt("an algorithm", 0, 63)
        if not alg then return nil, aat end
        if name then
          local known = alg == 0
          for _, v in pairs(M.ALG[name]) do known = known or v == alg end
          if not known then return fail(aat, "%s has no algorithm %d", name, alg) end
        end
        local fan, fat = nxt("a fan in/out", 0)
        if not fan then return nil, fat end
        local seg, gat = nxt("a segment size", 0)
        if not seg then return nil, gat end
        rules[#rules + 1] = { size, alg, fan, seg }
      end
      sets[#sets + 1] = { comm = comm, rules = rules }
    end
    out[id] = sets
  end
  if toks[i + 1] then
    return fail(toks[i + 1][2], "'%s' after the last rule", toks[i + 1][1])
  end
  return out
end

--- The environment for a plan: array of { name, value }.
-- @param p a plan
-- @param rules_path where the rules file is (nil: no rules, buffers only)
function M.env(p, rules_path)
  local e = {
    { "OMPI_MCA_btl_tcp_sndbuf", tostring(p.sndbuf) },
    { "OMPI_MCA_btl_tcp_rcvbuf", tostring(p.rcvbuf) },
    { "OMPI_MCA_btl_tcp_eager_limit", tostring(p.eager) },
  }
  if rules_path then
    -- Open MPI 5 runs coll/han (priority 35) above coll/tuned (30), and han
    -- never consults tuned's rules: with han at 0 (its priority in 4.1)
    -- tuned runs the collectives, by these rules
    e[#e + 1] = { "OMPI_MCA_coll_han_priority", "0" }
    e[#e + 1] = { "OMPI_MCA_coll_tuned_use_dynamic_rules", "1" }
    e[#e + 1] = { "OMPI_MCA_coll_tuned_dynamic_rules_filename", rules_path }
  end
  return e
end

--- Format an environment: "env" gives NAME=VALUE lines, "shell" export lines.
-- @return string, or nil and a message
function M.format(e, format)
  local out = {}
  for _, kv in ipairs(e) do
    if format == "env" then
      out[#out + 1] = kv[1] .. "=" .. kv[2]
    elseif format == "shell" then
      out[#out + 1] = "export " .. kv[1] .. "=" .. shell.quote(kv[2])
    else
      return nil, string.format("'%s' is not env or shell", tostring(format))
    end
  end
  return table.concat(out, "\n") .. (#out > 0 and "\n" or "")
end

--- What the kernel caps a socket buffer at: net.core.wmem_max and rmem_max.
-- @param root optional directory standing for /proc/sys (for tests)
-- @return wmem_max, rmem_max (nil when unreadable)
function M.kernel_caps(root)
  root = root or "/proc/sys"
  local function read(name)
    local f = io.open(root .. "/net/core/" .. name)
    if not f then return nil end
    local v = tonumber((f:read("*l") or ""):match("%d+"))
    f:close()
    return v
  end
  return read("wmem_max"), read("rmem_max")
end

return M
