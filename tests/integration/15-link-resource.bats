#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2154
# (SC2016: the quoted $... run on the head; SC2154: bats sets $stderr)
# The link's capacity as a license slurmdbd keeps (License=xsite_link@slurmdbd
# on xsite.conf's link line, the resource made with sacctmgr): spanning jobs
# hold their share of it, and the admin changes its count at run time with
# sacctmgr, with no restart and no change of slurm.conf.  Judged by what
# Slurm does with the jobs (scontrol show license, the jobs' Licenses).

bats_require_minimum_version 1.5.0

U=xsite-r1
LIC=xsite_link@slurmdbd

# as in 14-shared-link: 39 units of 100 at 1+1 nodes
P39=op=1e13,b=10GB,x=40GB,steps=10,pattern=halo1d

as() {
	xt_as "$U" "$@"
}

span_job() {
	as sbatch --parsable -N2 --ntasks-per-node=1 -c1 -t 5 -o /dev/null \
		--site-affinity=span --comm-profile="$P39" --wrap 'sleep 300' | tail -n 1
}

licenses() {
	on_head scontrol show job "$1" | tr ' ' '\n' | sed -n 's/^Licenses=//p'
}

# wait_license WORD: until slurmctld shows the license with WORD (e.g.
# Total=50: slurmdbd pushes a change of the resource; Used=0: a cancelled
# job has let go of its share), 30 s at most
wait_license() {
	local i
	for ((i = 0; i < 300; i++)); do
		on_head scontrol show license "$LIC" 2>/dev/null | grep -q "$1 " && return 0
		sleep 0.1
	done
	on_head scontrol show license "$LIC" >&2 || true
	return 1
}

# resource ARGS...: sacctmgr on the resource (the cluster's share of it is
# "Allowed" from Slurm 23.11 on, "PercentAllowed" before: a percentage)
resource() {
	on_head sacctmgr -i "$@"
}

setup_file() {
	load helpers
	xt_init link-resource
	local cluster
	xt_need_accounting || return 0
	xt_user "$U"
	export XT_CONFIG=$BATS_FILE_TMPDIR/link-resource.conf
	sed -E "s/^(LinkName=.*)\$/\\1 License=$LIC:100/" "$XT_REPO/site-configs/testbed.conf" >"$XT_CONFIG"
	xt_up --accounting || return 1
	mkdir -p "$XT_STATE/work/$U"
	chown "$U:" "$XT_STATE/work/$U"
	cluster=$(on_head scontrol show config | sed -n 's/^ClusterName *= *//p')
	if ! resource add resource name=xsite_link server=slurmdbd type=license count=100 \
		cluster="$cluster" allowed=100 >"$BATS_FILE_TMPDIR/sacctmgr.out" 2>&1; then
		resource add resource name=xsite_link server=slurmdbd type=license count=100 \
			cluster="$cluster" percentallowed=100
	fi
}

teardown_file() {
	load helpers
	xt_init link-resource
	xt_down
	xt_users_remove
}

setup() {
	load helpers
	load_libs
	xt_init link-resource
	[[ -z ${XT_SKIP:-} ]] || skip "$XT_SKIP"
}

teardown() {
	[[ -n ${XT_SKIP:-} ]] && return 0
	on_head scancel -u "$U" 2>/dev/null || true
	# a cancelled job holds its share until it has ended (on a loaded
	# machine, after the next test has started its own)
	wait_license Used=0
}

@test "a license slurmdbd keeps: slurmctld has it, xsite check takes it, a spanning job holds its share" {
	wait_license Total=100
	run -0 "$XT_XSITE" check "$XT_STATE/etc/xsite.conf"
	local a
	a=$(span_job)
	assert_equal "$(licenses "$a")" "$LIC:39"
	wait_state "$a" RUNNING
	run -0 on_head scontrol show license "$LIC"
	assert_output --regexp 'Total=100 Used=39 '
}

@test "sacctmgr changes the count at run time: held licenses stay, Slurm holds the next spanning jobs to the new count" {
	local a b
	wait_license Total=100
	a=$(span_job)
	assert_equal "$(licenses "$a")" "$LIC:39"
	wait_state "$a" RUNNING
	# the admin gives the link half its units (half the link reserved);
	# the cluster keeps 100 % of the resource
	resource modify resource name=xsite_link server=slurmdbd set count=50
	wait_license Total=50
	run -0 on_head scontrol show license "$LIC"
	assert_output --regexp 'Total=50 Used=39 '
	assert_equal "$(licenses "$a")" "$LIC:39"
	# a second job of 39 no longer fits beside it: it waits for Licenses
	b=$(span_job)
	assert_equal "$(licenses "$b")" "$LIC:39"
	wait_state "$b" PENDING Licenses
	# the first ends: the second starts
	on_head scancel "$a"
	wait_state "$b" RUNNING
}
