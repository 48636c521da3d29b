#!/usr/bin/env bash
# scripts/loadtest-replicas.sh — make loadtest REPLICAS=N (N ≥ 2): starts the Cosmos DB test
# server (scripts/servers.sh, stopped at exit by its process id), then runs cmd/gtc-load with
# N gtc serve replicas on one database of it; the load's requests go to the replicas in turn,
# and its ledger checks that no acknowledged write was lost across them.
# The load is sized for the test server, an in-memory JavaScript program that answers a
# query by scanning its documents: 16 clients for 30 s on 800 drafts and 200 library items.
# At gtc-load's own defaults (64 clients, 12,800 drafts) its self-serve queries take longer
# than the 30 s request timeout. Flags given after these override them.
# Usage: scripts/loadtest-replicas.sh BIN N [gtc-load flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=$1
replicas=$2
shift 2
# shellcheck source=scripts/servers.sh
. "$root/scripts/servers.sh"
echo "$replicas replicas on the Cosmos DB test server at $COSMOS_ENDPOINT"
go run ./cmd/gtc-load --gtc "$bin" --replicas "$replicas" --cosmos-endpoint "$COSMOS_ENDPOINT" \
  --clients 16 --duration 30s --queue-items 800 --library-items 200 "$@"
