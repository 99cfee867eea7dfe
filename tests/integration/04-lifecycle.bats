#!/usr/bin/env bats
# Bring-up and teardown: no residue, recovery from a crashed run, two testbeds
# side by side, larger sites, and clear errors.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	xt_init life
	# leftovers of an interrupted earlier run of this file
	tb down >/dev/null 2>&1 || true
	"$XT_TB" --name xsite-it-life2 down >/dev/null 2>&1 || true
}

teardown_file() {
	load helpers
	xt_down
	"$XT_TB" --name xsite-it-life2 down 2>&1 | tap_note || true
}

setup() {
	load helpers
	load_libs
}

# each test leaves nothing up, even when it fails half way
teardown() {
	tb down >/dev/null 2>&1 || true
	"$XT_TB" --name xsite-it-life2 down >/dev/null 2>&1 || true
}

# What a testbed could leave behind: its namespaces, its processes (tagged
# with its state directory, or inside its namespaces), mounts (other
# testbeds' /run/netns entries aside), network devices of the root namespace,
# and its state directory.
residue() {
	local name=$1 state=$2 f ns
	for f in /run/netns/"$name".*; do
		[[ -e $f ]] || continue
		ns=${f##*/}
		printf 'netns %s\n' "$ns"
		ip netns pids "$ns" 2>/dev/null | sed 's/^/process in netns: /'
	done
	grep -lzxF -e "XSITE_TESTBED_STATE=$state" /proc/[0-9]*/environ 2>/dev/null |
		while read -r f; do
			f=${f#/proc/}
			f=${f%/environ}
			[[ -d /proc/$f ]] && printf 'process %s %s\n' "$f" "$(tr '\0' ' ' </proc/"$f"/cmdline 2>/dev/null)"
		done
	awk '$5 !~ "^/run/netns/" { $1 = ""; $2 = ""; print "mount", $0 }' /proc/self/mountinfo
	ip -o link show | awk -F': ' '{ print "link", $2 }'
	[[ ! -e $state ]] || printf 'state dir %s\n' "$state"
}

@test "up then down leaves no residue (namespaces, processes, mounts, devices)" {
	local before during after
	before=$(residue "$XT_NAME" "$XT_STATE")
	run -0 tb up
	during=$(residue "$XT_NAME" "$XT_STATE")
	# the check has teeth: while up, it sees the testbed
	[[ $during == *"netns $XT_NAME.rt"* ]]
	[[ $during == *"process "*"slurmctld"* ]]
	[[ $during == *"process "*"linkemu"* ]]
	[[ $during == *"process "*"munged"* ]]
	run -0 tb down
	after=$(residue "$XT_NAME" "$XT_STATE")
	assert_equal "$after" "$before"
}

@test "up cleans up after a crashed earlier run of the same name" {
	local before after
	before=$(residue "$XT_NAME" "$XT_STATE")
	run -0 tb up
	# a crash: the delay line, slurmctld and munged die hard, the rest lingers
	kill -KILL "$(cat "$XT_STATE/run/linkemu.pid")" "$(cat "$XT_STATE/run/slurmctld.pid")" \
		"$(cat "$XT_STATE/run/munged.pid")"
	run -0 tb up
	assert_output --partial "cleaning up an earlier run of $XT_NAME"
	assert_output --partial "$XT_NAME up: 4 nodes idle"
	run -0 --separate-stderr on_head srun -N4 hostname
	run -0 tb down
	after=$(residue "$XT_NAME" "$XT_STATE")
	assert_equal "$after" "$before"
}

@test "two testbeds of different names run side by side" {
	local other=xsite-it-life2
	run -0 tb up
	run -0 "$XT_TB" --name "$other" up
	run -0 --separate-stderr "$XT_TB" --name "$other" on head srun -N4 hostname
	assert_equal "${#lines[@]}" 4
	run -0 --separate-stderr on_head srun -N4 hostname
	assert_equal "${#lines[@]}" 4
	# each has its own link
	run -0 tb link set --latency 5ms
	run -0 "$XT_TB" --name "$other" link check
	assert_output --partial '1ms one way'
	run -0 "$XT_TB" --name "$other" down
	run -0 tb status
	run -0 tb down
	run -1 "$XT_TB" --name "$other" status
}

@test "a site config with four nodes per site gives eight idle nodes" {
	local conf=$BATS_FILE_TMPDIR/four.conf
	sed -e 's/alpha\[1-2\]/alpha[1-4]/' -e 's/beta\[1-2\]/beta[1-4]/' \
		"$XT_REPO/site-configs/testbed.conf" >"$conf"
	run -0 tb --config "$conf" up
	assert_output --partial 'up: 8 nodes idle'
	run -0 --separate-stderr on_head srun -N8 hostname
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "alpha1 alpha2 alpha3 alpha4 beta1 beta2 beta3 beta4 "
	run -0 --separate-stderr on_head srun -N4 -C site_beta hostname
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "beta1 beta2 beta3 beta4 "
	run -0 tb down
}

@test "a broken site config stops up with the parser's message" {
	local conf=$BATS_FILE_TMPDIR/broken.conf
	printf 'SiteName=alpha Nodes=alpha[1-2] Feature=site_alpha CoresPerNode=zero\n' >"$conf"
	run -1 tb --config "$conf" up
	assert_output --regexp '^xsite-testbed: .*broken\.conf'
	[[ ! -e /run/netns/$XT_NAME.rt ]]
}

@test "not root: a clear message" {
	run -1 setpriv --reuid=65534 --regid=65534 --clear-groups "$XT_TB" --name "$XT_NAME" status
	assert_output --partial 'xsite-testbed: must run as root'
}

@test "a missing program is named with its Debian package" {
	local bin=$BATS_TEST_TMPDIR/sbin f
	mkdir -p "$bin"
	# everything of /usr/sbin but slurmctld
	for f in /usr/sbin/*; do
		[[ ${f##*/} == slurmctld ]] || ln -s "$f" "$bin/"
	done
	run -1 env PATH="$bin:/usr/bin" "$XT_TB" --name "$XT_NAME" up
	assert_output 'xsite-testbed: slurmctld: not found; install the Debian package slurmctld (apt-get install slurmctld)'
}

@test "--help names every command" {
	run -0 "$XT_TB" --help
	for cmd in up down status on 'link set' 'link cut' 'link restore' logs; do
		assert_output --partial "  $cmd"
	done
}

@test "a failing test fails the suite (proof with a deliberately failing fixture)" {
	local fixture=$BATS_TEST_TMPDIR/fails.bats
	printf '@test "fails" {\n  false\n}\n' >"$fixture"
	run ! bats --tap "$fixture"
	assert_line 'not ok 1 fails'
}
