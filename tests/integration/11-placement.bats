#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2154
# (SC2016: the quoted $... run inside the jobs; SC2154: bats sets $stderr)
# The placement policy end to end on the testbed (site-configs/testbed.conf:
# sites alpha and beta of two nodes, Mode=enforce, MaxSlowdown=1.10,
# OversizeAction=warn): real sbatch, salloc and srun with the xsite flags, the
# decision job_submit.lua takes in slurmctld, where the job then runs (its
# NodeList against the sites' features), what its tasks see (XSITE_*), what
# the user is told and what admin_comment records.  Then bad flags, a config
# broken and fixed at run time, OversizeAction, the link state, job_modify
# and the switch wait.
#
# xsite.submit re-reads xsite.conf and the link state at most every 5 s:
# every change below is followed by conf_settle (6 s).

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	xt_init placement
	xt_up
	cp "$XT_STATE/etc/xsite.conf" "$XT_STATE/work/xsite.conf.orig"
	# a node feature of the user's own: three nodes are "fast", so that
	# only site alpha has two of them
	on_head scontrol update NodeName=alpha1,alpha2 AvailableFeatures=site_alpha,fast ActiveFeatures=site_alpha,fast
	on_head scontrol update NodeName=beta1 AvailableFeatures=site_beta,fast ActiveFeatures=site_beta,fast
	# each task prints: host site sites spanning
	cat >"$XT_STATE/work/where.sh" <<'EOF'
#!/bin/sh
srun sh -c 'printf "task %s %s %s %s\n" "$(hostname)" "${XSITE_SITE-unset}" "${XSITE_SITES-unset}" "${XSITE_SPANNING-unset}"' | sort
EOF
	chmod +x "$XT_STATE/work/where.sh"
}

teardown_file() {
	load helpers
	xt_down
}

setup() {
	load helpers
	load_libs
}

teardown() {
	# a test that changed xsite.conf or the link state and failed midway
	local changed=0
	if ! cmp -s "$XT_STATE/etc/xsite.conf" "$XT_STATE/work/xsite.conf.orig"; then
		cp "$XT_STATE/work/xsite.conf.orig" "$XT_STATE/etc/xsite.conf"
		changed=1
	fi
	if [[ -e $XT_STATE/run/link.state ]]; then
		rm -f "$XT_STATE/run/link.state"
		changed=1
	fi
	if ((changed)); then conf_settle; fi
}

# ---- helpers of this file ---------------------------------------------------

# conf_settle: longer than xsite.submit's re-read interval (5 s)
conf_settle() {
	sleep 6
}

# set_conf KEY VALUE: xsite.conf of the head with KEY=VALUE (replaced in the
# original file), written atomically; then conf_settle
set_conf() {
	local tmp=$XT_STATE/etc/.xsite.conf.new
	sed -E "s|^$1=.*|$1=$2|" "$XT_STATE/work/xsite.conf.orig" >"$tmp"
	grep -q "^$1=$2\$" "$tmp"
	mv "$tmp" "$XT_STATE/etc/xsite.conf"
	conf_settle
}

# restore_conf: the original xsite.conf again; then conf_settle
restore_conf() {
	cp "$XT_STATE/work/xsite.conf.orig" "$XT_STATE/etc/.xsite.conf.new"
	mv "$XT_STATE/etc/.xsite.conf.new" "$XT_STATE/etc/xsite.conf"
	conf_settle
}

# place OPTION...: sbatch where.sh with OPTIONs, wait for the end; sets JOB
# (the id), TOLD (sbatch's stderr) and TASKS (the task lines of the output)
place() {
	local out=$XT_STATE/work/place-$BATS_TEST_NUMBER-$RANDOM.out err
	err=$(mktemp)
	JOB=$(on_head sbatch --parsable -o "$out" "$@" ./where.sh 2>"$err") || {
		printf 'sbatch %s failed: %s\n' "$*" "$(cat "$err")" >&2
		rm -f "$err"
		return 1
	}
	TOLD=$(cat "$err")
	rm -f "$err"
	wait_job "$JOB"
	TASKS=$(grep '^task ' "$out" || true)
	[[ $(on_head squeue -h -t all -j "$JOB" -o %T) == COMPLETED ]] || {
		printf 'job %s did not complete: %s\n' "$JOB" "$(cat "$out")" >&2
		return 1
	}
}

