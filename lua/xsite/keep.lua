--- When a bounded cache of slurmctld's Lua state keeps a new entry.
--
-- A cache that starts over whenever it is full (the simple bound) makes new
-- long-lived tables as fast as users send new keys: a user who sends a new
-- explicit `--comm-profile` with every job refills it every few hundred
-- jobs.  slurmctld runs job_submit in the thread of each request, and glibc
-- gives threads their own malloc arenas, which keep what is freed in them;
-- long-lived tables made now in one arena and now in another keep pages of
-- each from being given back, and slurmctld's resident memory grows (see
-- docs/security.md, "slurmctld's memory").  So a cache that is full keeps
-- no new entry, and starts over at most once every `RESTART_AFTER`
-- seconds: what a flood of new keys costs is then an entry not kept, not
-- memory, and the keys already kept are still found meanwhile.
-- @module xsite.keep

local M = {}

--- The least time (seconds) between two starts over of one full cache.
M.RESTART_AFTER = 600

--- A new count for a cache.
-- @param clock optional, seconds (default os.time)
-- @return the count: `kept` entries, since `full_since` full
function M.new(clock)
  return { kept = 0, full_since = nil, clock = clock or os.time }
end

--- Whether one entry more may be kept in a cache of at most `max` entries.
-- @param c the cache's count (`new`)
-- @param max the bound (read at every call: the caller's tunable)
-- @return "keep" (counted), "restart" (empty the cache first, then keep:
--   counted as its first), or nil (keep nothing)
function M.admit(c, max)
  if c.kept < max then
    c.kept = c.kept + 1
    return "keep"
  end
  local now = c.clock()
  if not c.full_since then
    c.full_since = now
    return nil
  end
  if now - c.full_since < M.RESTART_AFTER or max < 1 then return nil end
  c.kept, c.full_since = 1, nil
  return "restart"
end

--- Forget every entry counted (the caller emptied the cache).
function M.reset(c)
  c.kept, c.full_since = 0, nil
end

return M
