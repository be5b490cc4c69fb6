#!/usr/bin/env bash
# Hosts on one machine, for workers that must talk over a real network: network namespaces on a
# bridge, each with its own address, interface and host name, reaching Redis, PostgreSQL and the
# fixture server where a second machine would, on the bridge.
#
#   scripts/hosts.sh prepare        the bridge, and Redis and PostgreSQL listening on it (provision.sh)
#   scripts/hosts.sh up N           N hosts, 1..N (idempotent; hosts above N are removed)
#   scripts/hosts.sh exec K CMD...  run CMD on host K: its network namespace and its own host name
#   scripts/hosts.sh kill K         SIGKILL every process on host K, as if the machine went away
#   scripts/hosts.sh down           remove every host and the bridge
#   scripts/hosts.sh status         the hosts, their addresses and whether the services answer there
#
# Addresses come from 198.18.0.0/15, the range RFC 2544 reserves for benchmarks, so no traffic
# leaves the machine: the bridge (this machine's own side, the "service host") is 198.18.0.1/24,
# host K is 198.18.0.(10+K). `up` makes Redis (at run time) and PostgreSQL (a conf.d file and a
# pg_hba line, trusting 198.18.0.0/15 as 127.0.0.1 is trusted; restarted once if it did not listen
# there yet) listen on 198.18.0.1 as well. MariaDB stays on 127.0.0.1 (docs/scale-out.md).
# The hosts share this machine's filesystem, so the artifact store is at the same path on every
# host, as an NFS mount or a shared volume gives it to real ones (docs/scale-out.md). Needs root.
set -euo pipefail

BRIDGE=pulp-sync-br
PREFIX=pulp-sync-host-
SERVICE_ADDRESS=198.18.0.1
NETWORK=198.18.0.0/15

say() { echo "hosts: $*" >&2; }
fail() { say "$*"; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
address_of() { echo "198.18.0.$((10 + $1))"; }
namespace_of() { echo "$PREFIX$1"; }
port_open_at() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
our_namespaces() { ip netns list | awk '{print $1}' | grep "^$PREFIX" || true; }

bridge_up() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    as_root ip link add "$BRIDGE" type bridge
    as_root ip addr add "$SERVICE_ADDRESS/24" dev "$BRIDGE"
  fi
  as_root ip link set "$BRIDGE" up
}

host_up() {
  local k=$1 namespace outside
  namespace=$(namespace_of "$k")
  outside="psh$k"
  ip netns list | grep -qx "$namespace\( .*\)\?" && return 0
  as_root ip netns add "$namespace"
  as_root ip link add "$outside" type veth peer name "psh$k-in"
  as_root ip link set "$outside" master "$BRIDGE" up
  as_root ip link set "psh$k-in" netns "$namespace"
  as_root ip -n "$namespace" link set "psh$k-in" name eth0
  as_root ip -n "$namespace" addr add "$(address_of "$k")/24" dev eth0
  as_root ip -n "$namespace" link set eth0 up
  as_root ip -n "$namespace" link set lo up
}

host_down() {
  local namespace=$1
  kill_namespace "$namespace"
  as_root ip netns delete "$namespace"  # takes its end of the veth pair, and so the pair, with it
}

kill_namespace() {
  local pids
  pids=$(as_root ip netns pids "$1" || true)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    as_root kill -KILL $pids 2>/dev/null || true
  fi
}

# At run time (a Redis restart forgets it; `up` says it again). Redis without a password accepts only
# loopback clients while in protected mode; it is turned off, which is safe only because Redis listens
# on loopback and the bridge alone: a machine whose Redis listens anywhere else must set a password.
redis_listens() {
  local binds
  binds=$(redis-cli -h 127.0.0.1 --raw CONFIG GET bind | sed -n 2p)
  case " $binds " in *" $SERVICE_ADDRESS "*) ;; *)
    redis-cli -h 127.0.0.1 CONFIG SET bind "$binds $SERVICE_ADDRESS" >/dev/null ;;
  esac
  case " $(redis-cli -h 127.0.0.1 --raw CONFIG GET bind | sed -n 2p) " in
    *" $SERVICE_ADDRESS "*) ;; *) fail "Redis does not listen on $SERVICE_ADDRESS" ;;
  esac
  case " $binds " in *" 0.0.0.0 "*|*" * "*|*" ::* "*) fail "Redis listens on every address: set a password first" ;; esac
  redis-cli -h 127.0.0.1 CONFIG SET protected-mode no >/dev/null
}

