#!/usr/bin/env bash
# Make a Debian 12 machine ready for pulp-sync and its tests: Debian's packages, PostgreSQL,
# MariaDB and Redis running on 127.0.0.1, the `pulp_sync` databases, the virtualenv with the
# package, the schema on sqlite, PostgreSQL and MariaDB, and real pulpcore in a virtualenv of its
# own (scripts/pulpcore.sh) for the harness to benchmark. Used by the Vagrantfile and by
# ./runtests.sh (and so by CI).
#
# Idempotent: each step checks first and acts only on what is missing, so when everything is
# present it prints nothing and takes seconds. Run it as yourself: the virtualenv is yours, and
# the system steps go through sudo (or run directly as root).
#
# The servers are set up as a development machine's: PostgreSQL trusts TCP connections from
# 127.0.0.1 as user postgres, MariaDB's root logs in from 127.0.0.1 with an empty password. The
# hosts of scripts/hosts.sh (network namespaces on a bridge) reach Redis and PostgreSQL through
# forwarders that the script starts when it makes them; no server is configured for them.
set -euo pipefail
cd "$(dirname "$0")/.."

# python3-dev and gcc build mysqlclient; git lets the harness record the commit it measured; aria2
# is a peer in experiments/peers.toml; shellcheck lints the shell scripts in the tests; chromium and
# its driver open the harness's report.html in a real browser (tests/harness/report/test_report_browser.py);
# socat forwards Redis and PostgreSQL to the hosts of scripts/hosts.sh.
PACKAGES=(python3-venv python3-dev gcc git postgresql mariadb-server redis-server nginx-light libmariadb-dev
  pkg-config ruby jq curl aria2 shellcheck chromium chromium-driver socat)
DATABASE=pulp_sync
SERVER_URLS=("postgres://postgres@127.0.0.1:5432/$DATABASE" "mysql://root@127.0.0.1:3306/$DATABASE")

say() { echo "provision: $*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Runs a command with its output kept back, shown only if it fails.
quietly() {
  local output
  output="$("$@" 2>&1)" || { echo "$output" >&2; return 1; }
}

# Tries a check for up to ten seconds; fails with the message if it never passes.
eventually() {
  local message=$1; shift
  for _ in $(seq 1 50); do "$@" && return 0; sleep 0.2; done
  echo "provision: $message" >&2
  return 1
}

install_packages() {
  local installed missing=() package
  installed=" $(dpkg-query -W -f='${Package}:${db:Status-Status} ' "${PACKAGES[@]}" 2>/dev/null || true) "
  for package in "${PACKAGES[@]}"; do
    [[ $installed == *" $package:installed "* ]] || missing+=("$package")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  say "installing ${missing[*]} ..."
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

postgres_version() { find /etc/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1; }

# Starts a server that does not answer on its port: through systemd when it runs the machine (a
# Vagrant box), else with the server's own command line (a container, as in CI).
start_service() {
  local name=$1 port=$2 unit=$3 command=$4
  port_open "$port" && return 0
  say "starting $name ..."
  if [ -d /run/systemd/system ]; then
    as_root systemctl start "$unit"
  else
    as_root sh -c "$command"
  fi
  eventually "$name did not start on 127.0.0.1:$port" port_open "$port"
}

start_services() {
  start_service PostgreSQL 5432 postgresql \
    "pg_ctlcluster --skip-systemctl-redirect $(postgres_version) main start"
  start_service Redis 6379 redis-server \
    "redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no"
  start_service MariaDB 3306 mariadb "install -d -o mysql -g mysql /run/mysqld &&
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd"
}

pg() { psql -h 127.0.0.1 -U postgres -w -d postgres -v ON_ERROR_STOP=1 -tAqc "$1"; }
maria() { mariadb -h 127.0.0.1 -u root --password= -N -B -e "$1"; }

trust_postgres_locally() {
  pg 'SELECT 1' >/dev/null 2>&1 && return 0
  local hba
  hba="/etc/postgresql/$(postgres_version)/main/pg_hba.conf"
  say "trusting connections from 127.0.0.1 in $hba ..."
  as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  as_root pg_ctlcluster "$(postgres_version)" main reload
  eventually "PostgreSQL still refuses user postgres from 127.0.0.1 (see $hba)" pg 'SELECT 1' >/dev/null
}

# An earlier scripts/hosts.sh made PostgreSQL listen on the hosts' bridge itself: a conf.d file, and a
# line in pg_hba.conf trusting the bridge's network. Provision removes both and restarts nothing,
# as other clients use the server; the file takes effect at the server's next restart, whoever
# makes it (until then hosts.sh finds the bridge's port served, and uses it). The line, which a
# mere reload would apply, goes only once the server no longer listens there, so that the hosts
# are never refused by a server they still reach directly.
forget_postgres_on_the_bridge() {
  local main conf hba line='host all all 198.18.0.0/15 trust'
  main="/etc/postgresql/$(postgres_version)/main"
  conf="$main/conf.d/95-pulp-sync-hosts.conf"
  hba="$main/pg_hba.conf"
  if [ -e "$conf" ]; then
    say "removing $conf (PostgreSQL listens on 198.18.0.1 until its next restart) ..."
    as_root rm "$conf"
  fi
  if as_root grep -qx "$line" "$hba" && [[ $(pg 'SHOW listen_addresses') != *198.18.0.1* ]]; then
    say "removing '$line' from $hba ..."
    as_root sed -i "\\|^$line\$|d" "$hba"
  fi
}

open_mariadb_root_locally() {
  maria 'SELECT 1' >/dev/null 2>&1 && return 0
  say "letting MariaDB's root in from 127.0.0.1 with an empty password ..."
  as_root mariadb -u root -e \
    "ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('')"
  eventually "MariaDB still refuses root from 127.0.0.1" maria 'SELECT 1' >/dev/null
}

create_databases() {
  if [ -z "$(pg "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")" ]; then
    say "creating the PostgreSQL database $DATABASE ..."
    pg "CREATE DATABASE $DATABASE"
  fi
  if [ -z "$(maria "SHOW DATABASES LIKE '$DATABASE'")" ]; then
    say "creating the MariaDB database $DATABASE ..."
    maria "CREATE DATABASE $DATABASE CHARACTER SET utf8mb4"
  fi
}

# The schema on sqlite (under PULP_SYNC_HOME) and on both servers; three processes side by side,
# as most of each one's time is starting Python.
migrate_all() {
  local url pids=() pid failed=0
  quietly env -u DATABASE_URL "$VENV/bin/pulp-sync" migrate &
  pids+=($!)
  for url in "${SERVER_URLS[@]}"; do
    quietly env DATABASE_URL="$url" "$VENV/bin/pulp-sync" migrate &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  return "$failed"
}

install_packages
start_services
trust_postgres_locally
forget_postgres_on_the_bridge
open_mariadb_root_locally
create_databases
# shellcheck source=scripts/bootstrap.sh
source scripts/bootstrap.sh
migrate_all
bash scripts/pulpcore.sh
