#!/usr/bin/env bats
# shellcheck shell=bash disable=SC2016,SC2154
# (SC2016: the quoted $... run inside the jobs; SC2154: bats sets $stderr)
# The SPANK plugin spank/xsite.so on the testbed: the flags in sbatch, salloc
# and srun, their environment twins, the checks before submission, the
# hand-over to job_submit.lua, the XSITE_* variables of the tasks, the failure
# modes on the nodes, and srun with cli_filter/lua loaded beside it.
#
# The plugin: $XSITE_SPANK_PLUGIN, else spank/.libs/xsite.so (libtool build),
# else spank/xsite.so (development build); in an installed run the installed
# one (helpers.bash sets $XSITE_SPANK_PLUGIN to it).

bats_require_minimum_version 1.5.0

# xsite_plugin: the plugin to test
xsite_plugin() {
	local p
	for p in "${XSITE_SPANK_PLUGIN:-}" "$XT_REPO/spank/.libs/xsite.so" "$XT_REPO/spank/xsite.so"; do
		if [[ -n $p && -f $p ]]; then
			printf '%s\n' "$p"
			return 0
		fi
	done
	printf 'xsite.so not built: set XSITE_SPANK_PLUGIN or build spank/xsite.so\n' >&2
	return 1
}

# plugstack_line [ARG...]: the plugstack.conf line of the plugin on this
# testbed, as the testbed wrote it, with ARGs
plugstack_line() {
	local line
	read -r line <"$XT_STATE/etc/plugstack.conf.d/xsite.conf"
	printf '%s' "$line"
	if (($# > 0)); then
		printf ' %s' "$@"
	fi
	printf '\n'
}

setup_file() {
	load helpers
	xt_init spank
	XT_PLUGIN=$(xsite_plugin)
	export XT_PLUGIN
	XSITE_SPANK_PLUGIN=$XT_PLUGIN
	export XSITE_SPANK_PLUGIN
	xt_up

	# The testbed wires the plugin itself ($XSITE_SPANK_PLUGIN, exported
	# before xt_up): its line must be there, as the tests below rewrite it.
	grep -q "^required $XT_SPANK_SO config=$XT_STATE/etc/xsite.conf" "$XT_STATE/etc/plugstack.conf.d/xsite.conf"

	# the job script of the sbatch and salloc tests: the job, its nodes, and
	# what the plugin handed over (Slurm exports the job control
	# environment to the job as SLURM_SPANK_*)
	cat >"$XT_STATE/work/xsite-job.sh" <<'EOF'
#!/bin/sh
printf 'job=%s\n' "$SLURM_JOB_ID"
srun sh -c 'printf "host=%s\n" "$(hostname)"' | sort
env | grep '^SLURM_SPANK_XSITE_' | sort
EOF
	chmod +x "$XT_STATE/work/xsite-job.sh"
}

teardown_file() {
	load helpers
	xt_down
}

setup() {
	load helpers
	load_libs
	XT_MOUNTS=()
}

teardown() {
	local m
	for m in "${XT_MOUNTS[@]}"; do
		tb on "${m%%:*}" umount "${m#*:}" || true
	done
}

# node_mount NODE SRC DST: bind SRC over DST in NODE's own mount namespace
# (that node's slurmd and slurmstepd see it, nothing else does); undone in
# teardown
node_mount() {
	tb on "$1" mount --bind "$2" "$3"
	XT_MOUNTS+=("$1:$3")
}

# job KIND [OPTION...]: a small job through sbatch, salloc or srun; prints
# job=ID, host=NODE for each node, and the job's SLURM_SPANK_XSITE_*
# (sbatch and salloc)
job() {
	local kind=$1 out id
	shift
	case $kind in
	sbatch)
		out=$XT_STATE/work/job-$BATS_TEST_NUMBER-$RANDOM.out
		id=$(on_head sbatch --parsable -o "$out" "$@" ./xsite-job.sh) || return 1
		wait_job "$id" || return 1
		cat "$out"
		;;
	salloc)
		on_head salloc "$@" ./xsite-job.sh
		;;
	srun)
		on_head srun "$@" sh -c 'printf "job=%s\nhost=%s\n" "$SLURM_JOB_ID" "$(hostname)"'
		;;
	esac
}

