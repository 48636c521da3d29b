#!/usr/bin/env bash
# scripts/test.sh — run every test. It installs and starts what the tests need (Azurite for the
# Blob artifact store, the Cosmos DB test server for the Cosmos store), runs the tests with the
# race detector and the servers required, and stops what it started by the process ids it
# recorded, never by name.
#
# Usage: scripts/test.sh [packages...]   (default ./...; e.g. scripts/test.sh ./storage/blob/)
# With the default, the API suite runs twice: against SQLite, then against Cosmos DB.
# Environment: AZURITE_PORT (default 10000); COSMOS_PORT (default 8081); COSMOS_FLAVOR=fixed
# (default: tools/test-servers/cosmos-launcher.js, which fixes the stock server's gaps) or
# stock (the unpatched package, whose gaps the tests skip); KEEP_STATE=1 keeps the state
# directory (server data and logs) for a post-mortem.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

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

# 7. Tell the tests where the servers are, and make a missing one a failure, not a skip.
export GTC_TEST_BLOB_CONNECTION_STRING="$AZURITE_CONNECTION_STRING"
export GTC_TEST_COSMOS_ENDPOINT="$COSMOS_ENDPOINT"
export GTC_TEST_COSMOS_FLAVOR="$flavor"
# The dependency-unreachable tests (cmd/gtc/unreachable_test.go) start, stop and restart
# servers of their own on free ports, never the two above; they need the programs.
export GTC_TEST_AZURITE_BIN="$tools/node_modules/.bin/azurite-blob"
export GTC_TEST_COSMOS_LAUNCHER="$tools/cosmos-launcher.js"
export GTC_TEST_REQUIRE_SERVERS=1

# 8. Run the tests. The exit trap stops the servers whatever the outcome.
if [ "$#" -eq 0 ]; then set -- ./...; fi
echo "go test -race -count=1 -parallel 8 $*"
go test -race -count=1 -parallel 8 "$@"
if [ "$*" = ./... ]; then
  # The API suite ran against SQLite above; run it again against the Cosmos DB test server
  # (GTC_TEST_API_STORE chooses the store behind the API tests' harness). Without the race
  # detector: the same handlers ran under it just above, and the Cosmos DB store's own
  # concurrency runs under it in ./storage/cosmos/.
  echo "GTC_TEST_API_STORE=cosmos go test -count=1 -parallel 8 ./api/   (the API suite again, on Cosmos DB)"
  GTC_TEST_API_STORE=cosmos go test -count=1 -parallel 8 ./api/
  # Memory measurements take minutes under the race detector, so they skip there and run
  # here without it, in the packages that have them.
  mem_pkgs=$(grep -rl --include='*_test.go' '^func TestMemory' . | xargs -n1 dirname | sort -u | sed 's|$|/|')
  echo "go test -count=1 -run 'TestMemory' $(echo $mem_pkgs)"
  # shellcheck disable=SC2086
  go test -count=1 -run 'TestMemory' $mem_pkgs
fi
# 9. Every fuzz target for a bounded time (scripts/fuzz.sh), only on a full run: 5 s each
# by default (16 targets: 2 min 1 s on 2 shared cores); FUZZTIME changes it.
if [ "$*" = ./... ]; then
  FUZZTIME=${FUZZTIME:-5s} bash "$root/scripts/fuzz.sh"
fi
