#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2154
# (SC2016: the quoted $... run inside the jobs; SC2154: bats sets $stderr)
# Per-job cross-site reports on the testbed with accounting (MariaDB +
# slurmdbd): the SPANK plugin writes each job's record into ReportDir when
# its steps end, with libxsite's count of what crossed the link; only the
# job's owner (and root) can read it; the --xsite-report copy is the user's;
# symlinks planted by a user are not followed; `xsite report` joins the
# decision from accounting, and says clearly what is wrong with a bad
# request or a bad record.  Jobs run as two users made for the test.

bats_require_minimum_version 1.5.0

U1=xsite-t1
U2=xsite-t2
# a ping-pong of 4 KiB, 100 + 10 warm-up round trips between alpha1 and beta1,
# submitted with the testbed's profile "solver" (Exchange=100GB Steps=100000:
# far more than it does)
SIZE=4096
ROUNDS=110

# xsite CMD...: the command on the head, as root, with the testbed's library
xsite() {
	on_head env XSITE_LUADIR="$XT_LUADIR" lua5.1 "$XT_STATE/work/xsite" \
		--config "$XT_STATE/etc/xsite.conf" "$@"
}

# as USER CMD...: a command on the head as USER
as() {
	local user=$1
	shift
	on_head runuser -u "$user" -- env XSITE_LUADIR="$XT_LUADIR" "$@"
}

# field JSON EXPR: a value of the record, through the project's JSON reader
field() {
	XSITE_JSON=$1 lua5.1 -e "package.path='$XT_LUADIR/?.lua;'..package.path
		local r = assert(require('xsite.json').decode(os.getenv('XSITE_JSON')))
		local v = r$2
		print(type(v) == 'table' and require('xsite.json').encode(v) or tostring(v))"
}

# step_of JSON STEP: the entry of STEP in a record's steps (they are in the
# order their processes ended, which need not be the order they ran in)
step_of() {
	XSITE_JSON=$1 lua5.1 -e "package.path='$XT_LUADIR/?.lua;'..package.path
		local json = require('xsite.json')
		for _, s in ipairs(assert(json.decode(os.getenv('XSITE_JSON'))).steps) do
			if s.step == '$2' then print(json.encode(s)) end
		end"
}

# submit USER ARGS...: sbatch as USER from the user's directory; prints the job id
submit() {
	local user=$1
	shift
	(cd "$XT_STATE/work/$user" && tb on head runuser -u "$user" -- sbatch --parsable "$@") | tail -n 1
}

setup_file() {
	load helpers
	xt_init report
	local user work
	xt_need_accounting || return 0
	xt_user "$U1"
	xt_user "$U2"
	xt_up --accounting || return 1
	build_pingpong
	xt_place "$XT_XSITE" "$XT_STATE/work/xsite"
	work=$XT_STATE/work/libxsite
	mkdir -p "$work"
	xt_place "$XT_LIBXSITE" "$work/libxsite.so"
	for user in $U1 $U2; do
		mkdir -p "$XT_STATE/work/$user"
		chown "$user:" "$XT_STATE/work/$user"
	done
	# a spanning job of U1: one MPI step with libxsite across the link
	printf '#!/bin/bash\nsrun -n2 --mpi=pmix env LD_PRELOAD=%s %s -s %d -n %d -w %d -t 60\n' \
		"$work/libxsite.so" "$XT_STATE/work/pingpong" "$SIZE" 100 10 >"$XT_STATE/work/$U1/pingpong.sh"
	chmod 755 "$XT_STATE/work/$U1/pingpong.sh"
	JOB=$(submit "$U1" -N2 -w alpha1,beta1 --site-affinity=span --comm-profile=solver \
		--xsite-report -o out-%j.txt ./pingpong.sh)
	export JOB
	wait_job "$JOB"
}

teardown_file() {
	load helpers
	xt_init report
	xt_down
	xt_users_remove
}

setup() {
	load helpers
	load_libs
	xt_init report
	[[ -z ${XT_SKIP:-} ]] || skip "$XT_SKIP"
}