# job_id: the job id in $output (from job)
job_id() {
	sed -n 's/^job=//p' <<<"$output" | head -n 1
}

# job_field ID FIELD: FIELD=VALUE of scontrol show job (VALUE up to a blank)
job_field() {
	on_head scontrol show job "$1" | grep -o "$2=[^ ]*" | head -n 1
}

# admin_comment ID: the job's AdminComment (the policy's record), whole
admin_comment() {
	on_head scontrol show job "$1" | sed -n 's/^ *AdminComment=//p'
}

# no_job_named NAME: no job of that name exists, in any state
no_job_named() {
	[[ -z $(on_head squeue -h -t all -n "$1" -o %i) ]]
}

# hosts: the host= lines of $output, sorted, on one line
hosts() {
	sed -n 's/^host=//p' <<<"$output" | sort -u | tr '\n' ' '
}

# stderr_has TEXT: $stderr (of run --separate-stderr) holds TEXT
stderr_has() {
	[[ $stderr == *"$1"* ]] && return 0
	printf -- '-- stderr does not contain --\n%s\n-- stderr --\n%s\n--\n' "$1" "$stderr" >&2
	return 1
}

# nodes_not_drained: no node drained or down
nodes_not_drained() {
	local states
	states=$(on_head sinfo -h -N -o '%N %t %E')
	if grep -Eq 'drain|drng|drained|down' <<<"$states"; then
		printf 'a node is drained or down:\n%s\n' "$states" >&2
		return 1
	fi
}

# ---- the plugin is loaded --------------------------------------------------

@test "sbatch, salloc and srun list the three xsite flags in --help" {
	local cmd
	for cmd in sbatch salloc srun; do
		run -0 on_head "$cmd" --help
		assert_output --partial -- '--site-affinity=auto|pin|span|SITE'
		assert_output --partial -- '--comm-profile=NAME|CLASS|op=N,b=BYTES,x=BYTES[,steps=N][,pattern=P]'
		# an optional argument: Slurm prints it as =PATH, the usage says so
		assert_output --partial -- '--xsite-report=PATH     [xsite] also write the job'"'"'s cross-site report, to'
		assert_output --partial '(PATH is optional; default: the'
	done
}

# ---- every flag in sbatch, salloc and srun ---------------------------------

@test "sbatch --site-affinity=beta: slurmctld pins the job to site beta" {
	run -0 --separate-stderr job sbatch -N2 --site-affinity=beta
	assert_equal "$(hosts)" "beta1 beta2 "
	run -0 job_field "$(job_id)" Features
	assert_output 'Features=site_beta'
}

@test "salloc --site-affinity=alpha: slurmctld pins the job to site alpha" {
	run -0 --separate-stderr job salloc -N2 --site-affinity=alpha
	assert_equal "$(hosts)" "alpha1 alpha2 "
	run -0 job_field "$(job_id)" Features
	assert_output 'Features=site_alpha'
}

@test "srun --site-affinity=beta: slurmctld pins the job to site beta" {
	run -0 --separate-stderr job srun -N2 --site-affinity=beta
	assert_equal "$(hosts)" "beta1 beta2 "
	assert_equal "$stderr" "srun: xsite: pinned to site beta: you asked for site beta"
}

@test "--comm-profile reaches the policy from sbatch, salloc and srun" {
	run -0 --separate-stderr job sbatch -N2 --comm-profile=low
	run -0 admin_comment "$(job_id)"
	assert_output --partial ' profile=low '
	run -0 --separate-stderr job salloc -N2 --comm-profile=high
	run -0 admin_comment "$(job_id)"
	assert_output --partial ' profile=high '
	run -0 --separate-stderr job srun -N2 --comm-profile=op=1e12,b=1GB,x=1MB,steps=10,pattern=tree
	run -0 admin_comment "$(job_id)"
	assert_output --partial ' profile=op=1e12,b=1GB,x=1MB,steps=10,pattern=tree '
}

