#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2154
# (SC2016: the quoted $... run on the head; SC2154: bats sets $stderr)
# The link is shared: with License=xsite_link:100 on xsite.conf's link line
# (and Licenses=xsite_link:100 in slurm.conf, which the testbed writes from
# it), every job the policy lets span holds its predicted share of the link
# as Slurm licenses, and Slurm itself starts no more spanning work than the
# link carries.  Judged by what Slurm does with the jobs (their state,
# Reason, Licenses and NodeList in squeue and scontrol), as a real
# unprivileged user where the user is the adversary.
#
# xsite.submit re-reads the link state at most every 5 s: each change of it
# is followed by 6 s of sleep.

bats_require_minimum_version 1.5.0

U=xsite-l1

# A profile whose share of the testbed's link (1 Gbit/s, 1 ms) at 1+1 nodes
# is 39 of the 100 units: two such jobs fit, three do not.
P39=op=1e13,b=10GB,x=40GB,steps=10,pattern=halo1d

# as CMD...: CMD on the head as the user, from the user's directory
as() {
	xt_as "$U" "$@"
}

# span_job [SBATCH OPTION...]: a job of 1+1 nodes, one core each, asking to
# span with profile P39, held for 5 minutes; prints its id
span_job() {
	as sbatch --parsable -N2 --ntasks-per-node=1 -c1 -t 5 -o /dev/null \
		--site-affinity=span --comm-profile="$P39" "$@" --wrap 'sleep 300' | tail -n 1
}

# field ID FIELD: a field of squeue's long form (%T state, %r reason, %N nodes)
field() {
	on_head squeue -h -t all -j "$1" -o "$2"
}

# licenses ID: the job's licenses as scontrol shows them ("(null)": none)
licenses() {
	on_head scontrol show job "$1" | tr ' ' '\n' | sed -n 's/^Licenses=//p'
}

# update ARGS...: scontrol update as the user (EAGAIN tried again: helpers.bash)
update() {
	xt_scontrol_as "$U" update "$@"
}

setup_file() {
	load helpers
	xt_init shared-link
	xt_user "$U"
	export XT_CONFIG=$BATS_FILE_TMPDIR/shared-link.conf
	sed -E 's/^(LinkName=.*)$/\1 License=xsite_link:100/' "$XT_REPO/site-configs/testbed.conf" >"$XT_CONFIG"
	grep -q ' License=xsite_link:100$' "$XT_CONFIG"
	xt_up
	mkdir -p "$XT_STATE/work/$U"
	chown "$U:" "$XT_STATE/work/$U"
}

teardown_file() {
	load helpers
	xt_init shared-link
	xt_down
	xt_users_remove
}

setup() {
	load helpers
	load_libs
}

teardown() {
	on_head scancel -u "$U" 2>/dev/null || true
	on_head scancel -u root 2>/dev/null || true
	if [[ -e $XT_STATE/run/link.state ]]; then
		rm -f "$XT_STATE/run/link.state"
		sleep 6
	fi
	wait_idle 60 alpha1 alpha2 beta1 beta2
}

@test "slurm.conf declares the link's license as xsite.conf has it, and xsite check agrees" {
	run -0 on_head scontrol show license xsite_link
	assert_output --regexp 'LicenseName=xsite_link.*Total=100 Used=0'
	run -0 "$XT_XSITE" check "$XT_STATE/etc/xsite.conf"
	assert_output --partial " as 100 licenses xsite_link, "
}

@test "three spanning jobs whose shares sum above the link: the third waits for Licenses, and starts when one ends" {
	local a b c
	# one core of each node taken by a spanning job: a third finds cores
	# at both sites, and a job pinned to one site finds two nodes there
	a=$(span_job -w alpha1,beta1)
	b=$(span_job -w alpha2,beta2)
	c=$(span_job)
	wait_state "$a" RUNNING
	wait_state "$b" RUNNING
	wait_state "$c" PENDING Licenses
	assert_equal "$(licenses "$a")" "xsite_link:39"
	assert_equal "$(licenses "$c")" "xsite_link:39"
	run -0 on_head scontrol show license xsite_link
	assert_output --regexp 'Total=100 Used=78 '
	run -0 field "$a" %N
	assert_output 'alpha1,beta1'
	# a job pinned to one site asks for no license and starts meanwhile
	local p
	p=$(as sbatch --parsable -N2 --ntasks-per-node=1 -c1 -t 5 -o /dev/null --comm-profile=high --wrap 'sleep 300' |
		tail -n 1)
	wait_state "$p" RUNNING
	assert_equal "$(licenses "$p")" "(null)"
	run -0 field "$p" %N
	assert_output --regexp '^(alpha\[1-2\]|beta\[1-2\])$'
	# the first spanning job ends: the third starts
	on_head scancel "$a"
	wait_state "$c" RUNNING
	run -0 field "$b" %T
	assert_output RUNNING
}