@test "a spanning job's record has its placement, prediction, time and the bytes that crossed the link" {
	local rec s0 sb
	report_of "$JOB" batch >/dev/null
	rec=$(report_of "$JOB" 0)
	run -0 field "$rec" .schema
	assert_output xsite-report
	run -0 field "$rec" .version
	assert_output 1
	run -0 field "$rec" .user
	assert_output "$U1"
	run -0 field "$rec" .nodes.split
	assert_output '[1,1]'
	run -0 field "$rec" .spanning
	assert_output true
	run -0 field "$rec" .profile.label
	assert_output solver
	run -0 field "$rec" .profile.source
	assert_output config
	run -0 field "$rec" .link.latency
	assert_output 0.001
	run -0 field "$rec" '.steps[3]'
	assert_output nil
	s0=$(step_of "$rec" 0)
	sb=$(step_of "$rec" batch)
	# step 0: the ping-pong; its bytes across, exactly: the rounds both ways
	# plus the host name rank 1 sends ("beta1" and its NUL)
	run -0 field "$s0" .mpi.p2p_bytes
	assert_output $((2 * ROUNDS * SIZE + 6))
	run -0 field "$s0" .mpi.p2p_messages
	assert_output $((2 * ROUNDS + 1))
	run -0 field "$s0" '.mpi.matrix[1][2]'
	assert_output $((ROUNDS * SIZE))
	run -0 field "$s0" .nodes.split
	assert_output '[1,1]'
	run -0 field "$sb" .mpi
	assert_output null
	run -0 field "$sb" .nodes.split
	assert_output '[1,0]'
	# the batch step holds step 0: it lasts longer
	fcmp 'a > 0 && b >= a' "$(field "$s0" .elapsed)" "$(field "$sb" .elapsed)"
	# libxsite's own file is taken into the record and removed
	run -0 find "$XT_STATE/reports/$JOB/mpi" -type f
	assert_output ''
}

@test "the record is root's, and the job's owner can read it but another user cannot" {
	report_of "$JOB" batch >/dev/null
	run -0 stat -c '%U %a' "$XT_STATE/reports/$JOB" "$XT_STATE/reports/$JOB/report.json"
	assert_line --index 0 'root 750'
	assert_line --index 1 'root 640'
	run -0 as "$U1" cat "$XT_STATE/reports/$JOB/report.json"
	assert_output --partial '"schema":"xsite-report"'
	run -1 as "$U2" cat "$XT_STATE/reports/$JOB/report.json"
	assert_output --partial 'Permission denied'
	run ! as "$U1" sh -c "echo x >>'$XT_STATE/reports/$JOB/report.json'"
	# Slurm's node list beside it, from the job's epilog: shared the same way
	run -0 slurm_nodes_of "$JOB" 1
	run -0 stat -c '%U %a' "$XT_STATE/reports/$JOB/slurm-nodes.json"
	assert_output 'root 640'
	run -0 as "$U1" cat "$XT_STATE/reports/$JOB/slurm-nodes.json"
	assert_output "{\"$JOB\":\"alpha1,beta1\"}"
	run -1 as "$U2" cat "$XT_STATE/reports/$JOB/slurm-nodes.json"
	assert_output --partial 'Permission denied'
}

@test "--xsite-report puts the user's own copy in the job's working directory" {
	local copy=$XT_STATE/work/$U1/xsite-report-$JOB.json
	report_of "$JOB" batch >/dev/null
	report_of "$JOB" 0 >/dev/null
	for _ in $(seq 1 50); do
		[[ -f $copy ]] && grep -q '"step":"batch"' "$copy" && grep -q '"step":"0"' "$copy" && break
		sleep 0.1
	done
	run -0 stat -c '%U' "$copy"
	assert_output "$U1"
	cmp "$copy" "$XT_STATE/reports/$JOB/report.json"
}

