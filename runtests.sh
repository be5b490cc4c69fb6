#!/usr/bin/env bash
# Run the test suite (benchmarks excluded): ./runtests.sh [pytest arguments]
# First makes the machine ready (scripts/provision.sh: Debian's packages with nginx, PostgreSQL,
# MariaDB and Redis running, the databases, the virtualenv); silent and quick when all is there.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/provision.sh
source scripts/bootstrap.sh
exec "$PYTHON" -m pytest "$@"
