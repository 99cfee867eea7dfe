--- The decision's record on the job: one line of key=value words that
-- job_submit.lua writes into the job's admin_comment, read back by the
-- policy (a change of a pending job), `xsite report` and `xsite replay`
-- (from accounting).  This module is the one that writes and reads it.
--
--     xsite v=1 action=A why=W mode=M n=N [sites=S profile=P split=a+b
--       t_one=s t_span=s slowdown=r max=r link=state,B/s,s,config|measured]
--       [nmin=N] [het=SITE|span] [wsites=a+b] [override=UID] [wait4switch=s]
--       [lic=N] [constraint=F] [prefer=F] [keeps=prefer] [recheck=STATE]
--       [hold=WHO]
--
-- The words after `sites=` are there when the decision has a prediction.
-- `constraint` and `prefer` are the user's own `--constraint` and
-- `--prefer`, percent-encoded, so that the record stays one line of words
-- whatever the user wrote.  `keeps=prefer` (Mode=enforce): the job was
-- decided by an xsite that keeps a job's --prefer within the sites its
-- constraint keeps it at, from its submission on (a job whose record lacks
-- it may have a preference at both sites with Features at one).  Documented in
-- docs/admin-guide.md.
-- @module xsite.record

local M = {}

--- The version this xsite writes and reads.
M.VERSION = 1

-- The record in a text: "xsite v=N" and its words up to a ';' or the end
-- of the line (an admin_comment holds other text too).
local FIND = "xsite v=%d+[^\n;]*"

-- A byte as "%XX" (a function of the module: not a new closure a call).
local function percent(c)
  return string.format("%%%02X", c:byte())
end

local function encode(text)
  return (text:gsub("[^%w_%-%.&|%[%]%(%)%*,!:+]", percent))
end

local function decode(text)
  return (text:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

local HEAD = "xsite v=" .. M.VERSION .. " action="

--- The record of a decision (xsite.policy.decide's table).  Built with few
-- format calls: slurmctld runs this for every job under its locks.
function M.format(d)
  -- (M.VERSION is a number: written out once, not again for every record)
  local head = HEAD .. d.action .. " why=" .. d.why .. " mode=" .. d.mode ..
    " n=" .. tostring(d.nodes)
  local tail = (d.min_nodes and d.min_nodes ~= d.nodes and " nmin=" .. d.min_nodes or "") ..
    (d.het and " het=" .. d.het or "") ..
    (d.nodelist_sites and " wsites=" .. d.nodelist_sites or "") ..
    (d.override and " override=" .. d.override or "") ..
    (d.wait4switch and " wait4switch=" .. d.wait4switch or "") ..
    (d.link_units and " lic=" .. d.link_units or "") ..
    (d.constraint and " constraint=" .. encode(d.constraint) or "") ..
    (d.user_prefer and " prefer=" .. encode(d.user_prefer) or "") ..
    (d.mode == "enforce" and " keeps=prefer" or "")
  local e, l = d.prediction, d.link
  if not e then return head .. tail end
  return string.format("%s sites=%s profile=%s split=%d+%d t_one=%.6g t_span=%.6g slowdown=%.4f max=%.4g" ..
    " link=%s,%.6g,%.6g,%s%s", head, d.sites or "none", d.profile, e.nA, e.nB, e.t_one, e.t_span,
    e.slowdown, d.max_slowdown, l.state, l.bandwidth, l.latency, l.source, tail)
end

--- The record in a text (an admin_comment, accounting's AdminComment) as a
-- table of its words (values as strings; `constraint` and `prefer` decoded).
-- @return table, or nil and a message (no record; one of a version this
--   xsite does not read)
function M.parse(text)
  if type(text) ~= "string" then return nil, "no record" end
  local body = text:match(FIND)
  if not body then return nil, "no xsite record in the text" end
  local out = {}
  for k, v in body:gmatch("(%w+)=(%S+)") do out[k] = v end
  if tonumber(out.v) ~= M.VERSION then
    return nil, string.format("an xsite record of version %s; this xsite reads version %d", out.v, M.VERSION)
  end
  if out.constraint then out.constraint = decode(out.constraint) end
  if out.prefer then out.prefer = decode(out.prefer) end
  return out
end

--- The record's word for the nodes a job's --nodelist names (`wsites`):
-- per site of the configuration, in its order, its name and how many of
-- its nodes ("a:2+b:1"); nil when it names none of them.
-- @param cfg a configuration (xsite.config)
-- @param counts per site, in the configuration's order, how many nodes
function M.nodelist_word(cfg, counts)
  local word
  for si, s in ipairs(cfg.sites) do
    if counts[si] > 0 then
      local w = s.name .. ":" .. counts[si]
      word = word and word .. "+" .. w or w
    end
  end
  return word
end

--- The sites of a `wsites` word (nodelist_word's, or "a+b" without counts
-- from an older xsite), and per site how many nodes (nil without counts).
-- @return a list of the configuration's sites, and an array of counts in
--   its order or nil
function M.nodelist_sites(cfg, word)
  local given = {}
  for name, k in word:gmatch("([^+:]+):?(%d*)") do given[name] = k end
  local named, counts, whole = {}, {}, true
  for si, s in ipairs(cfg.sites) do
    local k = given[s.name]
    if k then named[#named + 1] = s end
    if k == "" then whole = false end
    counts[si] = tonumber(k) or 0
  end
  return named, whole and counts or nil
end

--- The record's own text in a text, or nil.
function M.find(text)
  if type(text) ~= "string" then return nil end
  return text:match(FIND)
end

--- Put a record into an admin_comment, replacing an earlier xsite record
-- and keeping anything else the admin wrote there.
function M.put(admin_comment, record)
  if not admin_comment or admin_comment == "" then return record end
  local kept = admin_comment:gsub("%s*xsite v=%d+[^;]*;?", ""):gsub("^[%s;]+", ""):gsub("[%s;]+$", "")
  if kept == "" then return record end
  return kept .. "; " .. record
end

--- A record with its word `key` set to `value` (an earlier one replaced;
-- a nil value removes it).
function M.with(text, key, value)
  text = text:gsub("%s+" .. key .. "=%S+", "")
  if value == nil then return text end
  return text .. " " .. key .. "=" .. value
end

--- The record in an admin_comment with its word `key` set to `value` (see
-- `with`), the rest of the admin_comment kept.
function M.put_word(admin_comment, key, value)
  local rec = M.find(admin_comment)
  if not rec then return admin_comment end
  return M.put(admin_comment, M.with(rec, key, value))
end

return M