@test "the copies of two steps that end together take turns, and the user keeps the last record, in either order" {
	local job dir copy i holder
	# Each job's two steps (srun's and the batch step) end while the test
	# holds their turn (ReportDir/JOB/.copy, root's): both writers wait,
	# then both go at once and either may come first.  The copy must be the
	# last record (both steps) whichever does.  Four jobs: with each writer
	# writing the record it had, the third of four jobs kept a stale copy.
	for _ in 1 2 3 4; do
		rm -f "$XT_STATE/work/$U1/go"
		job=$(submit "$U1" -N1 -w alpha1 --xsite-report -o /dev/null \
			--wrap 'while [ ! -e go ]; do sleep 0.05; done; srun -n1 true')
		dir=$XT_STATE/reports/$job
		copy=$XT_STATE/work/$U1/xsite-report-$job.json
		for ((i = 0; i < 300; i++)); do
			[[ -d $dir ]] && break
			sleep 0.1
		done
		install -m 0600 /dev/null "$dir/.copy"
		flock "$dir/.copy" sleep 4 &
		holder=$!
		sleep 0.5
		touch "$XT_STATE/work/$U1/go"
		report_of "$job" batch >/dev/null
		report_of "$job" 0 >/dev/null
		# both records are in while the turn is held: no copy yet
		run -0 kill -0 "$holder"
		[[ ! -e $copy ]]
		wait "$holder"
		for ((i = 0; i < 100; i++)); do
			[[ -f $copy ]] && grep -q '"step":"batch"' "$copy" && grep -q '"step":"0"' "$copy" && break
			sleep 0.1
		done
		cmp "$copy" "$dir/report.json"
	done
}

@test "xsite report shows the decision from accounting, the measured traffic and a verdict" {
	run -0 --separate-stderr as "$U1" lua5.1 "$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" \
		report "$JOB"
	assert_line "job $JOB ($U1), COMPLETED"
	assert_line --regexp '^  decision:   span \(user-nodes\), predicted slowdown [0-9.]+ at submission$'
	assert_line '  placement:  alpha:1 + beta:1 nodes, across the link'
	assert_line --regexp '^              [0-9.]+ kB in 221 messages across the link'
	assert_line --regexp '^  verdict:    model overestimated link traffic [0-9.]+x: profile solver needs updating \(xsite tune --profile solver\)$'
}

@test "xsite report names the other spanning jobs that ran while it did" {
	local a b c i
	a=$(submit "$U1" -N2 -w alpha1,beta1 --site-affinity=span --comm-profile=low -o /dev/null \
		--wrap 'srun true; sleep 6')
	b=$(submit "$U1" -N2 -w alpha2,beta2 --site-affinity=span --comm-profile=low -o /dev/null \
		--wrap 'srun true; sleep 2')
	# a job at one site meanwhile is not on the link
	c=$(submit "$U1" -N1 -w alpha2 -o /dev/null --wrap 'sleep 2')
	wait_job "$a"
	wait_job "$b"
	wait_job "$c"
	# until accounting has the end of the job
	for ((i = 0; i < 100; i++)); do
		[[ $(on_head sacct -j "$a" -X -n -P -o End) == 20* ]] && break
		sleep 0.2
	done
	run -0 --separate-stderr as "$U1" lua5.1 "$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" \
		report "$a"
	assert_line --regexp "^  on the link: 1 other spanning job ran while it did: $b \([0-9]+ s\)$"
	run -0 --separate-stderr as "$U1" lua5.1 "$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" \
		report "$a" --json
	run -0 field "$output" '.overlaps[1].id'
	assert_output "$b"
}

@test "xsite report --json and --svg" {
	local json
	run -0 --separate-stderr as "$U1" lua5.1 "$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" \
		report "$JOB" --json --svg "$XT_STATE/work/$U1/report.svg"
	json=$output
	run -0 field "$json" .decision.action
	assert_output span
	run -0 field "$json" .assessment.mpi_steps
	assert_output 1
	run -0 head -c 5 "$XT_STATE/work/$U1/report.svg"
	assert_output '<svg '
}

