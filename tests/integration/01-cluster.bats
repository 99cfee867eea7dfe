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

@test "xsite comes from one place: the build tree, or in an installed run the installed packages only" {
	local pid env_lua hidden=() d
	# slurmctld: job_submit.lua beside slurm.conf, the library through
	# LUA_PATH (build tree) or Lua's default path (installed, no LUA_PATH)
	pid=$(<"$XT_STATE/run/slurmctld.pid")
	assert_equal "$(<"/proc/$pid/comm")" slurmctld
	env_lua=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^LUA_PATH=//p')
	if ((XT_INSTALLED)); then
		assert_equal "$env_lua" ''
		assert_equal "$(readlink "$XT_STATE/etc/job_submit.lua")" "$XT_JOB_SUBMIT"
		# shellcheck disable=SC2016
		run -0 tb on head lua5.1 -e '
			for t in package.path:gmatch("[^;]+") do
				local f = t:gsub("?", "xsite/submit")
				local h = io.open(f)
				if h then h:close() print(f) return end
			end'
		assert_output "$XT_LUADIR/xsite/submit.lua"
	else
		assert_equal "$env_lua" "$XT_LUADIR/?.lua;;"
		cmp "$XT_JOB_SUBMIT" "$XT_STATE/etc/job_submit.lua"
	fi
	# the SPANK plugin (10-spank.bats sees it mapped into srun)
	if ((XT_INSTALLED)) || [[ -e $XT_STATE/etc/plugstack.conf.d/xsite.conf ]]; then
		run -0 cat "$XT_STATE/etc/plugstack.conf.d/xsite.conf"
		[[ $output == "required $XT_SPANK_SO config=$XT_STATE/etc/xsite.conf"* ]]
		[[ -f $XT_SPANK_SO ]]
	fi
	# installed: the build tree's lua/, spank/ and mpi-wrappers/ are empty (or
	# absent: a node's /tmp is its own) on the head and the nodes of both sites
	# shellcheck disable=SC1091
	mapfile -t hidden < <(. "$XT_STATE/testbed.env" && ((${#TB_HIDDEN[@]} == 0)) || printf '%s\n' "${TB_HIDDEN[@]}")
	if ((XT_INSTALLED)); then
		assert_equal "${hidden[0]}" "$(readlink -f "$XT_REPO")/lua"
		for d in "${hidden[@]}"; do
			[[ -n $(ls -A "$d") ]]
			run -0 tb on head ls -A "$d"
			assert_output ''
			run -0 --separate-stderr on_head srun -N2 -w alpha1,beta2 --site-affinity=span sh -c '[ ! -d "$1" ] || ls -A "$1"' sh "$d"
			assert_output ''
		done
	else
		assert_equal "${#hidden[@]}" 0
	fi
}
