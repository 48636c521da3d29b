#!/usr/bin/env bash
# scripts/fuzz.sh — run every Go fuzz target of the module for a bounded time each, and fail
# on the first crash with the path of its reproducer. scripts/test.sh calls it at the end of
# a full run with FUZZTIME=1s (a smoke: the targets build, their corpora pass, the engine
# runs); make fuzz runs it for the long runs (FUZZTIME=60s by default).
#
# Targets are discovered, not listed here: the packages whose test files define a
# "func Fuzz…" are asked with `go test -fuzz . -list '^Fuzz'`, so a new target is picked up
# as soon as it exists.
#
# Environment:
#   FUZZTIME          time per target (default 60s), any -fuzztime value ("5s", "20000x")
#   FUZZMINIMIZETIME  time to minimize an input (default 5s): minimizing a large new input
#                     can otherwise take the whole budget of a short run
#   FUZZJOBS          targets run at the same time (default 1)
#   FUZZWORKERS       fuzzing processes of each target (go test -parallel; default: the CPUs).
#                     make test runs two targets at a time with one worker each: a smoke
#                     spends most of its time starting a target, not fuzzing
#
# The fuzz builds use -tags fuzzing, which leaves out the test files marked //go:build
# !fuzzing: a fuzz build instruments every package of the test binary, and those tests would
# bring in what no fuzz target needs (the OpenTelemetry SDK of the span tests; the SQLite and
# Cosmos DB stores of the export, migrate and API tests). The fuzz build of storage/blob
# compiles the Azure Blob SDK instrumented, because FuzzBlobKeys checks the request URLs the
# SDK builds from a key; that of api compiles echo and the OpenAPI and MCP libraries, which
# package api itself imports.
#
# A crash writes its input to <package>/testdata/fuzz/<Target>/<hash>, as go test does; keep
# that file as a regression case once the bug is fixed (plain `go test` replays it).
#
# Go 1.26's coordinator can end a duration-bounded run with "context deadline exceeded" and
# no failing input when a worker is busy at the deadline (golang/go#75804, fixed in Go
# 1.27). That outcome is reported as a warning, not a failure; any failure that names an
# input, a seed, a panic or a build error still fails the run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

fuzztime=${FUZZTIME:-60s}
minimize=${FUZZMINIMIZETIME:-5s}
jobs=${FUZZJOBS:-1}
workers=${FUZZWORKERS:-$(nproc 2>/dev/null || echo 2)}
logs=$(mktemp -d "${TMPDIR:-/tmp}/gtc-fuzz.XXXXXX")
trap 'rm -rf "$logs"' EXIT

