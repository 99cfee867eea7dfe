#!/usr/bin/env bats
# The testbed is a working two-site Slurm cluster.

# the single-quoted scripts run on the nodes: their $ expand there
# shellcheck disable=SC2016
bats_require_minimum_version 1.5.0

setup_file() {
	load helpers
	xt_init cluster
	xt_up
}

teardown_file() {
	load helpers
	xt_down
}

setup() {
	load helpers
	load_libs
}

@test "every node of both sites is idle after up" {
	run -0 on_head sinfo -h -N -o '%N %t %f'
	assert_line 'alpha1 idle site_alpha'
	assert_line 'alpha2 idle site_alpha'
	assert_line 'beta1 idle site_beta'
	assert_line 'beta2 idle site_beta'
	assert_equal "${#lines[@]}" 4
}

@test "status reports every daemon running" {
	run -0 tb status
	assert_output --partial 'munged      running'
	assert_output --partial 'slurmctld running'
	assert_line --regexp '^  beta2 +slurmd running'
	refute_output --partial 'NOT running'
}

@test "srun -N4 hostname returns every node once" {
	run -0 --separate-stderr on_head srun -N4 hostname
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "alpha1 alpha2 beta1 beta2 "
}

@test "each node has its own hostname, /tmp and /dev/shm" {
	on_head srun -N4 sh -c 'hostname >/tmp/whoami; hostname >/dev/shm/whoami'
	run -0 --separate-stderr on_head srun -N4 sh -c 'printf "%s %s %s\n" "$(hostname)" "$(cat /tmp/whoami)" "$(cat /dev/shm/whoami)"'
	assert_line 'alpha1 alpha1 alpha1'
	assert_line 'alpha2 alpha2 alpha2'
	assert_line 'beta1 beta1 beta1'
	assert_line 'beta2 beta2 beta2'
}

@test "on keeps the working directory and exports SLURM_CONF" {
	run -0 on_head sh -c 'pwd; printf "%s\n" "$SLURM_CONF"; hostname'
	assert_line "$XT_STATE/work"
	assert_line "$XT_STATE/etc/slurm.conf"
	assert_line head
}

@test "an sbatch job runs to completion and writes its output" {
	local id
	run -0 --separate-stderr on_head sbatch --parsable -N2 -o "$XT_STATE/work/job-%j.out" --wrap 'srun hostname | sort'
	id=${lines[-1]}
	for _ in $(seq 1 300); do
		[[ -z $(on_head squeue -h -j "$id" 2>/dev/null) ]] && break
		sleep 0.1
	done
	run -0 on_head squeue -h -j "$id"
	assert_output ''
	run -0 cat "$XT_STATE/work/job-$id.out"
	assert_equal "${#lines[@]}" 2
}

@test "a job constrained to a site feature lands only at that site" {
	run -0 --separate-stderr on_head srun -N2 -C site_beta hostname
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "beta1 beta2 "
	run -0 --separate-stderr on_head srun -N2 -C site_alpha hostname
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "alpha1 alpha2 "
}

@test "a job cannot have three nodes of one site" {
	run ! on_head srun -N3 -C site_alpha --immediate=5 hostname
}

@test "topology.conf puts each site under its own switch" {
	run -0 on_head scontrol show topology
	assert_line --regexp '^SwitchName=alpha .*Nodes=alpha(\[1-2\]|1,alpha2)$'
	assert_line --regexp '^SwitchName=beta .*Nodes=beta(\[1-2\]|1,beta2)$'
	assert_line --regexp '^SwitchName=extender .*Switches=alpha,beta$'
}

@test "a job with --switches=1 stays inside one site" {
	run -0 --separate-stderr on_head srun -N2 --switches=1 hostname
	assert_output --regexp '^(alpha[12]
alpha[12]|beta[12]
beta[12])$'
}
