# shellcheck shell=bash
# Shared helpers for the integration suite: every file brings up its own
# testbed (a distinct --name) once in setup_file and takes it down in
# teardown_file.

XT_REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
XT_TB=$XT_REPO/tests/testbed/xsite-testbed

# Where the tests take xsite from: set here, and nowhere else.  By default the
# build tree (what make check names: $XSITE, $XSITE_SPANK_PLUGIN,
# $XSITE_LIBXSITE; else the tree's own files).  With XSITE_TESTBED_INSTALLED=1
# only the files of the installed Debian packages, as "xsite-testbed
# --installed components" finds them: the testbed runs with --installed (it
# takes its own from there and hides the build tree from its namespaces), and
# make check's settings that point at the build tree are taken out of the
# environment or pointed at the installed files.
#   XT_INSTALLED   1 in an installed run, else 0
#   XT_XSITE       the xsite command (build tree: a file may set its own)
#   XT_XSITE_RUN   xsite-run
#   XT_LIBXSITE    libxsite.so to preload (build tree: $XSITE_LIBXSITE, else
#                  the tree's mpi-wrappers/libxsite/.libs/libxsite.so)
#   XT_PINGPONG    the ping-pong program (build tree: '', built from source)
#   XT_JOB_SUBMIT  the job_submit.lua the testbed installs beside slurm.conf
#   XT_LUADIR      the Lua library the testbed's daemons load   (build tree:
#   XT_SPANK_SO    the xsite.so its plugstack.conf names         set by xt_init)
# shellcheck disable=SC2034 # the .bats files use them
xt_components() {
	local name path
	XT_INSTALLED=0
	if [[ ${XSITE_TESTBED_INSTALLED:-0} != 1 ]]; then
		XT_XSITE=${XT_XSITE:-${XSITE:-$XT_REPO/lua/bin/xsite}}
		XT_XSITE_RUN=$XT_REPO/mpi-wrappers/xsite-run
		XT_LIBXSITE=${XSITE_LIBXSITE:-$XT_REPO/mpi-wrappers/libxsite/.libs/libxsite.so}
		XT_PINGPONG=
		XT_JOB_SUBMIT=$XT_REPO/lua/job_submit.lua
		return 0
	fi
	XT_INSTALLED=1
	if [[ -z ${XT_COMPONENTS:-} ]]; then
		XT_COMPONENTS=$("$XT_TB" --installed components) || return 1
		export XT_COMPONENTS
	fi
	while read -r name path; do
		case $name in
		xsite) XT_XSITE=$path ;;
		xsite-run) XT_XSITE_RUN=$path ;;
		libxsite) XT_LIBXSITE=$path ;;
		pingpong) XT_PINGPONG=$path ;;
		job_submit) XT_JOB_SUBMIT=$path ;;
		luadir) XT_LUADIR=$path ;;
		spank) XT_SPANK_SO=$path ;;
		esac
	done <<<"$XT_COMPONENTS"
	export XT_LUADIR XT_SPANK_SO
	export XSITE=$XT_XSITE XSITE_SPANK_PLUGIN=$XT_SPANK_SO XSITE_LIBXSITE=$XT_LIBXSITE
	unset XSITE_LUADIR LUA_PATH LUA_INIT
	PATH=$(xt_path_outside_tree)
}

