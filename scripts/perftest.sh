#!/usr/bin/env bash
# The seed's perftest.sh: ONE reset + sync of one manifest with one downloader, its runtime (the
# sync alone, in seconds) appended to perf_data.txt. Configure it here or from the environment:
#   asyncio=0 num=300 scripts/perftest.sh
# With no url, it generates the fixture tree if missing and starts a fixture server for this run
# (the seed restarted every service before each test). With api=1 the sync goes through the REST
# API, as the seed's did: curl creates the remote and repository and starts the sync, an RQ worker
# runs it, and jq takes the runtime from the task's started and finished times. With no api_url,
# `pulp-sync api` and a worker are started for this run (on a queue of their own); a running API
# given by api_url must use the same database as this script (PULP_SYNC_HOME, DATABASE_URL), which
# the script resets. For whole experiments with statistics and a report, use
# `pulp-sync bench run experiments/seed-002.toml` (or ./manytests.sh) instead.
set -euo pipefail

asyncio="${asyncio:-1}"            # 1: the asyncio downloader, 0: the futures one
num="${num:-100}"                  # manifest: 100, 200, 300, 400 or 500 files
concurrency="${concurrency:-10}"   # downloads in flight
scale="${scale:-0.05}"             # fixture size; 1 is the seed's (407 MB for 100 .. 1946 MB for 500)
profile="${profile:-wan}"          # fixture server's network profile: loopback, lan, wan, slow
url="${url:-}"                     # base URL of a running fixture server; empty: start one here
data="${data:-perf_data.txt}"      # where runtimes are appended, one per line
api="${api:-0}"                    # 1: sync through the REST API on an RQ worker (needs Redis, curl, jq)
api_url="${api_url:-}"             # with api=1: root URL of a running `pulp-sync api`; empty: start one here

cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
downloader=$([ "$asyncio" = 1 ] && echo asyncio || echo futures)
export PULP_SYNC_HOME="${PULP_SYNC_HOME:-$PWD/.pulp-sync/perftest}"

pids=()
logs=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -f "${logs[@]}"
}
trap cleanup EXIT

# start LOG COMMAND...: run COMMAND in the background, its output in LOG, stopped when the script ends.
start() {
  local log="$1"
  shift
  "$@" >"$log" 2>&1 &
  pids+=("$!")
  logs+=("$log")
}

# announced LOG PATTERN: the first match of PATTERN the started process prints within 15 s.
announced() {
  local found
  for _ in $(seq 1 150); do
    found="$(grep -o "$2" "$1" | head -n 1 || true)"
    [ -n "$found" ] && { echo "$found"; return; }
    sleep 0.1
  done
  echo "it did not start:" >&2
  cat "$1" >&2
  return 1
}

if [ -z "$url" ]; then
  tree="${fixtures:-fixtures-data/scale-$scale}"
  [ -f "$tree/PULP_MANIFEST_$num" ] || "$PYTHON" -m fixtures generate --scale "$scale" --out "$tree" >&2
  start "$(mktemp)" "$PYTHON" -m fixtures serve --root "$tree" --port 0 --profile "$profile"
  url="$(announced "${logs[-1]}" 'http://[^ ]*/')"
fi

"$PYTHON" -m pulp_sync reset --yes >/dev/null

if [ "$api" != 1 ]; then
  report="$("$PYTHON" -m pulp_sync sync "${url}PULP_MANIFEST_$num" --repository "perftest" \
    --downloader "$downloader" --concurrency "$concurrency" --json 2>/dev/null | tail -n 1)"
  seconds="$(printf '%s' "$report" | "$PYTHON" -c 'import json, sys; print("%.3f" % json.load(sys.stdin)["seconds"])')"
else
  token="$("$PYTHON" -m pulp_sync createuser perftest --token 2>/dev/null)"
  if [ -z "$api_url" ]; then
    export PULP_SYNC_QUEUE="perftest-$$"
    start "$(mktemp)" "$PYTHON" -m pulp_sync worker
    start "$(mktemp)" "$PYTHON" -m pulp_sync api --bind 127.0.0.1:0 --workers 1
    api_url="$(announced "${logs[-1]}" 'http://[^ ]*/api/v3/')"
    api_url="${api_url%/api/v3/}"
  fi

  # call METHOD HREF [JSON]: the API's answer to a request; an HTTP error stops the script, showing the answer.
  call() {
    local body=()
    if [ $# -ge 3 ]; then body=(-H 'Content-Type: application/json' --data "$3"); fi
    curl --silent --show-error --fail-with-body -X "$1" "${api_url%/}$2" -H "Authorization: Token $token" "${body[@]}"
  }

  remote="$(call POST /api/v3/remotes/ "$(jq -nc --arg url "${url}PULP_MANIFEST_$num" --arg downloader "$downloader" \
    --argjson concurrency "$concurrency" \
    '{name: "perftest", url: $url, downloader: $downloader, download_concurrency: $concurrency}')" | jq -r .pulp_href)"
  repository="$(call POST /api/v3/repositories/ '{"name": "perftest"}' | jq -r .pulp_href)"
  task="$(call POST "${repository}sync/" "$(jq -nc --arg remote "$remote" '{remote: $remote}')" | jq -r .task)"
  state=waiting
  while [ "$state" != completed ] && [ "$state" != failed ]; do
    sleep 0.5
    state="$(call GET "$task" | jq -r .state)"
  done
  finished="$(call GET "$task")"
  [ "$state" = completed ] || { echo "the sync failed: $(jq -r .error <<<"$finished")" >&2; exit 1; }
  # DRF writes times as ISO 8601 with microseconds ("...T10:00:01.250000Z"); jq's fromdateiso8601 takes whole seconds.
  seconds="$(printf '%.3f' "$(jq -r '
    def epoch: capture("^(?<s>[^.Z]+)(?<f>\\.[0-9]+)?") | (.s + "Z" | fromdateiso8601) + ("0" + (.f // "") | tonumber);
    (.finished | epoch) - (.started | epoch)' <<<"$finished")")"
fi

echo "$seconds" >>"$data"
echo "$downloader $num: $seconds s$([ "$api" = 1 ] && echo " (through the API)") (appended to $data)"
