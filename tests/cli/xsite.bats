#!/usr/bin/env bats
# Tests of the xsite command (lua/bin/xsite.in, lua/xsite/cli.lua): exit
# statuses, messages, where the configuration is found, and the formats of
# `model` and `explain` output.  See docs/man/xsite.1.
#
# $XSITE is the command under test: the build sets it to the built script;
# otherwise setup_file generates one from lua/bin/xsite.in that loads the
# library of this source tree.  JSON is checked with lua-dkjson, SVG with
# xmllint (libxml2-utils).

# Each @test runs in its own subshell: exporting there is meant to stay there.
# shellcheck disable=SC2030,SC2031

bats_require_minimum_version 1.5.0

load "${BATS_LIB_PATH:-/usr/lib/bats}/bats-support/load"
load "${BATS_LIB_PATH:-/usr/lib/bats}/bats-assert/load"

load helpers

setup_file() {
  xsite_command
  export FIX="$BATS_TEST_DIRNAME/fixtures"

  # The Lua that runs fixtures/jsonq.lua (it needs lua-dkjson).
  export JSON_LUA="${LUA:-lua5.1}"

  # site-configs/testbed.conf with one change: its LinkStateFile
  # (/run/xsite/link.state) would make the decisions depend on this
  # machine, so the copy points at a file that never exists.
  export TESTBED="$BATS_FILE_TMPDIR/testbed.conf"
  sed -e "s|^LinkStateFile=.*|LinkStateFile=$BATS_FILE_TMPDIR/absent/link.state|" \
    "$REPO/site-configs/testbed.conf" >"$TESTBED"
  local changed
  changed=$(diff "$REPO/site-configs/testbed.conf" "$TESTBED" | grep -c '^>' || true)
  if [[ $changed != 1 ]]; then
    printf 'xsite.bats: expected one LinkStateFile line in site-configs/testbed.conf\n' >&2
    return 1
  fi
}

setup() {
  # Each test chooses its configuration; none comes from the environment.
  unset XSITE_CONF SLURM_CONF
}

xsite() {
  "$XSITE" "$@"
}

# jsonq EXPR...: JSON on stdin, one value a line out (fixtures/jsonq.lua).
jsonq() {
  "$JSON_LUA" "$FIX/jsonq.lua" "$@"
}

need_json() {
  "$JSON_LUA" -e 'require "dkjson"' 2>/dev/null ||
    skip "lua-dkjson is not installed for $JSON_LUA (needed to parse JSON)"
}

need_xmllint() {
  command -v xmllint >/dev/null || skip "xmllint is not installed (libxml2-utils)"
}

# After `run --separate-stderr`: point bats-assert at standard error.
use_stderr() {
  # shellcheck disable=SC2154 # stderr and stderr_lines are set by run
  output=$stderr
  lines=("${stderr_lines[@]}")
}

# testbed_with SED-EXPR...: the testbed copy edited by sed, in this test's
# temporary directory; prints its path.
testbed_with() {
  local conf="$BATS_TEST_TMPDIR/testbed.conf"
  local args=()
  local e
  for e in "$@"; do args+=(-e "$e"); done
  sed "${args[@]}" "$TESTBED" >"$conf"
  printf '%s\n' "$conf"
}

# with_link_state TEXT: a testbed copy whose link state file holds TEXT;
# prints the config's path.
with_link_state() {
  printf '%s\n' "$1" >"$BATS_TEST_TMPDIR/link.state"
  testbed_with "s|^LinkStateFile=.*|LinkStateFile=$BATS_TEST_TMPDIR/link.state|"
}

###############################################################################
# Help and usage errors (exit 2)
###############################################################################

@test "--help, -h and help print the usage and exit 0" {
  local arg
  for arg in --help -h help; do
    run -0 xsite "$arg"
    assert_line --index 0 "Usage: xsite [--config FILE] COMMAND [OPTIONS]"
    assert_line --partial "check [FILE]"
    assert_line --partial "model"
    assert_line --partial "explain"
  done
}

@test "every command's --help prints its usage and exits 0 without reading a config" {
  export XSITE_CONF="$BATS_TEST_TMPDIR/no-such.conf"
  local cmd
  for cmd in check model explain; do
    run -0 xsite "$cmd" --help
    assert_line --index 0 --regexp "^Usage: xsite $cmd( |\$)"
    refute_output --partial "no-such.conf"
  done
  run -0 xsite model -h
  assert_line --partial -- "--profile P"
  run -0 xsite explain --help
  assert_line --partial -- "--nodes N"
}

@test "xsite without a command prints the usage and exits 2" {
  run -2 xsite
  assert_output --partial "Usage: xsite [--config FILE] COMMAND"
}

@test "an unknown command exits 2, names it and points to --help" {
  run -2 xsite frobnicate
  assert_output "xsite: unknown command 'frobnicate' (try: xsite --help)"
}

@test "an unknown option of a command exits 2 and names the option" {
  local cmd
  for cmd in check model explain; do
    run -2 xsite --config "$TESTBED" "$cmd" --bogus
    assert_output "xsite $cmd: unknown option --bogus"
  done
}

@test "an unknown option before the command exits 2 and is called an option" {
  run -2 xsite --bogus check "$TESTBED"
  assert_output --partial "unknown option --bogus"
}

@test "model without --profile exits 2 and says --profile is required" {
  run -2 xsite --config "$TESTBED" model --nodes 2
  assert_output "xsite model: --profile is required"
}

@test "explain without --nodes exits 2 and says --nodes is required" {
  run -2 xsite --config "$TESTBED" explain --comm-profile low
  assert_output "xsite explain: --nodes is required"
}

@test "a bad --nodes value exits 2 and the message names --nodes" {
  local bad
  for bad in abc 0 2.5 -3 1e400; do
    run -2 xsite --config "$TESTBED" explain --nodes "$bad"
    assert_output --regexp "^xsite explain: --nodes: '$bad' "
  done
  for bad in 4-2 x 2,,4 ""; do
    run -2 xsite --config "$TESTBED" model --profile low --nodes "$bad"
    assert_output --regexp "^xsite model: --nodes: "
  done
  run -2 xsite --config "$TESTBED" model --profile low --nodes=4-2
  assert_output "xsite model: --nodes: bad range '4-2'"
}

@test "bad link parameters exit 2 and the message names the flag" {
  run -2 xsite --config "$TESTBED" model --profile low --link-bandwidth 5
  assert_output --regexp "^xsite model: --link-bandwidth: '5' needs a unit \("
  run -2 xsite --config "$TESTBED" model --profile low --link-latency 5parsecs
  assert_output --regexp "^xsite model: --link-latency: '5parsecs': unknown unit 'parsecs'"
  run -2 xsite --config "$TESTBED" explain --nodes 2 --time-limit soon
  assert_output --regexp "^xsite explain: --time-limit: 'soon' "
}

@test "an option without its value exits 2 and names the option" {
  run -2 xsite --config "$TESTBED" explain --nodes
  assert_output "xsite explain: --nodes needs a value"
  run -2 xsite --config "$TESTBED" model --profile
  assert_output "xsite model: --profile needs a value"
}

@test "a flag given a value exits 2" {
  run -2 xsite --config "$TESTBED" explain --nodes 2 --json=yes
  assert_output "xsite explain: --json takes no value"
}

@test "an unexpected argument exits 2 and names it" {
  run -2 xsite --config "$TESTBED" model --profile low extra
  assert_output "xsite model: unexpected argument 'extra'"
  run -2 xsite --config "$TESTBED" explain --nodes 2 extra
  assert_output "xsite explain: unexpected argument 'extra'"
  run -2 xsite check "$TESTBED" "$TESTBED"
  assert_output "xsite check: one file at most"
}

