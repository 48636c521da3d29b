#!/usr/bin/env bash
# scripts/bench-compare.sh — measure this tree against an earlier commit, side by side in one
# run: the jsonl export stream of every approved item and the PUT throughput with 16 writers
# (cmd/gtc-bench --suite compare: the two binaries in interleaved rounds on one seeded store),
# then the tag engine's cost per item (BenchmarkPrepare in ./tagging/, the two trees
# alternating).
#
# Usage: scripts/bench-compare.sh OLD_COMMIT [gtc-bench flags...]
#   e.g. scripts/bench-compare.sh a3bf34f --export-items 100000 --rounds 4
# Environment: PREPARE_COUNT (default 6) alternations of the tag engine benchmark.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
old=${1:?usage: scripts/bench-compare.sh OLD_COMMIT [gtc-bench flags...]}
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/gtc-compare.XXXXXX")
cleanup() {
  git worktree remove --force "$work/old" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add --detach --quiet "$work/old" "$old"
echo "old: $(git -C "$work/old" log -1 --format='%h %s' | cut -c1-100)"
echo "new: $(git log -1 --format='%h %s' | cut -c1-100)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
(cd "$work/old" && go build -o "$work/gtc-old" ./cmd/gtc)
go build -o "$work/gtc-new" ./cmd/gtc
go run ./cmd/gtc-bench --suite compare --gtc "$work/gtc-new" --gtc-old "$work/gtc-old" "$@"

echo
echo "tag engine per item (BenchmarkPrepare, ./tagging/), old and new alternating:"
(cd "$work/old" && go test -c -o "$work/tagging-old.test" ./tagging/)
go test -c -o "$work/tagging-new.test" ./tagging/
for i in $(seq "${PREPARE_COUNT:-6}"); do
  for side in old new; do
    dir=$root/tagging
    [ "$side" = old ] && dir=$work/old/tagging
    (cd "$dir" && "$work/tagging-$side.test" -test.run '^$' -test.bench '^BenchmarkPrepare$' -test.benchmem) |
      awk -v s="$side" '/^BenchmarkPrepare/ {print s, $3, $5, $7}' >>"$work/prepare.txt"
  done
done
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
for side in old new; do
  runs=$(awk -v s="$side" '$1 == s {print $2}' "$work/prepare.txt")
  med=$(echo "$runs" | median)
  echo "$side  median $med ns/op over $(echo "$runs" | wc -l) runs (ns/op: $(echo $runs)); $(awk -v s="$side" '$1 == s {b=$3; a=$4} END {print b " B/op, " a " allocs/op"}' "$work/prepare.txt")"
  eval "med_$side=$med"
done
awk -v o="$med_old" -v n="$med_new" 'BEGIN {printf "new/old %.2f\n", n / o}'
