--- Slurm `--constraint` expressions: what they allow, and how to add a site.
--
-- Slurm's grammar (slurmctld's feature list builder, 22.05 to 24.11): feature
-- names joined by `&` (and; `,` is taken as `&`) and `|` (or), evaluated from
-- left to right; one level of parentheses; at most one `[...]` group, in
-- which `|` is a matching OR (every node satisfies the same alternative) and
-- `feature*N` asks N nodes to have the feature; a `*N` count outside brackets
-- is allowed with a single feature.  A feature is any other run of
-- characters (`!x` is a feature named "!x": Slurm has no negation).
--
-- `analyse` parses an expression and says which sites its nodes can be at
-- and whether it keeps a whole job at one site; `combine` adds a site
-- constraint to a user's expression so that the result holds whatever the
-- user wrote, or says why it cannot.  Both are conservative: a site is
-- possible when it is possible under left-to-right evaluation or under the
-- usual precedence of `&` over `|`, and an expression with a `*N` count keeps
-- nothing at one site (Slurm applies a feature outside a count group to no
-- node of that group).  Work is linear in the length, which is capped.
-- Nothing here raises on bad input.
-- @module xsite.constraint

local M = {}

--- The longest expression analysed; a longer one is refused.
M.MAX_LENGTH = 1024
--- The most features an expression that names a site may have (it is
-- parsed in full); one that names no site is read with string searches only.
M.MAX_TERMS = 64

