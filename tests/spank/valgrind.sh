#!/usr/bin/env bash
# valgrind.sh: the SPANK unit tests under valgrind, as one TAP test: no
# memory error and no leak of any kind (the Lua states, the flags, the
# plugstack arguments).  Skipped when valgrind is not installed.
#
# Usage: valgrind.sh [UNIT_PROGRAM] (default: tests/spank/unit of the build
# tree, $XSITE_BUILDDIR, else of the tree this script is in)
set -euo pipefail

main() {
	local unit=${1:-${XSITE_BUILDDIR:-$(dirname "$0")/../..}/tests/spank/unit}
	local log rc=0

	printf '1..1\n'
	if ! command -v valgrind >/dev/null 2>&1; then
		printf 'ok 1 # SKIP valgrind is not installed\n'
		return 0
	fi
	log=$(mktemp)
	valgrind --quiet --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
		--error-exitcode=99 "$unit" >/dev/null 2>"$log" || rc=$?
	if ((rc == 0)); then
		printf 'ok 1 - the unit tests run clean under valgrind (no errors, no leaks)\n'
	else
		printf 'not ok 1 - valgrind: exit status %d\n' "$rc"
		sed 's/^/# /' "$log"
	fi
	rm -f "$log"
	((rc == 0))
}

main "$@"