# xt_path_outside_tree: $PATH without the directories of the source and the
# build tree (make check puts the build's lua/bin first)
xt_path_outside_tree() {
	local dir out=''
	local -a dirs=()
	IFS=: read -r -a dirs <<<"$PATH"
	for dir in "${dirs[@]}"; do
		case $dir in
		"$XT_REPO" | "$XT_REPO"/*) continue ;;
		esac
		if [[ -n ${XSITE_BUILDDIR:-} && ($dir == "$XSITE_BUILDDIR" || $dir == "$XSITE_BUILDDIR"/*) ]]; then
			continue
		fi
		out=${out:+$out:}$dir
	done
	printf '%s\n' "$out"
}

xt_components || {
	printf 'helpers.bash: XSITE_TESTBED_INSTALLED=1, but the installed xsite packages are incomplete (see above)\n' >&2
	return 1
}

# xt_place SRC DST: SRC where the testbed's nodes see it (under $XT_STATE,
# a node's /tmp is its own): a copy of a build-tree file; in an installed run
# a symbolic link, so that what runs is the installed file itself
xt_place() {
	if [[ ! -e $1 ]]; then
		printf 'xt_place: no %s: build xsite first (make; make check builds its test programs)\n' "$1" >&2
		return 1
	fi
	if ((XT_INSTALLED)); then
		ln -sfn "$1" "$2"
	else
		cp "$1" "$2"
	fi
}

load_libs() {
	load /usr/lib/bats/bats-support/load
	load /usr/lib/bats/bats-assert/load
}

# xt_init SUFFIX: the testbed name of this file (never the default "xsite"):
# xsite-it-SUFFIX, or $XSITE_IT_PREFIX-SUFFIX (two runs side by side)
xt_init() {
	export XT_NAME="${XSITE_IT_PREFIX:-xsite-it}-$1"
	export XT_STATE="/run/xsite-testbed/$XT_NAME"
	if ((XT_INSTALLED == 0)); then
		# the testbed's copies of the build tree's library and plugin
		export XT_LUADIR=$XT_STATE/lib/lua
		export XT_SPANK_SO=$XT_STATE/lib/xsite.so
	fi
}

tb() {
	local -a opts=(--name "$XT_NAME" --state-dir "$XT_STATE")
	if [[ -n ${XT_CONFIG:-} ]]; then
		opts+=(--config "$XT_CONFIG")
	fi
	if ((XT_INSTALLED)); then
		opts+=(--installed)
	fi
	"$XT_TB" "${opts[@]}" "$@"
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

# xt_up [OPTION...]: this file's testbed up (OPTIONs of xsite-testbed, such
# as --accounting); in an installed run, checked to run the packages' files
xt_up() {
	local rc
	tb "$@" up 2>&1 | tap_note
	rc=${PIPESTATUS[0]}
	((rc == 0)) || printf '# xsite-testbed up failed for %s\n' "$XT_NAME" >&3
	if ((rc == 0 && XT_INSTALLED)); then
		xt_check_installed || rc=1
	fi
	return "$rc"
}

# In an installed run, after up: the testbed took xsite from the packages
# and from nowhere else.  A file whose testbed fails this fails as a whole.
xt_check_installed() {
	local line target found
	# shellcheck disable=SC1091 # written by xsite-testbed up
	if ! (. "$XT_STATE/testbed.env" && [[ ${TB_INSTALLED:-0} == 1 ]]); then
		printf 'installed run, but the testbed in %s is not in --installed mode\n' "$XT_STATE" >&2
		return 1
	fi
	read -r line <"$XT_STATE/etc/plugstack.conf.d/xsite.conf" || line=
	if [[ $line != "required $XT_SPANK_SO "* ]]; then
		printf 'installed run, but plugstack.conf.d/xsite.conf says: %s\n' "$line" >&2
		return 1
	fi
	target=$(readlink "$XT_STATE/etc/job_submit.lua") || target=
	if [[ $target != "$XT_JOB_SUBMIT" ]]; then
		printf 'installed run, but job_submit.lua is not a link to %s (%s)\n' "$XT_JOB_SUBMIT" "${target:-not a link}" >&2
		return 1
	fi
	found=$(grep -rlF -e "$XT_REPO/lua" -e "$XT_REPO/spank" -e "$XT_REPO/mpi-wrappers" "$XT_STATE/etc") || true
	if [[ -n $found || -e $XT_STATE/lib ]]; then
		printf 'installed run, but the testbed uses the build tree: %s\n' "${found:-$XT_STATE/lib}" >&2
		return 1
	fi
}

xt_down() {
	tb down 2>&1 | tap_note || true
}

# Build the MPI ping-pong into the work directory (visible on every node); in
# an installed run, the installed one (xsite-mpi's xsite-pingpong).
build_pingpong() {
	if [[ -n $XT_PINGPONG ]]; then
		xt_place "$XT_PINGPONG" "$XT_STATE/work/pingpong"
		return 0
	fi
	mpicc -O2 -o "$XT_STATE/work/pingpong" "$XT_REPO/mpi-wrappers/xsite-pingpong.c"
}

# mpi_startup_crash OUTPUT: whether OUTPUT shows a rank dying in Open MPI's
# start-up (a rank that receives while still in MPI_Init; see
# mpi-wrappers/libxsite/README.md), which an MPI job without libxsite meets
# now and then on a loaded machine: 4.1 prints a segmentation fault, 5.0
# reports it through UCX's handler ("Caught signal 11")
mpi_startup_crash() {
	[[ $1 == *'Segmentation fault'* || $1 == *'Caught signal 11'* ]]
}

# run_mpi CMD...: bats' run --separate-stderr of an MPI job without
# libxsite; once more after such a start-up crash, and only then
# shellcheck disable=SC2154 # status, output, stderr: set by bats' run
run_mpi() {
	run --separate-stderr "$@"
	if ((status != 0)) && mpi_startup_crash "$output$stderr"; then
		printf '# a rank crashed (Open MPI start-up); once more: %s\n' "$*" >&3
		run --separate-stderr "$@"
	fi
}

# pingpong_lowest NODE_A NODE_B ITERS [RUNS]: "MEDIAN MIN", one-way
# latencies in us of ITERS round trips: with RUNS > 1, the lowest median and
# the lowest minimum of that many runs (2 cores run every node and daemon: a
# run can lose its CPU to another process for milliseconds, which moves a
# median; the fastest trip is bounded below by the delay on the path alone)
pingpong_lowest() {
	local a=$1 b=$2 n=$3 runs=${4:-1} out med='' min='' m r
	for ((r = 0; r < runs; r++)); do
		run_mpi on_head srun -N2 -n2 -w "$a,$b" --mpi=pmix ./pingpong -n "$n" -t 60
		out=$stderr$'\n'$output
		if ((status != 0)); then
			printf 'pingpong %s-%s failed: %s\n' "$a" "$b" "$out" >&2
			return 1
		fi
		printf '%s\n' "$out" | tap_note
		m=$(sed -nE 's/.* min=([0-9.]+) median=([0-9.]+) .*/\2 \1/p' <<<"$out")
		[[ -n $m ]] || {
			printf 'pingpong %s-%s: no result in: %s\n' "$a" "$b" "$out" >&2
			return 1
		}
		if [[ -z $med ]] || fcmp 'a < b' "${m% *}" "$med"; then
			med=${m% *}
		fi
		if [[ -z $min ]] || fcmp 'a < b' "${m#* }" "$min"; then
			min=${m#* }
		fi
	done
	printf '%s %s\n' "$med" "$min"
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

# xt_user NAME: an unprivileged system user NAME (no home, no login shell),
# made now unless it exists; xt_users_remove removes the users made so
# (call both from setup_file and teardown_file of one file)
xt_user() {
	id "$1" >/dev/null 2>&1 && return 0
	useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$1" || return 1
	printf '%s\n' "$1" >>"$BATS_FILE_TMPDIR/users-made"
}

xt_users_remove() {
	local user
	[[ -f $BATS_FILE_TMPDIR/users-made ]] || return 0
	while read -r user; do userdel "$user" 2>/dev/null || true; done <"$BATS_FILE_TMPDIR/users-made"
}

# xt_as USER CMD...: CMD on the head as USER (made by xt_user), from the
# user's own directory under the work directory
xt_as() {
	local user=$1
	shift
	(cd "$XT_STATE/work/$user" && tb on head runuser -u "$user" -- "$@")
}

# xt_scontrol_as USER COMMAND ARGS...: scontrol COMMAND ARGS as USER (update,
# release, ...).  Slurm 24.11 now and then answers a valid request with
# EAGAIN ("Resource temporarily unavailable": try again), more often on a
# loaded machine (5 tries a second apart were once all refused so, with two
# test runs sharing 2 cores); that answer, and only that, is tried again, for
# up to 30 s
xt_scontrol_as() {
	local user=$1 try out
	shift
	for ((try = 1; try <= 30; try++)); do
		if out=$(xt_as "$user" scontrol "$@" 2>&1); then
			printf '%s\n' "$out"
			return 0
		fi
		[[ $out == *'Resource temporarily unavailable'* ]] || break
		printf '# scontrol %s: try %d: %s\n' "$*" "$try" "$(tail -n 1 <<<"$out")" >&3
		sleep 1
	done
	printf '%s\n' "$out"
	return 1
}

# report_of JOB STEP: the job's record in ReportDir once it has STEP
# (slurmstepd writes it when the step's processes are gone, after Slurm says
# the job ended), within 90 s (a loaded machine, CI's two stacks side by
# side, schedules jobs and ends steps slowly); else what squeue says of the
# job, and the record's steps so far, on stderr
report_of() {
	local i f=$XT_STATE/reports/$1/report.json
	for ((i = 0; i < 900; i++)); do
		if [[ -f $f ]] && grep -q "\"step\":\"$2\"" "$f"; then
			cat "$f"
			return 0
		fi
		sleep 0.1
	done
	printf 'no step %s in %s after 90 s; squeue: %s; steps recorded: %s\n' "$2" "$f" \
		"$(on_head squeue -h -t all -j "$1" -o '%i %T %R %N' 2>&1 | tr '\n' ';')" \
		"$(jq -c '[.steps[].step]' "$f" 2>&1)" >&2
	return 1
}

# slurm_nodes_of JOB N: Slurm's node lists slurmd's epilog put beside the
# job's record (slurm-nodes.json, keys sorted) once it holds N of them,
# within 30 s
slurm_nodes_of() {
	local i f=$XT_STATE/reports/$1/slurm-nodes.json n
	for ((i = 0; i < 300; i++)); do
		n=$(jq -r 'length' "$f" 2>/dev/null) || n=
		if [[ $n == "$2" ]]; then
			jq -c -S . "$f"
			return 0
		fi
		sleep 0.1
	done
	printf '%s: %s node lists of Slurm, not %s\n' "$f" "${n:-no}" "$2" >&2
	return 1
}

# wait_state ID STATE [REASON]: until the job is in STATE (with REASON, as
# squeue's %r says it), 30 s at most
wait_state() {
	local i now
	for ((i = 0; i < 300; i++)); do
		now=$(on_head squeue -h -t all -j "$1" -o '%T %r') || true
		[[ $now == "$2 ${3:-}"* ]] && return 0
		sleep 0.1
	done
	printf 'job %s: %s after 30 s, not %s %s\n' "$1" "$now" "$2" "${3:-}" >&2
	return 1
}

# xt_need_accounting: sets XT_SKIP (for setup to skip each test) when
# MariaDB or slurmdbd is not installed; returns 1 then
xt_need_accounting() {
	local prog
	for prog in mariadbd slurmdbd; do
		if ! command -v "$prog" >/dev/null; then
			export XT_SKIP="$prog not installed (apt-get install mariadb-server slurmdbd)"
			return 1
		fi
	done
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