# sites_of ID: the sites the job ran at, from its NodeList and the nodes'
# site features ("alpha", "beta" or "alpha+beta")
sites_of() {
	local nodelist node site sites=()
	nodelist=$(on_head squeue -h -t all -j "$1" -o %N)
	[[ -n $nodelist ]] || return 1
	for node in $(on_head scontrol show hostnames "$nodelist"); do
		site=$(on_head scontrol show node "$node" | grep -o 'ActiveFeatures=[^ ]*' | grep -o 'site_[a-z]*')
		sites+=("${site#site_}")
	done
	printf '%s\n' "${sites[@]}" | sort -u | paste -sd+
}

# node_count ID: how many nodes the job ran on
node_count() {
	on_head scontrol show hostnames "$(on_head squeue -h -t all -j "$1" -o %N)" | wc -l
}

# field ID KEY: KEY=VALUE of scontrol show job (VALUE up to a blank)
field() {
	on_head scontrol show job "$1" | grep -o " $2=[^ ]*" | head -n 1 | sed 's/^ //'
}

# record ID: the job's xsite record (AdminComment)
record() {
	on_head scontrol show job "$1" | sed -n 's/^ *AdminComment=//p'
}

# assert_record ID KEY=VALUE...: each KEY=VALUE is a word of the record
assert_record() {
	local id=$1 rec kv
	shift
	rec=$(record "$id")
	[[ $rec == "xsite v=1 action="* ]] || {
		printf 'job %s: no xsite record in AdminComment: %s\n' "$id" "$rec" >&2
		return 1
	}
	for kv in "$@"; do
		[[ " $rec " == *" $kv "* ]] || {
			printf 'job %s: record lacks %s: %s\n' "$id" "$kv" "$rec" >&2
			return 1
		}
	done
}

# jobs_total: how many jobs slurmctld knows, in any state
jobs_total() {
	on_head squeue -h -t all -o %i | wc -l
}

# ---- every --site-affinity, every kind of profile ------------------------------

@test "auto, class low: four nodes span both sites; tasks see the split; why=within" {
	place -N4 --site-affinity=auto --comm-profile=low
	assert_equal "$(sites_of "$JOB")" "alpha+beta"
	assert_equal "$TOLD" "sbatch: xsite: may span both sites: spanning would be 1.00x slower than one site (within the limit 1.10x)"
	assert_record "$JOB" action=span why=within mode=enforce n=4 profile=low split=2+2 sites=any
	run -0 field "$JOB" Features
	assert_output 'Features=(null)'
	assert_equal "$(grep -c ' alpha:2,beta:2 1$' <<<"$TASKS")" 4
	grep -qx 'task alpha1 alpha alpha:2,beta:2 1' <<<"$TASKS"
	grep -qx 'task beta2 beta alpha:2,beta:2 1' <<<"$TASKS"
}

@test "auto, class medium: a two-node job is pinned to one site; tasks see one site" {
	place -N2 --comm-profile=medium
	run -0 sites_of "$JOB"
	assert_output --regexp '^(alpha|beta)$'
	local site=$output
	assert_equal "$TOLD" "sbatch: xsite: pinned to one site (alpha or beta): spanning would be 1.15x slower than one site (limit 1.10x)"
	assert_record "$JOB" action=pin why=slowdown n=2 profile=medium sites=alpha\|beta slowdown=1.1521 max=1.1
	run -0 field "$JOB" Features
	assert_output 'Features=[site_alpha|site_beta]'
	run -0 grep -c " $site $site:2 0\$" <<<"$TASKS"
	assert_output 2
}

@test "auto, named profile pingpong: pinned; the record names the profile" {
	place -N2 --site-affinity=auto --comm-profile=pingpong
	run -0 sites_of "$JOB"
	assert_output --regexp '^(alpha|beta)$'
	assert_equal "$TOLD" "sbatch: xsite: pinned to one site (alpha or beta): spanning would be 83.20x slower than one site (limit 1.10x)"
	assert_record "$JOB" action=pin why=slowdown profile=pingpong
}