@test "--config without a file exits 2" {
  run -2 xsite --config
  assert_output "xsite: --config needs a file"
}

@test "an empty --config= exits 2 as a usage error naming --config" {
  run -2 xsite --config= check
  assert_output --partial -- "--config"
}

@test "--config after the command without a file says that it needs a file" {
  run -2 xsite check --config
  assert_output --partial -- "--config needs a file"
}

###############################################################################
# check (exit 0 valid, 1 invalid)
###############################################################################

@test "check accepts every config in site-configs/" {
  local conf
  local n=0
  for conf in "$REPO"/site-configs/*.conf; do
    [[ -e $conf ]] || continue
    run -0 xsite check "$conf"
    assert_output --regexp "^$conf: OK: sites [^ ]+ \([0-9]+ nodes\) and [^ ]+ \([0-9]+ nodes\), link "
    n=$((n + 1))
  done
  ((n >= 1)) || fail "no config found in $REPO/site-configs"
}

@test "check prints every error as file:line: Key: message on stderr and exits 1" {
  local f="$FIX/errors.conf"
  run -1 --separate-stderr xsite check "$f"
  assert_equal "$output" ""
  use_stderr
  assert_line "$f:3: NetLatency: '10' needs a unit (s, ms, us or ns)"
  assert_line "$f:5: CoresPerNode: '0' must be at least 1"
  assert_line "$f:6: Colour: unknown key in a LinkName line"
  assert_line "$f:7: Mode: 'sometimes' is not one of enforce, advise, off"
  assert_line "$f:8: MaxSlowdown: '0.9' must be at least 1.0 (a slowdown factor)"
  assert_line "$f:9: Frobnicate: unknown key"
  assert_line "$f:10: ClassName: 'huge' is not one of low, medium, high"
  assert_line "$f:11: Exchange: missing (required without Template)"
  assert_line "$f:12: Size: missing (required with Template)"
  assert_equal "${#lines[@]}" 9
  local l
  for l in "${lines[@]}"; do
    [[ $l =~ ^"$f":[0-9]+:\ [A-Z][A-Za-z]*:\ . ]] || fail "not file:line: Key: message: $l"
  done
}

@test "check --json gives the sites, link and profiles of a valid file, and every error of a broken one" {
  run -0 xsite check --json "$REPO/site-configs/testbed.conf"
  run -0 jq -r '[.valid, .sites[0].name, (.sites[0].nodes | join(",")), .sites[0].cores, .sites[1].name,
    .link.latency, (.errors | length)] | @tsv' <<<"$output"
  assert_output "$(printf 'true\talpha\talpha1,alpha2\t2\tbeta\t0.001\t0')"
  run -1 xsite check --json "$FIX/errors.conf"
  run -0 jq -r '.valid, (.errors | length), .errors[0]' <<<"$output"
  assert_line --index 0 false
  assert_line --index 1 9
  assert_line --index 2 "$FIX/errors.conf:3: NetLatency: '10' needs a unit (s, ms, us or ns)"
}

@test "check holds the link's License= against slurm.conf beside the file" {
  local d=$BATS_TEST_TMPDIR/etc
  mkdir -p "$d"
  sed -E 's/^(LinkName=.*)$/\1 License=xsite_link:100/' "$REPO/site-configs/testbed.conf" >"$d/xsite.conf"
  # no slurm.conf beside it: nothing to hold it against
  run -0 xsite check "$d/xsite.conf"
  assert_output --partial ", link 125 MB/s 1 ms as 100 licenses xsite_link, "
  run -0 xsite check --json "$d/xsite.conf"
  run -0 jq -r '"\(.link.license.name):\(.link.license.count)"' <<<"$output"
  assert_output "xsite_link:100"
  printf 'ClusterName=x\nLicenses=matlab:2,xsite_link:100\n' >"$d/slurm.conf"
  run -0 xsite check "$d/xsite.conf"
  local line
  line=$(grep -n '^LinkName=' "$d/xsite.conf" | cut -d: -f1)
  printf 'Licenses=matlab:2,xsite_link:10\n' >"$d/slurm.conf"
  run -1 --separate-stderr xsite check "$d/xsite.conf"
  use_stderr
  assert_output "$d/xsite.conf:$line: License: xsite_link:100, but $d/slurm.conf: slurm.conf says xsite_link:10 (add Licenses=xsite_link:100 there)"
  printf 'ClusterName=x\n' >"$d/slurm.conf"
  run -1 --separate-stderr xsite check "$d/xsite.conf"
  use_stderr
  assert_output --partial "slurm.conf: slurm.conf declares no license xsite_link (add Licenses=xsite_link:100 there)"
}

@test "explain reads a --nodelist longer than --nodes as the Slurm xsite was built for does" {
  [[ -n ${SLURM_VERSION:-} ]] || skip "xsite was configured without Slurm"
  local major=${SLURM_VERSION%%.*} minor=${SLURM_VERSION#*.} want=0 decided="pin one-node"
  minor=${minor%%.*}
  if ((10#$major * 100 + 10#$minor < 2302)); then
    # every node listed: two, at both sites (exit 1: rejected)
    want=1 decided="reject nodelist"
  fi
  # on 23.02 and later the nodes to choose from: one node at either site,
  # pinned, to a site of its own (a change Slurm refuses half-way may leave
  # them nodes it must have)
  run -"$want" xsite --config "$TESTBED" explain --nodes 1 --nodelist alpha1,beta1 --json
  run -0 jq -r '"\(.action) \(.why)"' <<<"$output"
  assert_output "$decided"
}

@test "explain gives a job that may span its share of the link's license, and a pinned one none" {
  local conf=$BATS_TEST_TMPDIR/xsite.conf
  sed -E 's/^(LinkName=.*)$/\1 License=xsite_link:100/' "$REPO/site-configs/testbed.conf" >"$conf"
  run -0 xsite --config "$conf" explain --nodes 2 --site-affinity span --comm-profile high
  assert_line --index 0 --partial "; it holds 76 of the link's 100 licenses (xsite_link) while it runs"
  assert_line "  --licenses=xsite_link:76 (75.4 % of the link each way, on average)"
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile high --json
  run -0 jq -r '"\(.action) \(.licenses) \(.record | test(" lic="))"' <<<"$output"
  assert_output "pin null false"
  # a slower link measured: more units for the same job
  printf 'State=degraded Bandwidth=62.5MB/s\n' >"$BATS_TEST_TMPDIR/link.state"
  sed -i "s|^LinkStateFile=.*|LinkStateFile=$BATS_TEST_TMPDIR/link.state|" "$conf"
  run -0 xsite --config "$conf" explain --nodes 2 --site-affinity span --comm-profile medium --json
  run -0 jq -r .licenses <<<"$output"
  assert_output "xsite_link:25"
}

@test "map --format json gives each rank its host, site and core slot, site by site" {
  run -0 xsite --config "$REPO/site-configs/testbed.conf" map --nodelist beta1,alpha1 --tasks-per-node '2(x2)' \
    --format json
  run -0 jq -r '.ranks[] | "\(.rank) \(.host) \(.site) \(.slot)"' <<<"$output"
  assert_output "$(printf '%s\n' '0 alpha1 alpha 0' '1 alpha1 alpha 1' '2 beta1 beta 0' '3 beta1 beta 1')"
}

@test "map --comm-graph reads libxsite's record through its schema check, and names what is wrong" {
  local f=$BATS_TEST_TMPDIR/rec.json cross='"cross":{"bytes":0,"messages":0,"p2p_bytes":0,"p2p_messages":0,"coll_bytes":0,"coll_messages":0}'
  local nodes=alpha1,beta1
  local map=(xsite --config "$REPO/site-configs/testbed.conf" map --nodelist "$nodes" --comm-graph "$f")
  printf '{"version":2,"ranks":2,%s,"matrix":[[0,1],[1,0]]}\n' "$cross" >"$f"
  run -1 "${map[@]}"
  assert_output "xsite map: --comm-graph: $f: traffic record: version: not 1 (2)"
  printf '{"version":1,"ranks":2,%s,"matrix":null}\n' "$cross" >"$f"
  run -1 "${map[@]}"
  assert_output --partial "$f: the record has no matrix and no edges"
  printf '{"version":1,"ranks":2,%s,"matrix":[[0,1],[1,0]],"edges":[0,1,1]}\n' "$cross" >"$f"
  run -1 "${map[@]}"
  assert_output "xsite map: --comm-graph: $f: traffic record: edges: beside a matrix (one or the other)"
  printf '{"version":1,"ranks":2,%s,"matrix":null,"edges":[0,1,1,1,2,1]}\n' "$cross" >"$f"
  run -1 "${map[@]}"
  assert_output "xsite map: --comm-graph: $f: traffic record: edges: triple 2 is not rank, rank, bytes"
  # the rank count is checked first: a record that claims 2^31 - 1 ranks
  # builds nothing
  printf '{"version":1,"ranks":2147483647,%s,"matrix":null,"edges":[]}\n' "$cross" >"$f"
  run -1 "${map[@]}"
  assert_output "xsite map: --comm-graph: $f: the record has 2147483647 ranks, the allocation 2 task slots"
  printf '{"version":1,"ranks":2,%s,"matrix":[[0,1],[1,0]]}\n' "$cross" >"$f"
  run -0 "${map[@]}" --format json
}

@test "map --comm-graph --format json says how the ranks were placed and what crosses" {
  # ranks 0 and 2 talk, and 1 and 3: site-major (0,1 | 2,3) cuts all 2000
  # bytes; a bisection that keeps each pair at one site cuts none
  local f=$BATS_TEST_TMPDIR/rec.json cross='"cross":{"bytes":0,"messages":0,"p2p_bytes":0,"p2p_messages":0,"coll_bytes":0,"coll_messages":0}'
  printf '{"version":1,"ranks":4,%s,"matrix":[[0,0,500,0],[0,0,0,500],[500,0,0,0],[0,500,0,0]]}\n' "$cross" >"$f"
  run -0 --separate-stderr xsite --config "$REPO/site-configs/testbed.conf" map --nodelist alpha1,beta1 \
    --tasks-per-node '2(x2)' --comm-graph "$f" --format json
  run -0 jq -r '"\(.cross_bytes) \(.cross_bytes_site_major) \(.placed_by)"' <<<"$output"
  [[ $output == "0 2000 metis" || $output == "0 2000 kernighan-lin" ]]
  # the same traffic as libxsite writes it beyond XSITE_MATRIX_MAX ranks
  printf '{"version":1,"ranks":4,%s,"matrix":null,"edges":[0,2,500,1,3,500,2,0,500,3,1,500]}\n' \
    "$cross" >"$f"
  run -0 --separate-stderr xsite --config "$REPO/site-configs/testbed.conf" map --nodelist alpha1,beta1 \
    --tasks-per-node '2(x2)' --comm-graph "$f" --format json
  run -0 jq -r '"\(.cross_bytes) \(.cross_bytes_site_major) \(.placed_by)"' <<<"$output"
  [[ $output == "0 2000 metis" || $output == "0 2000 kernighan-lin" ]]
}

@test "map --comm-profile places the ranks by the latest earlier run of the profile with as many ranks, of your own jobs" {
  local dir=$BATS_TEST_TMPDIR/reports me
  me=$(id -u)
  # pairs (0,2) and (1,3) talk: site-major cuts both, a good bisection neither
  earlier_report "$dir" 100 "$me" halo '[[0,0,500,0],[0,0,0,500],[500,0,0,0],[0,500,0,0]]'
  # newer, but another user's job, another profile, or another rank count
  earlier_report "$dir" 101 $((me + 1)) halo '[[0,500,0,0],[500,0,0,0],[0,0,0,500],[0,0,500,0]]'
  earlier_report "$dir" 102 "$me" other '[[0,500,0,0],[500,0,0,0],[0,0,0,500],[0,0,500,0]]'
  earlier_report "$dir" 103 "$me" halo '[[0,1],[1,0]]' 2
  local map=(xsite --config "$REPO/site-configs/testbed.conf" map --nodelist 'alpha1,beta1' --tasks-per-node '2(x2)'
    --report-dir "$dir" --format json)
  run -0 --separate-stderr "${map[@]}" --comm-profile halo
  run -0 jq -r '"\(.traffic_of_job) \(.cross_bytes) \(.cross_bytes_site_major)"' <<<"$output"
  assert_output "100 0 2000"
  # an explicit spec is found by its label, which has no blanks
  earlier_report "$dir" 104 "$me" 'op=1e9,b=1e9,x=1e6' '[[0,0,500,0],[0,0,0,500],[500,0,0,0],[0,500,0,0]]'
  run -0 --separate-stderr "${map[@]}" --comm-profile 'op=1e9, b=1e9, x=1e6'
  run -0 jq -r '.traffic_of_job' <<<"$output"
  assert_output "104"
  # a newer run that kept edges (beyond XSITE_MATRIX_MAX ranks), not a matrix
  earlier_report "$dir" 105 "$me" halo '"edges":[0,2,500,1,3,500,2,0,500,3,1,500]'
  run -0 --separate-stderr "${map[@]}" --comm-profile halo
  run -0 jq -r '"\(.traffic_of_job) \(.cross_bytes) \(.cross_bytes_site_major)"' <<<"$output"
  assert_output "105 0 2000"
  # no earlier run: site by site, and --verbose says why
  run -0 --separate-stderr "${map[@]}" --comm-profile gromacs --verbose
  # (a later `run` clears $stderr from bats 1.12)
  local said=$stderr
  run -0 jq -r '"\(.traffic_of_job) \(.placed_by) \([.ranks[].site] | join(","))"' <<<"$output"
  assert_output "null null alpha,alpha,beta,beta"
  [[ $said == *"no record of an earlier run of profile 'gromacs' with 4 ranks among the 6 newest in $dir; site by site"* ]]
}

@test "config --set takes each key out of its line and writes it at the end; the result is checked" {
  local f=$BATS_TEST_TMPDIR/x.conf
  sed -e '/^Mode=/d' -e 's|^LinkStateFile=.*|Mode=enforce LinkStateFile=/old/link.state  # measured|' \
    "$REPO/site-configs/testbed.conf" >"$f"
  printf 'ReportDir=/old/reports \\\n' >>"$f"
  run -0 --separate-stderr xsite config "$f" --set LinkStateFile=/new/link.state --set reportdir=/new/reports
  refute_output --partial /old/
  assert_line "Mode=enforce"
  assert_equal "${lines[-2]}" "LinkStateFile=/new/link.state"
  assert_equal "${lines[-1]}" "ReportDir=/new/reports"
  printf '%s\n' "$output" >"$f.new"
  run -0 xsite check "$f.new"
  run -1 xsite config "$f" --set Colour=red
  assert_output "xsite config: Colour: not a key of xsite.conf's global lines"
  run -1 xsite config "$f" --set MaxSlowdown=0.5
  assert_output --partial "xsite config: MaxSlowdown: '0.5' must be at least 1.0"
  run -2 xsite config "$f"
  assert_output "xsite config: --set KEY=VALUE is required"
  run -1 xsite config "$FIX/errors.conf" --set Mode=off
  assert_line --index 0 --partial "errors.conf:3: NetLatency:"
}

@test "check reports an error in a continued line at the line where it starts" {
  run -1 xsite check "$FIX/errors.conf"
  assert_line --partial "errors.conf:3: NetLatency:"
  refute_line --partial "errors.conf:4:"
}

@test "check rejects a node that is in two sites" {
  run -1 xsite check "$FIX/node-in-two-sites.conf"
  assert_output "$FIX/node-in-two-sites.conf:2: Nodes: node 'n04' is already in site 'east' (line 1)"
}

@test "check requires exactly two sites" {
  run -1 xsite check "$FIX/three-sites.conf"
  assert_output "$FIX/three-sites.conf:3: SiteName: xsite needs exactly two sites, found 3"
  run -1 xsite check "$FIX/one-site.conf"
  assert_output --regexp "^$FIX/one-site.conf(:1)?: SiteName: xsite needs exactly two sites, found 1\$"
}

@test "check requires exactly one link" {
  run -1 xsite check "$FIX/no-link.conf"
  assert_output "$FIX/no-link.conf: LinkName: no link between the sites"
  run -1 xsite check "$FIX/two-links.conf"
  assert_output "$FIX/two-links.conf:4: LinkName: only one link between the two sites is supported"
}

@test "check rejects a record key that does not start its line" {
  run -1 xsite check "$FIX/record-key-mid-line.conf"
  assert_output "$FIX/record-key-mid-line.conf:3: SiteName: must start its own line"
}

@test "check accepts the syntax of xsite.conf(5): any key case, quotes, comments, continuations" {
  run -0 xsite check "$FIX/syntax.conf"
  assert_output "$FIX/syntax.conf: OK: sites east (4 nodes) and west (4 nodes), link 20 GB/s 145 us, 3 profiles"
  # the values took effect: Mode=ADVISE, DefaultAffinity=pin, DefaultProfile=cg
  run -0 xsite --config "$FIX/syntax.conf" explain --nodes 2
  assert_line --index 0 --regexp "^xsite: pinned to one site \(east or west\) \(advice only, Mode=advise\): "
}

@test "check accepts a config with CRLF line ends" {
  local conf="$BATS_TEST_TMPDIR/crlf.conf"
  sed 's/$/\r/' "$FIX/syntax.conf" >"$conf"
  run -0 xsite check "$conf"
  assert_output --partial "OK: sites east (4 nodes) and west (4 nodes)"
}

@test "check accepts byte counts without a unit and a zero Exchange" {
  run -0 xsite check "$FIX/bare-byte-counts.conf"
  assert_output --partial "OK:"
}

@test "check of a file that does not exist exits 1 and names the file" {
  run -1 xsite check "$BATS_TEST_TMPDIR/missing.conf"
  assert_output --partial "$BATS_TEST_TMPDIR/missing.conf"
}

@test "model and explain refuse an invalid config with its errors and exit 1" {
  run -1 xsite --config "$FIX/node-in-two-sites.conf" model --profile op=1e12,b=1GB,x=1GB
  assert_output --partial "node-in-two-sites.conf:2: Nodes: node 'n04' is already in site 'east'"
  run -1 xsite --config "$FIX/errors.conf" explain --nodes 2
  assert_output --partial "errors.conf:9: Frobnicate: unknown key"
}

###############################################################################
# Where the configuration comes from
###############################################################################

@test "--config before the command selects the config" {
  run -0 xsite --config "$TESTBED" check
  assert_output --partial "$TESTBED: OK:"
  run -0 xsite --config="$TESTBED" check
  assert_output --partial "$TESTBED: OK:"
}

@test "--config after the command selects the config" {
  run -0 xsite check --config "$TESTBED"
  assert_output --partial "$TESTBED: OK:"
  run -0 xsite model --profile low --config="$TESTBED"
  assert_line --index 0 "profile low, MaxSlowdown 1.10"
  run -0 xsite explain --nodes 1 --config "$TESTBED"
  assert_line --index 0 "xsite: no placement change: a one-node job is always at one site"
}

@test "check FILE takes precedence over --config" {
  run -1 xsite --config "$TESTBED" check "$FIX/no-link.conf"
  assert_output --partial "no-link.conf: LinkName:"
}

@test "XSITE_CONF names the config when --config is not given" {
  export XSITE_CONF="$TESTBED"
  run -0 xsite check
  assert_output --partial "$TESTBED: OK:"
  run -0 xsite explain --nodes 2 --site-affinity beta
  assert_line --index 0 "xsite: pinned to site beta: you asked for site beta"
}

@test "xsite.conf next to SLURM_CONF is used when XSITE_CONF is not set" {
  mkdir -p "$BATS_TEST_TMPDIR/etc"
  cp "$TESTBED" "$BATS_TEST_TMPDIR/etc/xsite.conf"
  export SLURM_CONF="$BATS_TEST_TMPDIR/etc/slurm.conf"
  run -0 xsite check
  assert_output --partial "$BATS_TEST_TMPDIR/etc/xsite.conf: OK:"
  run -0 xsite model --profile low --nodes 2 --json
  assert_output --partial '"profile":"low"'
  # an empty XSITE_CONF counts as not set
  export XSITE_CONF=
  run -0 xsite check
  assert_output --partial "$BATS_TEST_TMPDIR/etc/xsite.conf: OK:"
}

@test "--config wins over XSITE_CONF, and XSITE_CONF over SLURM_CONF" {
  mkdir -p "$BATS_TEST_TMPDIR/etc"
  cp "$FIX/no-link.conf" "$BATS_TEST_TMPDIR/etc/xsite.conf"
  export SLURM_CONF="$BATS_TEST_TMPDIR/etc/slurm.conf"
  export XSITE_CONF="$FIX/one-site.conf"
  run -1 xsite check
  assert_output --regexp "^$FIX/one-site.conf(:1)?: SiteName: "
  run -0 xsite --config "$TESTBED" check
  assert_output --partial "$TESTBED: OK:"
}

@test "without --config, XSITE_CONF and SLURM_CONF the config is /etc/slurm/xsite.conf" {
  run xsite check
  assert_output --partial "/etc/slurm/xsite.conf"
}

###############################################################################
# model
###############################################################################

@test "model prints one table per link with a verdict line" {
  run -0 xsite --config "$TESTBED" model --profile low --nodes 2,4 --link-latency 1ms,5ms
  assert_line --index 0 "profile low, MaxSlowdown 1.10"
  assert_line "link 125 MB/s x 1, 1 ms one way"
  assert_line "link 125 MB/s x 1, 5 ms one way"
  assert_line --regexp "^ +nodes +split +t_one +t_span +slowdown +speed-up$"
  assert_line --regexp "^ +2 +1\+1 "
  assert_line --regexp "^ +4 +2\+2 "
  assert_line --regexp "^spanning (stops paying|still pays) at [0-9]+ nodes"
}

@test "model --json is one JSON object with a result per link and a row per node count" {
  need_json
  run -0 xsite --config "$TESTBED" model --profile medium --nodes 2,4 \
    --link-bandwidth 1Gb/s,10Gb/s --link-latency 1ms,5ms --json
  local json=$output
  run -0 jsonq 'j.profile' 'j.max_slowdown' '#j.results' \
    'j.results[1].link.bandwidth' 'j.results[1].link.latency' 'j.results[1].link.channels' \
    'j.results[4].link.bandwidth' 'j.results[4].link.latency' \
    '#j.results[1].rows' 'j.results[1].rows[1].nodes' 'j.results[1].rows[2].nodes' \
    'j.results[1].rows[2].split[1] + j.results[1].rows[2].split[2]' \
    'type(j.results[1].rows[2].t_one) == "number" and j.results[1].rows[2].t_one > 0' \
    'type(j.results[1].rows[2].t_span) == "number" and j.results[1].rows[2].t_span > 0' \
    'math.abs(j.results[1].rows[2].t_span / j.results[1].rows[2].t_one - j.results[1].rows[2].slowdown) < 1e-6' \
    'type(j.results[1].rows[2].speedup)' <<<"$json"
  assert_line --index 0 "medium"
  assert_line --index 1 "1.1"
  assert_line --index 2 "4"
  assert_line --index 3 "125000000"
  assert_line --index 4 "0.001"
  assert_line --index 5 "1"
  assert_line --index 6 "1250000000"
  assert_line --index 7 "0.005"
  assert_line --index 8 "2"
  assert_line --index 9 "2"
  assert_line --index 10 "4"
  assert_line --index 11 "4"
  assert_line --index 12 "true"
  assert_line --index 13 "true"
  assert_line --index 14 "true"
  assert_line --index 15 "number"
}

@test "model without --nodes covers the powers of two up to all nodes" {
  need_json
  run -0 xsite --config "$TESTBED" model --profile low --json
  run -0 jsonq '#j.results[1].rows' 'j.results[1].rows[1].nodes' 'j.results[1].rows[2].nodes' \
    'j.results[1].rows[3].nodes' <<<"$output"
  assert_output "$(printf '3\n1\n2\n4')"
}

@test "model --json output of explicit parameters names the profile by its parameters" {
  need_json
  run -0 xsite --config "$TESTBED" model --profile op=1e12,b=8GB,x=1GB,steps=10,pattern=tree \
    --nodes 2 --json
  run -0 jsonq 'j.profile' '#j.results[1].rows' <<<"$output"
  assert_output "$(printf 'op=1e12,b=8GB,x=1GB,steps=10,pattern=tree\n1')"
}

@test "model accepts explicit parameters with x=0" {
  run -0 xsite --config "$TESTBED" model --profile op=1e12,b=8GB,x=0 --nodes 2
  assert_line --index 0 "profile op=1e12,b=8GB,x=0, MaxSlowdown 1.10"
}

@test "model rejects a bad explicit profile and names the field" {
  run -2 xsite --config "$TESTBED" model --profile op=1e12 --nodes 2
  assert_output --regexp "^xsite model: --profile: (b|x): missing"
  run -2 xsite --config "$TESTBED" model --profile op=1e12,b=8GB,x=1GB,pattern=ring --nodes 2
  assert_output --regexp "^xsite model: --profile: pattern: 'ring' is not one of "
}

@test "model with an unknown profile exits 2 and lists the known ones" {
  run -2 xsite --config "$TESTBED" model --profile gromacs
  assert_output "xsite model: --profile: unknown profile 'gromacs' (known: high, low, medium, pingpong, solver; or op=…,b=…,x=…)"
}

@test "model --svg writes an SVG that xmllint accepts, with the title and axis labels" {
  need_xmllint
  local svg="$BATS_TEST_TMPDIR/chart.svg"
  run -0 xsite --config "$TESTBED" model --profile low --link-bandwidth 1Gb/s,10Gb/s --svg "$svg"
  assert_line --index 0 "profile low, MaxSlowdown 1.10"
  [[ -s $svg ]] || fail "$svg was not written"
  run -0 xmllint --noout "$svg"
  run -0 cat "$svg"
  assert_line "<title>Speed-up of profile low across two sites (testbed.conf)</title>"
  assert_output --partial ">nodes (split evenly between the sites)</text>"
  assert_output --partial ">speed-up over one node</text>"
  assert_output --partial ">one site (no link)</text>"
  assert_output --partial ">125 MB/s, 1 ms</text>"
  assert_output --partial ">1.25 GB/s, 1 ms</text>"
}

@test "model --svg into a directory that does not exist exits 1 and names --svg" {
  run -1 xsite --config "$TESTBED" model --profile low --svg "$BATS_TEST_TMPDIR/no/dir/chart.svg"
  assert_output --partial "xsite model: --svg: $BATS_TEST_TMPDIR/no/dir/chart.svg"
}

###############################################################################
# explain, on site-configs/testbed.conf (alpha and beta, two nodes each)
###############################################################################

@test "explain pins a job that would be too slow across the link" {
  run -0 xsite --config "$TESTBED" explain --nodes 2
  assert_line --index 0 --regexp '^xsite: pinned to one site \(alpha or beta\): spanning would be [0-9.]+x slower than one site \(limit 1\.10x\)$'
  assert_line --index 1 --regexp '^  nodes 2 \(split 1\+1\)  t_one .*  limit 1\.10x  link 125 MB/s, 1 ms \(up\)$'
  assert_line --index 2 "  expected error: unknown (no FidelityFile)"
  assert_line --index 3 "  constraint: [site_alpha|site_beta]"
}

@test "explain --json of a pinned job gives action, why, features and the record" {
  need_json
  run -0 xsite --config "$TESTBED" explain --nodes 2 --json
  local json=$output
  run -0 jsonq 'j.action' 'j.why' 'j.features' 'j.record:sub(1, 10)' \
    'j.record:match("action=(%S+)")' 'j.record:match("why=(%S+)")' \
    'j.prediction.nodes' 'j.prediction.split[1] .. "+" .. j.prediction.split[2]' \
    'j.prediction.slowdown > 1.1' 'j.message' <<<"$json"
  assert_line --index 0 "pin"
  assert_line --index 1 "slowdown"
  assert_line --index 2 "[site_alpha|site_beta]"
  assert_line --index 3 "xsite v=1 "
  assert_line --index 4 "pin"
  assert_line --index 5 "slowdown"
  assert_line --index 6 "2"
  assert_line --index 7 "1+1"
  assert_line --index 8 "true"
  local message=${lines[9]}
  run -0 xsite --config "$TESTBED" explain --nodes 2
  assert_line --index 0 "$message"
}

@test "explain, model and replay use the measured profiles of ProfileStateFile" {
  local conf=$BATS_TEST_TMPDIR/xsite.conf state=$BATS_TEST_TMPDIR/profiles.state
  { grep -v '^LinkStateFile' "$TESTBED"; printf 'ProfileStateFile=%s\n' "$state"; } >"$conf"
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile solver
  assert_line --index 0 --regexp '^xsite: pinned to one site'
  # the record of a job pinned then, for replay
  local record
  record=$(xsite --config "$conf" explain --nodes 2 --comm-profile solver --json |
    sed -E 's/.*"record":"([^"]*)".*/\1/')
  printf '7\tu\tCOMPLETED\t2\t00:10:00\t00:01:00\talpha[1-2]\tUnknown\tUnknown\t%s\n' "$record" >"$BATS_TEST_TMPDIR/sacct"
  printf 'ProfileName=solver Exchange=901126 Steps=111\n' >"$state"
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile solver
  assert_line --index 0 --regexp '^xsite: may span both sites: spanning would be 1\.00x slower'
  run -0 xsite --config "$conf" model --profile solver --nodes 2 --json
  assert_output --regexp '"slowdown":1\.00'
  run -0 xsite --config "$conf" replay --sacct-file "$BATS_TEST_TMPDIR/sacct"
  assert_line --regexp '^  job 7: pin -> span \(slowdown 1\.00x\)$'
  printf 'ProfileName=solver Steps=lots\n' >"$state"
  run -0 --separate-stderr xsite --config "$conf" explain --nodes 2 --comm-profile solver
  assert_line --index 0 --regexp '^xsite: pinned to one site'
  [[ $stderr == "xsite explain: $state:1: Steps: "*"(using the configured profiles)" ]]
}

