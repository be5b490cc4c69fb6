#!/usr/bin/env bash
# The main job: reproduce the seed's downloader comparison (asyncio vs futures, manifests 100..500,
# ten runs each after a reset, back to back) and write results/<timestamp>-seed-002/ with
# summary.md, plots and report.html. Sets up the virtualenv, the package and the fixture data on
# first use. Extra arguments go to `pulp-sync bench run`; a spec first runs that experiment instead
# (at its own scale), e.g.:
#   ./manytests.sh                       # scale 0.05 (6 to 7 minutes on 2 cores)
#   ./manytests.sh --scale 1             # the seed's full sizes (407..1946 MB per manifest)
#   ./manytests.sh --runs 3 --manifests 100,200
#   ./manytests.sh experiments/peers.toml   # against curl and aria2c (see docs/performance.md)
set -euo pipefail
cd "$(dirname "$0")"
case "${1:-}" in
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
spec=experiments/seed-002.toml
defaults=(--scale 0.05)
if [[ ${1:-} == *.toml ]]; then
  spec=$1
  defaults=()
  shift
fi
source scripts/bootstrap.sh
exec "$PYTHON" -m harness run "$spec" "${defaults[@]}" "$@"