# Packages with a fuzz target in their test files.
packages=()
while read -r pkg dir; do
  for f in "$dir"/*_test.go; do
    if [ -f "$f" ] && grep -q -E '^func Fuzz[A-Z0-9_]' "$f"; then
      packages+=("$pkg")
      break
    fi
  done
done < <(go list -f '{{.ImportPath}} {{.Dir}}' ./...)

# Their targets, as go test sees them. The list comes from the fuzz build itself (-fuzz with
# -list builds the instrumented test binary and only lists), so the runs below reuse that
# build instead of building each package once more without instrumentation. A package whose
# fuzz build fails, or that leaves out a target its test files define (a build constraint
# on the wrong file), fails the run: that target would silently never run.
targets=()
for pkg in "${packages[@]}"; do
  start=$(date +%s)
  if ! listed=$(go test -tags fuzzing -fuzz . -list '^Fuzz' "$pkg" 2>&1); then
    printf '%s\n' "$listed" >&2
    echo "fuzz: FAIL  $pkg: its fuzz build (-tags fuzzing) failed" >&2
    exit 1
  fi
  names=$(printf '%s\n' "$listed" | grep -E '^Fuzz[A-Za-z0-9_]*$' | sort || true)
  defined=$(cd "$(go list -f '{{.Dir}}' "$pkg")" && grep -hoE '^func Fuzz([A-Z0-9_][A-Za-z0-9_]*)?\(' ./*_test.go | sed 's/^func //; s/($//' | sort -u)
  missing=$(comm -13 <(printf '%s\n' "$names") <(printf '%s\n' "$defined"))
  if [ -n "$missing" ]; then
    echo "fuzz: FAIL  $pkg: its fuzz build (-tags fuzzing) leaves out $(paste -sd" " <<<"$missing"); a fuzz target must not be in a //go:build !fuzzing file" >&2
    exit 1
  fi
  echo "fuzz: built $pkg in $(($(date +%s) - start))s: $(paste -sd" " <<<"$names")"
  while read -r name; do
    targets+=("$pkg $name")
  done <<<"$names"
done
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz: no fuzz targets found" >&2
  exit 1
fi

echo "fuzz: ${#targets[@]} targets, -fuzztime $fuzztime each, $jobs at a time"
start_all=$(date +%s)
flakes=0
# fuzz_one runs one target into its log and records its exit code and time.
fuzz_one() {
  local pkg=$1 name=$2 dir=$3 start rc=0
  ls "$dir/testdata/fuzz/$name" 2>/dev/null | sort >"$logs/$name.before" || true
  start=$(date +%s)
  go test -tags fuzzing -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" \
    -parallel "$workers" "$pkg" >"$logs/$name.log" 2>&1 || rc=$?
  echo "$rc $(($(date +%s) - start))" >"$logs/$name.rc"
}
# judge reports the outcome of one finished target and fails the run on a crash.
judge() {
  local pkg=$1 name=$2 dir=$3 rc took written new log="$logs/$2.log"
  read -r rc took <"$logs/$name.rc"
  if [ "$rc" = 0 ]; then
    echo "fuzz: ok    $name ($pkg) ${took}s, $(grep -o 'execs: [0-9]*' "$log" | tail -n 1)"
    return 0
  fi
  # A crash: go test names the input it wrote; fall back to what appeared in the corpus.
  written=$(sed -n 's/.*Failing input written to //p' "$log" | head -n 1)
  if [ -z "$written" ]; then
    new=$(comm -13 "$logs/$name.before" <(ls "$dir/testdata/fuzz/$name" 2>/dev/null | sort || true) | head -n 1)
    if [ -n "$new" ]; then written="testdata/fuzz/$name/$new"; fi
  fi
  if [ -n "$written" ]; then
    tail -n 40 "$log" >&2
    echo "fuzz: FAIL  $name ($pkg) crashed; reproducer: $dir/$written" >&2
    echo "fuzz: replay it with: go test -run '^$name/$(basename "$written")\$' $pkg" >&2
    exit 1
  fi
  if grep -q 'context deadline exceeded' "$log" && ! grep -q -E -e '--- FAIL: Fuzz[A-Za-z0-9_]*/' -e '^panic:' -e 'build failed' -e '\[setup failed\]' "$log"; then
    echo "fuzz: warn  $name ($pkg): the run ended with \"context deadline exceeded\" and no failing input (golang/go#75804); not a crash" >&2
    flakes=$((flakes + 1))
    return 0
  fi
  cat "$log" >&2
  echo "fuzz: FAIL  $name ($pkg) failed without writing an input (a seed case, or the build)" >&2
  exit 1
}
# Targets run $jobs at a time; each group is judged, in order, once all of it has finished.
i=0
while [ "$i" -lt "${#targets[@]}" ]; do
  group=("${targets[@]:i:jobs}")
  for t in "${group[@]}"; do
    fuzz_one "${t% *}" "${t#* }" "$(go list -f '{{.Dir}}' "${t% *}")" &
  done
  wait
  for t in "${group[@]}"; do
    judge "${t% *}" "${t#* }" "$(go list -f '{{.Dir}}' "${t% *}")"
  done
  i=$((i + jobs))
done
echo "fuzz: all ${#targets[@]} targets passed in $(($(date +%s) - start_all))s ($flakes ended on the Go coordinator's deadline race)"
