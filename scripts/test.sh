#!/usr/bin/env bash
# scripts/test.sh — run every test. It installs and starts what the tests need (Azurite for the
# Blob artifact store, the Cosmos DB test server for the Cosmos store), runs the tests with the
# servers required, and stops what it started by the process ids it recorded, never by name.
#
# Usage: scripts/test.sh [packages...]
#   Without arguments (make test), in phases:
#     check   the race list below still names every package whose tests exercise concurrency
#     race    the packages of the race list, with the race detector
#     plain   every other package, without it
#     norace  the tests that skip under the race detector (memory measurements, long
#             sequential differential tests, the conformance suite's large query
#             fixtures) or that its build leaves out (the parquet
#             format's), in the race packages, without it
#     cosmos  the API smoke test (TestAPISmoke) against the Cosmos DB test server, with the
#             race detector (the race phase's build of the API tests serves again); the store
#             differences are the conformance suite's job (storage/storetest, run by the
#             storage/cosmos tests in the race phase)
#     fuzz    every fuzz target for FUZZTIME each (default 1s; scripts/fuzz.sh; make fuzz runs
#             them longer), FUZZJOBS at a time (default 2) with FUZZWORKERS workers each
#             (default 1)
#   then the elapsed time of every package, the slowest tests and the wall time of each phase.
#   With packages (e.g. scripts/test.sh ./storage/blob/): those, with the race detector.
# Environment: AZURITE_PORT (default 10000); COSMOS_PORT (default 8081); COSMOS_FLAVOR=fixed
# (default: tools/test-servers/cosmos-launcher.js, which fixes the stock server's gaps) or
# stock (the unpatched package, whose gaps the tests skip); KEEP_STATE=1 keeps the state
# directory (server data, logs and each phase's go test -json output) for a post-mortem;
# FUZZTIME (default 1s), FUZZJOBS (default 2), FUZZWORKERS (default 1); TEST_PARALLEL (go test -parallel, default 4).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
setup_start=$(date +%s)

# The browser test drives Debian's Chromium; install it when this is a Debian machine we
# administer (CI), otherwise that test skips with a message saying how to get it.
if ! command -v chromium >/dev/null 2>&1 && [ -z "${GTC_TEST_CHROMIUM:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Chromium for the browser test (apt-get install chromium)"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; }; then
      echo "warning: Chromium could not be installed; the browser test will be skipped" >&2
    fi
  else
    echo "note: Chromium is not installed; the browser test will be skipped (apt-get install chromium)" >&2
  fi
fi

# Steps 1-6: install and start the servers, with an exit trap that stops them.
# shellcheck source=scripts/servers.sh
. "$root/scripts/servers.sh"
servers_seconds=$(($(date +%s) - setup_start))

# 7. Tell the tests where the servers are, and make a missing one a failure, not a skip.
export GTC_TEST_BLOB_CONNECTION_STRING="$AZURITE_CONNECTION_STRING"
export GTC_TEST_COSMOS_ENDPOINT="$COSMOS_ENDPOINT"
export GTC_TEST_COSMOS_FLAVOR="$flavor"
# The dependency-unreachable tests (cmd/gtc/unreachable_test.go) start, stop and restart
# servers of their own on free ports, never the two above; they need the programs.
export GTC_TEST_AZURITE_BIN="$tools/node_modules/.bin/azurite-blob"
export GTC_TEST_COSMOS_LAUNCHER="$tools/cosmos-launcher.js"
# The parquet export tests read their files back with hyparquet, an independent reader.
export GTC_TEST_PARQUET_READER="$tools/read-parquet.mjs"
export GTC_TEST_REQUIRE_SERVERS=1