@test "the user cannot hold less of the link: --licenses naming it is refused, a change of licenses gets the share back" {
	run -1 --separate-stderr as sbatch -N2 -t 1 -o /dev/null --site-affinity=span --licenses=xsite_link:1 \
		--wrap true
	assert_equal "$output" ""
	run -0 grep -c "xsite: job rejected: --licenses 'xsite_link:1': xsite_link is the link's share" <<<"$stderr"
	# in any case, and next to other licenses
	run -1 as sbatch -N2 -t 1 -o /dev/null --licenses=XSITE_LINK:1 --wrap true
	assert_output --partial "xsite: job rejected: --licenses 'XSITE_LINK:1': xsite_link is the link's share"
	# a held spanning job: its owner changes its licenses, the share comes back
	local j
	j=$(span_job --hold)
	assert_equal "$(licenses "$j")" "xsite_link:39"
	run -1 update JobId="$j" Licenses=xsite_link:1
	assert_equal "$(licenses "$j")" "xsite_link:39"
	update JobId="$j" Licenses=
	assert_equal "$(licenses "$j")" "xsite_link:39"
	update JobId="$j" NumNodes=2
	assert_equal "$(licenses "$j")" "xsite_link:39"
}

@test "root's change of a job's licenses stands as given, and the record says override" {
	local j
	j=$(span_job --hold)
	on_head scontrol update JobId="$j" Licenses=xsite_link:5
	assert_equal "$(licenses "$j")" "xsite_link:5"
	run -0 on_head scontrol show job "$j"
	assert_output --partial " override=0"
}

@test "a link cut while jobs hold licenses: they keep them and run on; nothing new spans, none asks" {
	local a b p
	a=$(span_job)
	wait_state "$a" RUNNING
	printf 'State=down\n' >"$XT_STATE/run/link.state"
	sleep 6
	# the running job keeps its licenses
	run -0 on_head scontrol show license xsite_link
	assert_output --regexp 'Used=39 '
	assert_equal "$(field "$a" %T)" RUNNING
	# a job within the limit that could span is pinned and holds nothing
	p=$(as sbatch --parsable -N2 --ntasks-per-node=1 -c1 -t 5 -o /dev/null --comm-profile=low --wrap 'sleep 300' |
		tail -n 1)
	wait_state "$p" RUNNING
	assert_equal "$(licenses "$p")" "(null)"
	run -0 field "$p" %N
	assert_output --regexp '^(alpha\[1-2\]|beta\[1-2\])$'
	# the link back: a spanning job holds its share again
	rm -f "$XT_STATE/run/link.state"
	sleep 6
	b=$(span_job)
	assert_equal "$(licenses "$b")" "xsite_link:39"
}

@test "a slower link measured: later jobs ask for more units, jobs holding licenses keep theirs, no restart" {
	local a b pid
	pid=$(cat "$XT_STATE/run/slurmctld.daemon.pid")
	a=$(span_job)
	wait_state "$a" RUNNING
	# what xsite calibrate writes: half the bandwidth
	printf 'State=degraded Bandwidth=62.5MB/s\n' >"$XT_STATE/run/link.state"
	sleep 6
	b=$(span_job --hold)
	local want
	want=$("$XT_XSITE" --config "$XT_STATE/etc/xsite.conf" explain --nodes 2 --site-affinity span \
		--comm-profile "$P39" --json | jq -r .licenses)
	[[ $want =~ ^xsite_link:([0-9]+)$ ]]
	((BASH_REMATCH[1] > 39))
	assert_equal "$(licenses "$b")" "$want"
	assert_equal "$(licenses "$a")" "xsite_link:39"
	assert_equal "$(cat "$XT_STATE/run/slurmctld.daemon.pid")" "$pid"
}

@test "a pending job its owner changes so that it no longer spans gives its share of the link back" {
	local j
	# profile low is within MaxSlowdown: it may span and holds 1 unit
	j=$(as sbatch --parsable -N2 --ntasks-per-node=1 -c1 -t 5 -o /dev/null --comm-profile=low --hold \
		--wrap 'sleep 300' | tail -n 1)
	assert_equal "$(licenses "$j")" "xsite_link:1"
	# its owner names a site: pinned there, and the license goes
	update JobId="$j" Features=site_alpha
	run -0 licenses "$j"
	refute_output --partial xsite_link
	on_head scontrol release "$j"
	wait_state "$j" RUNNING
	run -0 field "$j" %N
	assert_output 'alpha[1-2]'
	run -0 on_head scontrol show license xsite_link
	assert_output --regexp 'Total=100 Used=0 '
}

