#!/usr/bin/env bash
# The main job: reproduce the seed's downloader comparison (asyncio vs futures, manifests 100..500,
# ten runs each after a reset, back to back) and write results/<timestamp>-seed-002/ with
# summary.md, plots and report.html. Sets up the virtualenv, the package and the fixture data on
# first use. Extra arguments go to `pulp-sync bench run`, e.g.:
#   ./manytests.sh                       # scale 0.05 (about 8 minutes on 2 cores)
#   ./manytests.sh --scale 1             # the seed's full sizes (407..1946 MB per manifest)
#   ./manytests.sh --runs 3 --manifests 100,200
set -euo pipefail
cd "$(dirname "$0")"
case "${1:-}" in
  -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
source scripts/bootstrap.sh
exec "$PYTHON" -m harness run experiments/seed-002.toml --scale 0.05 "$@"
