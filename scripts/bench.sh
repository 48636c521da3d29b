#!/usr/bin/env bash
# scripts/bench.sh — run the load generator (cmd/gtc-bench) against a freshly built gtc, with
# Azurite started for the Blob export figures and stopped afterwards.
# Usage: scripts/bench.sh [gtc-bench flags...]   (e.g. --suite export --export-items 20000)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/servers.sh
. "$root/scripts/servers.sh"
go build -o bin/gtc ./cmd/gtc
go run ./cmd/gtc-bench --gtc bin/gtc --blob-connection-string "$AZURITE_CONNECTION_STRING" "$@"