@test "another user's xsite report is refused, naming the file" {
	run -1 --separate-stderr as "$U2" lua5.1 "$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" \
		report "$JOB"
	[[ $stderr == "xsite report: job $JOB: $XT_STATE/reports/$JOB/report.json is not readable by you: users read the records of their own jobs only (and $XT_STATE/reports must let users through: mode 0711 or 0755)" ]]
}

@test "xsite report: an unknown job, a bad job id, a corrupt record" {
	run -1 --separate-stderr xsite report 999999
	[[ $stderr == "xsite report: job 999999: no record in $XT_STATE/reports "* ]]
	run -2 --separate-stderr xsite report 12x
	[[ $stderr == "xsite report: '12x' is not a job id"* ]]
	run -2 --separate-stderr xsite report
	[[ $stderr == *"which job? give its JOBID"* ]]
	local dir=$XT_STATE/work/corrupt
	mkdir -p "$dir/$JOB"
	head -c 100 "$XT_STATE/reports/$JOB/report.json" >"$dir/$JOB/report.json"
	run -1 --separate-stderr xsite report "$JOB" --report-dir "$dir"
	[[ $stderr == "xsite report: $dir/$JOB/report.json: not JSON (offset "* ]]
	sed 's/"version":1/"version":7/' "$XT_STATE/reports/$JOB/report.json" >"$dir/$JOB/report.json"
	run -1 --separate-stderr xsite report "$JOB" --report-dir "$dir"
	assert_equal "$stderr" "xsite report: $dir/$JOB/report.json: version: 7, this xsite reads version 1"
}

@test "a symlink planted in the job's mpi directory is not followed" {
	local id rec
	# the user plants traffic-1.json -> a root-only file before step 1 ends
	printf '#!/bin/bash\nln -s /etc/shadow %s/reports/$SLURM_JOB_ID/mpi/traffic-1.json\nsrun -n1 true\nsrun -n1 true\n' \
		"$XT_STATE" >"$XT_STATE/work/$U1/plant.sh"
	chmod 755 "$XT_STATE/work/$U1/plant.sh"
	id=$(submit "$U1" -N1 -o out-%j.txt ./plant.sh)
	wait_job "$id"
	report_of "$id" batch >/dev/null
	rec=$(report_of "$id" 1)
	run -0 field "$(step_of "$rec" 1)" '.notes[1]'
	assert_output 'MPI traffic record traffic-1.json ignored: a symbolic link'
	[[ $rec != *root:* ]]
}

@test "a symlink planted at the --xsite-report path is not followed" {
	local id victim=$XT_STATE/work/$U1/victim
	printf 'precious\n' >"$victim"
	chown "$U1:" "$victim"
	# U2 plants a link in a directory both can write, where U1's copy goes
	mkdir -p "$XT_STATE/work/shared"
	chmod 1777 "$XT_STATE/work/shared"
	run -0 as "$U2" ln -s "$victim" "$XT_STATE/work/shared/rep.json"
	id=$(submit "$U1" -N1 --xsite-report="$XT_STATE/work/shared/rep.json" -o out-%j.txt --wrap 'srun true')
	wait_job "$id"
	report_of "$id" batch >/dev/null
	sleep 1
	run -0 cat "$victim"
	assert_output precious
	[[ -L $XT_STATE/work/shared/rep.json ]]
}

@test "a job that stayed at one site: its verdict says the link was not used" {
	local id
	id=$(submit "$U1" -N2 --site-affinity=pin --comm-profile=low -o out-%j.txt --wrap 'srun true')
	wait_job "$id"
	report_of "$id" batch >/dev/null
	run -0 --separate-stderr as "$U1" lua5.1 "$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" \
		report "$id"
	assert_line --regexp '^  decision:   pin \(user-pin\)'
	assert_line --regexp '^  verdict:    ran at (alpha|beta) only: the link was not used$'
}

# decision_of_solver: the policy's record for a held 2-node job of profile solver
decision_of_solver() {
	local id
	id=$(submit "$U1" -N2 --hold --comm-profile=solver -o /dev/null --wrap true)
	on_head scontrol show job "$id" | sed -n 's/^ *AdminComment=//p'
	on_head scancel "$id"
}

