# shellcheck shell=bash
# Shared helpers for the integration suite: every file brings up its own
# testbed (a distinct --name) once in setup_file and takes it down in
# teardown_file.

XT_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
XT_TB=$XT_REPO/tests/testbed/xsite-testbed

load_libs() {
	load /usr/lib/bats/bats-support/load
	load /usr/lib/bats/bats-assert/load
}

# xt_name SUFFIX: the testbed name of this file (never the default "xsite").
xt_init() {
	export XT_NAME="xsite-it-$1"
	export XT_STATE="/run/xsite-testbed/$XT_NAME"
}

tb() {
	"$XT_TB" --name "$XT_NAME" --state-dir "$XT_STATE" ${XT_CONFIG:+--config "$XT_CONFIG"} "$@"
}

# For files that test the link rather than the placement policy: the testbed
# config with the policy in Mode=advise, so that jobs asking for nodes at both
# sites (-w alpha1,beta1) run whatever the policy would decide.
xt_advise_config() {
	export XT_CONFIG=$BATS_FILE_TMPDIR/testbed-advise.conf
	sed -E 's/^Mode=.*/Mode=advise/' "$XT_REPO/site-configs/testbed.conf" >"$XT_CONFIG"
}

# Run a client command on the head, from the testbed's shared work directory
# (the nodes have a private /tmp, so BATS_*TMPDIR is not visible there).
on_head() {
	(cd "$XT_STATE/work" && tb on head "$@")
}

# diagnostics for the TAP stream
tap_note() {
	sed 's/^/# /' >&3
}

xt_up() {
	local rc
	tb up 2>&1 | tap_note
	rc=${PIPESTATUS[0]}
	((rc == 0)) || printf '# xsite-testbed up failed for %s\n' "$XT_NAME" >&3
	return "$rc"
}

xt_down() {
	tb down 2>&1 | tap_note || true
}

# Build the MPI ping-pong into the work directory (visible on every node).
build_pingpong() {
	mpicc -O2 -o "$XT_STATE/work/pingpong" "$XT_REPO/mpi-wrappers/xsite-pingpong.c"
}

# pingpong_median NODE_A NODE_B ITERS [RUNS]: median one-way latency in us;
# with RUNS > 1, the lowest median of that many runs (2 cores run every node
# and daemon: a run can lose its CPU to another process for milliseconds)
pingpong_median() {
	local a=$1 b=$2 n=$3 runs=${4:-1} out best='' m r
	for ((r = 0; r < runs; r++)); do
		out=$(on_head srun -N2 -n2 -w "$a,$b" --mpi=pmix ./pingpong -n "$n" -t 60) || {
			printf 'pingpong %s-%s failed: %s\n' "$a" "$b" "$out" >&2
			return 1
		}
		printf '%s\n' "$out" | tap_note
		m=$(sed -nE 's/.* median=([0-9.]+) .*/\1/p' <<<"$out")
		[[ -n $m ]] || {
			printf 'pingpong %s-%s: no result in: %s\n' "$a" "$b" "$out" >&2
			return 1
		}
		if [[ -z $best ]] || fcmp 'a < b' "$m" "$best"; then
			best=$m
		fi
	done
	printf '%s\n' "$best"
}

# wait_idle TIMEOUT NODE...: until each node is idle (not completing, responding)
wait_idle() {
	local timeout=$1 i node states ok
	shift
	for ((i = 0; i < timeout * 10; i++)); do
		states=$(on_head sinfo -h -N -o '%N %t' 2>/dev/null) || true
		ok=1
		for node in "$@"; do
			grep -qx "$node idle" <<<"$states" || ok=0
		done
		((ok)) && return 0
		sleep 0.1
	done
	printf 'nodes not idle after %s s: %s\n' "$timeout" "$(tr '\n' ';' <<<"$states")" >&2
	return 1
}

# awk comparison helper: fcmp "EXPR" with variables a, b, c
fcmp() {
	awk -v a="${2:-0}" -v b="${3:-0}" -v c="${4:-0}" "BEGIN { exit !($1) }"
}

# wait_job ID: until the job has ended (30 s at most)
wait_job() {
	local i state
	for ((i = 0; i < 300; i++)); do
		state=$(on_head squeue -h -t all -j "$1" -o %T 2>/dev/null) || true
		case $state in
		COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
			return 0
			;;
		esac
		sleep 0.1
	done
	printf 'job %s has not ended after 30 s (state %s)\n' "$1" "$state" >&2
	return 1
}
