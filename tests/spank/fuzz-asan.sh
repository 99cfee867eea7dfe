#!/usr/bin/env bash
# fuzz-asan.sh: a short slice of the SPANK plugin's fuzz targets (fuzz.c)
# built with AddressSanitizer and UndefinedBehaviorSanitizer, as one TAP
# stream: every target's checks, and no memory error, leak or undefined
# behaviour (a sanitizer's report ends the run with a non-zero status, which
# fails the test).  tests/bench/fuzz runs a million cases of root's targets.
#
# Usage: fuzz-asan.sh [PROGRAM] (default: tests/spank/fuzz-asan of the build
# tree, $XSITE_BUILDDIR, else of the tree this script is in); the slice is
# XSITE_FUZZ_ASAN_CASES cases (default 6000) of seed XSITE_FUZZ_SEED
# (default 2).
set -euo pipefail

main() {
	local prog=${1:-${XSITE_BUILDDIR:-$(dirname "$0")/../..}/tests/spank/fuzz-asan}

	if [[ ! -x $prog ]]; then
		printf '1..0 # SKIP %s is not built (make check builds it)\n' "$prog"
		return 0
	fi
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		"$prog" "${XSITE_FUZZ_ASAN_CASES:-6000}" "${XSITE_FUZZ_SEED:-2}"
}

main "$@"