@test "replay counts a job's node-hours lost from where it ran, read from its node list unexpanded" {
  local conf=$BATS_TEST_TMPDIR/xsite.conf record
  grep -v '^LinkStateFile' "$TESTBED" >"$conf"
  record=$(xsite --config "$conf" explain --nodes 2 --comm-profile solver --json |
    sed -E 's/.*"record":"([^"]*)".*/\1/')
  # the same pinned job, 2 nodes for an hour: under MaxSlowdown 100 it may
  # span; one that ran at both sites lost (s - 1) / s of its hour to the
  # slowdown s, one that ran at one site would lose s - 1
  lost() {
    printf '7\tu\tCOMPLETED\t2\t01:00:00\t00:00:00\t%s\tUnknown\tUnknown\t%s\n' "$1" "$record" \
      >"$BATS_TEST_TMPDIR/sacct"
    xsite --config "$conf" replay --sacct-file "$BATS_TEST_TMPDIR/sacct" --max-slowdown 100 |
      sed -n 's/^  node-hours lost to slowdown by the jobs allowed to span: //p'
  }
  local one both huge
  one=$(lost 'alpha[1-2]')
  both=$(lost 'alpha1,beta1')
  huge=$(lost 'alpha1,x[0000000-9999999],beta[1-2]')
  [[ -n $one && -n $both ]]
  # s - 1 against (s - 1) / s: their ratio is s, the job's slowdown (> 1)
  awk -v a="$one" -v b="$both" 'BEGIN { exit !(a > b && b > 0) }'
  [[ $huge == "$both" ]]
  [[ $(lost 'alpha[1-2') == "$one" ]]
}

