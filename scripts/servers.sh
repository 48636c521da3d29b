# scripts/servers.sh — sourced by scripts/test.sh and scripts/bench.sh: installs the test
# servers' npm packages, starts Azurite and the Cosmos DB test server (@vercel/cosmosdb-server,
# through the fixed launcher tools/test-servers/cosmos-launcher.js by default) by recorded
# process id, waits until both answer, and registers an exit trap that stops them, prints their
# logs when the run failed and removes the state directory. The caller sets root (the
# repository) and runs with set -euo pipefail. Afterwards AZURITE_CONNECTION_STRING holds the
# connection string of the running Azurite, COSMOS_ENDPOINT the endpoint of the running Cosmos
# DB test server (plain HTTP; any valid base64 key works, the tests use the emulator key) and
# flavor which one runs.
# Environment: AZURITE_PORT (default 10000); COSMOS_PORT (default 8081); COSMOS_FLAVOR=fixed
# (the launcher, default) or stock (the package's own cosmosdb-server command);
# KEEP_STATE=1 keeps the state directory.
tools="$root/tools/test-servers"

# 1. Install the servers' npm packages when they are missing or the lock file changed.
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "error: $tool is needed to run the test servers (Node.js 20 or newer); install it, or run \"make test-unit\" for the tests that need no servers" >&2
    exit 1
  fi
done
sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1"; else shasum -a 256 "$1"; fi | cut -d' ' -f1; }
lock_hash=$(sha256 "$tools/package-lock.json")
if [ ! -d "$tools/node_modules" ] || [ "$(cat "$tools/.installed" 2>/dev/null || true)" != "$lock_hash" ]; then
  echo "installing the test servers (npm ci in tools/test-servers)"
  rm -f "$tools/.installed"
  npm ci --prefix "$tools" --no-audit --no-fund
  echo "$lock_hash" >"$tools/.installed"
fi

# 2. Ports. Jobs sharing a machine set distinct ones.
azurite_port=${AZURITE_PORT:-10000}
cosmos_port=${COSMOS_PORT:-8081}
# Which Cosmos DB test server: the fixed launcher or the stock package.
flavor=${COSMOS_FLAVOR:-fixed}
case "$flavor" in
  fixed | stock) ;;
  *)
    echo "error: COSMOS_FLAVOR must be fixed or stock, not \"$flavor\"" >&2
    exit 1
    ;;
esac

# 3. A fresh state directory for data, logs and pid files.
state=$(mktemp -d "${TMPDIR:-/tmp}/gtc-test.XXXXXX")

# 5. The exit trap, registered before anything is started: stop every server whose pid
# file exists, show the logs when the run failed, remove the state directory.
stop_server() { # name: SIGTERM, up to 5 s of grace, then SIGKILL
  local pidfile="$state/$1.pid" pid
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "warning: $1 (pid $pid) ignored SIGTERM for 5 s; killing it" >&2
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
}
finish() {
  local rc=$?
  trap - EXIT INT TERM
  stop_server cosmos
  stop_server azurite
  if [ "$rc" -ne 0 ]; then
    for log in "$state"/*.log; do
      [ -f "$log" ] || continue
      echo "--- last lines of $(basename "$log") ---" >&2
      tail -n 50 "$log" >&2 || true
    done
  fi
  if [ "${KEEP_STATE:-0}" = 1 ]; then echo "state kept in $state" >&2; else rm -rf "$state"; fi
  exit "$rc"
}
trap finish EXIT
# Ctrl-C and kill end the run through the exit trap too, so no server outlives it.
trap 'exit 130' INT
trap 'exit 143' TERM

# http_status url: the HTTP status the url answers with, or 000 when nothing answers.
if command -v curl >/dev/null 2>&1; then
  http_status() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null || true; }
else
  # Node is there anyway (the servers run on it).
  http_status() {
    node -e '
      const req = require("http").get(process.argv[1], { timeout: 2000 }, (res) => { console.log(res.statusCode); process.exit(0); });
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", () => { console.log("000"); process.exit(0); });
    ' "$1" 2>/dev/null || echo 000
  }
fi

# wait_ready name url status-regex: poll every 200 ms for at most 60 s; fail early when the
# server has exited (a taken port, a broken install).
wait_ready() {
  local name=$1 url=$2 want=$3 pid code=000 deadline=$(($(date +%s) + 60))
  pid=$(cat "$state/$name.pid")
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "error: $name exited before it was ready; its log:" >&2
      cat "$state/$name.log" >&2 || true
      return 1
    fi
    code=$(http_status "$url")
    if [[ "$code" =~ $want ]]; then return 0; fi
    sleep 0.2
  done
  echo "error: $name at $url not ready after 60 s (last status $code); its log:" >&2
  cat "$state/$name.log" >&2 || true
  return 1
}

# A server already answering on the port would be tested instead of ours.
azurite_probe="http://127.0.0.1:$azurite_port/devstoreaccount1?comp=list"
if [ "$(http_status "$azurite_probe")" != 000 ]; then
  echo "error: something already answers on 127.0.0.1:$azurite_port; stop it or set AZURITE_PORT" >&2
  exit 1
fi
cosmos_probe="http://127.0.0.1:$cosmos_port/"
if [ "$(http_status "$cosmos_probe")" != 000 ]; then
  echo "error: something already answers on 127.0.0.1:$cosmos_port; stop it or set COSMOS_PORT" >&2
  exit 1
fi

# 4. Start the servers in the background and record their process ids. Neither forks, so
# the recorded id is the whole server.
"$tools/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$azurite_port" \
  --location "$state/azurite" --silent --skipApiVersionCheck --disableTelemetry \
  >"$state/azurite.log" 2>&1 &
echo $! >"$state/azurite.pid"
# The Cosmos DB test server keeps everything in memory; --no-ssl serves plain HTTP.
if [ "$flavor" = stock ]; then
  "$tools/node_modules/.bin/cosmosdb-server" --host 127.0.0.1 -p "$cosmos_port" --no-ssl \
    >"$state/cosmos.log" 2>&1 &
else
  node "$tools/cosmos-launcher.js" --host 127.0.0.1 -p "$cosmos_port" --no-ssl \
    >"$state/cosmos.log" 2>&1 &
fi
echo $! >"$state/cosmos.pid"

# 6. Readiness: any HTTP status from Azurite (an unauthenticated listing answers 403).
wait_ready azurite "$azurite_probe" '^[1-5][0-9][0-9]$'
echo "Azurite ready on 127.0.0.1:$azurite_port (state in $state)"
# The Cosmos DB test server answers 200 with the account JSON once it listens.
wait_ready cosmos "$cosmos_probe" '^200$'
echo "Cosmos DB test server ($flavor) ready on 127.0.0.1:$cosmos_port"

# The account key is Azurite's published development key, not a secret.
AZURITE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:$azurite_port/devstoreaccount1;"
COSMOS_ENDPOINT="http://127.0.0.1:$cosmos_port/"
