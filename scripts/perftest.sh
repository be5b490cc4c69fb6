#!/usr/bin/env bash
# The seed's perftest.sh: ONE reset + sync of one manifest with one downloader, its runtime (the
# sync alone, in seconds) appended to perf_data.txt. Configure it here or from the environment:
#   asyncio=0 num=300 scripts/perftest.sh
# With no url, it generates the fixture tree if missing and starts a fixture server for this run
# (the seed restarted every service before each test). With api=1 the sync goes through a Pulp 3
# REST API, as the seed's did: curl resets (deletes the last run's repository and remote, orphan
# cleanup), creates the remote and repository and starts the sync, the server's worker runs it, and
# jq takes the runtime from the task's started_at and finished_at. With no api_url, `pulp-sync api`
# and a worker are started for this run (on a queue of their own, an admin user of its own); give
# api_url, api_user and api_password to time any Pulp 3 server instead, pulpcore included, e.g.
#   api=1 api_url=http://127.0.0.1:24817 api_user=admin api_password=... url=http://host/fixtures/ scripts/perftest.sh
# (the server must reach url; pulpcore ignores `downloader`, it has its own). For whole experiments
# with statistics and a report, use `pulp-sync bench run experiments/seed-002.toml` (or
# ./manytests.sh) instead; experiments/pulpcore.toml runs pulpcore beside pulp-sync.
set -euo pipefail

asyncio="${asyncio:-1}"            # 1: the asyncio downloader, 0: the futures one
num="${num:-100}"                  # manifest: 100, 200, 300, 400 or 500 files
concurrency="${concurrency:-10}"   # downloads in flight
scale="${scale:-0.05}"             # fixture size; 1 is the seed's (407 MB for 100 .. 1946 MB for 500)
profile="${profile:-wan}"          # fixture server's network profile: loopback, lan, wan, slow
url="${url:-}"                     # base URL of a running fixture server; empty: start one here
data="${data:-perf_data.txt}"      # where runtimes are appended, one per line
api="${api:-0}"                    # 1: sync through the REST API on an RQ worker (needs Redis, curl, jq)
api_url="${api_url:-}"             # with api=1: root URL of a running Pulp 3 API; empty: start `pulp-sync api` here
api_user="${api_user:-admin}"      # with api_url: the API user (an admin: orphan cleanup needs one)
api_password="${api_password:-}"   # with api_url: that user's password

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

if [ "$api" != 1 ]; then
  "$PYTHON" -m pulp_sync reset --yes >/dev/null
  report="$("$PYTHON" -m pulp_sync sync "${url}PULP_MANIFEST_$num" --repository "perftest" \
    --downloader "$downloader" --concurrency "$concurrency" --json 2>/dev/null | tail -n 1)"
  seconds="$(printf '%s' "$report" | "$PYTHON" -c 'import json, sys; print("%.3f" % json.load(sys.stdin)["seconds"])')"