@test "xsite tune fits the profile to the record, and with --apply the next decision uses it" {
	local bytes rec
	report_of "$JOB" batch >/dev/null
	# tune takes a placement from Slurm's node list only, which the epilog keeps
	slurm_nodes_of "$JOB" 1 >/dev/null
	rec=$(report_of "$JOB" 0)
	bytes=$(field "$(step_of "$rec" 0)" .mpi.cross_bytes)
	# as configured, 100 GB and 100000 steps across a 1 ms link: pinned
	run -0 decision_of_solver
	assert_output --regexp 'action=pin why=slowdown'
	run -0 --separate-stderr xsite tune --profile solver
	assert_line --regexp '^profile solver: 1 job\(s\) spanned the link with an MPI traffic record \([0-9]+ records read\)$'
	assert_line --regexp "^  job $JOB +1\\+1 nodes, .* \\(\\+0\\.0 %\\)$"
	assert_line --regexp '^  before: the jobs moved 1/[0-9]+ of the bytes across that the profile predicted \(median\)$'
	assert_line --regexp "^  suggested: ProfileName=solver Exchange=$bytes Steps=11[01]$"
	# the policy reads ProfileStateFile (a change of xsite.conf is seen within 5 s)
	printf 'ProfileStateFile=%s/run/profiles.state\n' "$XT_STATE" >>"$XT_STATE/etc/xsite.conf"
	# one user's traffic record is theirs to write: the fit rests on it alone
	run -1 --separate-stderr xsite tune --profile solver --apply
	assert_equal "$stderr" "xsite tune: --apply: the fit rests on the jobs of 1 user(s) (uid $(id -u "$U1")), fewer than --min-users 2; a job's owner writes its traffic record: check their jobs, then give --min-users 1 to apply it"
	run ! test -e "$XT_STATE/run/profiles.state"
	run -0 --separate-stderr xsite tune --profile solver --apply --min-users 1
	assert_equal "$stderr" "xsite tune: wrote $XT_STATE/run/profiles.state: the policy's next decisions for solver use it"
	run -0 grep -c "^ProfileName=solver Exchange=$bytes Steps=11[01]$" "$XT_STATE/run/profiles.state"
	sleep 6
	run -0 decision_of_solver
	assert_output --regexp 'action=span why=within'
}

@test "xsite tune: a profile without data, an unknown profile, no profile" {
	run -1 --separate-stderr xsite tune --profile low
	[[ $stderr == "xsite tune: profile low: no job with this profile spanned the link with an MPI traffic record ("* ]]
	run -2 --separate-stderr xsite tune --profile nosuch
	[[ $stderr == "xsite tune: --profile: unknown profile 'nosuch'"* ]]
	run -2 --separate-stderr xsite tune
	[[ $stderr == "xsite tune: --profile: which profile?"* ]]
}

@test "report=no in plugstack.conf: no record and no XSITE_TRAFFIC_FILE" {
	local line id
	line=$(cat "$XT_STATE/etc/plugstack.conf.d/xsite.conf")
	printf '%s report=no\n' "$line" >"$XT_STATE/etc/plugstack.conf.d/xsite.conf"
	printf '#!/bin/bash\necho "${XSITE_TRAFFIC_FILE:-unset}"\nsrun sh -c %s\n' \
		"'echo \"\${XSITE_TRAFFIC_FILE:-unset}\"'" >"$XT_STATE/work/$U1/env.sh"
	chmod 755 "$XT_STATE/work/$U1/env.sh"
	id=$(submit "$U1" -N1 -o out-%j.txt ./env.sh)
	wait_job "$id"
	printf '%s\n' "$line" >"$XT_STATE/etc/plugstack.conf.d/xsite.conf"
	sleep 1
	[[ ! -e $XT_STATE/reports/$id ]]
	run -0 cat "$XT_STATE/work/$U1/out-$id.txt"
	assert_output "unset
unset"
}
