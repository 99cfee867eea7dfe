#!/usr/bin/env bash
# docs.sh: the pictures in docs/ that are made from a source in the tree are
# that source's output (docs/architecture.svg from docs/architecture.lua),
# the source passes luacheck, and every link between the Markdown pages of
# the tree points at a file that is there.  One TAP test each.
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
