#!/usr/bin/env bash
# Make real pulpcore (Pulp 3, with the file plugin it ships as `pulp_file`) ready for the harness to
# benchmark beside pulp-sync: its own virtualenv (.venv-pulpcore, or PULP_SYNC_PULPCORE_VENV) with a
# pinned release, and the PostgreSQL database `pulpcore`. harness/variants/pulpcore.py configures, migrates
# and starts it. Run by scripts/provision.sh once PostgreSQL is up; runs alone as well.
#
# Idempotent and silent when all is present, like scripts/bootstrap.sh: a stamp file holds the
# installed release. A venv of its own because pulpcore pins its own Django, aiohttp and the like,
# and the harness drives it only through its commands and REST API, never by importing it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PULPCORE_VENV="${PULP_SYNC_PULPCORE_VENV:-$ROOT/.venv-pulpcore}"
# The newest release on PyPI when chosen; it needs Python 3.11 or newer (Debian 12 has 3.11).
PULPCORE_VERSION=3.123.1
PULPCORE_DATABASE=pulpcore

pulpcore_say() { echo "pulpcore.sh: $*" >&2; }

install_pulpcore() {
  local python="$PULPCORE_VENV/bin/python" stamp="$PULPCORE_VENV/.pulpcore-installed"
  [ "$(cat "$stamp" 2>/dev/null)" = "$PULPCORE_VERSION" ] && [ -x "$python" ] && return 0
  if [ ! -x "$python" ]; then
    pulpcore_say "creating the virtualenv in $PULPCORE_VENV ..."
    "${PYTHON3:-python3}" -m venv "$PULPCORE_VENV"
  fi
  pulpcore_say "installing pulpcore $PULPCORE_VERSION into $PULPCORE_VENV (about 20 s) ..."
  "$python" -m pip install --quiet --upgrade pip setuptools wheel
  "$python" -m pip install --quiet "pulpcore==$PULPCORE_VERSION"
  echo "$PULPCORE_VERSION" >"$stamp"
}

pulpcore_pg() { psql -h 127.0.0.1 -U postgres -w -d postgres -v ON_ERROR_STOP=1 -tAqc "$1"; }

create_pulpcore_database() {
  local found
  found="$(pulpcore_pg "SELECT 1 FROM pg_database WHERE datname = '$PULPCORE_DATABASE'")" || {
    pulpcore_say "PostgreSQL does not let user postgres in on 127.0.0.1:5432: run scripts/provision.sh"
    return 1
  }
  [ -n "$found" ] && return 0
  pulpcore_say "creating the PostgreSQL database $PULPCORE_DATABASE ..."
  pulpcore_pg "CREATE DATABASE $PULPCORE_DATABASE"
}

install_pulpcore
create_pulpcore_database