@test "explain lets a low-communication job span both sites" {
  run -0 xsite --config "$TESTBED" explain --nodes 4 --comm-profile low
  assert_line --index 0 --regexp '^xsite: may span both sites: spanning would be '
  refute_line --partial "constraint:"
}

@test "explain --json of a spanning job: action span, why within, no constraint" {
  need_json
  run -0 xsite --config "$TESTBED" explain --nodes 4 --comm-profile low --json
  run -0 jsonq 'j.action' 'j.why' 'j.features' 'j.record:sub(1, 10)' 'j.prediction.slowdown <= 1.1' <<<"$output"
  assert_output "$(printf 'span\nwithin\nnil\nxsite v=1 \ntrue')"
}

@test "explain states a spanning job's cost in the same unit as its limit" {
  run -0 xsite --config "$TESTBED" explain --nodes 4 --comm-profile low
  assert_line --index 0 --regexp 'would be [0-9.]+x slower than one site \(within the limit 1\.10x\)'
}

@test "explain keeps a job at the site the user names" {
  run -0 xsite --config "$TESTBED" explain --nodes 2 --site-affinity beta
  assert_line --index 0 "xsite: pinned to site beta: you asked for site beta"
  assert_line "  constraint: site_beta"
}

@test "explain --json of a site request: action site, why user-site" {
  need_json
  run -0 xsite --config "$TESTBED" explain --nodes 2 --site-affinity beta --json
  run -0 jsonq 'j.action' 'j.why' 'j.features' 'j.record:match("^xsite v=1 action=site why=user%-site ") ~= nil' <<<"$output"
  assert_output "$(printf 'site\nuser-site\nsite_beta\ntrue')"
}

