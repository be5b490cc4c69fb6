#!/usr/bin/env bash
# Run the test suite (benchmarks excluded): ./runtests.sh [pytest arguments]
# First makes the machine ready (scripts/provision.sh: Debian's packages with nginx, PostgreSQL,
# MariaDB and Redis running, the databases, the virtualenv); silent and quick when all is there.
# Then the static checks that pyproject.toml configures (ruff's rules, mypy's types) over the
# whole tree, then pytest over three workers.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/provision.sh
source scripts/bootstrap.sh
LINTED=(pulp_base downloaders fixtures conformance examples scripts harness pulp_sync tests)
"$PYTHON" -m ruff check --quiet "${LINTED[@]}"
"$PYTHON" -m mypy  # its files: [tool.mypy] files in pyproject.toml
# Three workers, a test file to each at a time (tests/conftest.py): most tests wait on servers and child
# processes, so three keep two cores busy; `./runtests.sh -n 0 ...` runs in this process alone.
exec "$PYTHON" -m pytest -n 3 --dist loadfile "$@"
