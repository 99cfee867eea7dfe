# shellcheck shell=bash
# Sourced by the benchmarks that run libxsite on the testbed: the build's
# libxsite.so (or $XSITE_LIBXSITE) in $lib, and a failure that says what to
# do when it or the SPANK plugin, which gives each task its XSITE_SITE, is
# not built.  Needs $top, the source tree.
lib=${XSITE_LIBXSITE:-$top/mpi-wrappers/libxsite/.libs/libxsite.so}
if [[ ! -e $lib || ! -e ${XSITE_SPANK_PLUGIN:-$top/spank/.libs/xsite.so} ]]; then
	printf '%s: build xsite first (./configure --enable-integration && make): it needs libxsite.so\n' \
		"${0##*/}" >&2
	printf '%s: and the SPANK plugin, which gives each task its XSITE_SITE\n' "${0##*/}" >&2
	exit 2
fi
