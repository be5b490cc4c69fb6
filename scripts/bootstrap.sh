# Sourced by ./runtests.sh, ./manytests.sh and scripts/provision.sh: make .venv and install the
# package and the example plugins on first use, and again whenever setup.py or a plugin's
# pyproject.toml changes. Sets PYTHON and VENV for the caller.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PULP_SYNC_VENV:-$ROOT/.venv}"
PYTHON="$VENV/bin/python"
stamp="$VENV/.pulp-sync-installed"
all_extras="test,postgres,mysql"

# mysqlclient (the `mysql` extra: MariaDB's driver) has no wheel for Linux, so pip builds it, which
# needs a C compiler, Python's headers, pkg-config and MariaDB's client library. Prints what is missing.
mysqlclient_build_needs() {
  command -v cc >/dev/null 2>&1 || echo "a C compiler (gcc)"
  "$PYTHON" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(sysconfig.get_path("include") + "/Python.h"))' ||
    echo "Python's headers (python3-dev)"
  command -v pkg-config >/dev/null 2>&1 || echo "pkg-config"
  pkg-config --exists mariadb 2>/dev/null || pkg-config --exists mysqlclient 2>/dev/null || echo "libmariadb-dev"
}

if [ ! -x "$PYTHON" ]; then
  echo "Creating the virtualenv in $VENV ..." >&2
  "${PYTHON3:-python3}" -m venv "$VENV"
fi
extras="$all_extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$all_extras" ]; then
  missing="$(mysqlclient_build_needs | paste -sd, - | sed 's/,/, /g')"
  if [ -n "$missing" ]; then
    extras="test,postgres"
    echo "Not installing the MariaDB driver (mysqlclient): building it needs $missing." \
      "Tests on MariaDB fail without it. To fix: scripts/provision.sh (installs what is missing with apt)," \
      "then run this command again." >&2
  fi
fi
changed="$(find "$ROOT/setup.py" "$ROOT"/examples/*/pyproject.toml -newer "$stamp" 2>/dev/null | head -1 || true)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$extras" ] || [ -n "$changed" ]; then
  echo "Installing pulp-sync, the example plugins and the test tools into $VENV ..." >&2
  "$PYTHON" -m pip install --quiet --upgrade pip setuptools wheel
  "$PYTHON" -m pip install --quiet -e "${ROOT}[$extras]"
  for plugin in "$ROOT"/examples/*/; do
    "$PYTHON" -m pip install --quiet -e "$plugin"
  done
  echo "$extras" >"$stamp"
fi
export PATH="$VENV/bin:$PATH"
