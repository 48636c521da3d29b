#!/usr/bin/env bash
# scripts/test.sh — run every test. It installs and starts what the tests need, runs them
# with the race detector, and stops what it started. The Azurite and Cosmos DB test servers
# join here when the Blob and Cosmos stores do.
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

echo "go test -race -count=1 ./..."
go test -race -count=1 ./...
