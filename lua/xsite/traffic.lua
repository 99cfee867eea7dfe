--- libxsite's traffic record: what crossed the link in one job step, as
-- rank 0 writes it at MPI_Finalize (mpi-wrappers/libxsite/traffic.c,
-- XSITE_TRAFFIC_FILE).  This module is the one that reads it: root's
-- slurmstepd (through xsite.report, for the job's report) and `xsite map
-- --comm-graph`.  Its writer is the job's owner, so the text is read up to a
-- size, decoded under tight limits and checked field by field:
--
--     { "version": 1, "job": 42 | "42", "step": …, "ranks": N,
--       "sites": { SITE: [ranks…], … } | null,
--       "cross": { "bytes", "messages", "p2p_bytes", "p2p_messages",
--                  "coll_bytes", "coll_messages" },
--       "matrix": [[bytes rank i to rank j …] …] | null,
--       "edges": [i, j, bytes rank i to rank j, …] | null, … }
--
-- docs/report.md describes every field.
-- @module xsite.traffic

local json = require("xsite.json")
local safe = require("xsite.text")

local M = {}

--- The version this xsite reads.
M.VERSION = 1
--- Default of TrafficMaxSize: the largest traffic record root reads (bytes).
M.MAX_SIZE = 1048576
--- How a traffic record is decoded (xsite.json.decode limits): libxsite's
-- record nests 3 deep, its strings are site and host names, and a matrix of
-- 1024 ranks (XSITE_MATRIX_MAX, 512 by default) or 262 144 edges
-- (XSITE_EDGES_MAX) with its per-rank entries stays within max_values; its
-- keys are short words, a string of 32 bytes or more is a long host name,
-- one a rank at most, and a number a counter (at most 20 digits) or a
-- time.  Root reads none of per_rank (checked, not made), so the record
-- makes a few dozen strings: max_strings, max_long_strings and max_number
-- bound what text built to collide in Lua's string table can cost.
M.JSON = { max_depth = 8, max_items = 1048576, max_string = 256, max_values = 2097152, max_long_strings = 4096,
  max_number = 31, max_strings = 4096, skip = { per_rank = true } }
--- The most ranks a traffic record may claim (MPI counts ranks in an int).
M.MAX_RANKS = 2147483647

local printable = safe.printable

-- A whole number from 0 to max.
local function is_count(v, max)
  return type(v) == "number" and v >= 0 and v <= max and v == math.floor(v)
end
-- What a libxsite counter can hold: a whole number from 0 to 2^64 (it
-- writes them with %llu).
local function is_counter(v) return is_count(v, 2 ^ 64) end
local present, whole = json.present, safe.whole

local function check(cond, field, msg)
  if not cond then error({ traffic = field .. ": " .. msg }, 0) end
end

-- The site whose list names rank r a second time, the lists walked in
-- the order the check walks them.
local function second_listing(sites, r)
  local seen = 0
  for name, list in pairs(sites) do
    for _, v in ipairs(list) do
      if v == r then
        seen = seen + 1
        if seen == 2 then return name end
      end
    end
  end
end

-- The record checked field by field (raises { traffic = message }).
local function checked(t, opts)
  check(type(t) == "table" and not json.is_array(t), "traffic record", "not a JSON object")
  check(t.version == M.VERSION, "traffic record: version",
    string.format("not %d (%s)", M.VERSION, printable(t.version, 32)))
  local job = t.job
  if opts.job then
    check((type(job) == "string" and job == opts.job) or (is_count(job, 2 ^ 53) and whole(job) == opts.job),
      "traffic record: job", string.format("%s, not this job (%s)", printable(job, 32), opts.job))
  end
  check(is_count(t.ranks, M.MAX_RANKS) and t.ranks >= 1, "traffic record: ranks", "not a count of ranks")
  local ranks = t.ranks
  local c = t.cross
  check(type(c) == "table" and not json.is_array(c), "traffic record: cross", "missing")
  for _, k in ipairs({ "bytes", "messages", "p2p_bytes", "p2p_messages", "coll_bytes", "coll_messages" }) do
    check(is_counter(c[k]), "traffic record: cross." .. k, "not a count")
  end
  for _, k in ipairs({ "bytes", "messages" }) do
    local sum = c["p2p_" .. k] + c["coll_" .. k]
    check(math.abs(c[k] - sum) <= 1e-9 * sum, "traffic record: cross." .. k,
      "not the sum of p2p_" .. k .. " and coll_" .. k)
  end
  local m = { ranks = ranks, cross_bytes = c.bytes, cross_messages = c.messages,
    p2p_bytes = c.p2p_bytes, p2p_messages = c.p2p_messages, coll_bytes = c.coll_bytes,
    coll_messages = c.coll_messages, sites = json.null, matrix = json.null, edges = json.null }
  if present(t.sites) then
    check(type(t.sites) == "table" and not json.is_array(t.sites), "traffic record: sites", "not an object")
    -- libxsite lists each site's ranks in increasing order, and a list
    -- must be so: a rank listed at two sites is then found by merging the
    -- lists, in linear time.  Not with a table keyed by rank (ranks chosen
    -- to share a hash chain cost each insert a walk of all those before)
    -- nor by sorting the user's order (Lua 5.1's quicksort takes the
    -- square of the count on an order built for it: 150000 ranks, 46 s).
    local known, lists, n = {}, {}, 0
    for _, name in ipairs(opts.sites or {}) do known[name] = true end
    for name, list in pairs(t.sites) do
      check(not opts.sites or known[name], "traffic record: sites", string.format(
        "'%s' is not a site of the configuration (%s)", printable(name, 64), table.concat(opts.sites or {}, ", ")))
      check(json.is_array(list), "traffic record: sites." .. name, "not a list of ranks")
      local prev = -1
      for _, r in ipairs(list) do
        check(is_count(r, ranks - 1), "traffic record: sites." .. name, "not distinct ranks from 0 to ranks - 1")
        check(r > prev, "traffic record: sites." .. name, "ranks not in increasing order")
        prev = r
      end
      n = n + #list
      lists[#lists + 1] = list
    end
    -- the merge: the smallest head each time; two heads alike, a rank listed twice
    local at = {}
    for k = 1, #lists do at[k] = 1 end
    while true do
      local low, from
      for k = 1, #lists do
        local r = lists[k][at[k]]
        if r ~= nil and r == low then
          check(false, "traffic record: sites." .. second_listing(t.sites, r),
            "not distinct ranks from 0 to ranks - 1")
        end
        if r ~= nil and (low == nil or r < low) then low, from = r, k end
      end
      if not from then break end
      at[from] = at[from] + 1
    end
    m.sites = t.sites
    m.detail = n
  end
  if present(t.matrix) then
    local mx = t.matrix
    check(json.is_array(mx) and #mx == ranks, "traffic record: matrix", "not ranks x ranks")
    for i = 1, ranks do
      local row = mx[i]
      check(json.is_array(row) and #row == ranks, "traffic record: matrix row " .. i, "not ranks long")
      for j = 1, ranks do
        check(is_counter(row[j]), "traffic record: matrix row " .. i, "not byte counts")
      end
    end
    m.matrix = mx
    m.detail = (m.detail or 0) + ranks * ranks
  end
  if present(t.edges) then
    -- one flat list of numbers, as a matrix row is: no table for each edge
    -- (memory), and no string for each when it is written again (a short
    -- string's hash takes all its bytes, which its writer chooses)
    check(not present(t.matrix), "traffic record: edges", "beside a matrix (one or the other)")
    local ed = t.edges
    check(json.is_array(ed) and #ed % 3 == 0, "traffic record: edges", "not a list of i, j, bytes triples")
    for k = 1, #ed, 3 do
      if not (is_count(ed[k], ranks - 1) and is_count(ed[k + 1], ranks - 1) and is_counter(ed[k + 2])) then
        check(false, "traffic record: edges", string.format("triple %d is not rank, rank, bytes", (k + 2) / 3))
      end
    end
    m.edges = ed
    m.detail = (m.detail or 0) + #ed
  end
  return m
end


--- Read a traffic record.
-- @param text the file's text
-- @param opts optional: `max_size` (bytes; default `M.MAX_SIZE`, false for
--   none), `job` (the job id it must name), `sites` (the configured site
--   names its sites must be among)
-- @return the step's MPI part { ranks, cross_bytes, cross_messages,
--   p2p_bytes, p2p_messages, coll_bytes, coll_messages, sites, matrix,
--   edges (json.null when absent), detail (numbers of per-rank detail) }, or nil
--   and one line that says why (a user's text in it made printable)
function M.decode(text, opts)
  opts = opts or {}
  local max = opts.max_size
  if max == nil then max = M.MAX_SIZE end
  if max and #text > max then
    return nil, string.format("%d bytes, over TrafficMaxSize (%d bytes); not read", #text, max)
  end
  local t, err = json.decode(text, M.JSON)
  if t == nil then return nil, "not JSON (" .. err .. ")" end
  local ok, m = pcall(checked, t, opts)
  if ok then return m end
  return nil, type(m) == "table" and m.traffic or printable(tostring(m))
end

return M