@test "--xsite-report, with and without PATH, is handed over by sbatch and salloc" {
	run -0 --separate-stderr job sbatch -N1 --xsite-report
	assert_line 'SLURM_SPANK_XSITE_REPORT=.'
	run -0 --separate-stderr job sbatch -N1 --xsite-report=reports/run1
	assert_line 'SLURM_SPANK_XSITE_REPORT=reports/run1'
	run -0 --separate-stderr job salloc -N1 --xsite-report=/shared/reports
	assert_line 'SLURM_SPANK_XSITE_REPORT=/shared/reports'
}

@test "srun accepts --xsite-report with and without PATH" {
	run -0 --separate-stderr job srun -N1 --xsite-report
	assert_line --regexp '^host='
	run -0 --separate-stderr job srun -N1 --xsite-report=reports/
	assert_line --regexp '^host='
}

@test "a flag in an #SBATCH line is checked like one on the command line" {
	printf '#!/bin/sh\n#SBATCH --site-affinity=gamma\ntrue\n' >"$XT_STATE/work/bad-directive.sh"
	run ! --separate-stderr on_head sbatch -J xsite-directive ./bad-directive.sh
	assert_equal "$stderr" "$(printf '%s\n' \
		"sbatch: error: xsite: --site-affinity=gamma: unknown site 'gamma' (valid: auto, pin, span, alpha, beta)" \
		'sbatch: error: spank: required plugin xsite.so: init_post_opt() failed with rc=-1' \
		'sbatch: error: Plugin stack post-option processing failed')"
	no_job_named xsite-directive
}

# ---- bad input is refused before submission --------------------------------

@test "an unknown site lists the valid ones; sbatch exits non-zero and no job exists" {
	run ! --separate-stderr on_head sbatch -J xsite-bad-site -N1 --site-affinity=gamma --wrap true
	assert_equal "$(head -n 1 <<<"$stderr")" \
		"sbatch: error: xsite: --site-affinity=gamma: unknown site 'gamma' (valid: auto, pin, span, alpha, beta)"
	assert_equal "$output" ''
	no_job_named xsite-bad-site
}

@test "an unknown site is refused by salloc and srun too" {
	run ! --separate-stderr on_head salloc -J xsite-bad-salloc -N1 --site-affinity=Alpha true
	stderr_has "salloc: error: xsite: --site-affinity=Alpha: unknown site 'Alpha' (valid: auto, pin, span, alpha, beta)"
	run ! --separate-stderr on_head srun -J xsite-bad-srun -N1 --site-affinity=gamma true
	stderr_has "srun: error: xsite: --site-affinity=gamma: unknown site 'gamma'"
	no_job_named xsite-bad-salloc
	no_job_named xsite-bad-srun
}

@test "a malformed profile names the bad field" {
	run ! --separate-stderr on_head sbatch -J xsite-bad-prof -N1 --comm-profile=op=1e9,b=zz,x=1 --wrap true
	stderr_has "sbatch: error: xsite: --comm-profile=op=1e9,b=zz,x=1: b: 'zz' is not a number with a unit"
	run ! --separate-stderr on_head sbatch -J xsite-bad-prof -N1 --comm-profile=op=1e9,b=1GB --wrap true
	stderr_has "sbatch: error: xsite: --comm-profile=op=1e9,b=1GB: x: missing"
	run ! --separate-stderr on_head srun -J xsite-bad-prof -N1 --comm-profile=op=1e9,b=1GB,x=1MB,pattern=ring true
	stderr_has "srun: error: xsite: --comm-profile=op=1e9,b=1GB,x=1MB,pattern=ring: pattern: 'ring' is not one of"
	run ! --separate-stderr on_head salloc -J xsite-bad-prof -N1 --comm-profile=gromacs true
	stderr_has "salloc: error: xsite: --comm-profile=gromacs: unknown profile 'gromacs' (known: high, low, medium, pingpong, solver; or op="
	no_job_named xsite-bad-prof
}