# 8. Run the tests. The exit trap stops the servers whatever the outcome.
#
# The race detector multiplies CPU time by 2 to 10, so it runs only on the packages whose tests
# exercise concurrency. A package belongs in race_pkgs when its code or its tests start
# goroutines (go func / go f(...), wg.Go, errgroup), when its tests call t.Parallel (tests
# sharing package state), or when its tests run a suite of a test-support package that starts
# goroutines (storage/storetest: concurrent writers, group commit). check_race_list enforces
# that rule with a grep, so a package that starts goroutines cannot slip out of the list.
race_pkgs=(
  # The longest first: go test starts them in this order, two at a time on two cores.
  ./cmd/gtc/              # concurrent writers killed mid-run, servers stopped mid-request
  ./storage/cosmos/       # the conformance suite's concurrent writers, on the Cosmos DB test server
  ./api/                  # parallel API tests, concurrent curators, trickled connections
  ./storage/sqlite/       # the single writer's group commit, backups during writes
  ./storage/observed/     # the conformance suite through the observing decorator
  ./export/               # concurrent exports, the busy limit
  ./storage/blob/         # concurrent uploads
  ./migrate/              # concurrent conversions with group commit
  ./agenttools/           # concurrent bulk tag operations, their locks and repair
  ./jobs/                 # job runners sharing a store: slots, hand-back, take-over
  ./tagging/              # the registry
  ./cmd/gtc-load/         # the load generator's concurrent clients
  .                       # the job queue
  ./storage/localfs/      # concurrent writes of one key
  ./cmd/internal/ledger/  # concurrent recording of acknowledged writes
  ./cmd/internal/loadkit/ # the server watcher
  ./storage/storetest/testenv/ # the heap sampler
  ./codec/                # strict decoders sharing pooled readers
  ./storage/internal/parallel/ # loop iterations on several goroutines
)
# Tests that skip under the race detector, or that its build leaves out (the files marked
# //go:build !race: the parquet formatter and its tests, see export/parquet.go); the norace
# phase runs them without it.
norace_tests='^(TestMemory.*|TestPIIScannersMatchRE2Construction|Test.*Parquet.*|TestConformanceQueries.*|TestCountTagsMatchesScan)$'
fuzztime=${FUZZTIME:-1s}
parallel=${TEST_PARALLEL:-4}

# check_race_list fails when a package with tests matches the rule above but is not in
# race_pkgs, or when a test skips under the race detector, or is in a file the race build
# leaves out, but norace_tests does not name it.
check_race_list() {
  local mod pattern path dir files imports ntests i why listed bad=0
  mod=$(go list -m)
  pattern='(^|[^A-Za-z0-9_])go (func|[A-Za-z_][A-Za-z0-9_.]*\()|\.Go\(|errgroup|t\.Parallel\(\)'
  declare -A spawns=()
  while IFS='|' read -r path dir files; do
    if [ -n "$files" ] && (cd "$dir" && grep -hE "$pattern" $files | grep -vqE '^[[:space:]]*//'); then spawns[$path]=1; fi
  done < <(go list -f '{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}}' ./...)
  listed=" $(go list "${race_pkgs[@]}" | tr '\n' ' ') "
  while IFS='|' read -r path dir files imports ntests; do
    [ "$ntests" != 00 ] || continue
    why=""
    if (cd "$dir" && grep -hE "$pattern" $files | grep -vqE '^[[:space:]]*//'); then why="its code or tests start goroutines or call t.Parallel"; fi
    for i in $imports; do
      case "$i" in
        "$mod"/*test | "$mod"/*testenv) if [ "$i" != "$path" ] && [ -n "${spawns[$i]:-}" ]; then why="${why:+$why; }its tests run $i, which starts goroutines"; fi ;;
      esac
    done
    if [ -n "$why" ] && [[ "$listed" != *" $path "* ]]; then
      echo "check: $path is not in race_pkgs (scripts/test.sh) but $why" >&2
      bad=1
    fi
  done < <(go list -f '{{.ImportPath}}|{{.Dir}}|{{join .GoFiles " "}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}|{{len .TestGoFiles}}{{len .XTestGoFiles}}' ./...)
  # A test that skips under the race detector: "func TestX" followed, before the next func,
  # by "if raceEnabled {" (or testenv.RaceEnabled) and a t.Skip.
  while read -r name; do
    if ! [[ "$name" =~ $norace_tests ]]; then
      echo "check: $name skips under the race detector but norace_tests (scripts/test.sh) does not run it" >&2
      bad=1
    fi
  done < <(git ls-files '*_test.go' | xargs awk '/^func Test/ { name = $2; sub(/\(.*/, "", name); armed = 0 }
    /if (testenv\.RaceEnabled|raceEnabled)/ { armed = 1 } armed && /t\.Skip/ && name != "" { print name; armed = 0; name = "" }' | sort -u)
  # A test in a file whose build constraint leaves it out of the race build.
  while read -r name; do
    if ! [[ "$name" =~ $norace_tests ]]; then
      echo "check: $name is left out of the race build (//go:build !race) but norace_tests (scripts/test.sh) does not run it" >&2
      bad=1
    fi
  done < <(git ls-files '*_test.go' | xargs grep -lE '^//go:build .*!race' | xargs -r awk '/^func Test/ { name = $2; sub(/\(.*/, "", name); print name }' | sort -u)
  return "$bad"
}

