# Sourced by ./runtests.sh and ./manytests.sh: make .venv and install the package on first use,
# and again whenever setup.py changes. Sets PYTHON and VENV for the caller.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PULP_SYNC_VENV:-$ROOT/.venv}"
PYTHON="$VENV/bin/python"
stamp="$VENV/.pulp-sync-installed"
if [ ! -x "$PYTHON" ]; then
  echo "Creating the virtualenv in $VENV ..." >&2
  "${PYTHON3:-python3}" -m venv "$VENV"
fi
if [ ! -f "$stamp" ] || [ "$ROOT/setup.py" -nt "$stamp" ]; then
  echo "Installing pulp-sync and its test tools into $VENV ..." >&2
  "$PYTHON" -m pip install --quiet --upgrade pip setuptools wheel
  "$PYTHON" -m pip install --quiet -e "$ROOT[test,postgres]"
  touch "$stamp"
fi
export PATH="$VENV/bin:$PATH"
