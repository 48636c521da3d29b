#!/usr/bin/env bash
# scripts/test.sh — run every test. It installs and starts what the tests need, runs them
# with the race detector, and stops what it started. Today no test needs an outside server;
# the Azurite and Cosmos DB test servers join here when the Blob and Cosmos stores do.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

echo "go test -race -count=1 ./..."
go test -race -count=1 ./...