-- Kleene logic over three values: true, false, "?" (unknown: a feature that
-- is not a site's).
local U = "?"

local function k_and(a, b)
  if a == false or b == false then return false end
  if a == true and b == true then return true end
  return U
end

local function k_or(a, b)
  if a == true or b == true then return true end
  if a == false and b == false then return false end
  return U
end

local byte, find, match, sub = string.byte, string.find, string.match, string.sub

-- The one-character operators by their byte, as tokens have them (`,` is
-- taken as `&`).
local OPERATOR = {}
for c in ("&|()[]"):gmatch(".") do OPERATOR[c:byte()] = c end
OPERATOR[(","):byte()] = "&"
local STAR = ("*"):byte()

-- Tokens, as three lists (not a table a token: an expression is parsed for
-- every job that names a site): `kind` ("feat", "&", "|", "(", ")", "[",
-- "]", "*"), `word` (a feature's name, the count after a "*", else the
-- operator) and `at` (the character it starts at).
-- @return kind, word, at; or nil and a message
local function tokenize(text)
  local kind, word, at, k, i, n = {}, {}, {}, 0, 1, #text
  while i <= n do
    local b = byte(text, i)
    local op = OPERATOR[b]
    k = k + 1
    at[k] = i
    if op then
      kind[k], word[k] = op, op
      i = i + 1
    elseif b == STAR then
      local digits = match(text, "^%d+", i + 1)
      if not digits or #digits > 9 or tonumber(digits) < 1 then
        return nil, string.format("'*' at character %d must be followed by a positive count", i)
      end
      kind[k], word[k] = "*", digits
      i = i + 1 + #digits
    else
      -- A feature runs up to an operator, a blank or a control character
      -- (%s and %c are the locale's: a byte above 127 may be either).  The
      -- byte at i is no operator, so the search stopping there means it is
      -- a blank or a control character: one search for both.
      local j = find(text, "[&,|()%[%]*%s%c]", i) or n + 1
      if j == i then
        return nil, string.format("unexpected blank or control character at character %d", i)
      end
      kind[k], word[k] = "feat", sub(text, i, j - 1)
      i = j
    end
  end
  return kind, word, at
end

-- Recursive descent into a tree: a feature's name (a string: no table a
-- feature) | { op = "seq", list = {...} (operands in order), ops = {...}
-- (operators between, "&" or "|") } | { op = "()", expr } | { op = "[]",
-- expr }.  A `*N` count is checked and noted (`counts`), not kept: with a
-- count analyse looks no further.
-- The parser's state `p`: the tokens (`kind`, `word`, `at`), the next one
-- `i`, the text, the depth of parentheses `paren`, and what it has met
-- (`bracket`, `counts`).  Local functions, not methods: they run for every
-- job that names a site.

-- Fail at the current token (at the end: past the last character).
local function fail(p, msg)
  error({ string.format("%s at character %d", msg, p.at[p.i] or (#p.text + 1)) }, 0)
end

local expr

local function term(p)
  local kind, i = p.kind, p.i
  local k = kind[i]
  if not k then fail(p, "a feature is missing at the end") end
  local node
  if k == "feat" then
    node = p.word[i]
    p.i = i + 1
  elseif k == "(" then
    if p.paren > 0 then fail(p, "nested parentheses (Slurm allows one level)") end
    p.i = i + 1
    p.paren = p.paren + 1
    local inner = expr(p)
    if kind[p.i] ~= ")" then fail(p, "unbalanced '('") end
    p.i = p.i + 1
    p.paren = p.paren - 1
    node = { op = "()", expr = inner }
  elseif k == "[" then
    if p.bracket then fail(p, "more than one [...] group (Slurm allows one)") end
    if p.paren > 0 then fail(p, "a [...] group inside parentheses") end
    p.bracket = true
    p.i = i + 1
    local inner = expr(p)
    if kind[p.i] ~= "]" then fail(p, "unbalanced '['") end
    p.i = p.i + 1
    node = { op = "[]", expr = inner }
  else
    fail(p, string.format("unexpected '%s'", p.word[i]))
  end
  if kind[p.i] == "*" then
    if k == "[" then fail(p, "a count after ']'") end
    p.i = p.i + 1
    p.counts = true
  end
  return node
end

function expr(p)
  local first = term(p)
  local kind = p.kind
  local op = kind[p.i]
  if op ~= "&" and op ~= "|" then return first end
  local list, ops, n = { first }, {}, 1
  repeat
    p.i = p.i + 1
    ops[n] = op
    n = n + 1
    list[n] = term(p)
    op = kind[p.i]
  until op ~= "&" and op ~= "|"
  return { op = "seq", list = list, ops = ops }
end

-- The whole expression, which must end with the tokens (for pcall).
local function parse_all(p)
  local e = expr(p)
  if p.kind[p.i] then fail(p, string.format("unexpected '%s'", p.word[p.i])) end
  return e
end

-- Parse; returns the tree, whether it has a [...] group and whether a
-- count (`*N`); or nil and a message.
local function parse(text)
  local kind, word, at = tokenize(text)
  if not kind then return nil, word end
  if #kind == 0 then return nil, "empty expression" end
  local p = { kind = kind, word = word, at = at, i = 1, text = text, paren = 0, bracket = false, counts = false }
  local ok, tree = pcall(parse_all, p)
  if not ok then
    if type(tree) == "table" then return nil, tree[1] end
    return nil, tostring(tree)
  end
  return tree, p.bracket, p.counts
end

-- The value of a tree for a node at `site` (its feature true, every other
-- site's false, anything else unknown).  `prec`: & before | (else left to right).
local function value(node, site_of, site, prec)
  if type(node) == "string" then
    local s = site_of[node]
    if s == nil then return U end
    return s == site
  end
  local op = node.op
  if op == "()" or op == "[]" then
    return value(node.expr, site_of, site, prec)
  end
  local list, ops = node.list, node.ops
  if not prec then
    local v = value(list[1], site_of, site, prec)
    for i = 1, #ops do
      local w = value(list[i + 1], site_of, site, prec)
      if ops[i] == "&" then v = k_and(v, w) else v = k_or(v, w) end
    end
    return v
  end
  -- & binds tighter: an OR of AND runs
  local result, run = false, value(list[1], site_of, site, prec)
  for i = 1, #ops do
    local w = value(list[i + 1], site_of, site, prec)
    if ops[i] == "&" then
      run = k_and(run, w)
    else
      result, run = k_or(result, run), w
    end
  end
  return k_or(result, run)
end

-- Sites a node satisfying `node` can be at, as a list in the config's order.
local function possible(node, cfg, site_of)
  local out = {}
  for _, s in ipairs(cfg.sites) do
    if value(node, site_of, s, false) ~= false or value(node, site_of, s, true) ~= false then
      out[#out + 1] = s
    end
  end
  return out
end

-- Whether a tree is a sequence of operands (not a feature or a group).
local function seq(node)
  return type(node) == "table" and node.op == "seq"
end

-- Whether the top level joins its operands with & only.
local function conjunction(node)
  if not seq(node) then return true end
  for _, o in ipairs(node.ops) do
    if o ~= "&" then return false end
  end
  return true
end

-- Slurm's grammar, checked with pattern searches (for an expression that
-- names no site, which is not parsed): a pattern that must not match, and
-- what it means.
local SYNTAX = {
  { "[%s%c]", "unexpected blank or control character" },
  { "^[&,|%]%)%*]", "an operator at the start" },
  { "[&,|%[%(]$", "a feature is missing at the end" },
  { "[&,|][&,|%]%)%*]", "a feature is missing between two operators" },
  { "[%[%(][&,|%]%)%*]", "a feature is missing after an opening bracket" },
  { "%([^%)]*%(", "nested parentheses (Slurm allows one level)" },
  { "%([^%)]*%[", "a [...] group inside parentheses" },
  { "%*%f[^%d]", "'*' must be followed by a positive count" },
  { "%*0+%f[%D]", "'*' must be followed by a positive count" },
  { "%]%*", "a count after ']'" },
  { "[%]%)][^&,|%]%)%*]", "an operator is missing after a closing bracket" },
}

local function check_syntax(text)
  for _, rule in ipairs(SYNTAX) do
    local at = text:find(rule[1])
    if at then return string.format("%s at character %d", rule[2], at) end
  end
  local _, opens = text:gsub("%[", "")
  if opens > 1 then return "more than one [...] group (Slurm allows one)" end
  -- what is left of balanced pairs holds no bracket (`x]&[y` has as many
  -- of each, in the wrong order)
  if (text:gsub("%b[]", "")):find("[%[%]]") then return "unbalanced '['" end
  if (text:gsub("%b()", "")):find("[()]") then return "unbalanced '('" end
  return nil
end

--- Analyse a constraint for a configuration's sites.
-- @param text the constraint (nil or "" for none)
-- @param cfg a configuration (xsite.config)
-- @return a table: `sites` (the sites its nodes can be at, config order),
--   `one_site` (true when it keeps every node of a job at one site: all its
--   nodes can be at one site only, or it is a conjunction holding a [...]
--   group each of whose alternatives allows one site), `counts` (a `*N` is
--   present: nothing is kept at one site), `bracket`, `parens`, `top_or`
--   (a `|` outside parentheses and brackets); or nil and a message
function M.analyse(text, cfg)
  if text == nil or text == "" then
    return { sites = cfg.sites, one_site = false, counts = false, bracket = false,
      parens = false, top_or = false, empty = true }
  end
  if type(text) ~= "string" then return nil, "not a string" end
  if #text > M.MAX_LENGTH then
    return nil, string.format("longer than %d characters", M.MAX_LENGTH)
  end
  local named = false
  for _, s in ipairs(cfg.sites) do
    if text:find(s.feature, 1, true) then named = true end
  end
  if not named then
    -- No site's feature in it: every site is open, and the grammar and the
    -- facts combine needs come from searches at C speed.
    local bad = check_syntax(text)
    if bad then return nil, bad end
    local outside = text:gsub("%b[]", ""):gsub("%b()", "")
    return { sites = cfg.sites, one_site = false, counts = text:find("*", 1, true) ~= nil,
      bracket = text:find("[", 1, true) ~= nil, parens = text:find("(", 1, true) ~= nil,
      top_or = outside:find("|", 1, true) ~= nil }
  end
  local _, terms = text:gsub("[&,|]", "")
  if terms >= M.MAX_TERMS then
    return nil, string.format("more than %d features with a site's among them", M.MAX_TERMS)
  end
  local tree, bracket, counts = parse(text)
  if not tree then return nil, bracket end
  local site_of = cfg.site_by_feature
  -- (every site open and none kept to start with: with a count group, it
  -- stays so, as a count group applies nothing to the other nodes)
  local a = { sites = cfg.sites, one_site = false, counts = counts, bracket = bracket,
    parens = text:find("(", 1, true) ~= nil, top_or = not conjunction(tree) }
  if counts then return a end
  a.sites = possible(tree, cfg, site_of)
  a.one_site = #a.sites == 1
  if not a.one_site and not a.top_or then
    -- a conjunction holding a matching OR whose alternatives (features or
    -- parenthesised groups joined by | only) each allow one site
    for _, o in ipairs(seq(tree) and tree.list or { tree }) do
      if type(o) == "table" and o.op == "[]" then
        local inner = o.expr
        local alts = seq(inner) and inner.list or { inner }
        local all_one = true
        for i, alt in ipairs(alts) do
          if (seq(inner) and i > 1 and inner.ops[i - 1] ~= "|") or #possible(alt, cfg, site_of) ~= 1 then
            all_one = false
          end
        end
        if all_one then a.one_site = true end
      end
    end
  end
  return a
end

--- Put a choice of sites ("[f1|f2]") into the user's own [...] group: each
-- of its alternatives becomes one per site, `[a|(b&c)]` giving
-- `[(a&f1)|(a&f2)|(b&c&f1)|(b&c&f2)]`, so that every node satisfies the same
-- alternative and is at the same site.  Only for alternatives that are
-- features or parenthesised features joined by `&`.
-- @return the new constraint, or nil and why not
function M.distribute(user, add)
  local open, close = user:find("%b[]")
  if not open then return nil, "it has no whole [...] group" end
  local inner = user:sub(open + 1, close - 1)
  local feats = {}
  for f in add:sub(2, -2):gmatch("[^|]+") do feats[#feats + 1] = f end
  local alts, depth, start = {}, 0, 1
  for i = 1, #inner + 1 do
    local c = inner:sub(i, i)
    if c == "(" then depth = depth + 1 elseif c == ")" then depth = depth - 1 end
    if (c == "|" and depth == 0) or c == "" then
      local alt = inner:sub(start, i - 1)
      local body = alt:match("^%((.*)%)$") or alt
      if body:find("[|()]") then
        return nil, "it has its own [...] group with an alternative xsite cannot split by site"
      end
      for _, f in ipairs(feats) do alts[#alts + 1] = "(" .. body .. "&" .. f .. ")" end
      start = i + 1
    end
  end
  local out = user:sub(1, open) .. table.concat(alts, "|") .. user:sub(close)
  if #out > M.MAX_LENGTH then
    return nil, string.format("split by site it would be longer than %d characters", M.MAX_LENGTH)
  end
  return out
end

--- Add a site constraint to a user's constraint so that both hold for every
-- node of the job.
-- @param user the user's constraint (nil or "" for none)
-- @param analysis `analyse(user, cfg)`
-- @param add the site constraint: one site's feature, or "[f1|f2]"
-- @return the combined constraint, or nil and why it cannot be (a phrase
--   for "--constraint ...: <why>"); never longer than MAX_LENGTH, which
--   is Slurm's limit too (a longer one makes slurmctld refuse the job or
--   the change)
function M.combine(user, analysis, add)
  if user == nil or user == "" then return add end
  if analysis.counts then
    return nil, "it has a node count (*N), and Slurm applies no other feature to the nodes of a count"
  end
  if analysis.top_or and (analysis.parens or analysis.bracket) then
    return nil, "it has a '|' outside parentheses as well as parentheses or a [...] group, " ..
      "so xsite cannot put it in parentheses (Slurm allows one level)"
  end
  if analysis.bracket and add:sub(1, 1) == "[" then
    return M.distribute(user, add)
  end
  local out = analysis.top_or and "(" .. user .. ")&" .. add or user .. "&" .. add
  if #out > M.MAX_LENGTH then
    return nil, string.format("with the site added it would be longer than %d characters", M.MAX_LENGTH)
  end
  return out
end

return M
