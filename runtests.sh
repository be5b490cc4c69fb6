#!/usr/bin/env bash
# Run the test suite (benchmarks excluded): ./runtests.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")"
source scripts/bootstrap.sh
exec "$PYTHON" -m pytest "$@"
