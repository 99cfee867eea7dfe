#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2154
# (SC2016: the quoted $... run on the head; SC2154: bats sets $stderr)
# Enforce mode against a hostile job owner, on the testbed: a real
# unprivileged user tries every way around a pin (docs/security.md, "What
# Mode=enforce promises"): counted and bracketed constraints, a site named
# inside an OR, node ranges, --nodelist at both sites (link up and down),
# scontrol update of a pending job (also one Slurm applies in part, and a
# node count changed through libslurm, which takes what scontrol refuses),
# heterogeneous jobs, --prefer, task counts that Slurm may spread, counts
# without -N, GPUs for the whole job, --dependency=expand, huge node lists
# and a flood of distinct profiles.  Every test judges by where the job
# actually ran (its NodeList, the nodes' site features) or by the refusal
# sbatch printed, never by xsite's record.  The last test is a generator
# of random submissions and updates mixing all of these.
#
# The file's configuration: the testbed's, with OversizeAction=reject and
# MaxSlowdown=1.0, so that no job of this user may span whatever its shape;
# then any job found at both sites is a pin lost.

bats_require_minimum_version 1.5.0

U=xsite-h1

# as CMD...: CMD on the head as the hostile user, from the user's directory
as() {
	xt_as "$U" "$@"
}

# update ARGS..., release ID...: scontrol update, scontrol release as the
# user (EAGAIN tried again: helpers.bash)
update() {
	xt_scontrol_as "$U" update "$@"
}

release() {
	xt_scontrol_as "$U" release "$@"
}

# try OPTION...: sbatch as the user (a short job); sets JOB (empty when
# refused) and TOLD (what sbatch printed on stderr)
try() {
	local err
	err=$(mktemp)
	JOB=$(as sbatch --parsable -t 1 -o /dev/null "$@" 2>"$err" | tail -n 1) || JOB=
	TOLD=$(cat "$err")
	rm -f "$err"
	[[ $JOB =~ ^[0-9]+ ]] || JOB=
	JOB=${JOB%%;*}
}

# ran_at ID [SECONDS]: the sites the job (every component of a het job,
# every task of an array) ran at, "alpha", "beta" or "alpha+beta"; waits
# (up to 60 s: CI runs two testbeds on 2 cores) until it has run and is not
# COMPLETING (Slurm gives a completing job's node list as the nodes still
# completing), each part on its nodes, in one answer of squeue (one that
# failed is asked again); "" for a job still PENDING after SECONDS (default
# 60).  Its state, nodes and record on stderr (bats shows them when the
# test fails).
ran_at() {
	local i out='' state='' nodes='' pending=$((${2:-60} * 10))
	for ((i = 0; i < 600; i++)); do
		out=$(on_head squeue -h -t all -j "$1" -o '%T|%N' 2>/dev/null) || out=
		state=$(cut -d'|' -f1 <<<"$out" | sort -u | paste -sd,)
		nodes=$(cut -s -d'|' -f2 <<<"$out" | paste -sd,)
		[[ -n $out && ! $state =~ PENDING|CONFIGURING|COMPLETING && $out != *'|' && $out != *$'|\n'* ]] &&
			break
		((i >= pending)) && [[ $state == PENDING ]] && break
		sleep 0.1
	done
	((i < 600)) || printf 'job %s has not run after 60 s\n' "$1" >&2
	printf 'job %s: %s on "%s"; %s\n' "$1" "$state" "$nodes" "$(record_of "$1")" >&2
	sites_of_nodes "$nodes"
}

