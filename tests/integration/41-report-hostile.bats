#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2154
# (SC2016: the quoted $... run inside the jobs; SC2154: bats sets $output)
# What root does in slurmstepd with what a hostile job owner controls, on the
# testbed, with jobs of a real unprivileged user made for the test: the
# --xsite-report writer stopped by its user, traffic records that are huge,
# FIFOs or hold escape sequences, the job's mpi/ directory after the job, a
# job id that comes back, ReportRetention, `xsite report`'s scontrol
# fallback fed a spoofing job name, a step that names other nodes as the
# job's, a step that ignores its job's end until KillWait, and a
# --comm-profile too long to parse.
# Each test is judged by what root did (the job's state in Slurm, files and
# their owners, the slurmd log), never by xsite's own record alone.

bats_require_minimum_version 1.5.0

U=xsite-h1

# xsite CMD...: the command on the head, as root, with the testbed's library
xsite() {
	on_head env XSITE_LUADIR="$XT_LUADIR" lua5.1 "$XT_STATE/work/xsite" \
		--config "$XT_STATE/etc/xsite.conf" "$@"
}

# submit ARGS...: sbatch as the user, on alpha1, from the user's directory; prints the job id
submit() {
	xt_as "$U" sbatch --parsable -w alpha1 "$@" | tail -n 1
}

# gone JOB SECONDS: until Slurm has forgotten nothing but the job's end:
# COMPLETED and not COMPLETING, and no slurmstepd of the job left on alpha1
gone() {
	local job=$1 limit=$2 i state
	for ((i = 0; i < limit * 10; i++)); do
		state=$(on_head squeue -h -t all -j "$job" -o %T 2>/dev/null) || true
		if [[ $state == COMPLETED ]] && ! pgrep -f "slurmstepd: \[$job\." >/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	printf 'job %s still %s after %s s\n' "$job" "${state:-?}" "$limit" >&2
	return 1
}

# stamp_dir JOB UID ENDED AGE_DAYS: a job directory as xsite leaves it, AGE_DAYS old
stamp_dir() {
	local dir=$XT_STATE/reports/$1
	mkdir -p "$dir/mpi"
	printf 'xsite-job uid=%s made=1 ended=%s\n' "$2" "$3" >"$dir/.job"
	chmod 0600 "$dir/.job"
	chmod 0750 "$dir"
	touch -d "-$4 days" "$dir"
}

setup_file() {
	load helpers
	xt_init report-hostile
	xt_user "$U"
	xt_up || return 1
	xt_place "$XT_XSITE" "$XT_STATE/work/xsite"
	mkdir -p "$XT_STATE/work/$U"
	chown "$U:" "$XT_STATE/work/$U"
	# what a user can run on a node of theirs: it creates READY (the job
	# script waits for it, so that a loaded machine cannot end the job before
	# the stopper has started); once the job script whose pid is in FILE has
	# ended, for up to 10 s, SIGSTOP every process of their uid, again and
	# again without a pause (kill(-1) reaches all of them in one call), and
	# every 50 ms look for what it hit: the --xsite-report writer, forked
	# from slurmstepd, which runs as them once it has changed its uid.
	# Prints the pid of the stopped slurmstepd; lets anything else go on.
	cat >"$BATS_FILE_TMPDIR/stopper.c" <<'EOF'
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* the process of our uid, other than us, stopped and named slurmstepd;
 * every other stopped process of ours is let go on */
static int stopped_stepd(void)
{
	char path[300], line[256];
	unsigned uid = getuid(), u;
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;

	while (d && (e = readdir(d)) != NULL) {
		FILE *f;
		int mine = 0, name = 0, stopped = 0;

		if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		if ((f = fopen(path, "r")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f)) {
			if (strcmp(line, "Name:\tslurmstepd\n") == 0)
				name = 1;
			if (strncmp(line, "State:\tT", 8) == 0)
				stopped = 1;
			if (sscanf(line, "Uid:\t%u", &u) == 1 && u == uid)
				mine = 1;
		}
		fclose(f);
		if (mine && stopped && name)
			found = atoi(e->d_name);
		else if (mine && stopped)
			kill(atoi(e->d_name), SIGCONT);
	}
	if (d)
		closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + atoi(argv[2]);
	FILE *f;
	int script = 0, pid;

	if ((f = fopen(argv[3], "w")) == NULL)
		return 2;
	fclose(f);

	(void)argc;
	while (script <= 0 && time(NULL) < end) {
		if ((f = fopen(argv[1], "r")) != NULL) {
			if (fscanf(f, "%d", &script) != 1)
				script = 0;
			fclose(f);
		}
		if (script <= 0)
			usleep(2000);
	}
	while (script > 0 && kill(script, 0) == 0 && time(NULL) < end)
		usleep(200);
	/* the writer runs as the job ends, within seconds of the script */
	if (end > time(NULL) + 10)
		end = time(NULL) + 10;
	while (time(NULL) < end) {
		struct timespec t0, t;

		/* kill(-1) returns 0 whenever any process exists: it says nothing of a hit */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			kill(-1, SIGSTOP);
			clock_gettime(CLOCK_MONOTONIC, &t);
		} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 50000000L);
		if ((pid = stopped_stepd()) > 0) {
			printf("%d\n", pid);
			return 0;
		}
	}
	return 1;
}
EOF
	gcc -O2 -o "$XT_STATE/work/stopper" "$BATS_FILE_TMPDIR/stopper.c"
	# a traffic record whose version holds terminal escape sequences
	printf '{"version":"\\u001b]0;owned\\u0007\\u001b[2J","job":1}' >"$XT_STATE/work/$U/escapes.json"
	# the job's traffic record of 840 KB: 200 x 200 twenty-digit byte counts
	cat >"$XT_STATE/work/$U/big-traffic.sh" <<'EOF'
