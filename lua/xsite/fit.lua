--- Profile fitting (`xsite tune`): an application profile's bytes exchanged
-- and synchronising steps, from the per-job records of jobs that used it.
--
-- Each record of a job that spanned the link, with libxsite's count of what
-- crossed it, gives one estimate of each parameter, in the model's own
-- terms (xsite.model.crossing): the bytes that crossed are the fraction f of
-- the bytes exchanged that the site-major cut puts on the link, so
-- exchange = bytes across / f; each synchronising step sends one message
-- each way over each of the `flows` node pairs across the link, so
-- steps = messages across / (2 · flows).  The fit is the median over the
-- jobs' owners of each owner's median estimate: robust to a job that did
-- something else, and to an owner who forges the counts (libxsite writes
-- the traffic record with the owner's rights, so its numbers are the
-- owner's to choose; root checks only their form): one user's jobs, however
-- many, are one vote.  Its quality is how far each job's measured traffic
-- is from what the fitted profile predicts for it.
--
-- The result goes to the ProfileStateFile (`xsite tune --apply`): lines
-- `ProfileName=NAME Exchange=BYTES Steps=N` that override those fields of
-- xsite.conf's profile in the policy's next decisions (xsite.profile.resolve).
-- @module xsite.fit

local model = require("xsite.model")
local json = require("xsite.json")
local states = require("xsite.state")

local M = {}

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local n = #s
  if n == 0 then return nil end
  if n % 2 == 1 then return s[(n + 1) / 2] end
  return (s[n / 2] + s[n / 2 + 1]) / 2
end
M.median = median

local present = json.present

--- The observations of one profile in a set of records.
-- @param records array of records (xsite.report)
-- @param label the profile's label (its name, or an explicit spec)
-- @param misplaced optional: `misplaced(rec)` gives why a record's
--   placement is not to be believed (nil when it is): such a record is left
--   out
-- @return array of { job, uid, nA, nB, pattern, bytes, messages, f, flows,
--   predicted_bytes }, and an array of { job, why } left out
function M.observations(records, label, misplaced)
  local obs, skipped = {}, {}
  for _, rec in ipairs(records) do
    local p = rec.profile
    if type(p) == "table" and p.label == label then
      local bytes, messages, mpi = 0, 0, 0
      for _, s in ipairs(rec.steps or {}) do
        if type(s.mpi) == "table" and s.mpi.cross_bytes then
          mpi = mpi + 1
          bytes = bytes + s.mpi.cross_bytes
          messages = messages + s.mpi.cross_messages
        end
      end
      local nA, nB = rec.nodes.split[1], rec.nodes.split[2]
      local wrong = misplaced and misplaced(rec)
      if wrong then
        skipped[#skipped + 1] = { job = rec.job, why = wrong }
      elseif not rec.spanning then
        skipped[#skipped + 1] = { job = rec.job, why = "ran at one site" }
      elseif mpi == 0 then
        skipped[#skipped + 1] = { job = rec.job, why = "no MPI traffic record" }
      else
        local f, flows = model.crossing(p.pattern, nA, nB)
        if f <= 0 or flows <= 0 then
          skipped[#skipped + 1] = { job = rec.job, why = "its pattern (" .. tostring(p.pattern)
            .. ") puts nothing on the link" }
        else
          obs[#obs + 1] = { job = rec.job, uid = rec.uid, nA = nA, nB = nB, pattern = p.pattern, bytes = bytes,
            messages = messages, f = f, flows = flows,
            predicted_bytes = present(rec.prediction) and rec.prediction.crossing_bytes or nil }
        end
      end
    end
  end
  return obs, skipped
end

-- The median over owners of each owner's median of `value(o)`.
local function vote(obs, value)
  local by_uid, order = {}, {}
  for _, o in ipairs(obs) do
    local u = o.uid or "?"
    if not by_uid[u] then
      by_uid[u] = {}
      order[#order + 1] = u
    end
    local t = by_uid[u]
    t[#t + 1] = value(o)
  end
  local each = {}
  for i, u in ipairs(order) do each[i] = median(by_uid[u]) end
  return median(each), order
end

--- Fit a profile's exchange and steps (totals of one run, as the model's
-- `app` has them) to observations: one vote per job owner.
-- @return { jobs, users (the owners' uids, in the order first seen),
--   exchange, steps, errors (per job, relative, of the bytes predicted with
--   the fit), median_error, worst_error, ratio (measured / predicted bytes
--   before the fit, median) }, or nil and a message
function M.fit(obs)
  if #obs == 0 then return nil, "no job with this profile spanned the link with an MPI traffic record" end
  local ratios = {}
  for _, o in ipairs(obs) do
    if o.predicted_bytes and o.predicted_bytes > 0 then ratios[#ratios + 1] = o.bytes / o.predicted_bytes end
  end
  local exchange, users = vote(obs, function(o) return o.bytes / o.f end)
  local steps = vote(obs, function(o) return o.messages / (2 * o.flows) end)
  local r = { jobs = #obs, users = users, exchange = exchange, steps = math.floor(steps + 0.5),
    ratio = median(ratios), errors = {} }
  local abs = {}
  for i, o in ipairs(obs) do
    local pred = r.exchange * o.f
    local e = pred > 0 and (o.bytes - pred) / pred or 0
    r.errors[i] = { job = o.job, measured = o.bytes, predicted = pred, error = e }
    abs[i] = math.abs(e)
  end
  r.median_error = median(abs)
  table.sort(abs)
  r.worst_error = abs[#abs]
  return r
end

--- The profile line for the ProfileStateFile.
-- @param name the profile's name
-- @param r from `fit`
-- @param iterations the profile's Iterations (the fit is of whole runs)
function M.line(name, r, iterations)
  return states.profile_line(name, M.per_iteration(r, iterations))
end

--- The fit's Exchange and Steps per iteration of a profile that has
-- Iterations (xsite.conf), as the profile state holds them.
-- @return { exchange, steps }
function M.per_iteration(r, iterations)
  local it = iterations or 1
  return { exchange = r.exchange / it, steps = math.floor(r.steps / it + 0.5) }
end

return M