state_out="$state"
phases=""
# run_phase name go-test-arguments...: runs go test -json through cmd/internal/testtimes (a line
# per package, the output of failing tests), keeps the JSON in the state directory and adds
# the phase's wall time to the summary.
run_phase() {
  local name=$1 start rc=0
  shift
  echo "== $name: go test $*"
  start=$(date +%s)
  go test -json "$@" 2>&1 | "$testtimes" -phase "$name" -save "$state_out/$name.json" || rc=$?
  phases="$phases $name=$(($(date +%s) - start))"
  return "$rc"
}

if [ "$#" -gt 0 ]; then
  echo "go test -race -count=1 -parallel $parallel $*"
  go test -race -count=1 -parallel "$parallel" "$@"
  exit 0
fi

testtimes="$state/testtimes"
go build -o "$testtimes" ./cmd/internal/testtimes
failed=0
start=$(date +%s)
check_race_list || failed=1
phases="$phases check=$(($(date +%s) - start))"
race_paths=$(go list "${race_pkgs[@]}")
plain_pkgs=$(go list ./... | grep -vxF -f <(printf '%s\n' "$race_paths"))
# The race packages with a test norace_tests names (the plain phase already runs the other
# packages' tests without the race detector).
norace_pkgs=$(git ls-files '*_test.go' | xargs grep -HoE '^func Test[A-Za-z0-9_]*' | while IFS=: read -r file fn; do
  if [[ "${fn#func }" =~ $norace_tests ]]; then dir=$(dirname "$file"); if [ "$dir" = . ]; then echo ./; else echo "./$dir/"; fi; fi
done | sort -u | xargs -r go list | grep -xF -f <(printf '%s\n' "$race_paths") || true)
if [ "$failed" = 0 ]; then
  run_phase race -race -count=1 -parallel "$parallel" "${race_pkgs[@]}" || failed=1
  # shellcheck disable=SC2086
  run_phase plain -count=1 -parallel "$parallel" $plain_pkgs || failed=1
  if [ -n "$norace_pkgs" ]; then
    # shellcheck disable=SC2086
    run_phase norace -count=1 -run "$norace_tests" $norace_pkgs || failed=1
  fi
  # GTC_TEST_API_STORE chooses the store behind the API tests' harness. With the race
  # detector, as in the race phase, whose build of the API tests it reuses.
  export GTC_TEST_API_STORE=cosmos
  run_phase cosmos -race -count=1 -run '^TestAPISmoke$' ./api/ || failed=1
  unset GTC_TEST_API_STORE
  # 9. Every fuzz target for a short time (the long runs are make fuzz).
  start=$(date +%s)
  echo "== fuzz: every target, -fuzztime $fuzztime"
  FUZZTIME=$fuzztime FUZZJOBS=${FUZZJOBS:-2} FUZZWORKERS=${FUZZWORKERS:-1} bash "$root/scripts/fuzz.sh" || failed=1
  phases="$phases fuzz=$(($(date +%s) - start))"
fi
echo
"$testtimes" -summary -top 15 -phases "$phases setup=$servers_seconds" "$state"/*.json || true
if [ "$failed" != 0 ]; then
  echo "make test: FAILED (see the failures above; KEEP_STATE=1 keeps each phase's go test -json output)" >&2
  exit 1
fi
echo "make test: passed"