@test "auto, explicit op=,b=,x=: within the limit, the job may span; the record names the spec" {
	place -N4 --comm-profile=op=1e12,b=1GB,x=1MB
	assert_equal "$(sites_of "$JOB")" "alpha+beta"
	assert_record "$JOB" action=span why=within profile=op=1e12,b=1GB,x=1MB split=2+2
	[[ $TOLD == "sbatch: xsite: may span both sites: spanning would be 1.00x slower"* ]]
}

@test "the default profile applies without --comm-profile (DefaultProfile=medium)" {
	place -N2
	assert_record "$JOB" action=pin why=slowdown profile=medium
	run -0 sites_of "$JOB"
	assert_output --regexp '^(alpha|beta)$'
}

@test "pin: one site even for a job that could span; why=user-pin" {
	place -N2 --site-affinity=pin --comm-profile=low
	run -0 sites_of "$JOB"
	assert_output --regexp '^(alpha|beta)$'
	assert_equal "$TOLD" "sbatch: xsite: pinned to one site (alpha or beta): you asked for one site"
	assert_record "$JOB" action=pin why=user-pin profile=low
}

@test "span: a chatty job runs at both sites, one node each; XSITE_SPANNING=1" {
	place -N2 --site-affinity=span --comm-profile=high
	assert_equal "$(sites_of "$JOB")" "alpha+beta"
	assert_equal "$TOLD" "sbatch: xsite: may span both sites: you asked to span both sites (1+1 nodes; predicted 3.53x slower than one site)"
	assert_record "$JOB" action=span why=user-span sites=alpha+beta profile=high split=1+1
	run -0 field "$JOB" Features
	assert_output 'Features=[site_alpha*1&site_beta*1]'
	assert_equal "$(grep -c ' alpha:1,beta:1 1$' <<<"$TASKS")" 2
}

@test "alpha and beta: the named site, for every kind of profile" {
	local site prof
	for site in alpha beta; do
		for prof in low pingpong op=1e9,b=1GB,x=10MB,steps=100; do
			place -N2 --site-affinity="$site" --comm-profile="$prof"
			assert_equal "$(sites_of "$JOB")" "$site"
			assert_equal "$TOLD" "sbatch: xsite: pinned to site $site: you asked for site $site"
			assert_record "$JOB" action=site why=user-site sites="$site"
			assert_equal "$(field "$JOB" Features)" "Features=site_$site"
			assert_equal "$(grep -c " $site $site:2 0\$" <<<"$TASKS")" 2
		done
	done
}

@test "salloc and srun take the same decisions as sbatch" {
	run -0 --separate-stderr on_head salloc -N2 --comm-profile=high sh -c 'echo "job=$SLURM_JOB_ID"; srun hostname'
	grep -qx 'salloc: xsite: pinned to one site (alpha or beta): spanning would be 3.53x slower than one site (limit 1.10x)' <<<"$stderr"
	local id
	id=$(sed -n 's/^job=//p' <<<"$output")
	run -0 sites_of "$id"
	assert_output --regexp '^(alpha|beta)$'
	assert_record "$id" action=pin why=slowdown profile=high

	run -0 --separate-stderr on_head srun -N2 --site-affinity=span --comm-profile=low \
		sh -c 'printf "%s %s\n" "$(hostname)" "$XSITE_SPANNING"'
	# a node at each site (which one: the scheduler's choice)
	assert_equal "${#lines[@]}" 2
	assert_line --regexp '^alpha[0-9]+ 1$'
	assert_line --regexp '^beta[0-9]+ 1$'
	[[ $stderr == *"srun: xsite: may span both sites: you asked to span both sites (1+1 nodes;"* ]]
}

# ---- with a --constraint of the user's --------------------------------------------

@test "auto and pin with --constraint=fast: xsite ANDs its pin; only alpha has two fast nodes" {
	place -N2 --comm-profile=medium --constraint=fast
	assert_equal "$(sites_of "$JOB")" alpha
	assert_equal "$(field "$JOB" Features)" 'Features=fast&[site_alpha|site_beta]'
	assert_record "$JOB" action=pin why=slowdown constraint=fast
	place -N2 --site-affinity=pin --constraint=fast
	assert_equal "$(sites_of "$JOB")" alpha
	assert_record "$JOB" action=pin why=user-pin constraint=fast
}