@test "explain rejects a job larger than the site the user names, exit 1" {
  run -1 xsite --config "$TESTBED" explain --nodes 3 --site-affinity beta
  assert_line --index 0 "xsite: job rejected: --site-affinity=beta: site beta has 2 nodes, the job asks for 3"
}

@test "explain --json of a rejected job: action reject, why oversize, exit 1" {
  need_json
  run -1 xsite --config "$TESTBED" explain --nodes 3 --site-affinity beta --json
  run -0 jsonq 'j.action' 'j.why' 'j.record:match("^xsite v=1 action=reject why=oversize") ~= nil' <<<"$output"
  assert_output "$(printf 'reject\noversize\ntrue')"
}

@test "explain rejects an unknown site, naming the flag and the valid values" {
  run -1 xsite --config "$TESTBED" explain --nodes 2 --site-affinity gamma
  assert_output "xsite: job rejected: --site-affinity: unknown site 'gamma' (valid: auto, pin, span, alpha, beta)"
}

@test "explain --json of a bad request: why bad-request and no prediction" {
  need_json
  run -1 xsite --config "$TESTBED" explain --nodes 2 --site-affinity gamma --json
  run -0 jsonq 'j.action' 'j.why' 'j.prediction' <<<"$output"
  assert_output "$(printf 'reject\nbad-request\nnil')"
}