# wait_load USED: until the testbed's xsite load (every 5 s, and slower on
# a loaded machine: up to 60 s here) has written Used=USED for the link's
# license, then 6 s for job_submit's cache
wait_load() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q "^License=xsite_link Total=100 Used=$1[ $]" "$XT_STATE/run/link.load" 2>/dev/null && break
		sleep 0.1
	done
	run -0 grep "^License=xsite_link Total=100 Used=$1[ $]" "$XT_STATE/run/link.load"
	sleep 6
}

@test "all the link's licenses held: a job that could span goes to a site that is free now; one no site holds waits for them" {
	local blocker p o
	# root holds all 100 units on one node of alpha, for at most 5 minutes
	blocker=$(on_head sbatch --parsable -N1 -w alpha1 -c1 -t 5 -o /dev/null --licenses=xsite_link:100 \
		--wrap 'sleep 300' | tail -n 1)
	wait_state "$blocker" RUNNING
	wait_load 100
	# what xsite load (the testbed's timer) sees, as the admin reads it
	xt_place "$XT_XSITE" "$XT_STATE/work/xsite"
	run -0 on_head env XSITE_LUADIR="$XT_LUADIR" lua5.1 "$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" load
	assert_line --regexp "^link's license xsite_link: 100 of 100 held; free: 0 now, 100 in [45] min\$"
	assert_line --regexp '^site alpha: 2 nodes; free: 1 now, 2 in [45] min$'
	assert_line 'site beta: 2 nodes; free: 2 now'
	# a job of 2 nodes that may span (profile low): beta's two nodes are
	# free now, the link's units in 5 minutes: pinned, and it starts
	run -0 --separate-stderr as sbatch --parsable -N2 --ntasks-per-node=1 -c1 -t 5 -o /dev/null \
		--comm-profile=low --wrap 'sleep 300'
	p=$(tail -n 1 <<<"$output")
	run -0 grep -c "xsite: pinned to one site (alpha or beta): the link's licenses are held by other jobs: 100 of 100 held, this job needs 1 and would wait about [0-9]* min for them; site beta has 2 nodes free now, so one site finishes sooner" <<<"$stderr"
	wait_state "$p" RUNNING
	assert_equal "$(licenses "$p")" "(null)"
	run -0 field "$p" %N
	assert_output --regexp '^(alpha\[1-2\]|beta\[1-2\])$'
	run -0 on_head scontrol show job "$p"
	assert_output --partial " why=link-busy "
	# a job of 3 nodes, more than a site has: it spans, told that it waits
	# for the link, and Slurm holds it back for Licenses
	run -0 --separate-stderr as sbatch --parsable -N3 --ntasks-per-node=1 -c1 -t 5 -o /dev/null \
		--comm-profile=low --wrap 'sleep 300'
	o=$(tail -n 1 <<<"$output")
	run -0 grep -c "xsite: may span both sites: .*; the link's licenses are held by other jobs: 100 of 100 held, this job needs 1 and would wait about [0-9]* min for them; one site would take longer, so spanning finishes sooner" <<<"$stderr"
	wait_state "$o" PENDING Licenses
	assert_equal "$(licenses "$o")" "xsite_link:1"
	# the link's units come free: it starts
	on_head scancel "$blocker"
	wait_state "$o" RUNNING
}

# last in this file: it changes the testbed's slurm.conf and xsite.conf
@test "the link's count changed at run time (both files, scontrol reconfigure): held licenses stay, later jobs ask in the new units" {
	local a b want
	a=$(span_job)
	wait_state "$a" RUNNING
	assert_equal "$(licenses "$a")" "xsite_link:39"
	sed -i 's/xsite_link:100/xsite_link:50/' "$XT_STATE/etc/xsite.conf" "$XT_STATE/etc/slurm.conf"
	run -0 grep -c 'xsite_link:50' "$XT_STATE/etc/xsite.conf" "$XT_STATE/etc/slurm.conf"
	on_head scontrol reconfigure
	sleep 6
	run -0 on_head scontrol show license xsite_link
	assert_output --regexp 'Total=50 Used=39 '
	assert_equal "$(licenses "$a")" "xsite_link:39"
	assert_equal "$(field "$a" %T)" RUNNING
	want=$("$XT_XSITE" --config "$XT_STATE/etc/xsite.conf" explain --nodes 2 --site-affinity span \
		--comm-profile "$P39" --json | jq -r .licenses)
	assert_equal "$want" "xsite_link:20"
	run -0 --separate-stderr span_job --hold
	b=$output
	assert_equal "$(licenses "$b")" "xsite_link:20"
	run -0 grep -c "it holds 20 of the link's 50 licenses (xsite_link)" <<<"$stderr"
}