@test "auto with --constraint=fast within the limit: the user's constraint stays as it is" {
	place -N3 --comm-profile=low --constraint=fast
	assert_equal "$(field "$JOB" Features)" 'Features=fast'
	assert_record "$JOB" action=span why=within constraint=fast
	run -0 on_head squeue -h -t all -j "$JOB" -o %N
	assert_output 'alpha[1-2],beta1'
}

@test "a site with --constraint=fast: both apply (alpha: two nodes, beta: one)" {
	place -N2 --site-affinity=alpha --constraint=fast
	assert_equal "$(sites_of "$JOB")" alpha
	assert_equal "$(field "$JOB" Features)" 'Features=fast&site_alpha'
	place -N1 --site-affinity=beta --constraint=fast
	run -0 on_head squeue -h -t all -j "$JOB" -o %N
	assert_output beta1
	assert_record "$JOB" action=site why=user-site sites=beta constraint=fast
}

@test "span with --constraint=fast: the job spans; the record keeps the user's constraint" {
	place -N2 --site-affinity=span --constraint=fast
	assert_equal "$(sites_of "$JOB")" "alpha+beta"
	assert_equal "$(field "$JOB" Features)" 'Features=[(fast&site_alpha)*1&(fast&site_beta)*1]'
	assert_record "$JOB" action=span why=user-span constraint=fast
}

@test "span with --constraint=fast: every node has the user's feature" {
	on_head scontrol update NodeName=alpha2 AvailableFeatures=site_alpha ActiveFeatures=site_alpha
	local busy
	busy=$(on_head sbatch --parsable -N1 -w alpha1 -c2 --wrap 'sleep 8')
	place -N2 --site-affinity=span --constraint=fast
	on_head scancel "$busy"
	on_head scontrol update NodeName=alpha2 AvailableFeatures=site_alpha,fast ActiveFeatures=site_alpha,fast
	run -0 on_head squeue -h -t all -j "$JOB" -o %N
	assert_output 'alpha1,beta1'
}

@test "a --constraint naming a site: that site, why=user-constraint" {
	place -N2 --comm-profile=high --constraint=site_beta
	assert_equal "$(sites_of "$JOB")" beta
	assert_equal "$TOLD" "sbatch: xsite: pinned to site beta: your --constraint already keeps the job at site beta"
	assert_record "$JOB" action=site why=user-constraint sites=beta constraint=site_beta
}

@test "a --constraint whose own [...] group keeps one site: xsite adds nothing and says so" {
	place -N2 --comm-profile=medium '--constraint=[site_alpha|site_beta]'
	run -0 sites_of "$JOB"
	assert_output --regexp '^(alpha|beta)$'
	assert_equal "$(field "$JOB" Features)" 'Features=[site_alpha|site_beta]'
	assert_equal "$TOLD" "sbatch: xsite: pinned to one site (alpha or beta): your --constraint already keeps the job at site alpha or beta"
}

@test "a --constraint with a [...] group of other features: split by site, the job at one site" {
	place -N2 --comm-profile=medium '--constraint=[fast|site_beta]'
	run -0 sites_of "$JOB"
	assert_output --regexp '^(alpha|beta)$'
	assert_equal "$(field "$JOB" Features)" \
		'Features=[(fast&site_alpha)|(fast&site_beta)|(site_beta&site_alpha)|(site_beta&site_beta)]'
}

@test "a site or span against a --constraint naming the other site: rejected, no job" {
	local before
	before=$(jobs_total)
	run ! --separate-stderr on_head sbatch -N2 --site-affinity=alpha --constraint=site_beta --wrap true
	assert_equal "$(head -n 1 <<<"$stderr")" \
		"sbatch: error: xsite: job rejected: --site-affinity=alpha conflicts with --constraint 'site_beta', which allows no node of site alpha"
	run ! --separate-stderr on_head sbatch -N2 --site-affinity=span --constraint=site_beta --wrap true
	assert_equal "$(head -n 1 <<<"$stderr")" \
		"sbatch: error: xsite: job rejected: --site-affinity=span conflicts with --constraint 'site_beta', which keeps the job at one site"
	assert_equal "$(jobs_total)" "$before"
}

