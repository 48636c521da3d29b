#!/usr/bin/env bash
# scripts/bench.sh — run the load generator (cmd/gtc-bench) against a freshly built gtc, with
# Azurite started for the Blob export figures, then the Cosmos DB store benchmarks against the
# Cosmos DB test server (point read, conditional replace, list pages at 10,000 and 100,000
# items), the migration of 100,000 legacy documents in SQLite and the agent tools on 100,000
# items; both servers are stopped afterwards.
# Usage: scripts/bench.sh [gtc-bench flags...]   (e.g. --suite export --export-items 20000)
# Environment: GTC_BENCH_COSMOS_SIZES (default 10000,100000); SKIP_COSMOS_BENCH=1 skips them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/servers.sh
. "$root/scripts/servers.sh"
go build -o bin/gtc ./cmd/gtc
go run ./cmd/gtc-bench --gtc bin/gtc --blob-connection-string "$AZURITE_CONNECTION_STRING" "$@"
echo "gtc migrate: 100,000 legacy documents in SQLite (GTC_BENCH_MIGRATE_N to change)"
go test -run '^$' -bench MigrateSQLite -benchtime 1x -timeout 30m ./migrate/
echo "Agent tools on 100,000 items in SQLite: tag_stats, a rename preview touching 10,000 items, its execution"
go test -run '^$' -bench TagStats -benchtime 30x -timeout 30m ./storage/sqlite/
go test -run '^$' -bench AgentPreviewRename -benchtime 5x -timeout 30m ./agenttools/
go test -run '^$' -bench AgentExecuteRename -benchtime 2x -timeout 30m ./agenttools/
if [ "${SKIP_COSMOS_BENCH:-0}" != 1 ]; then
  echo "Cosmos DB store benchmarks against the test server at $COSMOS_ENDPOINT (a lower bound: see BENCHMARKS.md)"
  GTC_TEST_COSMOS_ENDPOINT="$COSMOS_ENDPOINT" GTC_TEST_COSMOS_FLAVOR="$flavor" \
    GTC_BENCH_COSMOS_SIZES="${GTC_BENCH_COSMOS_SIZES:-10000,100000}" \
    go test -run '^$' -bench 'PointRead|ConditionalReplace' -benchtime 500x -timeout 30m ./storage/cosmos/
  GTC_TEST_COSMOS_ENDPOINT="$COSMOS_ENDPOINT" GTC_TEST_COSMOS_FLAVOR="$flavor" \
    GTC_BENCH_COSMOS_SIZES="${GTC_BENCH_COSMOS_SIZES:-10000,100000}" \
    go test -run '^$' -bench 'ListPage' -benchtime 5x -timeout 30m ./storage/cosmos/
fi
