#!/usr/bin/env bash
# hostile-tmpfs.sh: tests/spank/hostile with its ReportDirs on a tmpfs (as a
# ReportDir under /run is), in a mount namespace of its own.  tmpfs lists a
# directory in another order than ext4 and numbers its entries where ext4
# hashes them: ReportRetention's pruning, which goes on across calls where
# the last one stopped, must hold on both.
#
# Usage: hostile-tmpfs.sh [PROGRAM] (default: tests/spank/hostile of the
# build tree, $XSITE_BUILDDIR, else of the tree this script is in).
set -euo pipefail

main() {
	local prog=${1:-${XSITE_BUILDDIR:-$(dirname "$0")/../..}/tests/spank/hostile}

	if [[ ! -x $prog ]]; then
		printf '1..0 # SKIP %s is not built (make check builds it)\n' "$prog"
		return 0
	fi
	if [[ $(id -u) -ne 0 ]]; then
		printf '1..0 # SKIP needs root (a tmpfs in a mount namespace, and the tests themselves)\n'
		return 0
	fi
	# a mount namespace whose mounts stay in it: where / is no mount point
	# (a chroot) none can be made private
	local why
	if ! why=$(unshare --mount --propagation private -- true 2>&1); then
		printf '1..0 # SKIP no private mount namespace here (%s)\n' "$why"
		return 0
	fi
	# shellcheck disable=SC2016 # expanded in the new namespace
	exec unshare --mount --propagation private -- bash -c '
		set -e
		dir=$(mktemp -d /tmp/xsite-hostile-tmpfs.XXXXXX)
		mount -t tmpfs -o mode=0755,size=256m xsite-hostile "$dir"
		rc=0
		TMPDIR=$dir "$1" || rc=$?
		umount "$dir"
		rmdir "$dir"
		exit "$rc"
	' hostile-tmpfs "$prog"
}

main "$@"
