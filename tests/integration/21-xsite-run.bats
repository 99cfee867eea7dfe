#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2154
# (SC2016: the quoted $... expand in the job; SC2154: bats sets $stderr)
# xsite-run on the two-site testbed: inside an allocation of both sites'
# nodes it places the ranks site by site (each rank reports its rank and
# host; checked against the site map) with srun and with mpirun (rankfile),
# binds them to cores (a testbed with task/affinity), moves ranks by a recorded traffic matrix (--comm-graph), prints the map
# with --verbose, and exports the Open MPI settings for the link to a
# spanning job only (and the coll/tuned rules file is really read: the
# algorithms that ran, seen through tests/mpi/colltrace.c).  Also the SPANK
# plugin's tune_mpi=yes.
#
# The head runs the client: xsite is the build's lua/bin/xsite ($XSITE) with
# XSITE_LUADIR at the testbed's copy of lua/ ($XT_LUADIR); in an installed
# run the installed xsite, xsite-run and libxsite (helpers.bash).  Programs
# and records live in $XT_STATE/work (the nodes have their own /tmp).

bats_require_minimum_version 1.5.0

U='xsite-xrun1'

setup_file() {
	load helpers
	xt_init xrun
	xt_user "$U"
	xt_advise_config
	# task/affinity, so that srun's binding (--cpu-bind=cores) is real
	xt_up --task-affinity
	local w=$XT_STATE/work/xrun
	mkdir -p "$w" "$XT_STATE/work/$U"
	chown "$U:" "$XT_STATE/work/$U"
	xt_place "$XT_LIBXSITE" "$w/libxsite.so"
	mpicc -O2 -o "$w/pairs" "$XT_REPO/tests/mpi/pairs.c"
	gcc -shared -fPIC -O2 -o "$w/colltrace.so" "$XT_REPO/tests/mpi/colltrace.c" -ldl
	# collprog runs without libxsite, whose start-up fence it has: Open MPI
	# (4.1 and 5.0) crashes a rank that a message reaches while it is still
	# inside MPI_Init (mpi-wrappers/libxsite/wrappers.c; 5 of 80 runs on
	# Debian 13 without it)
	cat >"$w/collprog.c" <<'C'
#include <mpi.h>
#include <pmix.h>
#include <stdlib.h>
int main(int c, char **v)
{
	int n = c > 1 ? atoi(v[1]) : 1;
	double *x = calloc(n * 8, 8), *y = calloc(n * 8, 8);
	bool yes = true;
	pmix_info_t collect;
	MPI_Init(&c, &v);
	PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	if (PMIx_Fence(NULL, 0, &collect, 1) != PMIX_SUCCESS)
		return 3;
	MPI_Allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Bcast(x, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	MPI_Reduce(x, y, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Allgather(x, n, MPI_DOUBLE, y, n, MPI_DOUBLE, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
C
	# shellcheck disable=SC2046 # pkg-config's words
	mpicc -O2 $(pkg-config --cflags pmix) -o "$w/collprog" "$w/collprog.c" $(pkg-config --libs pmix)
	local xsite=${XSITE:-}
	if [[ -z $xsite ]]; then
		xsite=$w/xsite
		sed -e "s|@LUA@|$(command -v lua5.1)|" -e "s|@luadir@|$XT_LUADIR|" \
			"$XT_REPO/lua/bin/xsite.in" >"$xsite"
		chmod +x "$xsite"
	fi
	export XT_XSITE=$xsite
}

teardown_file() {
	load helpers
	xt_down
	xt_users_remove
}

setup() {
	load helpers
	load_libs
	W=$XT_STATE/work/xrun
}

# in_alloc NODES CMD...: CMD on the head inside an allocation of NODES, two
# tasks a node, with xsite and xsite-run set up as a user would
in_alloc() {
	local nodes=$1
	shift
	on_head env XSITE="$XT_XSITE" XSITE_LUADIR="$XT_LUADIR" XSITE_CONF="$XT_STATE/etc/xsite.conf" \
		salloc -Q -w "$nodes" -N "$(tr ',' '\n' <<<"$nodes" | wc -l)" --ntasks-per-node=2 -t 3 "$@"
}

# mpi_alloc NODES CMD...: in_alloc, tried again (three tries in all) when
# a try died in Open MPI's start-up: a rank gets a message while still in
# MPI_Init and crashes in ob1's receive path, now and then on the testbed,
# without libxsite (whose start-up fence prevents it).  Open MPI 4.1 dies of
# the signal (exit status 128 or more); under 5.0 UCX's handler reports it
# ("Caught signal 11", a backtrace through ompi_mpi_init) and the rank
# exits with MPI_ERR_UNKNOWN (14).  With two stacks' tests sharing the 2
# cores, two such deaths in a row were seen (status 143, then 139).
mpi_alloc() {
	local try
	for try in 1 2 3; do
		run --separate-stderr in_alloc "$@"
		if ((status < 128)) && ! { mpi_startup_crash "$stderr" && [[ $stderr == *ompi_mpi_init* ]]; }; then
			return 0
		fi
		printf '# try %d: exit status %d (Open MPI start-up); once more\n' "$try" "$status" >&3
	done
	# what the last try printed, for the failure's diagnostics
	printf '%s\n' "$stderr" | tail -n 40 >&2
}

# check_partners OUTPUT: "rank R host H" lines of 8 ranks: each rank R and its
# partner R+4 (pairs -b) at one site
check_partners() {
	local r h1 h2
	for r in 0 1 2 3; do
		h1=$(sed -nE "s/^rank $r host (.*)$/\1/p" <<<"$1")
		h2=$(sed -nE "s/^rank $((r + 4)) host (.*)$/\1/p" <<<"$1")
		[[ ${h1:0:4} == "${h2:0:4}" ]] || {
			printf 'rank %d at %s, its partner %d at %s\n' "$r" "$h1" "$((r + 4))" "$h2" >&2
			return 1
		}
	done
}

# check_site_major OUTPUT: "rank R host H" lines of 8 ranks: 0-3 at alpha, 4-7 at beta
check_site_major() {
	local lines
	lines=$(grep -E '^rank [0-9]+ host ' <<<"$1" | sort -k2,2n | awk '{ print $2, substr($4, 1, 4) }' | tr '\n' ';')
	assert_equal "$lines" "0 alph;1 alph;2 alph;3 alph;4 beta;5 beta;6 beta;7 beta;"
}

@test "the link is the emulated one (RTT through the delay line)" {
	run -0 tb link check
}

@test "srun: nodes asked in a mixed order, ranks placed site by site" {
	mpi_alloc beta1,alpha2,beta2,alpha1 \
		"$XT_XSITE_RUN" --verbose "$W/pairs" -b 1024 -i 1
	assert_equal "$status" 0
	printf '%s\n' "$output" | sort -k2,2n | tap_note
	check_site_major "$output"
	[[ $stderr == *'xsite-run: rank 0 -> alpha1 (site alpha)'* ]]
	[[ $stderr == *'xsite-run: rank 7 -> beta2 (site beta)'* ]]
	# srun bound each rank to a core of its own on its node (--cpu-bind=
	# verbose,cores: "cpu-bind=MASK - NODE, task RANK LOCAL [PID]: mask M set")
	local binds
	binds=$(sed -nE 's/^cpu-bind=MASK - ([a-z0-9]+), task +[0-9]+ +[0-9]+ \[[0-9]+\]: mask (0x[0-9a-f]+) set$/\1 \2/p' \
		<<<"$stderr" | sort -u | tr '\n' ';')
	assert_equal "$binds" "alpha1 0x1;alpha1 0x2;alpha2 0x1;alpha2 0x2;beta1 0x1;beta1 0x2;beta2 0x1;beta2 0x2;"
}

@test "srun: the node list of the job in a mixed order still gives site-major ranks" {
	# the order xsite map reads (SLURM_JOB_NODELIST) mixes the sites; srun
	# follows the hostfile xsite-run writes from it
	mpi_alloc alpha1,alpha2,beta1,beta2 \
		env SLURM_JOB_NODELIST=beta1,alpha2,beta2,alpha1 \
		"$XT_XSITE_RUN" --verbose "$W/pairs" -b 1024 -i 1
	assert_equal "$status" 0
	check_site_major "$output"
	[[ $stderr == *'xsite-run: rank 0 -> alpha2 (site alpha)'* ]]
	[[ $stderr == *'xsite-run: rank 4 -> beta1 (site beta)'* ]]
	run -0 bash -c "grep -E '^rank [0-9]+ host ' <<<'$output' | sort -k2,2n | awk '{ print \$4 }' | tr '\n' ' '"
	assert_output 'alpha2 alpha2 alpha1 alpha1 beta1 beta1 beta2 beta2 '
}

@test "mpirun: a rankfile with hwloc's cores, ranks placed site by site and bound" {
	mpi_alloc beta1,alpha2,beta2,alpha1 \
		"$XT_XSITE_RUN" --launcher mpirun --verbose "$W/pairs" -b 1024 -i 1
	assert_equal "$status" 0
	printf '%s\n' "$stderr" | grep -E 'xsite-run: (rank|node)|bound' | head -n 14 | tap_note
	check_site_major "$output"
	[[ $stderr == *'xsite-run: node alpha1: 2 cores, 1 NUMA node(s) (hwloc)'* ]]
	[[ $stderr == *'xsite-run: rank 1 -> alpha1 (site alpha) core 1'* ]]
	# Open MPI's binding report (--report-bindings): rank 1 on core 1, as
	# 4.1 ("MCW rank 1 bound to socket 0[core 1...") or 5.0 ("Rank 1 bound
	# to package[0][core:1]") says it
	[[ $stderr =~ MCW\ rank\ 1\ bound\ to\ socket\ [0-9]+\[core\ 1 ||
		$stderr =~ Rank\ 1\ bound\ to\ package\[[0-9]+\]\[core:1\] ]]
}

@test "--comm-graph: a recorded pairwise run moves partners to one site, as predicted" {
	local rec1=$W/pairs-site-major.json rec2=$W/pairs-graph.json
	rm -f "$rec1" "$rec2"
	mpi_alloc alpha1,alpha2,beta1,beta2 \
		"$XT_XSITE_RUN" \
		env LD_PRELOAD="$W/libxsite.so" XSITE_TRAFFIC_FILE="$rec1" "$W/pairs" -b 1000000 -i 2
	assert_equal "$status" 0
	check_site_major "$output"
	local before
	before=$(jq '.cross.bytes' "$rec1")
	printf '# site-major order: %s bytes across\n' "$before" >&3
	mpi_alloc alpha1,alpha2,beta1,beta2 \
		"$XT_XSITE_RUN" --verbose --comm-graph "$rec1" \
		env LD_PRELOAD="$W/libxsite.so" XSITE_TRAFFIC_FILE="$rec2" "$W/pairs" -b 1000000 -i 2
	assert_equal "$status" 0
	printf '%s\n' "$stderr" | grep 'predicted' | tap_note
	[[ $stderr =~ predicted\ bytes\ across\ the\ link:\ ([^(]*)\ \(site-major\ order:\ ([^)]*)\) ]]
	check_partners "$output"
	local after
	after=$(jq '.cross.bytes' "$rec2")
	printf '# --comm-graph order: %s bytes across (was %s)\n' "$after" "$before" >&3
	# the partners' 2 x 2 x 1 MB each no longer cross: only ring traffic does
	((before >= 16000000 && after < 1000))
}

@test "--comm-profile: the next run of a profile is placed by the traffic of the last, with no flag" {
	# the first run: site by site; libxsite's record goes into the job's
	# report (the SPANK plugin's XSITE_TRAFFIC_FILE), with the entries of
	# its matrix that are not 0, as for a job of more than XSITE_MATRIX_MAX
	# ranks (the test above reads a whole matrix)
	mpi_alloc alpha1,alpha2,beta1,beta2 --comm-profile=low bash -c 'printf "job=%s\n" "$SLURM_JOB_ID"; exec "$@"' \
		bash "$XT_XSITE_RUN" env LD_PRELOAD="$W/libxsite.so" XSITE_MATRIX_MAX=4 "$W/pairs" -b 1000000 -i 2
	assert_equal "$status" 0
	check_site_major "$output"
	local first
	first=$(sed -n 's/^job=//p' <<<"$output")
	run -0 report_of "$first" 0
	run -0 jq '.profile.label, (.steps[] | select(.step == "0") | .mpi | .matrix, (.edges | length > 24))' \
		<<<"$output"
	assert_output "$(printf '"low"\nnull\ntrue')"
	# the second run of the profile, with no flag: partners at one site
	mpi_alloc alpha1,alpha2,beta1,beta2 --comm-profile=low \
		"$XT_XSITE_RUN" --verbose env LD_PRELOAD="$W/libxsite.so" "$W/pairs" -b 1000000 -i 2
	assert_equal "$status" 0
	printf '%s\n' "$stderr" | grep -E 'placed|predicted' | tap_note
	[[ $stderr == *"xsite-run: ranks placed by the traffic of job $first (profile low)"* ]]
	check_partners "$output"
}

@test "a spanning job gets the link settings and the rules file on every node; a one-site job none" {
	run -0 --separate-stderr in_alloc alpha1,alpha2,beta1,beta2 \
		"$XT_XSITE_RUN" --verbose \
		sh -c 'printf "%s %s %s %s %s\n" "$SLURM_PROCID" "$(hostname)" "${OMPI_MCA_btl_tcp_sndbuf:-none}" \
			"${OMPI_MCA_btl_tcp_eager_limit:-none}" \
			"$(test -r "$OMPI_MCA_coll_tuned_dynamic_rules_filename" && echo rules || echo norules)"'
	printf '%s\n' "$stderr" | grep -A5 'spans' | tap_note
	# the testbed's link, 1 Gb/s and 1 ms: 250 kB in flight
	assert_equal "$(awk '{ print $3, $4, $5 }' <<<"$output" | sort -u)" "524288 262144 rules"
	assert_equal "$(wc -l <<<"$output")" 8
	[[ $stderr == *'xsite-run:   OMPI_MCA_coll_tuned_use_dynamic_rules=1'* ]]
	run -0 --separate-stderr in_alloc alpha1,alpha2 \
		"$XT_XSITE_RUN" --verbose sh -c 'env | grep -c "^OMPI_MCA_coll_tuned\|^OMPI_MCA_btl_tcp_[a-z_]*\(buf\|eager_limit\)=" || true'
	assert_equal "$(sort -u <<<"$output")" 0
	[[ $stderr == *'job at one site: no Open MPI settings for the link'* ]]
}

@test "TERM to xsite-run ends the program and removes the rules file from every node" {
	# the program says it started on each of the 8 ranks, then sleeps; once
	# all 8 have, xsite-run gets TERM.  Then: its exit status, the program's
	# sleeps still alive (the nodes share the head's pid namespace), and the
	# job's rules files left in each node's /tmp
	rm -f "$W"/started.*
	run -0 --separate-stderr in_alloc alpha1,alpha2,beta1,beta2 sh -c '
		"$1" sh -c "touch $2/started.\$SLURM_PROCID; exec sleep 1737" &
		pid=$!
		for i in $(seq 600); do
			[ "$(ls "$2" | grep -c "^started\.")" -ge 8 ] && break
			sleep 0.1
		done
		kill -TERM "$pid"
		wait "$pid"
		echo "exit $?"
		echo "sleeping $(pgrep -c -x -f "sleep 1737" || true)"
		srun --overlap -N4 -n4 --ntasks-per-node=1 -t 1 \
			sh -c "echo left \$(ls /tmp/xsite-coll-rules.$SLURM_JOB_ID.* 2>/dev/null | wc -l)"' \
		sh "$XT_XSITE_RUN" "$W"
	printf '%s\n' "$output" "$stderr" | tap_note
	assert_line 'exit 143'
	assert_line 'sleeping 0'
	assert_equal "$(grep -c '^left 0$' <<<"$output")" 4
	assert_equal "$(find "$W" -name 'started.*' | wc -l)" 8
}

@test "Open MPI reads the rules file: the tuned algorithms that run change to the rules' choices" {
	# without xsite-run's settings (--no-tune): Open MPI 4.1's fixed decisions
	mpi_alloc alpha1,alpha2,beta1,beta2 \
		"$XT_XSITE_RUN" --no-tune env LD_PRELOAD="$W/colltrace.so" "$W/collprog" 1
	assert_equal "$status" 0
	local plain
	plain=$(grep -o 'colltrace: [a-z_]*' <<<"$stderr" | sort -u | tr '\n' ';')
	printf '# fixed rules: %s\n' "$plain" >&3
	mpi_alloc alpha1,alpha2,beta1,beta2 \
		"$XT_XSITE_RUN" env LD_PRELOAD="$W/colltrace.so" "$W/collprog" 1
	assert_equal "$status" 0
	local tuned
	tuned=$(grep -o 'colltrace: [a-z_]*' <<<"$stderr" | sort -u | tr '\n' ';')
	printf '# xsite rules: %s\n' "$tuned" >&3
	[[ $plain != "$tuned" ]]
	assert_equal "$tuned" "colltrace: allgather_intra_recursivedoubling;colltrace: allreduce_intra_recursivedoubling;colltrace: barrier_intra_recursivedoubling;colltrace: bcast_intra_binomial;colltrace: reduce_intra_binomial;"
	# 512 KiB a rank: Rabenseifner's allreduce, the broadcast pipeline, the
	# reduce's binomial tree (in segments) and the ring allgather (4 MiB in all)
	mpi_alloc alpha1,alpha2,beta1,beta2 \
		"$XT_XSITE_RUN" env LD_PRELOAD="$W/colltrace.so" "$W/collprog" 65536
	assert_equal "$status" 0
	tuned=$(grep -o 'colltrace: [a-z_]*' <<<"$stderr" | sort -u | tr '\n' ';')
	printf '# xsite rules, 512 KiB: %s\n' "$tuned" >&3
	assert_equal "$tuned" "colltrace: allgather_intra_ring;colltrace: allreduce_intra_redscat_allgather;colltrace: barrier_intra_recursivedoubling;colltrace: bcast_intra_pipeline;colltrace: reduce_intra_binomial;"
}

@test "the SPANK plugin with tune_mpi=yes: settings and rules file for a spanning step only" {
	local line
	line=$(cat "$XT_STATE/etc/plugstack.conf.d/xsite.conf") || skip "the SPANK plugin is not built"
	[[ $line == required* ]] || skip "the SPANK plugin is not built"
	printf '%s tune_mpi=yes\n' "$line" >"$XT_STATE/etc/plugstack.conf.d/xsite.conf"
	run -0 --separate-stderr on_head srun -N4 -n4 -w alpha1,alpha2,beta1,beta2 -t 1 \
		sh -c 'printf "%s %s %s\n" "$(hostname)" "${OMPI_MCA_coll_tuned_dynamic_rules_filename:-none}" \
			"$(head -n 1 "${OMPI_MCA_coll_tuned_dynamic_rules_filename:-/none}" 2>/dev/null | cut -c1-35)"'
	local span=$output one
	run -0 --separate-stderr on_head srun -N2 -n2 -w alpha1,alpha2 -t 1 \
		sh -c 'printf "%s %s\n" "$(hostname)" "${OMPI_MCA_coll_tuned_dynamic_rules_filename:-none}"'
	one=$output
	# as an unprivileged user (user_init runs as the user, with root's real
	# uid): the user's own file, readable by their tasks
	local mine
	run -0 --separate-stderr xt_as "$U" srun -N2 -n2 -w alpha1,beta1 -t 1 \
		sh -c 'f=${OMPI_MCA_coll_tuned_dynamic_rules_filename:-/none}; printf "%s %s %s\n" "$(hostname)" \
			"$(stat -c %U "$f" 2>/dev/null)" "$(head -n 1 "$f" 2>/dev/null | cut -c1-35)"'
	mine=$output
	printf '%s\n' "$line" >"$XT_STATE/etc/plugstack.conf.d/xsite.conf"
	run -0 --separate-stderr on_head srun -N4 -n4 -w alpha1,alpha2,beta1,beta2 -t 1 \
		sh -c 'printf "%s %s %s\n" "$(hostname)" "${OMPI_MCA_coll_tuned_dynamic_rules_filename:-none}" \
			"$(head -n 1 "${OMPI_MCA_coll_tuned_dynamic_rules_filename:-/none}" 2>/dev/null | cut -c1-35)"'
	local off=$output
	printf '%s\n' "$span" "$one" "$mine" "$off" | tap_note
	assert_equal "$(wc -l <<<"$span")" 4
	assert_equal "$(awk '{ sub(/[0-9]+\.[0-9]+\.[A-Za-z0-9]{6}$/, "JOB.STEP.XXXXXX", $2); print $2, $3, $4, $5, $6, $7, $8 }' <<<"$span" |
		sort -u)" "/tmp/xsite-coll-rules.JOB.STEP.XXXXXX # Open MPI coll/tuned dynamic rules"
	assert_equal "$(awk '{ print $2, $3, $4, $5, $6, $7, $8 }' <<<"$mine" | sort -u)" \
		"$U # Open MPI coll/tuned dynamic rules"
	assert_equal "$(awk '{ print $2 }' <<<"$one" | sort -u)" none
	assert_equal "$(awk '{ print $2 }' <<<"$off" | sort -u)" none
	# each node removes its step's rules file when the step ends (slurmstepd
	# may still be at it when srun returns).  The step's own file: an earlier
	# test's xsite-run that was killed (Open MPI hanging in MPI_Init) leaves
	# its JOB.PID file behind, which is not the plugin's
	local i left rules
	# (each node's own name: all four asked of each node)
	rules=$(awk '{ print $2 }' <<<"$span" | sort -u | tr '\n' ' ')
	[[ $rules =~ ^(/tmp/xsite-coll-rules\.[0-9]+\.0\.[A-Za-z0-9]{6} ){4}$ ]]
	for ((i = 0; i < 50; i++)); do
		left=$(on_head srun -N4 -n4 -w alpha1,alpha2,beta1,beta2 -t 1 \
			sh -c "ls $rules 2>/dev/null | wc -l" | sort -u)
		[[ $left == 0 ]] && break
		sleep 0.2
	done
	assert_equal "$left" 0
}