@test "a flag given twice: the same value is fine, another value is an error naming the flag" {
	run -0 --separate-stderr job srun -N1 --site-affinity=alpha --site-affinity=alpha
	assert_line --regexp '^host=alpha[0-9]+$'
	local cmd
	for cmd in sbatch salloc srun; do
		run ! --separate-stderr on_head "$cmd" -J xsite-twice -N1 --site-affinity=alpha --site-affinity=beta --wrap true
		stderr_has "$cmd: error: xsite: --site-affinity: given twice with different values ('alpha', then 'beta')"
	done
	run ! --separate-stderr on_head sbatch -J xsite-twice -N1 --xsite-report --xsite-report=/x --wrap true
	stderr_has "xsite: --xsite-report: given twice with different values ('.', then '/x')"
	no_job_named xsite-twice
}

# ---- environment twins -------------------------------------------------------

@test "a bad twin is refused naming the variable, in sbatch, salloc and srun" {
	run ! --separate-stderr on_head env XSITE_SITE_AFFINITY=gamma sbatch -J xsite-twin -N1 --wrap true
	stderr_has "sbatch: error: xsite: XSITE_SITE_AFFINITY=gamma: unknown site 'gamma' (valid: auto, pin, span, alpha, beta)"
	run ! --separate-stderr on_head env XSITE_COMM_PROFILE=op=1,b=2,x=3,steps=1.5 salloc -J xsite-twin -N1 true
	stderr_has "salloc: error: xsite: XSITE_COMM_PROFILE=op=1,b=2,x=3,steps=1.5: steps: '1.5' is not a whole number"
	run ! --separate-stderr on_head env "XSITE_REPORT=$(printf 'a\tb')" srun -J xsite-twin -N1 true
	stderr_has "srun: error: xsite: XSITE_REPORT: a control character in the path"
	no_job_named xsite-twin
}

@test "the command line beats its twin; an empty twin counts as unset" {
	run -0 --separate-stderr on_head env XSITE_SITE_AFFINITY=gamma srun -N1 --site-affinity=beta hostname
	assert_output --regexp '^beta[0-9]+$'
	run -0 --separate-stderr on_head env XSITE_SITE_AFFINITY= XSITE_COMM_PROFILE= srun -N1 hostname
}

@test "twins are handed over to the job like flags (sbatch, salloc)" {
	run -0 --separate-stderr on_head env XSITE_SITE_AFFINITY=beta XSITE_COMM_PROFILE=low XSITE_REPORT=out \
		salloc -N1 ./xsite-job.sh
	assert_line 'SLURM_SPANK_XSITE_SITE_AFFINITY=beta'
	assert_line 'SLURM_SPANK_XSITE_COMM_PROFILE=low'
	assert_line 'SLURM_SPANK_XSITE_REPORT=out'
}

# The contract with lua/xsite/submit.lua: spank_job_control_setenv(sp,
# "XSITE_SITE_AFFINITY", ...) arrives in job_desc.spank_job_env as
# "XSITE_SITE_AFFINITY=beta" (Slurm adds SPANK_ only for prolog/epilog).
# Only the twin tests it: a flag also arrives as _SLURM_SPANK_OPTION_*.
@test "a twin alone reaches the placement policy: XSITE_SITE_AFFINITY=beta pins to beta" {
	run -0 --separate-stderr on_head env XSITE_SITE_AFFINITY=beta XSITE_COMM_PROFILE=low \
		srun -N1 sh -c 'printf "job=%s\nhost=%s\n" "$SLURM_JOB_ID" "$(hostname)"'
	assert_line --regexp '^host=beta[0-9]+$'
	run -0 admin_comment "$(job_id)"
	assert_output --partial ' sites=beta profile=low '
}

# ---- inside a job ------------------------------------------------------------