# ---- bad flags: refused before submission ---------------------------------------

@test "invalid flags: sbatch fails naming the flag, and no job is created" {
	local before bad
	before=$(jobs_total)
	local -A want=(
		[--site-affinity=gamma]="sbatch: error: xsite: --site-affinity=gamma: unknown site 'gamma' (valid: auto, pin, span, alpha, beta)"
		[--site-affinity=]="sbatch: error: xsite: --site-affinity: empty value (auto|pin|span|SITE)"
		[--comm-profile=huge]="sbatch: error: xsite: --comm-profile=huge: unknown profile 'huge'"
		[--comm-profile=op=1e9,b=1GB]="sbatch: error: xsite: --comm-profile=op=1e9,b=1GB: x: missing"
		[--comm-profile=op=x,b=1GB,x=1MB]="sbatch: error: xsite: --comm-profile=op=x,b=1GB,x=1MB: op:"
	)
	for bad in "${!want[@]}"; do
		run ! --separate-stderr on_head sbatch -N2 "$bad" --wrap true
		assert_equal "$output" ''
		[[ $(head -n 1 <<<"$stderr") == "${want[$bad]}"* ]] || {
			printf 'flag %s: stderr\n%s\nwanted a first line starting with\n%s\n' "$bad" "$stderr" "${want[$bad]}" >&2
			return 1
		}
	done
	assert_equal "$(jobs_total)" "$before"
}

# ---- the configuration at run time ------------------------------------------------

@test "a config broken at run time: jobs are accepted with the last good one, the error logged once" {
	local log=$XT_STATE/log/slurmctld.log before
	before=$(grep -c 'keeping the last good configuration' "$log" || true)
	sed 's/^MaxSlowdown=.*/MaxSlowdown=fast/' "$XT_STATE/work/xsite.conf.orig" >"$XT_STATE/etc/.xsite.conf.new"
	mv "$XT_STATE/etc/.xsite.conf.new" "$XT_STATE/etc/xsite.conf"
	conf_settle
	place -N2 --comm-profile=medium
	assert_record "$JOB" action=pin why=slowdown max=1.1
	conf_settle
	place -N2 --comm-profile=medium
	assert_record "$JOB" action=pin why=slowdown max=1.1
	run -0 grep -c 'keeping the last good configuration' "$log"
	assert_output "$((before + 1))"
	run -0 grep -F "error: lua: xsite: $XT_STATE/etc/xsite.conf:" "$log"
	assert_output --partial 'MaxSlowdown'
	assert_equal "${#lines[@]}" 1

	# fixed again, with another limit: picked up without a restart
	set_conf MaxSlowdown 1.20
	place -N2 --comm-profile=medium
	assert_record "$JOB" action=span why=within max=1.2
	restore_conf
}

@test "OversizeAction=warn: a chatty four-node job runs across both sites with the warning" {
	place -N4 --comm-profile=high
	assert_equal "$(sites_of "$JOB")" "alpha+beta"
	assert_equal "$TOLD" "sbatch: xsite: may span both sites: no single site has 4 nodes; spanning would be 4.50x slower than one site (limit 1.10x); running anyway (OversizeAction=warn)"
	assert_record "$JOB" action=span why=oversize n=4
}

@test "OversizeAction=reject: sbatch fails with the reason, no job" {
	local before
	set_conf OversizeAction reject
	before=$(jobs_total)
	run ! --separate-stderr on_head sbatch -N3 --comm-profile=high --wrap true
	assert_equal "$(head -n 1 <<<"$stderr")" \
		"sbatch: error: xsite: job rejected: no single site has 3 nodes; spanning would be 3.60x slower than one site (limit 1.10x)"
	grep -q 'Batch job submission failed: Node count specification invalid' <<<"$stderr"
	assert_equal "$(jobs_total)" "$before"
	restore_conf
}

