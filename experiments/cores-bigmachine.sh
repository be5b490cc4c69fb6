#!/usr/bin/env bash
# One sync on every core, on a machine lent without the project's services (issue 26): `pulp-sync sync
# --processes 1|2|4|8|auto` against curl --parallel, nginx on loopback, the scale-1 fixtures, sqlite.
# The cells rotate within each round, so a round compares like with like: analyse ratios per round.
#
# Run it from a folder holding wheels/ (pulp-sync and the dependencies that machine lacks) and debs/
# (Debian's nginx), as docs/performance.md says; or with PS=<a pulp-sync command> to use an installed
# one. Rounds R0..R1 (default 1..3); the rounds stop once SMALL_S (many-small) or BIG_S (the 100
# manifest) seconds have passed. Writes $OUT/cores.txt: per line the sync's own seconds as `sync --json`
# reports them (planning, the children's start and the version included), the processes it used, and
# the process's wall time (Python's start-up included).
set -u
cd "$(dirname "$0")" || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/cores.txt") 2>&1
WORK=${WORK:-/tmp/cores}
mkdir -p "$WORK"
echo "== machine: $(nproc) cpus; $(python3 --version); $(uname -r)"

NGINX=nginx
if compgen -G "debs/*.deb" >/dev/null; then
    mkdir -p /opt/d && for deb in debs/*.deb; do dpkg -x "$deb" /opt/d; done
    export LD_LIBRARY_PATH=/opt/d/usr/lib/x86_64-linux-gnu:/opt/d/lib/x86_64-linux-gnu
    NGINX=/opt/d/usr/sbin/nginx
fi
if [ -z "${PS:-}" ]; then
    python3 -m pip install -q --no-index --find-links wheels pulp-sync 2>&1 | tail -3
    PS=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/pulp-sync
fi
"$PS" --help >/dev/null || { echo "pulp-sync does not start"; exit 1; }
"$(dirname "$PS")/python" -c 'import pulp_base.download_processes as p; print("usable cpus", p.usable_cpus())'
FX=$WORK/fx
"$PS" fixtures generate --scale "${SCALE:-1}" --out "$FX" >"$WORK/gen.log" 2>&1 || { tail -5 "$WORK/gen.log"; exit 1; }

NG=$WORK/nginx
mkdir -p "$NG/logs" "$NG/tmp"
cat >"$NG/nginx.conf" <<CONF
worker_processes 8; pid $NG/nginx.pid; error_log $NG/logs/error.log warn; daemon off;
events { worker_connections 4096; }
http { default_type application/octet-stream; sendfile on; tcp_nopush on; keepalive_requests 100000; access_log off;
  client_body_temp_path $NG/tmp; proxy_temp_path $NG/tmp; fastcgi_temp_path $NG/tmp; uwsgi_temp_path $NG/tmp;
  scgi_temp_path $NG/tmp; server { listen 127.0.0.1:8089; root $FX; } }
CONF
"$NGINX" -p "$NG" -c "$NG/nginx.conf" &
sleep 1
BASE=http://127.0.0.1:8089
curl -sf -o /dev/null "$BASE/PULP_MANIFEST_100" || { echo "nginx does not serve"; cat "$NG/logs/error.log"; exit 1; }

# curl's config: one url and output per file of a manifest.
curl_config() {
    local manifest=$1 prefix=$2 path
    while IFS=, read -r path _ _; do
        printf 'url = "%s/%s%s"\noutput = "%s/co/%s"\n' "$BASE" "$prefix" "$path" "$WORK" "$path"
    done <"$manifest"
}
curl_config "$FX/PULP_MANIFEST_100" "" >"$WORK/big.cfg"
curl_config "$FX/many-small/PULP_MANIFEST" "many-small/" >"$WORK/small.cfg"
PULP_SYNC_HOME=$WORK/template "$PS" migrate >/dev/null 2>&1 || { echo "migrate failed"; exit 1; }

seconds_since() { python3 -c 'import sys, time; print(round(time.time() - float(sys.argv[1]), 3))' "$1"; }

curl_run() {
    local config=$1 parallel=$2 started
    rm -rf "${WORK:?}/co" && mkdir -p "$WORK/co" && sync
    started=$(date +%s.%N)
    curl -s --parallel --parallel-max "$parallel" --create-dirs -K "$config" 2>/dev/null
    seconds_since "$started"
}

sync_run() {
    local url=$1 engine=$2 concurrency=$3 processes=$4 started wall
    rm -rf "${WORK:?}/home" && cp -a "$WORK/template" "$WORK/home" && sync
    started=$(date +%s.%N)
    PULP_SYNC_HOME=$WORK/home timeout 120 "$PS" sync "$url" --downloader "$engine" \
        --concurrency "$concurrency" --processes "$processes" --json >"$WORK/sync.json" 2>"$WORK/sync.err"
    wall=$(seconds_since "$started")
    python3 - "$WORK/sync.json" "$wall" <<'PY' || echo "FAIL: $(tail -1 "$WORK/sync.err")"
import json, sys
result = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(round(result["seconds"], 3), "processes", result["processes"], "files", result["artifacts_downloaded"],
      "| wall", sys.argv[2])
PY
}

SMALL=$BASE/many-small/PULP_MANIFEST
BIG=$BASE/PULP_MANIFEST_100
echo "== many-small: $(wc -l <"$FX/many-small/PULP_MANIFEST") files; asyncio at concurrency 10 per process"
cells=(curl 1 2 4 8 auto)
for round in $(seq "${R0:-1}" "${R1:-3}"); do
    for k in 0 1 2 3 4 5; do
        cell=${cells[$(((k + round) % 6))]}
        if [ "$cell" = curl ]; then
            echo "r$round small curl10: $(curl_run "$WORK/small.cfg" 10)"
        else
            echo "r$round small asyncio $cell: $(sync_run "$SMALL" asyncio 10 "$cell")"
        fi
    done
    [ "$SECONDS" -gt "${SMALL_S:-330}" ] && { echo "stopping the many-small rounds at ${SECONDS}s"; break; }
done
echo "== big: PULP_MANIFEST_100 (408 MB); concurrency 16 per process"
cells=(curl "asyncio 1" "asyncio auto" "futures 1" "futures auto")
for round in $(seq "${R0:-1}" "${R1:-3}"); do
    for k in 0 1 2 3 4; do
        cell=${cells[$(((k + round) % 5))]}
        if [ "$cell" = curl ]; then
            echo "r$round big curl16: $(curl_run "$WORK/big.cfg" 16)"
        else
            echo "r$round big $cell: $(sync_run "$BIG" "${cell% *}" 16 "${cell#* }")"
        fi
    done
    [ "$SECONDS" -gt "${BIG_S:-420}" ] && { echo "stopping the big rounds at ${SECONDS}s"; break; }
done
echo "== done in ${SECONDS}s"
kill "$(cat "$NG/nginx.pid")" 2>/dev/null
