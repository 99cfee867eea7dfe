#!/usr/bin/env bats
# Open MPI across the emulated link: srun --mpi=pmix, ping-pong latency.

# the single-quoted scripts run on the nodes: their $ expand there
# shellcheck disable=SC2016
bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	xt_init mpi
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

@test "srun --mpi=pmix runs an MPI job across both sites" {
	run -0 --separate-stderr on_head srun -N2 -n2 -w alpha2,beta2 --mpi=pmix ./pingpong -n 10 -t 30
	assert_line --regexp '^pingpong from=alpha2 to=beta2 bytes=8 iters=10 '
}

@test "base: ping-pong latency with the link set to 0 (inside a site and across)" {
	local cross intra
	run -0 tb link set --latency 0
	cross=$(pingpong_median alpha1 beta1 1000 3)
	intra=$(pingpong_median alpha1 alpha2 1000 3)
	[[ -n $cross && -n $intra ]]
	printf '%s\n' "$cross" >"$BATS_FILE_TMPDIR/base-cross"
	printf '%s\n' "$intra" >"$BATS_FILE_TMPDIR/base-intra"
	printf '# base one-way: across %s us, inside alpha %s us\n' "$cross" "$intra" >&3
	# the delay line adds user-space hops, but far less than any link latency
	fcmp 'a < 500' "$cross"
	fcmp 'a < 200' "$intra"
}

@test "across the sites, one-way latency at 1 ms is within 20 % (+ base)" {
	local base m
	base=$(cat "$BATS_FILE_TMPDIR/base-cross")
	run -0 tb link set --latency 1ms
	m=$(pingpong_median alpha1 beta1 300 5)
	printf '# 1 ms: measured %s us, expected %s us + 20 %% of 1000 us\n' "$m" "$(awk -v b="$base" 'BEGIN { print 1000 + b }')" >&3
	fcmp 'a >= 1000 && (a - 1000 - b < 200) && (a - 1000 - b > -200)' "$m" "$base"
}

@test "across the sites, one-way latency at 5 ms is within 20 % (+ base)" {
	local base m
	base=$(cat "$BATS_FILE_TMPDIR/base-cross")
	run -0 tb link set --latency 5ms
	m=$(pingpong_median alpha1 beta1 100 5)
	printf '# 5 ms: measured %s us, expected %s us + 20 %% of 5000 us\n' "$m" "$(awk -v b="$base" 'BEGIN { print 5000 + b }')" >&3
	fcmp 'a >= 5000 && (a - 5000 - b < 1000) && (a - 5000 - b > -1000)' "$m" "$base"
}

@test "inside a site, latency is unaffected by a 5 ms link" {
	local base m
	base=$(cat "$BATS_FILE_TMPDIR/base-intra")
	m=$(pingpong_median alpha1 alpha2 1000 3)
	printf '# inside alpha with the link at 5 ms: %s us (base %s us)\n' "$m" "$base" >&3
	fcmp 'a < b + 100' "$m" "$base"
	m=$(pingpong_median beta1 beta2 1000 3)
	printf '# inside beta with the link at 5 ms: %s us\n' "$m" >&3
	fcmp 'a < b + 100' "$m" "$base"
}

@test "the ranks see the testbed's Open MPI settings" {
	run -0 --separate-stderr on_head srun -N1 -w beta1 sh -c 'printf "%s %s %s\n" "$OMPI_MCA_btl" "$OMPI_MCA_btl_tcp_if_include" "$OMPI_MCA_mpi_yield_when_idle"'
	assert_output 'self,vader,tcp 198.18.0.0/16 1'
}
