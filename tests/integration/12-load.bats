#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2054
# (SC2054: the commas are inside --comm-profile values)
# Load: 2000 held submissions (sbatch -H) with random valid and invalid xsite
# flags, two at a time.  Every valid one is accepted with a decision (an
# xsite record in admin_comment), every invalid one refused before
# submission with a message naming the flag; slurmctld is still up and its
# resident memory grew by less than XT_LOAD_RSS_MB (default 50 MB) -- the
# figures are printed.  The jobs are cancelled at the end.
#
# The bound: slurmctld keeps a record of each of the ~1500 accepted jobs
# (held, then cancelled, kept for MinJobAge=300 s) -- a few KB each, some
# 10 MB for all of them at most -- and the Lua state of job_submit.lua, whose
# caches are bounded.  50 MB is 30+ KB per job: a leak of the policy's per-job
# work would cross it, the job records alone would not.

bats_require_minimum_version 1.5.0

XT_LOAD_JOBS=${XT_LOAD_JOBS:-2000}
XT_LOAD_RSS_MB=${XT_LOAD_RSS_MB:-50}

setup_file() {
	load helpers
	xt_init load
	xt_up
	# submit.sh I ARGS...: one submission; prints "I rc jobid-or-message"
	cat >"$XT_STATE/work/submit.sh" <<'EOF'
#!/bin/sh
i=$1
shift
if out=$(sbatch -H --parsable -J "load-$i" "$@" --wrap true 2>&1); then
	printf '%s 0 %s\n' "$i" "$(printf '%s' "$out" | tail -n 1)"
else
	printf '%s 1 %s\n' "$i" "$(printf '%s' "$out" | head -n 1)"
fi
EOF
	chmod +x "$XT_STATE/work/submit.sh"
}

teardown_file() {
	load helpers
	xt_down
}

setup() {
	load helpers
	load_libs
}

# rss_kb: slurmctld's VmRSS in kB
rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$(cat "$XT_STATE/run/slurmctld.daemon.pid")/status"
}

# gen_cases N: N lines "I KIND EXPECT ARGS..." (KIND ok|bad; EXPECT: for bad
# ones the start of sbatch's first stderr line), from a fixed seed
gen_cases() {
	local n=$1 i aff prof nodes r
	local affs=(auto pin span alpha beta) profs=(low medium high pingpong
		op=1e12,b=1GB,x=1MB op=1e9,b=1GB,x=10MB,steps=100,pattern=tree)
	local bad_affs=(gamma Alpha pin,span beta1 '*') bad_profs=(huge op=1e9,b=1GB op=x,b=1GB,x=1MB
		op=1,b=2,x=3,steps=1.5 op=1e9,b=1GB,x=1MB,pattern=ring)
	RANDOM=4242
	for ((i = 1; i <= n; i++)); do
		r=$((RANDOM % 4))
		aff=${affs[RANDOM % ${#affs[@]}]}
		prof=${profs[RANDOM % ${#profs[@]}]}
		# a job that fits the site it asks for: pin, alpha and beta up to 2 nodes
		case $aff in
		pin | alpha | beta) nodes=$((1 + RANDOM % 2)) ;;
		*) nodes=$((1 + RANDOM % 4)) ;;
		esac
		case $r in
		0)
			aff=${bad_affs[RANDOM % ${#bad_affs[@]}]}
			printf '%d bad xsite:_--site-affinity=%s: -N%d --site-affinity=%s --comm-profile=%s\n' \
				"$i" "$aff" "$nodes" "$aff" "$prof"
			;;
		1)
			prof=${bad_profs[RANDOM % ${#bad_profs[@]}]}
			printf '%d bad xsite:_--comm-profile=%s: -N%d --site-affinity=%s --comm-profile=%s\n' \
				"$i" "$prof" "$nodes" "$aff" "$prof"
			;;
		*)
			if ((RANDOM % 8 == 0)); then
				# the same flag twice with another value
				printf '%d bad xsite:_--site-affinity:_given_twice -N%d --site-affinity=%s --site-affinity=%s\n' \
					"$i" "$nodes" "$aff" "$([[ $aff == auto ]] && echo pin || echo auto)"
			else
				printf '%d ok - -N%d --site-affinity=%s --comm-profile=%s\n' "$i" "$nodes" "$aff" "$prof"
			fi
			;;
		esac
	done
}

@test "2000 held submissions with random flags: valid ones decided, invalid ones refused, slurmctld fine" {
	local cases=$XT_STATE/work/cases results=$XT_STATE/work/results rss0 rss1 t0 t1
	local nok nbad accepted refused wrong=0 i kind expect rest rc text rec
	gen_cases "$XT_LOAD_JOBS" >"$cases"
	nok=$(grep -c ' ok ' "$cases")
	nbad=$(grep -c ' bad ' "$cases")
	rss0=$(rss_kb)
	t0=$SECONDS
	# two at a time; each line: I rc text
	cut -d' ' -f1,4- "$cases" | (cd "$XT_STATE/work" && tb on head xargs -P2 -L1 ./submit.sh) >"$results"
	t1=$SECONDS
	run -0 on_head scontrol ping
	assert_output --partial 'is UP'
	rss1=$(rss_kb)

	# every case has its result; compare them
	[[ $(wc -l <"$results") -eq $XT_LOAD_JOBS ]]
	declare -A res
	while read -r i rc text; do res[$i]="$rc $text"; done <"$results"
	declare -A records
	while read -r i rec; do records[$i]=$rec; done < <(on_head scontrol show job -o |
		sed -nE 's/^JobId=([0-9]+) .* AdminComment=(xsite v=1 action=[a-z]+ why=[a-z-]+).*/\1 \2/p')
	accepted=0
	refused=0
	while read -r i kind expect rest; do
		read -r rc text <<<"${res[$i]}"
		if [[ $kind == ok ]]; then
			if [[ $rc == 0 && $text =~ ^[0-9]+$ && -n ${records[$text]:-} ]]; then
				accepted=$((accepted + 1))
			else
				((wrong++ < 5)) && printf 'case %s (%s): not accepted with a record: %s\n' "$i" "$rest" "${res[$i]}" >&2
			fi
		else
			expect=${expect//_/ }
			if [[ $rc == 1 && $text == "sbatch: error: $expect"* ]]; then
				refused=$((refused + 1))
			else
				((wrong++ < 5)) && printf 'case %s (%s): wanted "sbatch: error: %s...", got: %s\n' \
					"$i" "$rest" "$expect" "${res[$i]}" >&2
			fi
		fi
	done <"$cases"
	# nothing of a refused case reached slurmctld
	run -0 on_head squeue -h -t all -o %j
	local submitted
	submitted=$(grep -c '^load-' <<<"$output")

	printf '# %d submissions in %d s: %d valid, %d accepted with a record; %d invalid, %d refused\n' \
		"$XT_LOAD_JOBS" "$((t1 - t0))" "$nok" "$accepted" "$nbad" "$refused" >&3
	printf '# jobs slurmctld holds: %d; slurmctld VmRSS before %d kB, after %d kB (+%d kB, bound %d MB)\n' \
		"$submitted" "$rss0" "$rss1" "$((rss1 - rss0))" "$XT_LOAD_RSS_MB" >&3
	on_head scancel -u root
	assert_equal "$wrong" 0
	assert_equal "$accepted" "$nok"
	assert_equal "$refused" "$nbad"
	assert_equal "$submitted" "$nok"
	(((rss1 - rss0) < XT_LOAD_RSS_MB * 1024))
	# the cancellations are handled too
	run -0 on_head scontrol ping
	assert_output --partial 'is UP'
}