@test "OversizeAction=allow: the job runs across, without a warning" {
	set_conf OversizeAction allow
	place -N3 --comm-profile=high
	assert_equal "$(sites_of "$JOB")" "alpha+beta"
	assert_equal "$(node_count "$JOB")" 3
	assert_equal "$TOLD" "sbatch: xsite: may span both sites: no single site has 3 nodes; spanning would be 3.60x slower than one site (limit 1.10x)"
	assert_record "$JOB" action=span why=oversize n=3
	restore_conf
}

# ---- the link state ----------------------------------------------------------------

@test "link state down: a job that could span is pinned (why=link-down); restored, it may span again" {
	printf 'State=down\n' >"$XT_STATE/run/link.state"
	conf_settle
	place -N2 --comm-profile=low
	run -0 sites_of "$JOB"
	assert_output --regexp '^(alpha|beta)$'
	assert_equal "$TOLD" "sbatch: xsite: pinned to one site (alpha or beta): the link between the sites is down"
	assert_record "$JOB" action=pin why=link-down
	[[ $(record "$JOB") == *" link=down,"* ]]
	# root may span a link held down (the override xsite calibrate uses);
	# a user may not (13-hostile-placement)
	place -N2 --site-affinity=span
	assert_record "$JOB" action=span why=user-span override=0

	printf 'State=up\n' >"$XT_STATE/run/link.state"
	conf_settle
	place -N4 --comm-profile=low
	assert_record "$JOB" action=span why=within
	assert_equal "$(sites_of "$JOB")" "alpha+beta"
	rm -f "$XT_STATE/run/link.state"
	conf_settle
}

# ---- job_modify --------------------------------------------------------------------

@test "scontrol update NumNodes of a held job decides again" {
	local id
	id=$(on_head sbatch -H --parsable -N1 --comm-profile=medium ./where.sh 2>/dev/null)
	assert_record "$id" action=none why=one-node n=1
	on_head scontrol update JobId="$id" NumNodes=2-2
	assert_record "$id" action=pin why=slowdown n=2
	assert_equal "$(field "$id" Features)" 'Features=[site_alpha|site_beta]'
	# four nodes fit no site: the pin xsite added must go, or the job never runs
	on_head scontrol update JobId="$id" NumNodes=4-4
	assert_record "$id" action=span why=oversize n=4
	assert_equal "$(field "$id" Features)" 'Features=site_alpha|site_beta'
	on_head scontrol release "$id"
	wait_job "$id"
	assert_equal "$(on_head squeue -h -t all -j "$id" -o %T)" COMPLETED
	assert_equal "$(sites_of "$id")" "alpha+beta"
}

@test "scontrol update NumNodes keeps the user's own constraint" {
	local id
	id=$(on_head sbatch -H --parsable -N1 --comm-profile=medium --constraint=fast --wrap true 2>/dev/null)
	on_head scontrol update JobId="$id" NumNodes=2-2
	assert_record "$id" action=pin why=slowdown n=2 constraint=fast
	assert_equal "$(field "$id" Features)" 'Features=fast&[site_alpha|site_beta]'
	on_head scontrol update JobId="$id" NumNodes=3-3
	assert_record "$id" action=span why=oversize n=3 constraint=fast
	assert_equal "$(field "$id" Features)" 'Features=fast'
	on_head scancel "$id"
}

# ---- the switch wait (topology/tree) -------------------------------------------------

@test "a job within the limit with a long --time waits for one switch (Switches=1@...)" {
	grep -qx 'TopologyPlugin=topology/tree' "$XT_STATE/etc/slurm.conf"
	local id
	id=$(on_head sbatch -H --parsable -N2 --comm-profile=low --time=1-0 --wrap true 2>/dev/null)
	# a day x (1.0008 - 1): 68 s
	assert_record "$id" action=span why=within wait4switch=68
	assert_equal "$(field "$id" Switches)" 'Switches=1@00:01:08'
	on_head scancel "$id"
	# without a time limit there is nothing to weigh the wait against
	id=$(on_head sbatch -H --parsable -N2 --comm-profile=low --wrap true 2>/dev/null)
	assert_record "$id" action=span why=within
	assert_equal "$(field "$id" Switches)" ''
	on_head scancel "$id"
}
