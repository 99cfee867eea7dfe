#!/usr/bin/env bats
# --accounting: MariaDB + slurmdbd on the head node; sacct sees the jobs.

# the single-quoted scripts run on the nodes: their $ expand there
# shellcheck disable=SC2016
bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	xt_init acct
	xt_need_accounting || return 0
	xt_up --accounting
}

teardown_file() {
	load helpers
	xt_down
}

setup() {
	load helpers
	load_libs
	[[ -z ${XT_SKIP:-} ]] || skip "$XT_SKIP"
}

@test "status shows the accounting daemons" {
	run -0 tb status
	assert_output --partial 'mariadbd and slurmdbd running'
}

@test "sacct records a finished srun job with its nodes and exit code" {
	local id
	run -0 --separate-stderr on_head srun -N4 sh -c 'printf "%s\n" "$SLURM_JOB_ID"'
	id=${lines[0]}
	[[ $id =~ ^[0-9]+$ ]]
	for _ in $(seq 1 300); do
		run -0 on_head sacct -a -X -n -P -S 2000-01-01 -j "$id" -o JobID,NNodes,NodeList,State,ExitCode
		[[ $output == *COMPLETED* ]] && break
		sleep 0.1
	done
	assert_output "$id|4|alpha[1-2],beta[1-2]|COMPLETED|0:0"
}

@test "sacct records a failing batch job as FAILED" {
	local id
	run -0 --separate-stderr on_head sbatch --parsable -N1 -C site_beta -o /dev/null --wrap 'exit 3'
	id=${lines[-1]}
	for _ in $(seq 1 300); do
		run -0 on_head sacct -a -X -n -P -S 2000-01-01 -j "$id" -o State,ExitCode,NodeList
		[[ $output == FAILED* ]] && break
		sleep 0.1
	done
	assert_output --regexp '^FAILED\|3:0\|beta[12]$'
}

# xsite CMD...: the built command on the head, with the testbed's copy of
# the library and config (a clone in /tmp is not visible in the testbed)
xsite() {
	xt_place "$XT_XSITE" "$XT_STATE/work/xsite"
	on_head env XSITE_LUADIR="$XT_LUADIR" lua5.1 "$XT_STATE/work/xsite" \
		--config "$XT_STATE/etc/xsite.conf" "$@"
}

@test "xsite replay runs the policy over the jobs in accounting under another MaxSlowdown" {
	local pinned spanned
	# the default profile (medium) pins 2 nodes; the low class may span
	run -0 --separate-stderr on_head sbatch --parsable -N2 -o /dev/null --wrap true
	pinned=${lines[-1]}
	run -0 --separate-stderr on_head sbatch --parsable -N2 --comm-profile=low -o /dev/null --wrap true
	spanned=${lines[-1]}
	# until slurmdbd has both jobs ended, with the record job_submit.lua
	# wrote (the admin comment can reach the database after the state; on
	# a loaded machine, in CI, it once took more than 30 s)
	local done=0
	for _ in $(seq 1 600); do
		run -0 on_head sacct -a -X -n -P -S 2000-01-01 -j "$pinned,$spanned" -o State,AdminComment
		done=$(grep -c '^COMPLETED|.*xsite v=1 ' <<<"$output" || true)
		((done == 2)) && break
		sleep 0.1
	done
	printf '# jobs %s and %s in slurmdbd: %s\n' "$pinned" "$spanned" "$output" >&3
	assert_equal "$done" 2
	# under the policy in force nothing changes
	run -0 xsite replay --since 2000-01-01
	refute_line --regexp '^  job '
	# the jobs that may span, over their times from sacct (Start, End),
	# against the link's share in percent (no License= here)
	assert_line --regexp "^  the link's license \(percent of the link\) of 100 units: [1-9][0-9]* jobs? allowed to span held at most [1-9][0-9]* at once; none would have waited for the link\$"
	# under MaxSlowdown 2 the pinned job (slowdown 1.15) may span, the other stays
	run -0 xsite replay --since 2000-01-01 --max-slowdown 2
	printf '# %s\n' "${lines[@]}" >&3
	assert_line --regexp "^  job $pinned: pin -> span \(slowdown 1\.[0-9]+x\)\$"
	refute_line --regexp "^  job $spanned: "
	run -0 xsite replay --since 2000-01-01 --max-slowdown 2 --json
	assert_output --partial "{\"after\":\"span\",\"before\":\"pin\",\"id\":\"$pinned\","
}

@test "xsite replay refuses a bad --max-slowdown and names it" {
	run -2 xsite replay --max-slowdown 0.5
	assert_output 'xsite replay: --max-slowdown: must be at least 1.0'
}

@test "down stops the database with everything else" {
	local pid
	pid=$(cat "$XT_STATE/run/mariadb.pid")
	[[ -d /proc/$pid ]]
	run -0 tb down
	# gone, or a zombie waiting for init to reap it
	[[ ! -d /proc/$pid || $(awk '/^State:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) == Z ]]
	[[ ! -e $XT_STATE ]]
}
