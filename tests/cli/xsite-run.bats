#!/usr/bin/env bats
# Tests of mpi-wrappers/xsite-run without a cluster: its options, its errors
# (exit 2 with a message naming the option), and the map it would launch
# (--dry-run: `xsite map` of a given node list, nothing started).  The runs
# on a real allocation are tests/integration/21-xsite-run.bats.
# See docs/man/xsite-run.1.

# Each @test runs in its own subshell: exporting there is meant to stay there.
# shellcheck disable=SC2030,SC2031,SC2154

bats_require_minimum_version 1.5.0

load "${BATS_LIB_PATH:-/usr/lib/bats}/bats-support/load"
load "${BATS_LIB_PATH:-/usr/lib/bats}/bats-assert/load"

load helpers

setup_file() {
  xsite_command
  export RUN="$REPO/mpi-wrappers/xsite-run"
}

setup() {
  # no allocation and no configuration from the caller's environment
  unset SLURM_JOB_ID SLURM_JOB_NODELIST SLURM_NODELIST SLURM_TASKS_PER_NODE XSITE_SPANNING
  export XSITE_CONF="$REPO/site-configs/testbed.conf"
}

# an allocation on paper: the testbed's nodes, mixed order, 2 tasks each
fake_allocation() {
  export SLURM_JOB_ID=99 SLURM_JOB_NODELIST="beta1,alpha2,beta2,alpha1" SLURM_TASKS_PER_NODE="2(x4)"
}

@test "--help prints the usage and exits 0" {
  run -0 "$RUN" --help
  assert_line --partial 'Usage: xsite-run [OPTIONS] [--] PROGRAM [ARGS...]'
  assert_line --partial '--comm-graph FILE'
  assert_line --partial '--no-tune'
}

@test "an unknown option is a usage error (exit 2)" {
  run -2 "$RUN" --frobnicate hostname
  assert_output 'xsite-run: unknown option --frobnicate (try: xsite-run --help)'
}

@test "--launcher must be srun or mpirun" {
  run -2 "$RUN" --launcher aprun hostname
  assert_output "xsite-run: --launcher: 'aprun' is not srun or mpirun"
  run -2 "$RUN" --launcher
  assert_output 'xsite-run: --launcher needs srun or mpirun'
}

@test "no program is a usage error" {
  run -2 "$RUN" --verbose
  assert_output 'xsite-run: no program to run (try: xsite-run --help)'
  run -2 "$RUN" --
  assert_output 'xsite-run: no program to run (try: xsite-run --help)'
}

@test "outside an allocation: a clear error, exit 2" {
  run -2 "$RUN" hostname
  assert_output 'xsite-run: not inside a Slurm allocation (no SLURM_JOB_ID): use salloc or sbatch'
}

@test "an unreadable --comm-graph is named before anything runs" {
  fake_allocation
  run -2 "$RUN" --comm-graph "$BATS_TEST_TMPDIR/none.json" hostname
  assert_output "xsite-run: --comm-graph: cannot read '$BATS_TEST_TMPDIR/none.json'"
  run -2 "$RUN" --comm-graph
  assert_output 'xsite-run: --comm-graph needs a file'
}

@test "--dry-run with srun: the hostfile is site by site, Slurm's order inside a site" {
  fake_allocation
  run -0 --separate-stderr "$RUN" --dry-run ./app -x
  assert_line --index 0 --regexp '^SLURM_HOSTFILE=.* srun --distribution=arbitrary --ntasks=8 --cpu-bind=cores \./app -x$'
  assert_equal "$(sed -n '2,$p' <<<"$output" | tr '\n' ' ')" \
    'alpha2 alpha2 alpha1 alpha1 beta1 beta1 beta2 beta2 '
  [[ $stderr == *'xsite-run: rank 0 -> alpha2 (site alpha)'* ]]
  [[ $stderr == *'xsite-run: rank 7 -> beta2 (site beta)'* ]]
  [[ $stderr == *'job spans 2 sites'* ]]
}

