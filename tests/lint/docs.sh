#!/usr/bin/env bash
# docs.sh: the pictures in docs/ that are made from a source in the tree are
# that source's output (docs/architecture.svg from docs/architecture.lua),
# the source passes luacheck, and every link between the Markdown pages of
# the tree points at a file that is there, and every limit a table of
# docs/*.md gives with its key in the code is the code's value, and the
# copies of site-configs/testbed.conf in xsite.conf(5) and the admin guide
# are the file.  One TAP test each.
set -euo pipefail

# shellcheck source=tests/harness/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/tap.sh"

main() {
  cd "${XSITE_SRCDIR:-.}"
  local lua=${LUA:-lua5.1} out
  if ! command -v "$lua" >/dev/null 2>&1; then
    tap_skip_all "no Lua interpreter ($lua)"
  fi

  if out=$("$lua" docs/architecture.lua 2>&1 | diff -u docs/architecture.svg - 2>&1); then
    tap_ok "docs/architecture.svg is docs/architecture.lua's output"
  else
    tap_not_ok "docs/architecture.svg is docs/architecture.lua's output" \
      "$(head -n 20 <<<"$out")
regenerate it: $lua docs/architecture.lua > docs/architecture.svg"
  fi

  if [[ -n ${LUACHECK:-} ]]; then
    if out=$("$LUACHECK" --no-color -q --std=max docs/architecture.lua 2>&1); then
      tap_ok "luacheck docs/architecture.lua"
    else
      tap_not_ok "luacheck docs/architecture.lua" "$out"
    fi
  fi

  # limits: a table row of docs/*.md whose last cell names a numeric
  # constant of the code (`xsite.hostlist.MAX_LENGTH`) states its value
  if out=$(LUA_PATH="lua/?.lua;;" "$lua" - docs/*.md <<'LUA' 2>&1
local FACTOR = { KiB = 1024, MiB = 1048576, GiB = 1073741824 }
-- the numbers a cell states: 1024, 4 096, 1 MiB, 2^31 − 1
local function stated(cell)
  local out = {}
  cell = cell:gsub("(%d)[ ,](%d%d%d)%f[%D]", "%1%2")
  for base, exp in cell:gmatch("(%d+)%^(%d+)%s*\226\136\146%s*1") do
    out[#out + 1] = tonumber(base) ^ tonumber(exp) - 1
  end
  for num, unit in cell:gmatch("(%d+%.?%d*)%s*(%a*)") do
    out[#out + 1] = tonumber(num) * (FACTOR[unit] or 1)
  end
  return out
end
local bad = {}
for _, page in ipairs(arg) do
  local lineno = 0
  for line in io.lines(page) do
    lineno = lineno + 1
    local value_cell, key_cell = line:match("^|.*|%s*([^|]-)%s*|%s*([^|]-)%s*|%s*$")
    for mod, name in (key_cell or ""):gmatch("`(xsite%.[%w_]+)%.([A-Z][A-Z0-9_]*)`") do
      local ok, m = pcall(require, mod)
      local v = ok and type(m) == "table" and m[name]
      if type(v) == "number" then
        local found = false
        for _, n in ipairs(stated(value_cell)) do
          if n == v then found = true end
        end
        if not found then
          bad[#bad + 1] = string.format("%s:%d: %s.%s is %.17g in the code; the row says '%s'",
            page, lineno, mod, name, v, value_cell)
        end
      elseif not ok or v == nil then
        bad[#bad + 1] = string.format("%s:%d: %s.%s: no such constant in the code", page, lineno, mod, name)
      end
    end
  end
end
if #bad > 0 then
  io.stderr:write(table.concat(bad, "\n"), "\n")
  os.exit(1)
end
LUA
  ); then
    tap_ok "every limit a table of docs/*.md gives with its key is the code's value"
  else
    tap_not_ok "every limit a table of docs/*.md gives with its key is the code's value" "$out"
  fi

  # the shipped testbed.conf, as xsite.conf(5)'s EXAMPLES show it (verbatim,
  # roff-escaped) and as the admin guide does (without comments)
  local conf=site-configs/testbed.conf
  if out=$(diff -u "$conf" <(awk '/as shipped in/ { s = 1 } s && /^\.EE/ { exit } s == 2 { print } s && /^\.EX/ { s = 2 }' \
    docs/man/xsite.conf.5 | sed -e 's/\\-/-/g' -e 's/\\e/\\/g') 2>&1) &&
    out=$(diff -u <(grep -v -e '^#' -e '^$' "$conf") <(awk '/^\*\*The testbed\*\*/ { s = 1; next }
      s == 1 && /^    / { s = 2 } s == 2 && !/^    / { exit } s == 2 { print substr($0, 5) }' docs/admin-guide.md) 2>&1); then
    tap_ok "xsite.conf(5) and the admin guide show $conf as it is"
  else
    tap_not_ok "xsite.conf(5) and the admin guide show $conf as it is" "$out"
  fi

  # links between the Markdown pages: relative targets must exist
  local page target missing=
  for page in README.md docs/*.md; do
    while IFS= read -r target; do
      target=${target%%#*}
      [[ -z $target || $target == http*://* || $target == mailto:* ]] && continue
      [[ -e $(dirname "$page")/$target ]] || missing+="$page -> $target"$'\n'
    done < <(grep -oE '\]\([^) ]+\)' "$page" | sed -E 's/^\]\(//; s/\)$//')
  done
  if [[ -z $missing ]]; then
    tap_ok "every relative link of README.md and docs/*.md points at a file of the tree"
  else
    tap_not_ok "every relative link of README.md and docs/*.md points at a file of the tree" "$missing"
  fi
  tap_done
}

main "$@"