#!/bin/bash
awk -v job="$SLURM_JOB_ID" -v n=200 'BEGIN {
	row = "["
	for (j = 1; j <= n; j++) row = row (j > 1 ? "," : "") "12345678901234567890"
	row = row "]"
	printf "{\"version\":1,\"job\":%s,\"ranks\":%d,\"cross\":{\"bytes\":0,\"messages\":0,", job, n
	printf "\"p2p_bytes\":0,\"p2p_messages\":0,\"coll_bytes\":0,\"coll_messages\":0},\"matrix\":["
	for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? "," : ""), row
	printf "]}"
}'
EOF
	chmod 0755 "$XT_STATE/work/$U/big-traffic.sh"
}

teardown_file() {
	load helpers
	xt_init report-hostile
	xt_down
	xt_users_remove
}

setup() {
	load helpers
	load_libs
	xt_init report-hostile
	[[ -z ${XT_SKIP:-} ]] || skip "$XT_SKIP"
}

@test "a user who stops the --xsite-report writer does not keep the job COMPLETING: root kills it after 20 s" {
	local job pid caught='' start end log=$XT_STATE/log/slurmd-alpha1.log
	# a race the user must win once: on a loaded machine (two stacks' tests
	# on the 2 cores) 5 tries were once all missed, so 10, each given up 10 s
	# after the script has ended
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		rm -f "$XT_STATE/work/$U/script.pid" "$XT_STATE/work/$U/stopper.ready"
		# the script ends once the stopper is there (at most 60 s); its
		# traffic record of 840 KB keeps the writer at work long enough for
		# a loaded machine to let the stopper run while it does
		job=$(submit --xsite-report -o out-%j.txt --wrap 'srun -n1 true
			./big-traffic.sh >"$XSITE_TRAFFIC_FILE"
			for _ in $(seq 600); do [ -e stopper.ready ] && break; sleep 0.1; done
			echo $$ >s.$$; mv s.$$ script.pid')
		# the user's process on alpha1, outside the job: stops the writer once the script has ended
		pid=$(tb on alpha1 runuser -u "$U" -- "$XT_STATE/work/stopper" "$XT_STATE/work/$U/script.pid" 60 \
			"$XT_STATE/work/$U/stopper.ready") || pid=''
		if [[ -n $pid ]]; then
			caught=$pid
			break
		fi
		gone "$job" 60
	done
	[[ -n $caught ]] || {
		printf 'in 10 jobs the stopper never caught the writer: this test proves nothing\n' >&2
		return 1
	}
	printf '# job %s: the user stopped pid %s\n' "$job" "$caught" >&3
	start=$(date +%s)
	run -0 gone "$job" 45
	end=$(date +%s)
	printf '# job %s ended %s s after its writer was stopped\n' "$job" "$((end - start))" >&3
	# the writer is gone (killed and reaped), the node is not drained
	run ! kill -0 "$caught"
	run -0 grep -c "xsite: report: job $job: --xsite-report: the writer (uid $(id -u "$U")) did not finish within 20 s (stopped or hung): killed; no copy" "$log"
	assert_output 1
	# slurmctld may show the node mixed for a moment after the job's end:
	# within 10 s it is idle, and it is never drained
	local i st
	for ((i = 0; i < 100; i++)); do
		st=$(on_head sinfo -h -n alpha1 -o %t)
		[[ $st != drain* && $st != drng* ]] || break
		[[ $st == idle ]] && break
		sleep 0.1
	done
	assert_equal "$st" idle
}

@test "a 64 MiB traffic record is not read: the step ends at once and its record says why in one line" {
	local job rec start end
	job=$(submit --wrap 'dd if=/dev/zero of="$XSITE_TRAFFIC_FILE" bs=1M count=64 status=none; date +%s.%N >t-end')
	wait_job "$job"
	rec=$(report_of "$job" batch)
	end=$(stat -c %Y "$XT_STATE/reports/$job/report.json")
	start=$(cut -d. -f1 "$XT_STATE/work/$U/t-end")
	# read, it cost root minutes (issue: 115 s of CPU); the bound leaves
	# room for a loaded machine's end of step, and is no timing test
	assert [ $((end - start)) -le 10 ]
	run -0 grep -o 'MPI traffic record ignored: traffic-batch.json: 67108864 bytes, over TrafficMaxSize (1048576 bytes); not read' <<<"$rec"
	run ! test -e "$XT_STATE/reports/$job/mpi/traffic-batch.json"
}

@test "a job whose steps each write a traffic record of 840 KB leaves a record of one step's matrix, not of each" {
	local job dir
	# every step's end reads the job's record back and writes it again:
	# with a matrix of each step kept, it grew by the traffic record's size
	# at every step, and so did root's work at each step's end
	cat >"$XT_STATE/work/$U/big-steps.sh" <<'EOF'
#!/bin/bash
# the traffic record of 840 KB, written by five steps
./big-traffic.sh >big.json
for i in 1 2 3 4 5; do
	srun -n1 bash -c 'cp big.json "$XSITE_TRAFFIC_FILE"'
done
EOF
	chmod 0755 "$XT_STATE/work/$U/big-steps.sh"
	job=$(submit -t 5 big-steps.sh)
	wait_job "$job"
	dir=$XT_STATE/reports/$job
	# each step's traffic record was read: five steps with their totals
	run -0 jq -r '[.steps[] | select(.mpi != null) | .mpi.ranks] | map(tostring) | join(" ")' "$dir/report.json"
	[[ $output == "200 200 200 200 200" ]]
	run -0 jq -r '[.steps[] | select(.mpi != null and .mpi.matrix != null) | .step] | join(" ")' "$dir/report.json"
	[[ $output == 4 ]]
	run -0 stat -c %s "$dir/report.json"
	((output < 1200000))
}

@test "a FIFO as the traffic record does not block root" {
	local job rec
	job=$(submit --wrap 'mkfifo "$XSITE_TRAFFIC_FILE"')
	run -0 gone "$job" 60
	rec=$(report_of "$job" batch)
	run -0 grep -o 'MPI traffic record ignored: traffic-batch.json: not a regular file of uid [0-9]*' <<<"$rec"
}

@test "escape sequences in a traffic record reach the slurmd log escaped" {
	local job log=$XT_STATE/log/slurmd-alpha1.log
	job=$(submit --wrap 'cp escapes.json "$XSITE_TRAFFIC_FILE"')
	wait_job "$job"
	report_of "$job" batch >/dev/null
	run -0 grep -F "job $job step batch: MPI traffic record ignored: traffic record: version: not 1 (\\x1b]0;owned\\x07\\x1b[2J)" "$log"
	run ! grep -P '\x1b' "$log"
}

@test "once the job has ended its mpi/ is root's: the user cannot write there any more" {
	local job
	job=$(submit --wrap 'touch "$(dirname "$XSITE_TRAFFIC_FILE")/during"')
	run -0 gone "$job" 60
	run -0 stat -c '%U %a' "$XT_STATE/reports/$job/mpi"
	assert_output 'root 700'
	run -0 test -e "$XT_STATE/reports/$job/mpi/during"
	run ! tb on alpha1 runuser -u "$U" -- touch "$XT_STATE/reports/$job/mpi/after"
	run ! test -e "$XT_STATE/reports/$job/mpi/after"
	run -0 grep -q 'ended=[1-9]' "$XT_STATE/reports/$job/.job"
}

@test "a job id that comes back finds the earlier job's files moved aside, not mixed into its record" {
	local last next rec
	last=$(submit --wrap true)
	wait_job "$last"
	next=$((last + 1))
	# what an earlier job with the id next left behind: another user's, ended
	stamp_dir "$next" 4243 1700000000 2
	printf '{"schema":"xsite-report","version":1,"job":"%s","steps":[{"step":"old"}]}' "$next" \
		>"$XT_STATE/reports/$next/report.json"
	touch "$XT_STATE/reports/$next/mpi/traffic-batch.json"
	assert_equal "$(submit --wrap true)" "$next"
	wait_job "$next"
	rec=$(report_of "$next" batch)
	run ! grep -q '"step":"old"' <<<"$rec"
	run -0 grep -c '"step":' <<<"$rec"
	assert_output 1
	run -0 bash -c "ls -d '$XT_STATE/reports/.stale.$next.'*"
	run -0 grep -F "ReportDir $XT_STATE/reports: $next/ was an earlier job's (uid 4243, ended): moved to .stale.$next." \
		"$XT_STATE/log/slurmd-alpha1.log"
	run -0 grep -q "uid=$(id -u "$U") " "$XT_STATE/reports/$next/.job"
}

@test "ReportRetention: a job's epilog removes ended job directories older than 30 days, never through a link" {
	local job
	stamp_dir 900001 4243 1700000000 31
	stamp_dir 900002 4243 0 31
	stamp_dir 900003 4243 1700000000 29
	printf 'keep me\n' >"$BATS_FILE_TMPDIR/outside"
	ln -s "$BATS_FILE_TMPDIR/outside" "$XT_STATE/reports/900001/mpi/link"
	ln -s / "$XT_STATE/reports/900001/mpi/root"
	touch -d '-31 days' "$XT_STATE/reports/900001" "$XT_STATE/reports/900002"
	job=$(submit --wrap true)
	run -0 gone "$job" 60
	run ! test -e "$XT_STATE/reports/900001"
	run -0 test -d "$XT_STATE/reports/900002"
	run -0 test -d "$XT_STATE/reports/900003"
	run -0 cat "$BATS_FILE_TMPDIR/outside"
	assert_output 'keep me'
	run -0 test -d "$XT_STATE/reports/$job"
}

@test "xsite report without accounting: a job name that spoofs AdminComment or JobState is not believed" {
	local job
	job=$(submit -J 'x JobState=SPOOFED AdminComment=xsite v=1 action=span why=spoofed mode=enforce n=1' --wrap true)
	wait_job "$job"
	report_of "$job" batch >/dev/null
	run -0 xsite report "$job"
	refute_output --partial spoofed
	refute_output --partial SPOOFED
	assert_line --partial 'decision:   none (one-node)'
}

@test "a step that names other nodes in SLURM_JOB_NODELIST (a job, a heterogeneous job): xsite report gives Slurm's placement and no verdict" {
	local job het
	# the job gets alpha1 and beta1; its one step says the job has alpha1
	# only, and so does the record the step writes (its name tries to say
	# so to a parse of scontrol's line).  The record's placement is the
	# first step's to end: the script waits for step 0's, as srun may
	# return before that step's slurmstepd has written it (Slurm 24.11)
	cat >"$XT_STATE/work/$U/claim.sh" <<EOF
#!/bin/bash
SLURM_JOB_NODELIST=alpha1 SLURM_NODELIST=alpha1 srun -N1 -n1 -w alpha1 true
for ((i = 0; i < 300; i++)); do
	grep -qs '"step":"0"' "$XT_STATE/reports/\$SLURM_JOB_ID/report.json" && exit 0
	sleep 0.1
done
echo "step 0's record was not written within 30 s" >&2
exit 1
EOF
	chmod 0755 "$XT_STATE/work/$U/claim.sh"
	job=$(xt_as "$U" sbatch --parsable -N2 -w alpha1,beta1 --site-affinity=span -J 'x NodeList=alpha1' claim.sh |
		tail -n 1)
	run -0 wait_job "$job"
	run -0 report_of "$job" batch
	run -0 on_head squeue -h -t all -j "$job" -o %T
	assert_output COMPLETED
	# where Slurm ran it: both sites
	run -0 on_head scontrol show job "$job"
	assert_line --regexp '^ +NodeList=alpha1,beta1$'
	# the record took the step's word for it
	run -0 jq -c .nodes.split "$XT_STATE/reports/$job/report.json"
	assert_output '[1,0]'
	run -0 xsite report "$job"
	assert_line --partial 'placement:  alpha:1 + beta:0 nodes'
	assert_line --partial "Slurm gave: alpha:1 + beta:1 nodes: the job's steps took other nodes"
	assert_line --partial "verdict:    none: the record's placement is not the one Slurm gave the job"
	refute_output --partial 'ran at alpha only'
	# once the job has ended, slurmd's epilog puts Slurm's list beside the
	# record: xsite report needs no squeue, sacct or scontrol for it (a
	# PATH without them)
	run -0 slurm_nodes_of "$job" 1
	assert_output "{\"$job\":\"alpha1,beta1\"}"
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	for cmd in stat id timeout sh; do ln -sf "$(command -v "$cmd")" "$BATS_TEST_TMPDIR/bin/"; done
	run -0 on_head env PATH="$BATS_TEST_TMPDIR/bin" XSITE_LUADIR="$XT_LUADIR" "$(command -v lua5.1)" \
		"$XT_STATE/work/xsite" --config "$XT_STATE/etc/xsite.conf" report "$job"
	refute_output --partial "not believed"
	assert_line --partial 'decision:   unknown (no AdminComment record from accounting or slurmctld)'
	assert_line --partial "Slurm gave: alpha:1 + beta:1 nodes: the job's steps took other nodes"
	# a heterogeneous job: its steps name all its components' nodes, and
	# squeue's and sacct's first line is one component's (not compared);
	# slurmd's epilog puts each component's list beside the leader's record
	cat >"$XT_STATE/work/$U/het.sh" <<'EOF'
#!/bin/bash
#SBATCH -N1 -w alpha1 --site-affinity=span
#SBATCH hetjob
#SBATCH -N1 -w beta1 --site-affinity=span
srun --het-group=0,1 true
EOF
	chmod 0755 "$XT_STATE/work/$U/het.sh"
	het=$(xt_as "$U" sbatch --parsable het.sh | tail -n 1)
	het=${het%%+*}
	# (squeue shows a line per component: the record's last step is the wait)
	run -0 report_of "$het" batch
	run -0 report_of "$het" 0
	run -0 slurm_nodes_of "$het" 2
	assert_output "$(jq -c -S -n --arg a "$het" --arg b $((het + 1)) '{($a): "alpha1", ($b): "beta1"}')"
	run -0 xsite report "$het"
	assert_line --partial 'placement:  alpha:1 + beta:1 nodes, across the link'
	refute_output --partial 'Slurm gave'
	refute_line --partial 'verdict:    none:'
	# a heterogeneous job whose step says it ran at alpha only
	cat >"$XT_STATE/work/$U/het-claim.sh" <<'EOF'
#!/bin/bash
#SBATCH -N1 -w alpha1 --site-affinity=span
#SBATCH hetjob
#SBATCH -N1 -w beta1 --site-affinity=span
SLURM_JOB_NODELIST=alpha1 SLURM_NODELIST=alpha1 srun --het-group=0 true
EOF
	chmod 0755 "$XT_STATE/work/$U/het-claim.sh"
	het=$(xt_as "$U" sbatch --parsable het-claim.sh | tail -n 1)
	het=${het%%+*}
	run -0 report_of "$het" batch
	run -0 slurm_nodes_of "$het" 2
	run -0 jq -c .nodes.split "$XT_STATE/reports/$het/report.json"
	assert_output '[1,0]'
	run -0 xsite report "$het"
	assert_line --partial "Slurm gave: alpha:1 + beta:1 nodes: the job's steps took other nodes"
	assert_line --partial "verdict:    none: the record's placement is not the one Slurm gave the job"
}

@test "a step that outlives its job's end by KillWait, in a job with no batch step: the epilog puts Slurm's list beside a record still to come, and both are kept" {
	local job pid i
	# an allocation with no batch step (salloc --no-shell) and one step, at
	# beta1, that ignores SIGTERM; the owner cancels the job: alpha1, the
	# list's first node, runs the epilog at once, before any record exists,
	# and slurmd kills the step KillWait (5 s) later.  (srun from outside
	# the allocation is given the job's node list as salloc's shell has it:
	# without, srun gives the step its own nodes as the job's)
	job=$(xt_as "$U" salloc --no-shell -N2 -w alpha1,beta1 --site-affinity=span 2>&1 |
		sed -n 's/.*Granted job allocation \([0-9][0-9]*\).*/\1/p')
	[[ $job =~ ^[0-9]+$ ]]
	xt_as "$U" env SLURM_JOB_NODELIST=alpha1,beta1 srun --jobid="$job" -N1 -n1 -w beta1 \
		bash -c 'trap "" TERM; sleep 60' >/dev/null 2>&1 3>&- &
	pid=$!
	for ((i = 0; i < 300; i++)); do
		[[ -f $XT_STATE/reports/$job/.job ]] && on_head squeue -h -s -j "$job" -o %i | grep -qx "$job\.0" && break
		sleep 0.1
	done
	run -0 on_head squeue -h -s -j "$job" -o %i
	assert_line "$job.0"
	run -0 xt_as "$U" scancel "$job"
	run -0 slurm_nodes_of "$job" 1
	assert_output "{\"$job\":\"alpha1,beta1\"}"
	# the list came first: step 0 has not ended yet
	run -0 on_head squeue -h -j "$job" -o %T
	assert_output COMPLETING
	run -1 test -e "$XT_STATE/reports/$job/report.json"
	run -0 report_of "$job" 0
	wait "$pid" || true
	run -0 wait_job "$job"
	run -0 jq -c -S . "$XT_STATE/reports/$job/slurm-nodes.json"
	assert_output "{\"$job\":\"alpha1,beta1\"}"
	run -0 xsite report "$job"
	assert_line --partial 'placement:  alpha:1 + beta:1 nodes, across the link'
	assert_line --regexp '^ +step 0 +alpha:0 \+ beta:1 nodes'
	refute_output --partial 'Slurm gave'
	refute_line --partial 'verdict:    none:'
}

@test "a --comm-profile of 120 000 characters in the job's environment is not parsed by root" {
	local job p
	# --export puts it in the job's environment only: slurmctld never sees it
	p="op=1$(printf '%*s' 120000 '')x "
	job=$(submit --export="ALL,XSITE_COMM_PROFILE=$p" --wrap true)
	run -0 gone "$job" 60
	run -0 report_of "$job" batch
	assert_output --partial 'no prediction: --comm-profile: 120006 characters, more than the 256 it may have'
}

@test "a profile with escape sequences, carried in the job's environment into slurmstepd, reaches xsite report escaped" {
	local job
	job=$(xt_as "$U" \
		env SLURM_SPANK_XSITE_COMM_PROFILE=$'op=1\x1b]0;owned\x07,b=\x1b[2J' sbatch --parsable -w alpha1 --wrap true |
		tail -n 1)
	wait_job "$job"
	run -0 report_of "$job" batch
	assert_output --partial 'no prediction: '
	run -0 xsite report "$job"
	assert_output --partial '\x1b]0;owned\x07'
	run ! grep -P '[\x00-\x09\x0b-\x1f\x7f]' <<<"$output"
}