@test "explain rejects an unknown --comm-profile, naming the flag" {
  run -1 xsite --config "$TESTBED" explain --nodes 2 --comm-profile gromacs
  assert_output --partial "xsite: job rejected: --comm-profile: unknown profile 'gromacs' (known: high, low, medium, pingpong"
}

@test "explain rejects --site-affinity=pin for a job larger than either site" {
  run -1 xsite --config "$TESTBED" explain --nodes 4 --site-affinity pin
  assert_line --index 0 "xsite: job rejected: --site-affinity=pin: no single site has 4 nodes"
}

@test "explain pins a --site-affinity=pin job that fits one site" {
  run -0 xsite --config "$TESTBED" explain --nodes 2 --site-affinity pin --comm-profile low
  assert_line --index 0 "xsite: pinned to one site (alpha or beta): you asked for one site"
  assert_line "  constraint: [site_alpha|site_beta]"
}

@test "explain splits a --site-affinity=span job with a per-site count constraint" {
  run -0 xsite --config "$TESTBED" explain --nodes 4 --site-affinity span
  assert_line --index 0 --regexp '^xsite: may span both sites: you asked to span both sites \(2\+2 nodes; predicted [0-9.]+x slower than one site\)$'
  assert_line "  constraint: [site_alpha*2&site_beta*2]"
}

@test "explain lets an oversize job span with a warning under OversizeAction=warn" {
  run -0 xsite --config "$TESTBED" explain --nodes 3 --comm-profile high
  assert_line --index 0 --regexp '^xsite: may span both sites: no single site has 3 nodes; spanning would be [0-9.]+x slower than one site \(limit 1\.10x\); running anyway \(OversizeAction=warn\)$'
}

@test "explain rejects an oversize job under OversizeAction=reject" {
  local conf
  conf=$(testbed_with 's/^OversizeAction=warn$/OversizeAction=reject/')
  run -1 xsite --config "$conf" explain --nodes 3 --comm-profile high
  assert_line --index 0 --regexp '^xsite: job rejected: no single site has 3 nodes; spanning would be '
}

@test "explain leaves a one-node job alone" {
  run -0 xsite --config "$TESTBED" explain --nodes 1
  assert_line --index 0 "xsite: no placement change: a one-node job is always at one site"
}

