#!/usr/bin/env bash
# The seed's perftest.sh: ONE reset + sync of one manifest with one downloader, its runtime (the
# sync alone, in seconds) appended to perf_data.txt. Configure it here or from the environment:
#   asyncio=0 num=300 scripts/perftest.sh
# With no url, it generates the fixture tree if missing and starts a fixture server for this run
# (the seed restarted every service before each test). For whole experiments with statistics and
# a report, use `pulp-sync bench run experiments/seed-002.toml` (or ./manytests.sh) instead.
set -euo pipefail

asyncio="${asyncio:-1}"            # 1: the asyncio downloader, 0: the futures one
num="${num:-100}"                  # manifest: 100, 200, 300, 400 or 500 files
concurrency="${concurrency:-10}"   # downloads in flight
scale="${scale:-0.05}"             # fixture size; 1 is the seed's (407 MB for 100 .. 1946 MB for 500)
profile="${profile:-wan}"          # fixture server's network profile: loopback, lan, wan, slow
url="${url:-}"                     # base URL of a running fixture server; empty: start one here
data="${data:-perf_data.txt}"      # where runtimes are appended, one per line

cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
downloader=$([ "$asyncio" = 1 ] && echo asyncio || echo futures)
export PULP_SYNC_HOME="${PULP_SYNC_HOME:-$PWD/.pulp-sync/perftest}"

if [ -z "$url" ]; then
  tree="${fixtures:-fixtures-data/scale-$scale}"
  [ -f "$tree/PULP_MANIFEST_$num" ] || "$PYTHON" -m fixtures generate --scale "$scale" --out "$tree" >&2
  log="$(mktemp)"
  "$PYTHON" -m fixtures serve --root "$tree" --port 0 --profile "$profile" >"$log" 2>&1 &
  server=$!
  trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -f "$log"' EXIT
  for _ in $(seq 1 150); do
    url="$(grep -o 'http://[^ ]*/' "$log" | head -n 1 || true)"
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { echo "the fixture server did not start:" >&2; cat "$log" >&2; exit 1; }
fi

"$PYTHON" -m pulp_sync reset --yes >/dev/null
report="$("$PYTHON" -m pulp_sync sync "${url}PULP_MANIFEST_$num" --repository "perftest" \
  --downloader "$downloader" --concurrency "$concurrency" --json 2>/dev/null | tail -n 1)"
seconds="$(printf '%s' "$report" | "$PYTHON" -c 'import json, sys; print("%.3f" % json.load(sys.stdin)["seconds"])')"
echo "$seconds" >>"$data"
echo "$downloader $num: $seconds s (appended to $data)"