# sites_of_nodes NODELIST...: the sites of the testbed's nodes named
sites_of_nodes() {
	local node out=()
	[[ -n ${1//,/} ]] || return 0
	for node in $(on_head scontrol show hostnames "$1"); do
		case $node in
		alpha*) out+=(alpha) ;;
		beta*) out+=(beta) ;;
		esac
	done
	printf '%s\n' "${out[@]}" | sort -u | paste -sd+
}

# one_site ID: the job ran, at one site
one_site() {
	local at
	at=$(ran_at "$1")
	[[ $at == alpha || $at == beta ]] || {
		printf 'job %s ran at "%s"\n' "$1" "$at" >&2
		return 1
	}
}

# not_both ID: the job is not at both sites: it ran at one (judged once
# it is not COMPLETING, see ran_at), or after 5 s it still waits (a shape
# only both sites could hold, pinned)
not_both() {
	local at
	at=$(ran_at "$1" 5)
	[[ $at != *+* ]] || {
		printf 'job %s ran at %s\n' "$1" "$at" >&2
		return 1
	}
}

# refused FLAG: the last try was refused with one xsite line naming FLAG
refused() {
	[[ -z $JOB ]] || {
		printf 'job %s was accepted: %s\n' "$JOB" "$TOLD" >&2
		on_head scancel "$JOB" || true
		return 1
	}
	grep -q -- "xsite: job rejected: .*$1" <<<"$TOLD" || {
		printf 'refused without an xsite line naming %s: %s\n' "$1" "$TOLD" >&2
		return 1
	}
}

setup_file() {
	load helpers
	xt_init hostile
	xt_user "$U"
	export XT_CONFIG=$BATS_FILE_TMPDIR/hostile.conf
	sed -E -e 's/^OversizeAction=.*/OversizeAction=reject/' -e 's/^MaxSlowdown=.*/MaxSlowdown=1.0/' \
		"$XT_REPO/site-configs/testbed.conf" >"$XT_CONFIG"
	grep -q '^OversizeAction=reject$' "$XT_CONFIG"
	grep -q '^MaxSlowdown=1.0$' "$XT_CONFIG"
	# two GPUs a node, for --gpus (device files that are /dev/null's)
	xt_up --gpus 2
	mkdir -p "$XT_STATE/work/$U"
	chown "$U:" "$XT_STATE/work/$U"
	# features of the user's own choice: every node "ib", one node a site "big"
	on_head scontrol update NodeName=alpha1 AvailableFeatures=site_alpha,ib,big ActiveFeatures=site_alpha,ib,big
	on_head scontrol update NodeName=beta1 AvailableFeatures=site_beta,ib,big ActiveFeatures=site_beta,ib,big
	on_head scontrol update NodeName=alpha2 AvailableFeatures=site_alpha,ib ActiveFeatures=site_alpha,ib
	on_head scontrol update NodeName=beta2 AvailableFeatures=site_beta,ib ActiveFeatures=site_beta,ib
	# a second partition over every node, for Partition= updates; a third
	# that runs no job on fewer than two nodes
	on_head scontrol create PartitionName=other Nodes=ALL
	on_head scontrol create PartitionName=wide Nodes=ALL MinNodes=2
	# a job owner's own libslurm program, for what scontrol does not send
	gcc -O2 -o "$XT_STATE/work/job-update" "$XT_REPO/tests/integration/job-update.c" -lslurm
}

teardown_file() {
	load helpers
	xt_init hostile
	xt_down
	xt_users_remove
}

setup() {
	load helpers
	load_libs
	xt_init hostile
}

teardown() {
	on_head scancel -u "$U" 2>/dev/null || true
	rm -f "$XT_STATE/run/link.state"
	# a test that changed xsite.conf and failed midway
	if [[ -e $BATS_TEST_TMPDIR/xsite.conf ]] && ! cmp -s "$BATS_TEST_TMPDIR/xsite.conf" "$XT_STATE/etc/xsite.conf"; then
		cp "$BATS_TEST_TMPDIR/xsite.conf" "$XT_STATE/etc/xsite.conf"
		sleep 6
	fi
}

# sites_printed: the sites of the host names on stdin
sites_printed() {
	sed -E 's/[0-9]+$//' | sort -u | paste -sd+
}

@test "srun and salloc outside an allocation are held to the pin as sbatch is" {
	run -0 --separate-stderr as srun -N2 --constraint='site_alpha|ib' hostname
	[[ $(wc -l <<<"$output") == 2 && $(sites_printed <<<"$output") != *+* ]]
	run -0 --separate-stderr as srun -N1-4 hostname
	[[ $(sites_printed <<<"$output") != *+* ]]
	run -0 --separate-stderr as salloc -N1-4 srun hostname
	[[ $(sites_printed <<<"$output") != *+* ]]
	run ! --separate-stderr as srun -N2 -w alpha1,beta1 hostname
	[[ $stderr == *"xsite: job rejected: --nodelist names nodes at both sites"* ]]
}

@test "1: a bracketed or counted constraint does not carry a pinned job across" {
	try -N2 --constraint '[site_alpha*1&site_beta*1]' --wrap true
	refused "--constraint '\[site_alpha\*1&site_beta\*1\]': it has a node count"
	try -N2 --constraint '[big|ib]' --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	try -N2 --constraint '[(big&ib)|ib]&ib' --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	try -N2 --constraint 'ib*2' --wrap true
	refused "--constraint 'ib\*2'"
}

@test "2: a site named inside an OR or with a count is no choice of site" {
	try -N2 --constraint 'site_alpha|ib' --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	try -N2 --constraint 'site_alpha*1' --wrap true
	refused "--constraint 'site_alpha\*1'"
	# Slurm evaluates left to right: (site_beta|ib)&big is alpha1 or beta1
	try -N2 --constraint 'site_beta|ib&big' --wrap true
	if [[ -n $JOB ]]; then one_site "$JOB"; fi
}

@test "3: a node range is decided on its top and kept at one site" {
	try -N1-4 --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	try -n4 --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	try -n4 --ntasks-per-node=1 --wrap true
	refused "no single site has 4 nodes"
}

@test "4: scontrol update of a pending job cannot remove or sidestep the pin" {
	local change
	for change in 'Features=ib' 'Features=' 'NumNodes=1-4' 'Partition=other' 'ExcNodeList=alpha1' \
		'Features=site_beta|ib'; do
		try -H -N2 --wrap true
		[[ -n $JOB ]]
		update JobId="$JOB" "$change"
		release "$JOB"
		one_site "$JOB"
	done
	# a node list of as many nodes at each site as the submission's
	try -H -N2 -w beta2 --wrap true
	[[ -n $JOB ]]
	update JobId="$JOB" ReqNodeList=beta1
	release "$JOB"
	one_site "$JOB"
	# updates that would make it span are refused, naming what; so is a
	# node list the job's record does not have (every later change is
	# decided from the record's)
	for change in 'Features=[site_alpha*1&site_beta*1]' 'ReqNodeList=alpha1,beta1' 'ReqNodeList=beta1'; do
		try -H -N2 --wrap true
		[[ -n $JOB ]]
		run ! update JobId="$JOB" "$change"
		release "$JOB"
		one_site "$JOB"
	done
}

@test "4: a node count's top taken away through libslurm (which scontrol refuses to send) keeps the job's shape" {
	local upd=$XT_STATE/work/job-update
	# three tasks on one node of two CPUs (--overcommit: Slurm counts a CPU
	# a node, not a task); alpha2 and beta2 excluded, so two nodes are
	# alpha1 and beta1
	try -H -N1 -n3 -O -x alpha2,beta2 --wrap true
	[[ -n $JOB ]]
	# no top (0 or INFINITE) without the task count: Slurm would give the
	# job a node a task, and the job record xsite sees has no task count
	run as "$upd" "$JOB" min_nodes=1 max_nodes=0
	((status == 1))
	run as "$upd" "$JOB" min_nodes=1 max_nodes=infinite
	((status == 1))
	# with it, decided on it: two tasks, two nodes at most, pinned (the
	# site first, as for any change that pins a one-node job)
	update JobId="$JOB" 'Features=[site_alpha|site_beta]'
	as "$upd" "$JOB" min_nodes=1 max_nodes=0 num_tasks=2
	release "$JOB"
	one_site "$JOB"
}

@test "GPUs for the whole job (--gpus) do not span" {
	# four GPUs, two a node (the testbed's: --gpus 2): two nodes, alpha1 and
	# beta1 once alpha2 and beta2 are excluded.  (A job of --ntasks-per-gpu
	# sent through libslurm without the task count sbatch works out is
	# refused by Slurm itself on 22.05 and 24.11.)
	try --gpus=4 -x alpha2,beta2 --wrap true
	if [[ -n $JOB ]]; then
		not_both "$JOB"
		on_head scancel "$JOB"
	elif [[ $TOLD != *"xsite: job rejected"* && $TOLD != *"xsite: pinned"* ]]; then
		# (Slurm refuses a job xsite pinned where no site has the GPUs)
		printf 'refused, and not for where xsite placed it: %s\n' "$TOLD" >&2
		return 1
	fi
	# a count after '=' (as --gpus=TYPE=N is sent): Slurm 23.11 and later
	# read TresPerJob=gres/gpu=4 as four GPUs (two nodes here), 22.05
	# refuses it; a pending one-node job so changed
	try -H -x alpha2,beta2 --wrap true
	[[ -n $JOB ]]
	update JobId="$JOB" TresPerJob=gres/gpu=4 || true
	release "$JOB"
	not_both "$JOB"
	on_head scancel "$JOB"
}

@test "a count in the constraint or --prefer of a job without -N does not span" {
	# Slurm raises such a job's node count to the counts' sum
	try --constraint '[site_alpha*1&site_beta*1]' --wrap true
	if [[ -n $JOB ]]; then not_both "$JOB"; else refused "--constraint"; fi
	try --prefer '[site_alpha*1&site_beta*1]' --wrap true
	if [[ -n $JOB ]]; then not_both "$JOB"; else refused "--prefer"; fi
	try -x alpha2,beta2 --constraint 'ib*2' --wrap true
	if [[ -n $JOB ]]; then not_both "$JOB"; else refused "--constraint"; fi
}

@test "a change Slurm applies in part, or with a --prefer it refuses, keeps the pin" {
	local a2 b2 one two
	# alpha2 and beta2 taken whole: a two-node job can run only across the
	# sites
	try -N1 -w alpha2 --exclusive --wrap 'sleep 50'
	a2=$JOB
	try -N1 -w beta2 --exclusive --wrap 'sleep 50'
	b2=$JOB
	[[ -n $a2 && -n $b2 ]]
	[[ $(ran_at "$a2") == alpha && $(ran_at "$b2") == beta ]]
	# NumNodes is set first, then Nice fails (a user may not lower it):
	# before, the job kept two nodes and no site constraint
	try -H -N1 --wrap true
	one=$JOB
	[[ -n $one ]]
	run update JobId="$one" NumNodes=2-2 Nice=-1
	release "$one"
	# Features is set, then a --prefer of misordered brackets fails: before,
	# xsite raised on it and let Features=ib through, dropping the pin
	try -H -N2 --wrap true
	two=$JOB
	[[ -n $two ]]
	run update JobId="$two" Features=ib 'Prefer=x]&[y'
	release "$two"
	not_both "$one"
	not_both "$two"
	on_head scancel "$one" "$two" "$a2" "$b2"
	# the two steps xsite names instead do what the one change would
	try -H -N1 --wrap true
	[[ -n $JOB ]]
	update JobId="$JOB" 'Features=[site_alpha|site_beta]'
	update JobId="$JOB" NumNodes=2-2
	release "$JOB"
	one_site "$JOB"
}

@test "a one-node job's --prefer at both sites does not carry it across when it grows" {
	local one two
	# (each change excludes alpha2 and beta2: two nodes only across the
	# sites, alpha1 and beta1)
	# Kept at one site by its constraint, the preference at both sites:
	# before, a one-node job's preference was left as given, and a change of
	# its size that Slurm applies in part (NumNodes, then Nice fails) was
	# let through in one step, Features keeping the job at one site
	try -H -N1 --constraint=site_alpha --prefer='site_alpha|site_beta' --wrap true
	one=$JOB
	[[ -n $one ]]
	run update JobId="$one" NumNodes=2-2 ExcNodeList=alpha2,beta2 Nice=-1
	release "$one"
	# Features= that keeps the job at one site with a Prefer= Slurm refuses
	# (a feature no node has): before, Features was set and the old
	# preference at both sites stayed, for the same change next
	try -H -N1 --constraint='site_alpha|site_beta' --prefer='site_alpha|site_beta' --wrap true
	two=$JOB
	[[ -n $two ]]
	run update JobId="$two" Features=site_alpha Prefer=nosuch
	run update JobId="$two" NumNodes=2-2 ExcNodeList=alpha2,beta2 Nice=-1
	release "$two"
	not_both "$one"
	not_both "$two"
	on_head scancel "$one" "$two"
}

@test "a job Mode=enforce pinned and its owner took across under Mode=advise is pinned again once Mode=enforce is back" {
	local conf=$XT_STATE/etc/xsite.conf one two
	cp "$conf" "$BATS_TEST_TMPDIR/xsite.conf"
	# submitted under Mode=enforce: kept at one site by its constraint (the
	# record vouches for its preference), and pinned
	try -H -N1 --constraint=site_alpha --wrap true
	one=$JOB
	try -H -N2 --wrap true
	two=$JOB
	[[ -n $one && -n $two ]]
	[[ $(record_of "$one") == *keeps=prefer* && $(record_of "$two") == *' action=pin '* ]]
	sed -E 's/^Mode=.*/Mode=advise/' "$BATS_TEST_TMPDIR/xsite.conf" >"$conf.new"
	mv "$conf.new" "$conf"
	sleep 6
	# Mode=advise takes any change, and an owner's cannot touch the record
	run -0 update JobId="$one" Prefer='site_alpha|site_beta'
	run -0 update JobId="$two" Features=ib Prefer=ib
	cp "$BATS_TEST_TMPDIR/xsite.conf" "$conf.new"
	mv "$conf.new" "$conf"
	# xsite load (root, every 5 s here) has them decided again
	until_record "$one" ' keeps=prefer recheck=up'
	until_record "$two" ' action=pin .* keeps=prefer recheck=up'
	# then the change Slurm applies in part (the count, not the Nice), which
	# a job whose record vouches for its preference may make in one step
	run update JobId="$one" NumNodes=2-2 ExcNodeList=alpha2,beta2 Nice=-1
	release "$one" "$two"
	not_both "$one"
	not_both "$two"
	on_head scancel "$one" "$two"
}

@test "5: a job whose node list or choice of sites its owner changed under Mode=advise is decided again on its list" {
	local conf=$XT_STATE/etc/xsite.conf one two='' at
	cp "$conf" "$BATS_TEST_TMPDIR/xsite.conf"
	# pinned to either site, no node list in its record
	try -N2 --begin=now+40 --wrap true
	one=$JOB
	[[ -n $one ]]
	# (23.02 and later) nodes to choose from at both sites, kept at one
	# site by that site's feature
	if chooses; then
		try -N1 -w alpha1,beta1 --begin=now+40 --wrap true
		two=$JOB
		[[ -n $two ]]
	fi
	sed -E 's/^Mode=.*/Mode=advise/' "$BATS_TEST_TMPDIR/xsite.conf" >"$conf.new"
	mv "$conf.new" "$conf"
	sleep 6
	# Mode=advise takes any change, and an owner's cannot touch the record:
	# a node list the record does not have; a choice of sites, which does
	# not hold nodes the job must have (as an earlier xsite left such jobs)
	run -0 update JobId="$one" ReqNodeList=alpha1
	[[ -z $two ]] || run -0 update JobId="$two" 'Features=[site_alpha|site_beta]'
	cp "$BATS_TEST_TMPDIR/xsite.conf" "$conf.new"
	mv "$conf.new" "$conf"
	# xsite load has them decided again on the lists squeue shows, which
	# the new records have
	until_record "$one" ' wsites=alpha:1 .*recheck=up'
	[[ $(ran_at "$one" 60) == alpha ]]
	[[ -n $two ]] || return 0
	until_record "$two" ' wsites=alpha:1\+beta:1 .*recheck=up'
	# a change that fails half-way makes the nodes ones the job must have
	run update JobId="$two" Reservation=nosuch
	((status != 0))
	# (it may not run at all: both nodes, one at a site it is not kept at)
	at=$(ran_at "$two" 60)
	[[ $at != *+* ]]
}

@test "a job that would grow another (--dependency=expand) is refused" {
	try -H -N1 --wrap true
	[[ -n $JOB ]]
	local first=$JOB
	try -N1 --dependency="expand:$first" --wrap true
	refused "--dependency=expand"
	on_head scancel "$first"
}

@test "5: --nodelist at both sites is refused for a pinned job and while the link is down" {
	try -N2 -w alpha1,beta1 --wrap true
	refused "--nodelist names nodes at both sites (alpha and beta)"
	try -N2 -w 'alpha[1],beta[1]' --comm-profile=low --wrap true
	refused "--nodelist names nodes at both sites"
	printf 'State=down\n' >"$XT_STATE/run/link.state"
	sleep 6
	try -N2 -w alpha1,beta1 --site-affinity=span --wrap true
	refused "the link between the sites is down"
	# a node at one site pins the rest of the job there
	rm -f "$XT_STATE/run/link.state"
	sleep 6
	try -N2 -w beta1 --wrap true
	[[ -n $JOB ]]
	[[ $(ran_at "$JOB") == beta ]]
}

# chooses: this Slurm reads a --nodelist of more nodes than -N as the nodes
# to choose from, not nodes the job must have (23.02 and later)
chooses() {
	local v
	v=$(on_head scontrol --version)
	[[ $v =~ ([0-9]+)\.([0-9]+)\.[0-9]+ ]] || return 2
	((10#${BASH_REMATCH[1]} * 100 + 10#${BASH_REMATCH[2]} >= 2302))
}

@test "5: a --nodelist longer than -N is held to one site as Slurm reads it (nodes to choose from, or every one)" {
	# one or two nodes of two: on 22.05 both (sbatch itself refuses -N1 with
	# them), which this job may not have; later, one or both, at one site
	try -N1-2 -w alpha1,beta1 --wrap true
	if ! chooses; then
		refused "--nodelist names nodes at both sites (alpha and beta)"
		return 0
	fi
	[[ -n $JOB ]]
	one_site "$JOB"
	try -N1 -w alpha1,beta1 --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	# two of three: alpha has two of them
	try -N2 -w 'alpha[1-2],beta1' --wrap true
	[[ -n $JOB ]]
	[[ $(ran_at "$JOB") == alpha ]]
	# a node named twice counts once: two nodes the job must have
	try -N2 -w 'alpha1,alpha1,beta1' --wrap true
	refused "--nodelist names nodes at both sites"
	# three of four: no site has three of them, and this job may not span
	try -N3 -w 'alpha[1-2],beta[1-2]' --wrap true
	refused "no single site has 3 nodes"
	# a pending job's range and list changed: still at one site
	try -H -N2 -w 'alpha[1-2],beta1' --wrap true
	[[ -n $JOB ]]
	update JobId="$JOB" NumNodes=1-3
	update JobId="$JOB" ReqNodeList='alpha[1-2],beta2'
	run ! update JobId="$JOB" ReqNodeList='alpha1,beta[1-2]'
	release "$JOB"
	one_site "$JOB"
}

@test "5: a node list change Slurm refuses half-way does not take a one-node job across" {
	local one two three='' at
	# Slurm starts each change of a pending job from its node list as given,
	# nodes the job must have; only the change's end reads a list longer
	# than the job's minimum as nodes to choose from (23.02 and later).  A
	# change that fails on its way (an unknown reservation) leaves them so,
	# and a choice of sites ([site_alpha|site_beta]) does not hold nodes a
	# job must have at one site.  The jobs wait for their begin time, not in
	# a hold: a release is a change of its own.
	try -n1 --begin=now+25 --wrap true
	one=$JOB
	try -n1 --begin=now+25 --wrap true
	two=$JOB
	[[ -n $one && -n $two ]]
	# not kept at one site yet: refused (on 22.05 the list is two nodes the
	# job must have, at both sites; later, one to choose, which pins it)
	run update JobId="$one" ReqNodeList=alpha1,beta1 Reservation=nosuch
	((status != 0))
	# kept at either site: refused too; kept at one, taken, and the job
	# cannot run at both (here not at all: both nodes are required)
	update JobId="$two" 'Features=[site_alpha|site_beta]'
	run update JobId="$two" ReqNodeList=alpha1,beta1 Reservation=nosuch
	((status != 0))
	update JobId="$two" Features=site_alpha
	run update JobId="$two" ReqNodeList=alpha1,beta1 Reservation=nosuch
	((status != 0))
	if chooses; then
		# nodes to choose from at both sites from the submission on: any
		# change that fails makes them nodes the job must have again
		try -N1 -w alpha1,beta1 --begin=now+25 --wrap true
		three=$JOB
		[[ -n $three ]]
		run update JobId="$three" Reservation=nosuch
		((status != 0))
	fi
	at=$(ran_at "$one" 60)
	[[ $at == alpha || $at == beta ]]
	# begun by now; given time to be scheduled
	at=$(ran_at "$two" 15)
	[[ $at != *+* ]]
	if [[ -n $three ]]; then
		at=$(ran_at "$three" 15)
		[[ $at != *+* ]]
	fi
}

@test "6: the components of a heterogeneous job run at one site" {
	try -N1 --wrap true : -N1
	[[ -n $JOB ]]
	one_site "$JOB"
	# (xsite refuses, for a moment, a het job of the same user for another site)
	sleep 3
	try -N1 --site-affinity=beta --wrap true : -N1
	[[ -n $JOB ]]
	[[ $(ran_at "$JOB") == beta ]]
	# back to back in one shell on the head: xsite remembers where the
	# first went for 2 s, which a loaded machine's own start-up of each
	# submission could use up
	run -0 --separate-stderr as bash -c '
		sbatch --parsable -t 1 -o /dev/null -N1 --site-affinity=beta --wrap true : -N1 --constraint=site_alpha
		sbatch --parsable -t 1 -o /dev/null -N1 --site-affinity=alpha --wrap true : -N1
		true'
	assert_output ''
	[[ $stderr == *"xsite: job rejected: "*"--constraint 'site_alpha' allows no node of site beta"* ]]
	[[ $stderr == *"xsite: job rejected: another heterogeneous job of yours was placed at site beta a moment ago"* ]]
	sleep 3
	try -N1 --wrap true : -N1 --site-affinity=beta
	refused "component 1 of a heterogeneous job must run at site alpha"
	# the same through #SBATCH hetjob
	printf '#!/bin/bash\n#SBATCH -N1\n#SBATCH hetjob\n#SBATCH -N1 -w beta1\ntrue\n' >"$XT_STATE/work/$U/het.sh"
	try ./het.sh
	refused "--nodelist names nodes at site beta: component 1"
	# salloc's het allocation
	run -1 as salloc -N1 : -N1 --constraint=site_beta true
	assert_output --partial "xsite: job rejected:"
}

@test "--prefer, which Slurm schedules with instead of the constraint, holds the pin too" {
	# Excluding one node a site leaves no site two nodes: a pinned -N2 job
	# can run nowhere; with its --prefer unpinned, Slurm ran it on alpha1
	# and beta1.
	try -N2 --prefer='site_alpha|site_beta' -x alpha2,beta2 --wrap true
	if [[ -n $JOB ]]; then not_both "$JOB"; else [[ $TOLD == *"Requested node configuration is not available"* ]]; fi
	run --separate-stderr as srun -t 1 -N2 --prefer='site_alpha|site_beta' -x alpha2,beta2 hostname
	[[ $(sites_printed <<<"$output") != *+* ]]
	# a preference that cannot take the pin is refused, naming --prefer
	try -N2 --prefer='[site_alpha*1&site_beta*1]' --wrap true
	refused "--prefer '\[site_alpha\*1&site_beta\*1\]': it has a node count"
	# Prefer= of a pending job
	try -H -N2 -x alpha2,beta2 --wrap true
	[[ -n $JOB ]]
	update JobId="$JOB" 'Prefer=site_alpha|site_beta'
	release "$JOB"
	not_both "$JOB"
	on_head scancel "$JOB"
	# with the link down
	printf 'State=down\n' >"$XT_STATE/run/link.state"
	sleep 6
	try -N2 --prefer='site_alpha|site_beta' -x alpha2,beta2 --comm-profile=low --wrap true
	if [[ -n $JOB ]]; then not_both "$JOB"; else [[ $TOLD == *"Requested node configuration is not available"* ]]; fi
}

@test "a task count is decided on the most nodes it can get; a change of tasks or CPUs is decided again" {
	# -n2 --ntasks-per-node=2: two tasks a node at most, so up to two nodes;
	# --spread-job takes both
	try -n2 --ntasks-per-node=2 --spread-job -x alpha2,beta2 --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	run --separate-stderr as srun -t 1 -n2 --ntasks-per-node=2 --spread-job -x alpha2,beta2 hostname
	[[ -n $output && $(sites_printed <<<"$output") != *+* ]]
	# the same without -n: slurmctld makes it two tasks after job_submit
	try -N1-0 --ntasks-per-node=2 --spread-job -x alpha2,beta2 --wrap true
	if [[ -n $JOB ]]; then not_both "$JOB"; fi
	# a top of 65534 nodes (NO_VAL16, but a count in a 32-bit field)
	try -N1-65534 --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	# no top (0) for a pending job that spreads its tasks, through libslurm
	# (scontrol refuses to send NumNodes=1-0): refused without NumTasks=
	try -H -n2 --spread-job -x alpha2,beta2 --wrap true
	[[ -n $JOB ]]
	run as "$XT_STATE/work/job-update" "$JOB" min_nodes=1 max_nodes=0
	((status == 1))
	release "$JOB"
	not_both "$JOB"
	on_head scancel "$JOB"
	# a one-node job whose tasks and CPUs grow while it waits: decided
	# again on four nodes (here refused: no site has four)
	local change c steps
	for change in 'NumTasks=4 NumCPUs=4' 'NumTasks=4;NumCPUs=4'; do
		try -H -n1 -x alpha2,beta2 --wrap true
		[[ -n $JOB ]]
		IFS=';' read -r -a steps <<<"$change"
		for c in "${steps[@]}"; do
			# shellcheck disable=SC2086 # one update of one or two fields
			update JobId="$JOB" $c || true
		done
		release "$JOB"
		not_both "$JOB"
		on_head scancel "$JOB"
	done
	# more tasks than the job's top to its node count, without a new top:
	# refused (Slurm 26.05 sets a top of its own, the task count, and raises
	# it with the tasks); scontrol prints the error code's text, slurmctld's
	# log the reason; with a new top, decided on it
	try -H -N1-1 -n1 -x alpha2,beta2 --wrap true
	[[ -n $JOB ]]
	run ! update JobId="$JOB" NumTasks=2
	assert_output --partial "Node count specification invalid"
	run -0 grep -c "xsite: job $JOB: NumTasks=2: more tasks than the job's top of 1 node(s)" "$XT_STATE/log/slurmctld.log"
	run -0 on_head squeue -h -j "$JOB" -o %D
	assert_output 1
	update JobId="$JOB" NumTasks=4 NumNodes=1-4 || true
	release "$JOB"
	not_both "$JOB"
	on_head scancel "$JOB"
}

@test "a partition's MinNodes counts: a job without a node count is not a one-node job there" {
	# Slurm runs a job in a partition on its MinNodes at least; one node a
	# site left, only both sites can hold two
	try -p wide -x alpha2,beta2 --wrap true
	if [[ -n $JOB ]]; then not_both "$JOB"; else [[ $TOLD == *"Requested node configuration is not available"* ]]; fi
	try -p wide --wrap true
	[[ -n $JOB ]]
	one_site "$JOB"
	# Partition=wide of a pending one-node job
	try -H -p other -x alpha2,beta2 --wrap true
	[[ -n $JOB ]]
	update JobId="$JOB" Partition=wide || true
	release "$JOB"
	not_both "$JOB"
	on_head scancel "$JOB"
}

@test "a preference set while the job could span is pinned when a later change pins the job" {
	# the job record has no --prefer: xsite sets it to the job's constraint
	try -H -N1 -x alpha2,beta2 --wrap true
	[[ -n $JOB ]]
	update JobId="$JOB" 'Prefer=site_alpha|site_beta'
	# at once, refused (it needs a pin, which Slurm would set last)
	run ! update JobId="$JOB" NumNodes=2-2
	# in the two steps xsite asks for
	update JobId="$JOB" 'Features=[site_alpha|site_beta]'
	update JobId="$JOB" NumNodes=2-2
	release "$JOB"
	not_both "$JOB"
	on_head scancel "$JOB"
}

# record_of ID: the job's xsite record (its AdminComment)
record_of() {
	on_head squeue -h -t all -j "$1" -O admin_comment:0 2>/dev/null
}

# until_record ID REGEX: wait (up to 30 s; xsite load runs every 5 s) until
# the job's record matches
until_record() {
	local i
	for ((i = 0; i < 300; i++)); do
		[[ $(record_of "$1") =~ $2 ]] && return 0
		sleep 0.1
	done
	printf 'job %s: record "%s", not /%s/\n' "$1" "$(record_of "$1")" "$2" >&2
	return 1
}

# in_users_hold ID: the job is in its owner's hold (xsite load puts it back
# there just before its request: up to 5 s)
in_users_hold() {
	local i
	for ((i = 0; i < 50; i++)); do
		[[ $(on_head squeue -h -j "$1" -o %r) == JobHeldUser ]] && return 0
		sleep 0.1
	done
	printf 'job %s: %s\n' "$1" "$(on_head squeue -h -j "$1" -o %r)" >&2
	return 1
}

@test "a job allowed to span and still pending when the link goes down does not span; back up, it may" {
	local fits big arr t
	# jobs allowed to span while the link is up, held by their owner: one a
	# site can hold, one only both sites can, an array of two
	try -H -N2 --site-affinity=span --wrap true
	fits=$JOB
	try -H -N4 --site-affinity=span --wrap true
	big=$JOB
	try -H -N2 --site-affinity=span --array=1-2 --wrap true
	arr=$JOB
	[[ -n $fits && -n $big && -n $arr ]]
	printf 'State=down\n' >"$XT_STATE/run/link.state"
	# xsite load (root, every 5 s here) has them decided again, each task
	# of the array on its own
	until_record "$fits" ' action=pin why=link-down .*recheck=down'
	until_record "$big" ' action=span why=user-span .*hold=user recheck=down'
	until_record "${arr}_1" ' action=pin why=link-down .*recheck=down'
	until_record "${arr}_2" ' action=pin why=link-down .*recheck=down'
	# the owner's release: the first and the tasks run at one site; the
	# second is in an administrator's hold now, which its owner cannot
	# release
	release "$fits" "$arr"
	for t in "$fits" "${arr}_1" "${arr}_2"; do
		[[ $(ran_at "$t") == alpha || $(ran_at "$t") == beta ]]
	done
	run ! release "$big"
	# nor give it a priority back through Nice= (Slurm would)
	run ! update JobId="$big" Nice=10
	[[ $(on_head squeue -h -j "$big" -o '%r %Q') == 'JobHeldAdmin 0' ]]
	# the link back: the second goes back to its owner's hold, and spans
	rm -f "$XT_STATE/run/link.state"
	until_record "$big" ' action=span why=user-span .*recheck=up'
	run ! grep -q 'hold=' <<<"$(record_of "$big")"
	in_users_hold "$big"
	release "$big"
	[[ $(ran_at "$big") == alpha+beta ]]
}

@test "a job its owner requeued in a hold is decided again once while the link is down, and is its owner's again after" {
	local job n
	try -N4 --site-affinity=span --wrap true
	job=$JOB
	[[ -n $job ]]
	[[ $(ran_at "$job") == alpha+beta ]]
	# Slurm keeps "job requeued in held state" as its reason, also once
	# xsite holds it: before, xsite load took that for no hold of its own
	# and decided the job again at every run
	as scontrol requeuehold "$job"
	[[ $(on_head squeue -h -j "$job" -o %r) == 'job requeued in held state' ]]
	printf 'State=down\n' >"$XT_STATE/run/link.state"
	until_record "$job" ' hold=user recheck=down'
	# three more runs of xsite load (every 5 s)
	sleep 16
	n=$(grep -c "xsite: job $job held" "$XT_STATE/log/slurmctld.log") || true
	((n == 1)) || {
		printf 'job %s held %s times\n' "$job" "$n" >&2
		return 1
	}
	run ! release "$job"
	# the link back: in its owner's hold again, which its owner releases
	rm -f "$XT_STATE/run/link.state"
	until_record "$job" ' recheck=up'
	run ! grep -q 'hold=' <<<"$(record_of "$job")"
	# (squeue's reason stays "job requeued in held state")
	release "$job"
}

@test "9: a node list of a million names and a flood of profiles cost slurmctld nothing lasting" {
	local pid before after i
	# sbatch refuses such a list itself; scontrol update sends it as it is
	try -H -N1 --wrap true
	[[ -n $JOB ]]
	run ! update JobId="$JOB" 'ReqNodeList=x[000000-999999]'
	[[ $(on_head squeue -h -j "$JOB" -o %n) == '' ]]
	# decided from the list's count (xsite's line for the change: the last of
	# this user's), which 23.02 and later read as the nodes to choose one from
	local want="action=reject why=oversize mode=enforce n=1000000 "
	if chooses; then
		want="action=none why=one-node mode=enforce n=1 "
	fi
	grep "job of uid $(id -u "$U"): xsite v=1 " "$XT_STATE/log/slurmctld.log" | tail -n 1 | grep -qF "$want"
	on_head scancel "$JOB"
	pid=$(cat "$XT_STATE/run/slurmctld.pid")
	before=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
	for ((i = 0; i < 100; i++)); do
		try -H -N1-4 --comm-profile="op=1e$((9 + i % 5)),b=$((i + 1))GB,x=$((i * 7 + 1))MB,steps=$((i + 1))" --wrap true
	done
	on_head scancel -u "$U"
	after=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
	printf '# slurmctld RSS %s kB before, %s kB after 100 distinct profiles\n' "$before" "$after" >&3
	# bounded caches: far below what a list of a million names would take
	((after - before < 20000))
}

@test "the generator: 200 random submissions and updates, none spans against a pin" {
	local seed=${XSITE_HOSTILE_SEED:-$$}
	local -a tb_cmd=("$XT_TB" --name "$XT_NAME" --state-dir "$XT_STATE" --config "$XT_CONFIG")
	if ((XT_INSTALLED)); then tb_cmd+=(--installed); fi
	printf '# seed %s (XSITE_HOSTILE_SEED=%s replays it)\n' "$seed" "$seed" >&3
	run --separate-stderr "$XT_REPO/tests/integration/hostile-gen" "$U" 200 "$seed" "$XT_STATE" "${tb_cmd[@]}"
	printf '%s\n' "$output" "$stderr" | tap_note
	assert_success
	assert_line '200 attempts, 0 spanned against a pin'
}