@test "inside a job, the job's flags are defaults for srun and sbatch, not conflicts" {
	local id out=$XT_STATE/work/inherit-$RANDOM.out
	id=$(on_head sbatch --parsable -N1 --site-affinity=beta --xsite-report -o "$out" --wrap '
		srun -N1 true && echo plain-ok
		srun -N1 --site-affinity=beta true && echo same-ok
		srun -N1 --site-affinity=alpha --xsite-report=x true && echo override-ok
		srun -N1 --site-affinity=alpha --site-affinity=span true || echo conflict-refused
		sbatch -J xsite-nested --site-affinity=beta --wrap true >/dev/null && echo nested-ok')
	wait_job "$id"
	run -0 cat "$out"
	assert_line 'plain-ok'
	assert_line 'same-ok'
	assert_line 'override-ok'
	assert_line 'conflict-refused'
	assert_line 'nested-ok'
	assert_line "xsite: --site-affinity=alpha: srun starts a step of job $id, which is placed already; the flag does not move it"
	assert_output --partial "xsite: --site-affinity: given twice with different values ('alpha', then 'span')"
	refute_output --partial "('beta', then"
}

# ---- what the tasks see --------------------------------------------------------

# each task prints its host and every XSITE_* but the testbed's own
TASK_ENV='printf "%s %s %s %s %s %s\n" "$(hostname)" "${XSITE_SITE-unset}" "${XSITE_SITES-unset}" "${XSITE_SPANNING-unset}" "${XSITE_LINK_LATENCY_US-unset}" "${XSITE_LINK_BANDWIDTH_MBPS-unset}"'

@test "tasks of a job inside one site see that site, the split and the link" {
	run -0 --separate-stderr on_head srun -N2 --site-affinity=beta sh -c "$TASK_ENV"
	assert_line 'beta1 beta beta:2 0 1000 125'
	assert_line 'beta2 beta beta:2 0 1000 125'
	assert_equal "${#lines[@]}" 2
}

@test "tasks of a job across both sites (srun -N4) see their own site and the 2+2 split" {
	run -0 --separate-stderr on_head srun -N4 sh -c "$TASK_ENV"
	assert_line 'alpha1 alpha alpha:2,beta:2 1 1000 125'
	assert_line 'alpha2 alpha alpha:2,beta:2 1 1000 125'
	assert_line 'beta1 beta alpha:2,beta:2 1 1000 125'
	assert_line 'beta2 beta alpha:2,beta:2 1 1000 125'
	assert_equal "${#lines[@]}" 4
}

@test "the batch script sees XSITE_* of its node" {
	local id out=$XT_STATE/work/batch-env-$RANDOM.out
	id=$(on_head sbatch --parsable -N1 --site-affinity=alpha -o "$out" --wrap "$TASK_ENV")
	wait_job "$id"
	run -0 cat "$out"
	assert_output --regexp '^alpha[12] alpha alpha:1 0 1000 125$'
}

@test "the link figures come from the LinkStateFile when it exists" {
	local node conf=$XT_STATE/work/measured.conf
	sed -E "s|^LinkStateFile=.*|LinkStateFile=$XT_STATE/work/link.state|" "$XT_STATE/etc/xsite.conf" >"$conf"
	printf 'State=degraded Bandwidth=400MB/s Latency=150us\n' >"$XT_STATE/work/link.state"
	for node in alpha1 beta1; do
		node_mount "$node" "$conf" "$XT_STATE/etc/xsite.conf"
	done
	run -0 --separate-stderr on_head srun -N2 -w alpha1,beta1 --site-affinity=span sh -c "$TASK_ENV"
	assert_line 'alpha1 alpha alpha:1,beta:1 1 150 400'
	assert_line 'beta1 beta alpha:1,beta:1 1 150 400'
}

# ---- failure modes on the nodes ---------------------------------------------

@test "a broken xsite.conf on the nodes: the step runs without XSITE_*, says why, no node drains" {
	local node id out=$XT_STATE/work/broken-$RANDOM.out
	printf 'SiteName=alpha Nodes=alpha[1-2 CoresPerNode=x\n' >"$XT_STATE/work/broken.conf"
	# beta's nodes only: the batch script on alpha1 exports XSITE_*, which
	# the steps on beta must not inherit
	for node in beta1 beta2; do
		node_mount "$node" "$XT_STATE/work/broken.conf" "$XT_STATE/etc/xsite.conf"
	done
	id=$(on_head sbatch --parsable -N4 -w alpha1,alpha2,beta1,beta2 -o "$out" \
		--wrap "srun -N4 sh -c '$TASK_ENV' | sort; echo step-rc=\$?")
	wait_job "$id"
	run -0 cat "$out"
	assert_line 'alpha1 alpha alpha:2,beta:2 1 1000 125'
	assert_line 'alpha2 alpha alpha:2,beta:2 1 1000 125'
	assert_line 'beta1 unset unset unset unset unset'
	assert_line 'beta2 unset unset unset unset unset'
	assert_line 'step-rc=0'
	assert_output --partial "error: xsite: $XT_STATE/etc/xsite.conf:1: Nodes: unclosed '[' in 'alpha[1-2'"
	assert_output --partial 'XSITE_* not exported on this node'
	run -0 job_field "$id" JobState
	assert_output 'JobState=COMPLETED'
	run -0 grep -F "xsite: $XT_STATE/etc/xsite.conf:1: Nodes: unclosed" "$XT_STATE/log/slurmd-beta1.log"
	nodes_not_drained
}

@test "a batch job on a node with a broken xsite.conf completes and the node is not drained" {
	local id out=$XT_STATE/work/broken-batch-$RANDOM.out
	printf 'LinkName=\n' >"$XT_STATE/work/broken2.conf"
	node_mount beta2 "$XT_STATE/work/broken2.conf" "$XT_STATE/etc/xsite.conf"
	id=$(on_head sbatch --parsable -N1 -w beta2 -o "$out" --wrap 'echo "XSITE_SITE=${XSITE_SITE-unset}"')
	wait_job "$id"
	run -0 cat "$out"
	assert_line 'XSITE_SITE=unset'
	run -0 job_field "$id" JobState
	assert_output 'JobState=COMPLETED'
	nodes_not_drained
}

@test "bad plugstack arguments: clients refuse to run; on a node the plugin only disables itself" {
	local dir=$XT_STATE/work/badplug id out=$XT_STATE/work/badplug-$RANDOM.out
	mkdir -p "$dir"
	# clients: a copy of slurm.conf whose PlugStackConfig has a bad argument
	sed "s|^PlugStackConfig=.*|PlugStackConfig=$dir/plugstack.conf|" "$XT_STATE/etc/slurm.conf" >"$dir/slurm.conf"
	plugstack_line tune_mpi=maybe >"$dir/plugstack.conf"
	run ! --separate-stderr on_head env SLURM_CONF="$dir/slurm.conf" sbatch -J xsite-badplug -N1 --wrap true
	stderr_has "sbatch: error: xsite: tune_mpi: invalid value: 'maybe' (yes or no)"
	plugstack_line colour=blue >"$dir/plugstack.conf"
	run ! --separate-stderr on_head env SLURM_CONF="$dir/slurm.conf" srun -J xsite-badplug -N1 true
	stderr_has "srun: error: xsite: colour: unknown argument"
	no_job_named xsite-badplug

	# a node: its slurmstepd reads a plugstack line with a bad argument (so
	# would a client started there: it refuses, like the ones above)
	plugstack_line tune_mpi=maybe >"$dir/node-xsite.conf"
	node_mount alpha2 "$dir/node-xsite.conf" "$XT_STATE/etc/plugstack.conf.d/xsite.conf"
	id=$(on_head sbatch --parsable -N1 -w alpha2 --site-affinity=alpha -o "$out" \
		--wrap 'echo "XSITE_SITE=${XSITE_SITE-unset}"')
	wait_job "$id"
	run -0 cat "$out"
	assert_line 'XSITE_SITE=unset'
	run -0 job_field "$id" JobState
	assert_output 'JobState=COMPLETED'
	run -0 --separate-stderr on_head srun -N2 -w alpha1,alpha2 --site-affinity=alpha sh -c "$TASK_ENV"
	assert_line 'alpha1 alpha alpha:2 0 1000 125'
	assert_line 'alpha2 unset unset unset unset unset'
	run -0 grep -F 'xsite: invalid plugstack.conf arguments: xsite disabled on this node' \
		"$XT_STATE/log/slurmd-alpha2.log"
	nodes_not_drained
}

# ---- one Lua library, two Lua states: cli_filter/lua beside xsite.so ----------

@test "both Lua plugins link the same liblua" {
	local plugindir xsite_lua filter_lua
	plugindir=$(on_head scontrol show config | sed -n 's/^PluginDir *= *//p')
	xsite_lua=$(ldd "$XT_PLUGIN" | awk '/liblua/ { print $1, $3 }')
	filter_lua=$(ldd "$plugindir/cli_filter_lua.so" | awk '/liblua/ { print $1, $3 }')
	printf '# xsite.so:         %s\n# cli_filter_lua.so: %s\n' "$xsite_lua" "$filter_lua" >&3
	[[ -n $xsite_lua ]]
	assert_equal "$xsite_lua" "$filter_lua"
}

@test "srun with CliFilterPlugins=lua: both plugins run, each with its own Lua state, one liblua" {
	local dir=$XT_STATE/work/clifilter
	mkdir -p "$dir"
	# a client-only slurm.conf with cli_filter/lua; cli_filter.lua beside it
	cp "$XT_STATE/etc/slurm.conf" "$dir/slurm.conf"
	printf 'CliFilterPlugins=lua\n' >>"$dir/slurm.conf"
	cat >"$dir/cli_filter.lua" <<'EOF'
-- Trivial, and it litters its own Lua state: were the state shared with
-- xsite.so, xsite's checks would fail.
package.path = "/nonexistent/?.lua"
package.loaded["xsite.config"] = "clobbered by cli_filter.lua"
function slurm_cli_setup_defaults(options, early_pass) return slurm.SUCCESS end
function slurm_cli_pre_submit(options, offset)
  io.stderr:write("cli_filter.lua: pre_submit ran\n")
  return slurm.SUCCESS
end
function slurm_cli_post_submit(offset, jobid, stepid) return slurm.SUCCESS end
EOF
	run ! --separate-stderr on_head env SLURM_CONF="$dir/slurm.conf" srun -N1 --site-affinity=gamma true
	stderr_has 'cli_filter.lua: pre_submit ran'
	stderr_has "srun: error: xsite: --site-affinity=gamma: unknown site 'gamma' (valid: auto, pin, span, alpha, beta)"

	run -0 --separate-stderr on_head env SLURM_CONF="$dir/slurm.conf" srun -N2 --site-affinity=beta sh -c "$TASK_ENV"
	stderr_has 'cli_filter.lua: pre_submit ran'
	assert_line 'beta1 beta beta:2 0 1000 125'
	assert_line 'beta2 beta beta:2 0 1000 125'

	# srun's own address space while it runs: one liblua, both plugins
	# (read again until both plugins are there, for up to 5 s: a loaded
	# machine's srun can take that long to load them)
	run -0 --separate-stderr on_head env SLURM_CONF="$dir/slurm.conf" bash -c '
		srun -N1 sleep 6 & pid=$!
		for ((i = 0; i < 50; i++)); do
			maps=$(grep -oE "/[^ ]*(liblua[^ /]*|cli_filter_lua\.so|/xsite\.so)$" "/proc/$pid/maps" | sort -u)
			[[ $maps == *cli_filter_lua.so* && $maps == */xsite.so* ]] && break
			sleep 0.1
		done
		printf "%s\n" "$maps"
		wait "$pid"'
	printf '# %s\n' "${lines[@]}" >&3
	assert_line --regexp '/cli_filter_lua\.so$'
	assert_line "$XT_SPANK_SO"
	assert_equal "$(grep -c liblua <<<"$output")" 1
}