postgres_listens() {
  local version conf hba
  port_open_at "$SERVICE_ADDRESS" 5432 && return 0
  version=$(find /etc/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -n 1)
  conf="/etc/postgresql/$version/main/conf.d/95-pulp-sync-hosts.conf"
  hba="/etc/postgresql/$version/main/pg_hba.conf"
  say "PostgreSQL: listening on $SERVICE_ADDRESS too, trusting $NETWORK ($conf, $hba); restarting it ..."
  as_root install -d "$(dirname "$conf")"
  echo "listen_addresses = '127.0.0.1,$SERVICE_ADDRESS'" | as_root tee "$conf" >/dev/null
  grep -q "^host all all $NETWORK trust" "$hba" || as_root sed -i "1i host all all $NETWORK trust" "$hba"
  if [ -d /run/systemd/system ]; then
    as_root systemctl restart postgresql
  else
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main restart
  fi
  for _ in $(seq 100); do port_open_at "$SERVICE_ADDRESS" 5432 && return 0; sleep 0.1; done
  fail "PostgreSQL does not answer on $SERVICE_ADDRESS:5432 after its restart"
}

prepare() {
  bridge_up
  redis_listens
  postgres_listens
}

up() {
  local n=${1:?usage: hosts.sh up N} k namespace
  [[ $n =~ ^[1-9][0-9]?$ ]] || fail "up N: N is a number of hosts from 1 to 99, not '$n'"
  prepare
  for ((k = 1; k <= n; k++)); do host_up "$k"; done
  for namespace in $(our_namespaces); do
    if [ "${namespace#"$PREFIX"}" -gt "$n" ]; then host_down "$namespace"; fi
  done
  say "$n host(s) up: $(address_of 1)..$(address_of "$n"); services at $SERVICE_ADDRESS (Redis 6379, PostgreSQL 5432)"
}

down() {
  local namespace
  for namespace in $(our_namespaces); do host_down "$namespace"; done
  if ip link show "$BRIDGE" >/dev/null 2>&1; then as_root ip link delete "$BRIDGE"; fi
}

run_on() {
  local k=${1:?usage: hosts.sh exec K COMMAND...} namespace
  shift
  namespace=$(namespace_of "$k")
  ip netns list | grep -q "^$namespace\b" || fail "no host $k: run \`scripts/hosts.sh up N\` first"
  # its own UTS namespace, so its processes call themselves $namespace, as on another machine
  # shellcheck disable=SC2016 # $0 and $@ are the inner shell's
  exec ip netns exec "$namespace" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$namespace" "$@"
}

status() {
  local namespace k
  for namespace in $(our_namespaces); do
    k=${namespace#"$PREFIX"}
    printf '%s %s redis:%s postgresql:%s\n' "$namespace" "$(address_of "$k")" \
      "$(ip netns exec "$namespace" bash -c "(exec 3<>/dev/tcp/$SERVICE_ADDRESS/6379) 2>/dev/null && echo up || echo down")" \
      "$(ip netns exec "$namespace" bash -c "(exec 3<>/dev/tcp/$SERVICE_ADDRESS/5432) 2>/dev/null && echo up || echo down")"
  done
}

case "${1:-}" in
  prepare) prepare ;;
  up) up "${2:-}" ;;
  down) down ;;
  exec) shift; run_on "$@" ;;
  kill) kill_namespace "$(namespace_of "${2:?usage: hosts.sh kill K}")" ;;
  status) status ;;
  *) fail "usage: hosts.sh prepare | up N | exec K COMMAND... | kill K | down | status" ;;
esac