else
  if [ -z "$api_url" ]; then
    "$PYTHON" -m pulp_sync reset --yes >/dev/null
    api_password="$("$PYTHON" -c 'import secrets; print(secrets.token_urlsafe(24))')"
    PULP_SYNC_PASSWORD="$api_password" "$PYTHON" -m pulp_sync createuser "$api_user" --admin 2>/dev/null
    export PULP_SYNC_QUEUE="perftest-$$"
    start "$(mktemp)" "$PYTHON" -m pulp_sync worker
    start "$(mktemp)" "$PYTHON" -m pulp_sync api --bind 127.0.0.1:0 --workers 1
    api_url="$(announced "${logs[-1]}" 'http://[^ ]*/pulp/api/v3/')"
    api_url="${api_url%/pulp/api/v3/}"
  fi
  [ -n "$api_password" ] || { echo "perftest.sh: api_url needs api_user and api_password" >&2; exit 2; }

  # Log in once (Pulp's login/) and call by session: basic auth on every poll would make the server hash
  # the password each time (Django's PBKDF2, ~0.2 s of its CPU), slowing the sync being timed. A server
  # without login/ is called with basic auth throughout.
  jar="$(mktemp)"
  logs+=("$jar")  # removed with the logs when the script ends
  auth=(-u "$api_user:$api_password")
  if curl --silent --fail -X POST -u "$api_user:$api_password" -c "$jar" "${api_url%/}/pulp/api/v3/login/" >/dev/null \
    && grep -q sessionid "$jar"; then
    auth=(-b "$jar")
  fi
  # call METHOD HREF [JSON]: the API's answer to a request (HREF under /pulp/api/v3/, or a pulp_href);
  # an HTTP error stops the script, showing the answer.
  call() {
    local body=() href="$2" csrf=()
    [[ $href == /pulp/* ]] || href="/pulp/api/v3/$href"
    if [ $# -ge 3 ]; then body=(-H 'Content-Type: application/json' --data "$3"); fi
    if [ "${auth[0]}" = -b ] && [ "$1" != GET ]; then
      csrf=(-H "X-CSRFToken: $(awk '$6 == "csrftoken" { print $7 }' "$jar")")
    fi
    local answer
    answer="$(curl --silent --show-error --fail-with-body -X "$1" "${api_url%/}$href" "${auth[@]}" "${csrf[@]}" \
      "${body[@]}")" || { echo "perftest.sh: $1 $href: $answer" >&2; return 1; }
    echo "$answer"
  }
  # finished TASK_HREF: the task once it has ended, polled twice a second.
  finished() {
    local task
    while task="$(call GET "$1")"; [[ $(jq -r .state <<<"$task") =~ ^(waiting|running|canceling)$ ]]; do
      sleep 0.5
    done
    echo "$task"
  }
  # reset: the last run's repository and remote gone, and the content only they held (the seed's reset).
  for collection in repositories/file/file/ remotes/file/file/; do
    for href in $(call GET "${collection}?name=perftest" | jq -r '.results[].pulp_href'); do
      deleted="$(call DELETE "$href")"
      task="$(jq -r '.task // empty' <<<"$deleted")"
      [ -z "$task" ] || finished "$task" >/dev/null
    done
  done
  finished "$(call POST orphans/cleanup/ '{"orphan_protection_time": 0}' | jq -r .task)" >/dev/null

  # pulp-sync's status names a pulp_sync component and its remotes take a `downloader`; pulpcore has its own.
  engine=null
  if call GET status/ | jq -e '.versions | any(.component == "pulp_sync")' >/dev/null; then engine="\"$downloader\""; fi
  remote="$(call POST remotes/file/file/ "$(jq -nc --arg url "${url}PULP_MANIFEST_$num" --argjson downloader "$engine" \
    --argjson concurrency "$concurrency" \
    '{name: "perftest", url: $url, policy: "immediate", download_concurrency: $concurrency}
     + if $downloader then {downloader: $downloader} else {} end')" | jq -r .pulp_href)"
  repository="$(call POST repositories/file/file/ '{"name": "perftest"}' | jq -r .pulp_href)"
  task="$(finished "$(call POST "${repository}sync/" "$(jq -nc --arg remote "$remote" '{remote: $remote}')" | jq -r .task)")"
  [ "$(jq -r .state <<<"$task")" = completed ] || { echo "the sync failed: $(jq -c .error <<<"$task")" >&2; exit 1; }
  # Pulp writes times as ISO 8601 with microseconds ("...T10:00:01.250000Z" or "+00:00"); jq's
  # fromdateiso8601 takes whole seconds in UTC.
  seconds="$(printf '%.3f' "$(jq -r '
    def epoch: capture("^(?<s>[^.Z+]+)(?<f>\\.[0-9]+)?") | (.s + "Z" | fromdateiso8601) + ("0" + (.f // "") | tonumber);
    (.finished_at | epoch) - (.started_at | epoch)' <<<"$task")")"
fi

echo "$seconds" >>"$data"
echo "$([ "${engine:-}" = null ] && echo "the server's own downloader" || echo "$downloader") $num: $seconds s$(
  [ "$api" = 1 ] && echo " (through the API at $api_url)") (appended to $data)"
