#!/usr/bin/env bats
# shellcheck shell=bash
# xsite calibrate on the testbed: it measures the emulated link through
# Slurm, writes the link state file, and the policy's next decision follows
# the measured link: a slower link pins a job that spanned, a cut link is
# "down" and pins every job that fits one site.

bats_require_minimum_version 1.5.0

# xsite CMD...: the built command on the head, with the testbed's copy of the
# library (a clone in /tmp is not visible in the testbed's namespaces); in an
# installed run the installed command and library (helpers.bash)
xsite() {
	on_head env XSITE_LUADIR="$XT_LUADIR" XSITE_PINGPONG="$XT_STATE/work/pingpong" \
		lua5.1 "$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" "$@"
}

# A 3-D halo code of 2 nodes that spans within 10 % at 1 ms one way and not
# at 5 ms (the synchronising steps pay the link latency).
PROFILE=op=2e13,b=10GB,x=2GB,steps=20000,pattern=halo1d

# record_of JOBID: the job's admin_comment
record_of() {
	on_head scontrol show job "$1" | sed -n 's/^ *AdminComment=//p'
}

setup_file() {
	load helpers
	xt_init calibrate
	xt_up
	build_pingpong
	xt_place "$XT_XSITE" "$XT_STATE/work/xsite"
}

teardown_file() {
	load helpers
	xt_init calibrate
	tb link restore >/dev/null 2>&1 || true
	xt_down
}

setup() {
	load helpers
	load_libs
	xt_init calibrate
}

@test "calibrate measures the configured link as up and writes the state file" {
	run -0 xsite calibrate --min-bandwidth-share 0.2
	printf '# %s\n' "${lines[@]}" >&3
	assert_line --regexp '^xsite: link alpha1-beta1: 1\.[0-9]+ ms one way \(configured 1 ms\), .*: up, within the thresholds$'
	assert_line "xsite: wrote $XT_STATE/run/link.state"
	run -0 grep -E '^Version=1 State=up Bandwidth=[0-9.e+]+B/s Latency=0\.00[0-9]+s Time=[0-9]+$' "$XT_STATE/run/link.state"
}

@test "the policy uses the measured link: a 5 ms link pins a job that spanned at 1 ms" {
	run -0 xsite calibrate --min-bandwidth-share 0.2
	run -0 --separate-stderr on_head sbatch --parsable -H -N2 --comm-profile="$PROFILE" --wrap true
	assert_equal "$(record_of "$output" | grep -o 'action=[a-z]*')" "action=span"
	on_head scancel "$output"

	tb link set --latency 5ms 2>&1 | tap_note
	run -1 xsite calibrate --min-bandwidth-share 0.2
	assert_line --regexp 'degraded, latency 5\.[0-9]+ ms is above 2 times the configured 1 ms$'
	run -0 grep -E '^Version=1 State=degraded .*Latency=0\.005[0-9]*s' "$XT_STATE/run/link.state"
	# xsite.submit reads the state file again after at most 5 s
	sleep 6
	run -0 --separate-stderr on_head sbatch --parsable -H -N2 --comm-profile="$PROFILE" --wrap true
	assert_equal "$(record_of "$output" | grep -oE 'action=[a-z]+ why=[a-z-]+')" "action=pin why=slowdown"
	assert_equal "$(record_of "$output" | grep -oE 'link=[a-z]+,[^,]+,[0-9.e-]+,[a-z]+' | cut -d, -f1,4)" \
		"link=degraded,measured"
	on_head scancel "$output"
	tb link set --latency 1ms 2>&1 | tap_note
}

@test "a cut link is calibrated down and new jobs are pinned" {
	tb link cut 2>&1 | tap_note
	run -1 xsite calibrate --timeout 15
	printf '# %s\n' "${lines[@]}" >&3
	assert_line --regexp '^xsite: link alpha1-beta1: down: the ping-pong across the link failed'
	run -0 grep -E '^Version=1 State=down Time=[0-9]+$' "$XT_STATE/run/link.state"
	sleep 6
	run -0 --separate-stderr on_head sbatch --parsable -H -N2 --comm-profile=low --wrap true
	assert_equal "$(record_of "$output" | grep -oE 'action=[a-z]+ why=[a-z-]+')" "action=pin why=link-down"
	on_head scancel "$output"
	tb link restore 2>&1 | tap_note
	run -0 xsite calibrate --min-bandwidth-share 0.2
	assert_line --partial ': up, '
}

@test "calibrate refuses nodes of one site and names the option" {
	run -2 xsite calibrate --nodes alpha1,alpha2
	assert_output "xsite calibrate: --nodes: 'alpha1,alpha2' is not one node of each site, e.g. alpha1,beta1"
}

@test "xsite replay without accounting says so" {
	run -1 xsite replay
	assert_output --regexp '^xsite replay: sacct failed \(is accounting through slurmdbd configured\?\): '
}

@test "xsite report without accounting takes the decision from slurmctld" {
	local id
	id=$(on_head sbatch --parsable -N2 --comm-profile=low -o /dev/null --wrap 'srun true' | tail -n 1)
	wait_job "$id"
	for _ in $(seq 1 50); do
		grep -qs '"step":"batch"' "$XT_STATE/reports/$id/report.json" && break
		sleep 0.1
	done
	run -0 --separate-stderr xsite report "$id"
	assert_line "job $id (root), COMPLETED"
	assert_line --regexp '^  decision:   (span|pin) \([a-z-]+\), predicted slowdown [0-9.]+ at submission$'
	assert_line --regexp '^  verdict:    '
}
