#!/usr/bin/env bash
# Install what the tests need from Debian's packages and start the local servers that are down.
# Idempotent and quick when everything is present; used by .ci/run.
set -euo pipefail

need_packages=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need_packages+=(nginx-light)
if [ ${#need_packages[@]} -gt 0 ]; then
  echo "Installing ${need_packages[*]} ..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_packages[@]}" >/dev/null
fi

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for_port() {
  for _ in $(seq 1 50); do port_open "$1" && return 0; sleep 0.2; done
  echo "$2 did not start on 127.0.0.1:$1" >&2
  return 1
}

if ! port_open 5432; then
  echo "Starting PostgreSQL ..."
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
  wait_for_port 5432 PostgreSQL
fi
if ! port_open 6379; then
  echo "Starting Redis ..."
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  wait_for_port 6379 Redis
fi
if ! port_open 3306; then
  echo "Starting MariaDB ..."
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
  wait_for_port 3306 MariaDB
fi
echo "Services up: PostgreSQL 5432, Redis 6379, MariaDB 3306; nginx at $(command -v nginx || echo /usr/sbin/nginx)"