@test "explain keeps a job whose --constraint names a site's feature at that site" {
  run -0 xsite --config "$TESTBED" explain --nodes 2 --constraint site_beta
  assert_line --index 0 "xsite: pinned to site beta: your --constraint already keeps the job at site beta"
}

@test "explain decides a node range on its largest count" {
  run -0 xsite --config "$TESTBED" explain --nodes 1-4
  assert_line --index 0 --regexp '^xsite: pinned to one site \(alpha or beta\): spanning would be'
  assert_line --index 1 --regexp '^  nodes 4 \(split 2\+2\)'
  run -2 xsite --config "$TESTBED" explain --nodes 4-1
  assert_output "xsite explain: --nodes: '4-1': the range runs backwards"
}

@test "explain refuses nodes named at both sites for a job that may not span, naming --nodelist" {
  run -1 xsite --config "$TESTBED" explain --nodes 2 --nodelist 'alpha1,beta[1]'
  assert_line --index 0 --partial "xsite: job rejected: --nodelist names nodes at both sites (alpha and beta)"
  run -0 xsite --config "$TESTBED" explain --nodes 2 --nodelist beta1
  assert_line --index 0 --partial "xsite: pinned to site beta"
}

@test "explain refuses a constraint it cannot pin, naming --constraint" {
  run -1 xsite --config "$TESTBED" explain --nodes 2 --constraint 'site_alpha*1'
  assert_line --index 0 --partial "xsite: job rejected: --constraint 'site_alpha*1': it has a node count"
}

@test "explain puts the site it keeps a job at into --prefer too, and refuses one that cannot take it" {
  run -0 xsite --config "$TESTBED" explain --nodes 2 --prefer 'site_alpha|ib'
  assert_line --index 0 --regexp '^xsite: pinned to one site \(alpha or beta\): '
  assert_line '  prefer: (site_alpha|ib)&[site_alpha|site_beta]'
  need_json
  run -0 xsite --config "$TESTBED" explain --nodes 2 --prefer 'site_alpha|ib' --json
  run -0 jsonq 'j.prefer' 'j.record:match(" prefer=(%S+)")' <<<"$output"
  assert_output "$(printf '(site_alpha|ib)&[site_alpha|site_beta]\nsite_alpha|ib')"
  run -1 xsite --config "$TESTBED" explain --nodes 2 --prefer '[site_alpha*1&site_beta*1]'
  assert_line --index 0 --partial "xsite: job rejected: --prefer '[site_alpha*1&site_beta*1]': it has a node count"
}

@test "explain with --time-limit makes a job that may span wait for one site" {
  need_json
  run -0 xsite --config "$TESTBED" explain --nodes 2 --comm-profile low --time-limit 600
  assert_line --index 0 --regexp '^xsite: may span both sites: '
  assert_line --regexp '^  --switches=1@[0-9]+s \(wait for one site at most that long\)$'
  run -0 xsite --config "$TESTBED" explain --nodes 2 --comm-profile low --time-limit 600 --json
  run -0 jsonq 'j.req_switch' 'type(j.wait4switch)' 'j.record:match("wait4switch=(%d+)") == tostring(j.wait4switch)' <<<"$output"
  assert_output "$(printf '1\nnumber\ntrue')"
}

@test "explain pins an auto job when the link state file says the link is down" {
  local conf
  conf=$(with_link_state "State=down")
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 0 "xsite: pinned to one site (alpha or beta): the link between the sites is down"
  assert_line --index 1 --partial "(down)"
  assert_line "  constraint: [site_alpha|site_beta]"
}

@test "explain uses the measured link of the link state file" {
  need_json
  local conf
  conf=$(with_link_state "State=degraded Bandwidth=10Mb/s Latency=5ms Time=1795000000")
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 1 --partial "link 1.25 MB/s, 5 ms (degraded)"
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low --json
  run -0 jsonq 'j.record:match("link=(%S+)")' <<<"$output"
  assert_output "degraded,1.25e+06,0.005,measured"
}

@test "explain reports an invalid link state file and uses the configured link" {
  local conf
  conf=$(with_link_state "State=sideways")
  run -0 --separate-stderr xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 1 --partial "link 125 MB/s, 1 ms (up)"
  use_stderr
  assert_output "xsite explain: $BATS_TEST_TMPDIR/link.state:1: State: 'sideways' is not one of up, degraded, down (using the configured link)"
}

# with_link_load TEXT: a testbed copy (the link as 100 licenses) whose link
# load file holds TEXT, every @NOW@ in it now; prints the config's path.
with_link_load() {
  local now
  now=$(date +%s)
  printf '%s\n' "${1//@NOW@/$now}" >"$BATS_TEST_TMPDIR/link.load"
  testbed_with "s|^LinkLoadFile=.*|LinkLoadFile=$BATS_TEST_TMPDIR/link.load|" \
    's|^\(LinkName=.*\)$|\1 License=xsite_link:100|'
}

