#!/usr/bin/env bash
# clang-tidy.sh: clang-tidy (the checks of the tree's .clang-tidy, every
# warning an error) over every C file of the tree, each compiled as its
# build compiles it; one TAP test per file and build variant.  The include
# flags come from configure (SLURM_CPPFLAGS, LUA_CFLAGS, MPI_CFLAGS,
# PMIX_CFLAGS, set by Makefile.am); a group whose library configure did not
# find is a SKIP.
set -euo pipefail

# shellcheck source=tests/harness/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/tap.sh"

# tidy NAME FILE FLAGS...: one test
tidy() {
  local name=$1 file=$2 out
  shift 2
  if [[ ! -f $file ]]; then
    tap_not_ok "clang-tidy $name" "$file: no such file"
  elif out=$("$CLANG_TIDY" --quiet "$file" -- -I"$XSITE_BUILDDIR" -I. -DHAVE_CONFIG_H "$@" 2>&1); then
    tap_ok "clang-tidy $name"
  else
    tap_not_ok "clang-tidy $name" "$(grep -E -A3 'error:|warning:' <<<"$out" | head -n 40)"
  fi
}

# group WHY-MISSING FILES... -- FLAGS...: each file with the flags, or a
# SKIP each when WHY-MISSING is not empty
group() {
  local missing=$1 f
  local -a files=()
  shift
  while [[ $1 != -- ]]; do files+=("$1"); shift; done
  shift
  for f in "${files[@]}"; do
    if [[ -n $missing ]]; then
      tap_skip "clang-tidy $f" "$missing"
    else
      tidy "$f" "$f" "$@"
    fi
  done
}

main() {
  if [[ -z ${CLANG_TIDY:-} ]]; then
    tap_skip_all "clang-tidy not found by configure (install clang-tidy)"
  fi
  cd "${XSITE_SRCDIR:-.}"
  XSITE_BUILDDIR=${XSITE_BUILDDIR:-.}
  local -a slurm lua mpi pmix=()
  read -ra slurm <<<"${SLURM_CPPFLAGS:-}"
  read -ra lua <<<"${LUA_CFLAGS:-}"
  read -ra mpi <<<"${MPI_CFLAGS:-}"
  if [[ -n ${PMIX_CFLAGS:-} ]]; then
    read -ra pmix <<<"$PMIX_CFLAGS"
    pmix+=(-DXSITE_HAVE_PMIX)
  fi
  local no_lua='' no_mpi='' f
  [[ -n ${LUA_CFLAGS:-} ]] || no_lua="configure found no Lua headers"
  [[ -n ${MPICC:-} ]] || no_mpi="configure found no MPI"

  # the SPANK plugin, and its test programs (which also see spank/)
  group "$no_lua" spank/*.c -- "${slurm[@]}" "${lua[@]}" -DXSITE_LUADIR='"/usr/share/xsite/lua"'
  group "$no_lua" tests/spank/*.c -- -Ispank "${slurm[@]}" "${lua[@]}" \
    -DXSITE_TEST_LUADIR='"lua"' -DXSITE_TEST_CONFIG='"site-configs/testbed.conf"'
  # libxsite, as built and as built for fault injection
  group "$no_mpi" mpi-wrappers/libxsite/*.c -- -std=gnu11 "${mpi[@]}" "${pmix[@]}"
  for f in mpi-wrappers/libxsite/*.c; do
    if [[ -n $no_mpi ]]; then
      tap_skip "clang-tidy $f (fault injection)" "$no_mpi"
    else
      tidy "$f (fault injection)" "$f" -std=gnu11 "${mpi[@]}" "${pmix[@]}" -DXSITE_FAULT_INJECTION
    fi
  done
  # MPI programs: the ping-pong, the MPI tests and the benchmarks
  group "$no_mpi" mpi-wrappers/*.c tests/mpi/*.c tests/bench/*.c -- \
    -std=gnu11 -Impi-wrappers/libxsite "${mpi[@]}"
  # the testbed's link emulator, and the hostile tests' libslurm program
  group "" tests/testbed/linkemu/*.c -- -std=gnu11
  group "" tests/integration/*.c -- -std=gnu11 "${slurm[@]}"
  tap_done
}

main "$@"
