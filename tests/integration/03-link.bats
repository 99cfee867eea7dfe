#!/usr/bin/env bats
# The emulated extender link: latency and bandwidth at run time, cut, restore,
# and a dead delay line never going unnoticed.

bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	xt_init link
	xt_advise_config
	xt_up
	build_pingpong
}

teardown_file() {
	load helpers
	xt_down
}

setup() {
	load helpers
	load_libs
}

# rtt_min FROM TO: minimum ping RTT in ms, measured independently of the tool
rtt_min() {
	tb on "$1" ping -n -q -c 10 -i 0.02 -W 2 "$2" | sed -nE 's|.*= ([0-9.]+)/.*|\1|p'
}

@test "link set: the RTT across the link follows the latency (0.1, 5, 9 ms)" {
	local lat ms rtt
	for lat in 0.1 5 9; do
		run -0 tb link set --latency "${lat}ms"
		assert_output --partial "RTT alpha1 -> beta1"
		rtt=$(rtt_min alpha2 beta2)
		printf '# latency %s ms: RTT alpha2 -> beta2 min %s ms\n' "$lat" "$rtt" >&3
		ms=$(awk -v l="$lat" 'BEGIN { print 2 * l }')
		fcmp 'a >= b && a <= b * 1.2 + 0.5' "$rtt" "$ms"
	done
}

@test "link set: traffic inside a site does not cross the delay line" {
	local rtt
	run -0 tb link set --latency 9ms
	rtt=$(rtt_min alpha1 alpha2)
	printf '# RTT alpha1 -> alpha2 with the link at 9 ms: %s ms\n' "$rtt" >&3
	fcmp 'a < 1' "$rtt"
	rtt=$(rtt_min head alpha2)
	fcmp 'a < 1' "$rtt"
}

@test "link set: a latency change keeps open connections alive" {
	local out=$XT_STATE/work/longrun.out
	run -0 tb link set --latency 1ms
	(on_head srun -N2 -n2 -w alpha1,beta1 ./pingpong -n 1500 -t 60 >"$out" 2>&1 3>&-) &
	sleep 1.2
	run -0 tb link set --latency 3ms
	sleep 1
	run -0 tb link set --latency 1ms
	wait "$!"
	run -0 cat "$out"
	assert_line --regexp '^pingpong from=alpha1 to=beta1 bytes=8 iters=1500 '
}

@test "link set --bandwidth: tbf shapes TCP across the link" {
	local mbps
	run -0 tb link set --latency 1ms --bandwidth 100Mb/s
	assert_output --partial '100Mb/s'
	tb on beta2 iperf3 -s -1 -D -p 5201 3>&-
	sleep 0.3
	run -0 tb on alpha2 iperf3 -c beta2 -p 5201 -t 2 -f m
	mbps=$(awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") print $(i - 1) }' <<<"$output")
	printf '# 100 Mb/s configured: TCP %s Mbit/s\n' "$mbps" >&3
	fcmp 'a > 60 && a <= 105' "$mbps"
	run -0 tb link set --bandwidth 1Gb/s
}

@test "link set refuses bad values with a clear message" {
	run -1 tb link set --latency fast
	assert_output "xsite-testbed: link set: --latency: invalid value: 'fast' is not a number with a unit (s, ms, us or ns)"
	run -1 tb link set --bandwidth 10
	assert_output --partial "xsite-testbed: link set: --bandwidth: invalid value: '10' needs a unit"
	run -1 tb link set
	assert_output 'xsite-testbed: link set: give --latency and/or --bandwidth'
}

@test "link cut: a job inside one site still runs" {
	run -0 tb link cut
	assert_output --partial 'cut'
	run_mpi on_head srun -N2 -n2 -w alpha1,alpha2 --mpi=pmix ./pingpong -n 200 -t 30
	assert_success
	assert_line --regexp '^pingpong from=alpha1 to=alpha2 '
}

@test "link cut: a cross-site ping-pong fails within 30 s" {
	local t0 elapsed
	t0=$SECONDS
	run ! timeout 30 "$XT_TB" --name "$XT_NAME" --state-dir "$XT_STATE" on head \
		sh -c "cd '$XT_STATE/work' && srun -N2 -n2 -w alpha1,beta1 --mpi=pmix ./pingpong -n 10 -t 10"
	elapsed=$((SECONDS - t0))
	printf '# cross-site ping-pong over a cut link failed after %s s\n' "$elapsed" >&3
	refute_output --partial 'pingpong from='
	((elapsed < 30))
}

@test "link restore: cross-site traffic comes back" {
	run -0 tb link restore
	assert_output --partial 'RTT alpha1 -> beta1'
	# beta1 may still be finishing the failed job of the cut; use the others
	wait_idle 60 alpha2 beta2
	run_mpi on_head srun -N2 -n2 -w alpha2,beta2 --mpi=pmix ./pingpong -n 200 -t 30
	assert_success
	assert_line --regexp '^pingpong from=alpha2 to=beta2 '
}

@test "a dead delay line is noticed, and the link fails closed" {
	local pid
	pid=$(cat "$XT_STATE/run/linkemu.pid")
	kill -KILL "$pid"
	run -1 tb link check
	# either message: the process may linger a moment as a zombie, its socket closed
	assert_output --regexp 'the delay line \(linkemu\) is not running|the delay line does not answer'
	run -1 tb status
	assert_output --partial 'delay line NOT running'
	# no silent fallback to an undelayed route
	run ! tb on alpha1 ping -n -q -c 3 -i 0.05 -W 1 beta1
}