@test "explain weighs the link's load: all its units held, a site free now, the job is pinned" {
  need_json
  local conf
  conf=$(with_link_load "Version=1 Time=@NOW@
License=xsite_link Total=100 Used=100 Ends=9999999999*100
Site=alpha Free=@NOW@*2
Site=beta")
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low --time-limit 60
  assert_line --index 0 --regexp "^xsite: pinned to one site \(alpha or beta\): the link's licenses are held by other jobs: 100 of 100 held, this job needs 1 and would wait about [0-9.]+ h for them; site alpha has 2 nodes free now, so one site finishes sooner than spanning \(1\.00x slower\)$"
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low --json
  run -0 jsonq 'j.why .. " " .. j.site_wait .. " " .. tostring(j.link_wait > 3600)' <<<"$output"
  assert_output "link-busy 0 true"
  # the units free now: it may span, holding one of them
  conf=$(with_link_load "Version=1 Time=@NOW@
License=xsite_link Total=100 Used=99
Site=alpha Free=@NOW@*2")
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 0 --partial "xsite: may span both sites: "
  assert_line --partial "  --licenses=xsite_link:1 "
}

@test "explain leaves out a link load it cannot read, or one more than 2 minutes old" {
  local conf
  conf=$(with_link_load "Version=1 Time=@NOW@
License=xsite_link Total=100 Used=lots")
  run -0 --separate-stderr xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 0 --partial "xsite: may span both sites: "
  use_stderr
  assert_output "xsite explain: $BATS_TEST_TMPDIR/link.load:2: Total, Used: each a whole number (deciding without the link's load)"
  conf=$(with_link_load "Version=1 Time=$(($(date +%s) - 121))
License=xsite_link Total=100 Used=100
Site=alpha Free=1*2")
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 0 --partial "xsite: may span both sites: "
}

@test "explain gives the prediction's expected error from the fidelity run in FidelityFile, and names one it cannot read" {
  need_json
  local conf
  conf=$(testbed_with "\$a FidelityFile=$BATS_TEST_TMPDIR/fidelity")
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 2 "  expected error: unknown (no fidelity run in $BATS_TEST_TMPDIR/fidelity)"
  printf '%s\n' "Version=1 Time=1795000000" \
    "Case=tree-8B Pattern=tree Latency=1ms Predicted=2.2 Measured=2.0" \
    "Case=tree-16K Pattern=tree Latency=1ms Predicted=1.5 Measured=1.5" \
    "Case=tree-8B Pattern=tree Latency=9ms Predicted=9.0 Measured=10.0" \
    "Case=a2a-1M Pattern=alltoall Latency=1ms Predicted=3.0 Measured=2.0" >"$BATS_TEST_TMPDIR/fidelity"
  # class low: pattern tree; the link: 1 ms one way
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 2 "  expected error: about ±5 % (the fidelity run of 2026-11-18 11:06 UTC: 2 tree cases at 1 ms one way)"
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low --json
  run -0 jsonq 'j.expected_error.pattern .. " " .. j.expected_error.cases .. " " .. j.expected_error.error' <<<"$output"
  assert_output "tree 2 0.05"
  printf 'Version=1 Time=1795000000\nCase=x Pattern=ring Latency=1ms Predicted=1 Measured=1\n' >"$BATS_TEST_TMPDIR/fidelity"
  run -0 --separate-stderr xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 2 "  expected error: unknown (no fidelity run in $BATS_TEST_TMPDIR/fidelity)"
  use_stderr
  assert_output "xsite explain: $BATS_TEST_TMPDIR/fidelity:2: Pattern: 'ring' is not one of alltoall, halo1d, halo2d, halo3d, tree, none (no expected error)"
  conf=$(testbed_with '/^FidelityFile=/d')
  run -0 xsite --config "$conf" explain --nodes 2 --comm-profile low
  assert_line --index 2 "  expected error: unknown (no FidelityFile)"
}

@test "load --write without LinkLoadFile is refused, naming it; a Slurm that does not answer, naming the command" {
  local conf
  conf=$(testbed_with '/^LinkLoadFile=/d')
  run -1 xsite --config "$conf" load --write
  assert_output "xsite load: --write: the configuration sets no LinkLoadFile"
  run -2 xsite --config "$conf" load --timeout soon
  assert_output --partial "xsite load: --timeout: "
  # no slurmctld here (SLURM_CONF names none): squeue fails, nothing is written
  conf=$(with_link_load "kept")
  SLURM_CONF=$BATS_TEST_TMPDIR/none.conf run -1 xsite --config "$conf" load --write --timeout 5
  assert_output --regexp "^xsite load: squeue failed: "
  assert_equal "$(cat "$BATS_TEST_TMPDIR/link.load")" kept
}

@test "tune reads only regular records nobody else may write, and never looks where a user may" {
  local dir=$BATS_TEST_TMPDIR/reports
  mkdir -p "$dir"/5 "$dir"/6 "$dir"/7 "$dir"/.stale.deep.x
  mkfifo "$dir"/5/report.json "$dir"/.stale.deep.x/report.json
  ln -s /etc/passwd "$dir"/6/report.json
  printf '{}' >"$dir"/7/report.json
  chmod 0666 "$dir"/7/report.json
  # a FIFO opened for reading would block until someone writes: bounded here
  run --separate-stderr timeout 20 "$XSITE" --config "$TESTBED" tune --profile solver --report-dir "$dir"
  [[ $status -ne 124 ]]
  use_stderr
  assert_line "xsite tune: $dir/5/report.json: not a regular file (left out)"
  assert_line "xsite tune: $dir/6/report.json: not a regular file (left out)"
  assert_line "xsite tune: $dir/7/report.json: writable by group or others (mode 666) (left out)"
  refute_output --partial ".stale"
}

@test "tune leaves out a record whose placement is not the one Slurm gave the job" {
  local dir=$BATS_TEST_TMPDIR/reports job
  # three jobs that crossed the link at 1+1 nodes, as their steps said;
  # Slurm (the epilog's slurm-nodes.json) gave job 9 three nodes; job 10's
  # file is writable by others
  for job in 8 9 10; do
    mkdir -p "$dir/$job"
    printf '{"schema":"xsite-report","version":1,"job":"%s","uid":1001,"sites":["alpha","beta"],"nodes":{"total":2,"split":[1,1],"outside":0},"spanning":true,"link":{"latency":0.001,"bandwidth":1.25e8},"profile":{"label":"solver","pattern":"halo1d"},"prediction":null,"steps":[{"step":"0","mpi":{"ranks":2,"cross_bytes":1000,"cross_messages":20}}]}\n' \
      "$job" >"$dir/$job/report.json"
    printf '{"%s":"%s"}\n' "$job" "$([[ $job == 9 ]] && echo 'alpha[1-2],beta1' || echo alpha1,beta1)" \
      >"$dir/$job/slurm-nodes.json"
  done
  chmod 0666 "$dir/10/slurm-nodes.json"
  run -0 --separate-stderr "$XSITE" --config "$TESTBED" tune --profile solver --report-dir "$dir"
  assert_line --index 0 "profile solver: 1 job(s) spanned the link with an MPI traffic record (2 records read)"
  assert_line --regexp '^  job 8 +1\+1 nodes, '
  assert_line "  job 9        left out: its steps named other nodes than Slurm gave it (2 + 1)"
  use_stderr
  assert_output "xsite tune: $dir/10/slurm-nodes.json: writable by group or others (mode 666); not read (left out)"
}

@test "explain under Mode=advise changes nothing and never rejects for policy" {
  local conf
  conf=$(testbed_with 's/^Mode=enforce$/Mode=advise/')
  run -0 xsite --config "$conf" explain --nodes 2
  assert_line --index 0 --regexp '^xsite: pinned to one site \(alpha or beta\) \(advice only, Mode=advise\): spanning would be '
  refute_line --partial "constraint:"
  run -0 xsite --config "$conf" explain --nodes 4 --site-affinity pin
  assert_line --index 0 "xsite: no placement change: would be rejected under Mode=enforce: --site-affinity=pin: no single site has 4 nodes"
  run -1 xsite --config "$conf" explain --nodes 2 --site-affinity gamma
  assert_line --index 0 --partial "xsite: job rejected: --site-affinity: unknown site 'gamma'"
}

@test "explain under Mode=off changes no job" {
  local conf
  conf=$(testbed_with 's/^Mode=enforce$/Mode=off/')
  run -0 xsite --config "$conf" explain --nodes 4 --site-affinity span
  assert_output "xsite: no placement change: xsite policy is off"
}

@test "explain's record is made of key=value words only" {
  need_json
  local args
  for args in "--nodes 2" "--nodes 2 --site-affinity pin" "--nodes 4 --comm-profile low" "--nodes 3 --site-affinity beta"; do
    # shellcheck disable=SC2086 # the options are split on purpose
    run xsite --config "$TESTBED" explain $args --json
    run -0 jsonq 'j.record' <<<"$output"
    local record=$output
    local word
    for word in ${record#xsite }; do
      [[ $word == *=* ]] || fail "explain $args: record word '$word' is not key=value in: $record"
    done
  done
}

###############################################################################
# The harness itself, and the Lua versions
###############################################################################

@test "a failed assertion fails the suite (a deliberately failing file)" {
  run -1 "${BATS:-bats}" --tap "$FIX/fails.bats"
  assert_line "not ok 1 an invalid config passes xsite check (deliberately false)"
}

@test "the command gives the same answers under every installed Lua 5.1-5.4" {
  local luas=()
  local v
  for v in 5.1 5.2 5.3 5.4; do
    command -v "lua$v" >/dev/null && luas+=("lua$v")
  done
  ((${#luas[@]} >= 2)) || skip "fewer than two of lua5.1-lua5.4 are installed"
  local want=
  local lua
  for lua in "${luas[@]}"; do
    run -0 "$lua" "$REPO/lua/bin/xsite.in" --config "$TESTBED" explain --nodes 3 --comm-profile high --json
    local got=$output
    run -0 "$lua" "$REPO/lua/bin/xsite.in" --config "$TESTBED" model --profile medium --json
    got+=$output
    if [[ -z $want ]]; then want=$got; fi
    assert_equal "$got" "$want"
  done
}
