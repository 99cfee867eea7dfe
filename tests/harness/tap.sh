#!/usr/bin/env bash
# tap.sh: helpers for the TAP-emitting tests of "make check"; source it.
#
#   tap_ok DESC / tap_not_ok DESC [DIAGNOSTICS] / tap_skip DESC REASON
#   tap_skip_all REASON    the whole file is skipped (prints "1..0 # SKIP")
#   tap_done               prints the plan
#   tap_run CMD...         runs a TAP producer (stdin /dev/null), passes its
#                          output through and returns 0 when it reported a
#                          failure itself ("not ok"), else its exit status
# Every test of this project prints its plan last, so a test that dies half
# way is caught by the driver ("missing test plan").

tap_count=0

tap_ok() {
  local desc=$1
  tap_count=$((tap_count + 1))
  printf 'ok %d - %s\n' "$tap_count" "$desc"
}

tap_not_ok() {
  local desc=$1
  local diag=${2:-}
  tap_count=$((tap_count + 1))
  printf 'not ok %d - %s\n' "$tap_count" "$desc"
  if [[ -n $diag ]]; then
    printf '%s\n' "$diag" | sed 's/^/# /'
  fi
}

tap_skip() {
  local desc=$1
  local reason=$2
  tap_count=$((tap_count + 1))
  printf 'ok %d - %s # SKIP %s\n' "$tap_count" "$desc" "$reason"
}

tap_skip_all() {
  local reason=$1
  printf '1..0 # SKIP %s\n' "$reason"
  exit 0
}

tap_done() {
  printf '1..%d\n' "$tap_count"
}

tap_run() {
  local line
  local failed=0
  local status=0
  while IFS= read -r line; do
    case $line in
      '#xsite-tap-exit '*) status=${line#'#xsite-tap-exit '} ;;
      *)
        printf '%s\n' "$line"
        case $line in 'not ok'*) failed=1 ;; esac
        ;;
    esac
  done < <(
    rc=0
    "$@" </dev/null || rc=$?
    printf '#xsite-tap-exit %d\n' "$rc"
  )
  if ((failed)); then
    return 0
  fi
  return "$status"
}