@test "--dry-run with mpirun: a rankfile, one core slot per rank on each node" {
  fake_allocation
  # the option of the Open MPI that is there (none: 4.1's)
  local rf='--rankfile [^ ]+'
  if mpirun --version 2>/dev/null | grep -qE '\(Open MPI\) ([5-9]|[1-9][0-9])\.'; then
    rf='--map-by rankfile:file=[^ ]+'
  fi
  run -0 --separate-stderr "$RUN" --dry-run --launcher mpirun --verbose ./app
  assert_line --index 0 --regexp "^mpirun -np 8 $rf --bind-to core --report-bindings \\./app\$"
  assert_line 'rank 0=alpha2 slot=0'
  assert_line 'rank 1=alpha2 slot=1'
  assert_line 'rank 4=beta1 slot=0'
  [[ $stderr == *'xsite-run: rank 1 -> alpha2 (site alpha) core 1'* ]]
  # a '-' in the rankfile's path: Open MPI 5.0's --map-by refuses it, so it
  # goes as --rankfile (4.1 takes only that anyway)
  mkdir -p "$BATS_TEST_TMPDIR/with-dash"
  TMPDIR=$BATS_TEST_TMPDIR/with-dash run -0 --separate-stderr "$RUN" --dry-run --launcher mpirun ./app
  assert_line --index 0 --regexp "^mpirun -np 8 --rankfile [^ ]+/with-dash/xsiterun\.[A-Za-z0-9]+ --bind-to core \./app\$"
}

@test "--comm-graph: heavy pairs (0,4),(1,5),(2,6),(3,7) are put at one site" {
  fake_allocation
  local f=$BATS_TEST_TMPDIR/traffic.json
  lua5.1 -e '
    local rows = {}
    for i = 0, 7 do
      local r = {}
      for j = 0, 7 do r[#r + 1] = (math.abs(i - j) == 4) and 1000000 or ((i ~= j) and 10 or 0) end
      rows[#rows + 1] = "[" .. table.concat(r, ",") .. "]"
    end
    io.write("{\"version\":1,\"job\":7,\"ranks\":8,\"cross\":{\"bytes\":0,\"messages\":0,\"p2p_bytes\":0,"
      .. "\"p2p_messages\":0,\"coll_bytes\":0,\"coll_messages\":0},\"matrix\":[" .. table.concat(rows, ",") .. "]}\n")' >"$f"
  run -0 --separate-stderr "$RUN" --dry-run --comm-graph "$f" ./app
  [[ $stderr == *'predicted bytes across the link'*'placed by '* ]]
  # ranks i and i+4 share a site
  local hosts
  mapfile -t hosts < <(sed -n '2,$p' <<<"$output")
  local i
  for i in 0 1 2 3; do
    [[ ${hosts[i]:0:4} == "${hosts[i + 4]:0:4}" ]]
  done
}

@test "a one-site allocation gets no link settings" {
  export SLURM_JOB_ID=99 SLURM_JOB_NODELIST="alpha[1-2]" SLURM_TASKS_PER_NODE="2(x2)"
  run -0 --separate-stderr "$RUN" --dry-run ./app
  [[ $stderr == *'job at one site: no Open MPI settings for the link'* ]]
}

@test "the job's --comm-profile places the ranks by the traffic of its latest earlier run, with no flag" {
  fake_allocation
  local dir=$BATS_TEST_TMPDIR/reports matrix
  matrix=$(lua5.1 -e '
    local rows = {}
    for i = 0, 7 do
      local r = {}
      for j = 0, 7 do r[#r + 1] = (math.abs(i - j) == 4) and 1000000 or 0 end
      rows[#rows + 1] = "[" .. table.concat(r, ",") .. "]"
    end
    io.write("[" .. table.concat(rows, ",") .. "]")')
  earlier_report "$dir" 41 "$(id -u)" halo "$matrix" 8
  "$XSITE" config "$XSITE_CONF" --set "ReportDir=$dir" >"$BATS_TEST_TMPDIR/xsite.conf"
  export XSITE_CONF=$BATS_TEST_TMPDIR/xsite.conf SLURM_SPANK__SLURM_SPANK_OPTION_xsite_comm_profile=halo
  run -0 --separate-stderr "$RUN" --dry-run ./app
  [[ $stderr == *'ranks placed by the traffic of job 41 (profile halo)'* ]]
  local hosts i
  mapfile -t hosts < <(sed -n '2,$p' <<<"$output")
  for i in 0 1 2 3; do
    [[ ${hosts[i]:0:4} == "${hosts[i + 4]:0:4}" ]]
  done
  # another profile has no earlier run: site by site
  export SLURM_SPANK__SLURM_SPANK_OPTION_xsite_comm_profile=gromacs
  run -0 --separate-stderr "$RUN" --dry-run ./app
  [[ $stderr == *'no earlier run of profile gromacs with this many ranks in ReportDir: site by site'* ]]
  mapfile -t hosts < <(sed -n '2,$p' <<<"$output")
  [[ ${hosts[0]:0:4} == alph && ${hosts[4]:0:4} == beta ]]
}

@test "a node in no site of the configuration fails with xsite map's message" {
  export SLURM_JOB_ID=99 SLURM_JOB_NODELIST="gamma1,alpha1" SLURM_TASKS_PER_NODE="1(x2)"
  run -1 "$RUN" --dry-run ./app
  assert_output --partial "node 'gamma1' is in no site"
}
