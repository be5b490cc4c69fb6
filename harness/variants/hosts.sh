#!/usr/bin/env bash
# Hosts on one machine, for workers that must talk over a real network: network namespaces on a
# bridge, each with its own address, interface and host name, reaching Redis, PostgreSQL and the
# fixture server where a second machine would, on the bridge.
#
#   scripts/hosts.sh prepare        the bridge, and the forwarders of Redis and PostgreSQL on it
#   scripts/hosts.sh up N           N hosts, 1..N (idempotent; hosts above N are removed)
#   scripts/hosts.sh exec K CMD...  run CMD on host K: its network namespace and its own host name
#   scripts/hosts.sh kill K         SIGKILL every process on host K, as if the machine went away
#   scripts/hosts.sh down           remove every host, the forwarders and the bridge
#   scripts/hosts.sh status         the forwarders, the hosts, their addresses and what they reach
#
# Addresses come from 198.18.0.0/15, the range RFC 2544 reserves for benchmarks, so no traffic
# leaves the machine: the bridge (this machine's own side, the "service host") is 198.18.0.1/24,
# host K is 198.18.0.(10+K). The hosts reach this machine's Redis and PostgreSQL, which stay as they
# are on 127.0.0.1, through forwarders (socat) that `prepare` and `up` start on 198.18.0.1 and `down`
# stops: a host's connection arrives at the server from 127.0.0.1, as any local client's, so no
# server is reconfigured or restarted (other clients use it). A port of 198.18.0.1 that something
# else serves already (the server itself, made to listen there by an earlier version of this
# script) is used as it is. PULP_SYNC_HOSTS_FORWARD lists the ports forwarded (default: 6379 5432);
# MariaDB stays on 127.0.0.1 (docs/scale-out.md).
# The hosts share this machine's filesystem, so the artifact store is at the same path on every
# host, as an NFS mount or a shared volume gives it to real ones (docs/scale-out.md). Needs root.
set -euo pipefail

BRIDGE=pulp-sync-br
PREFIX=pulp-sync-host-
SERVICE_ADDRESS=198.18.0.1
BRIDGE_NETWORK=198.18.0.0/24
FORWARDED=${PULP_SYNC_HOSTS_FORWARD:-6379 5432}
RUN_DIR=/run/pulp-sync-hosts  # the forwarders' pidfiles and logs; /run empties at boot, as they end

say() { echo "hosts: $*" >&2; }
fail() { say "$*"; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
address_of() { echo "198.18.0.$((10 + $1))"; }
namespace_of() { echo "$PREFIX$1"; }
port_open_at() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }
our_namespaces() { ip netns list | awk '{print $1}' | grep "^$PREFIX" || true; }

# One run of this script at a time changes the hosts and the forwarders: two test sessions bringing
# hosts up at once would otherwise both start a forwarder for a port, and one would fail.
lock() {
  as_root install -d -m 0755 "$RUN_DIR"
  exec 9<"$RUN_DIR"
  flock -w 60 9 || fail "another hosts.sh held $RUN_DIR for a minute"
}

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

pidfile_of() { echo "$RUN_DIR/forward-$1.pid"; }
log_of() { echo "$RUN_DIR/forward-$1.log"; }

# The pid of the live forwarder of port $1, or nothing. The pidfile is not enough: its process may
# have died (a zombie has no command line either, where nothing reaps it) and its pid been reused.
forwarder_pid() {
  local pid
  pid=$(cat "$(pidfile_of "$1")" 2>/dev/null) || return 0
  if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "^socat TCP-LISTEN:$1,bind=$SERVICE_ADDRESS,"; then
    echo "$pid"
  fi
}

# Which process listens on port $1 where the bridge's clients reach it, as `ss` names it.
listener_at() {
  ss -Hltnp "sport = :$1" | awk -v here="$SERVICE_ADDRESS:$1" '$4 == here || $4 ~ /^(0\.0\.0\.0|\*|\[::\]):/' |
    sed -n 's/.*users:(("\([^"]*\)".*/\1/p' | grep -m 1 . || echo "another process"
}

forwarder_up() {
  local port=$1
  [ -z "$(forwarder_pid "$port")" ] || return 0
  if [ -e "$(pidfile_of "$port")" ]; then
    say "the forwarder of port $port had died ($(forwarder_said "$port")); starting another"
    as_root rm -f "$(pidfile_of "$port")"
  fi
  if port_open_at "$SERVICE_ADDRESS" "$port"; then
    say "$SERVICE_ADDRESS:$port is served already, by $(listener_at "$port"):" \
      "the hosts use it as it is (no forwarder)"
    return 0
  fi
  forwarder_start "$port"
}

# socat, forking a process per connection, each connecting to 127.0.0.1. It accepts clients of the
# bridge's network only (range=): the server trusts what arrives from 127.0.0.1, and 198.18.0.1, a
# local address, could be routed here from outside. It runs in a session of its own, so that `down`
# ends it with its connections and no signal to whatever ran this script reaches it, with its
# output in its log rather than in the caller's pipes (which would then never close); it writes its
# own pid, as sudo may stand between this shell and it; it does not keep the lock's descriptor.
forwarder_start() {
  local port=$1
  # shellcheck disable=SC2016 # $0 ... $4 are the inner shell's
  as_root setsid sh -c 'echo $$ >"$0" && exec socat "TCP-LISTEN:$2,bind=$3,fork,reuseaddr,range=$4" \
    "TCP:127.0.0.1:$2" 2>"$1"' "$(pidfile_of "$port")" "$(log_of "$port")" "$port" "$SERVICE_ADDRESS" \
    "$BRIDGE_NETWORK" </dev/null >/dev/null 2>&1 9<&- &
  for _ in $(seq 50); do
    sleep 0.1
    if [ -n "$(forwarder_pid "$port")" ] && port_open_at "$SERVICE_ADDRESS" "$port"; then return 0; fi
  done
  fail "the forwarder of port $port did not listen on $SERVICE_ADDRESS within 5 s: $(forwarder_said "$port")"
}

forwarder_said() { as_root tail -n 1 "$(log_of "$1")" 2>/dev/null | grep . || echo "nothing in its log"; }

forwarders_down() {
  local pidfile port pid
  for pidfile in "$RUN_DIR"/forward-*.pid; do
    [ -e "$pidfile" ] || continue
    port=${pidfile#"$RUN_DIR/forward-"}
    port=${port%.pid}
    pid=$(forwarder_pid "$port")
    if [ -n "$pid" ]; then
      as_root kill -TERM -- "-$pid" 2>/dev/null || true  # its session: it and its connections
      # gone before `down` returns, so that an `up` just after finds the port free, not served
      for _ in $(seq 50); do [ -n "$(forwarder_pid "$port")" ] || break; sleep 0.1; done
      [ -z "$(forwarder_pid "$port")" ] || fail "the forwarder of port $port (pid $pid) outlived SIGTERM for 5 s"
    fi
    as_root rm -f "$pidfile" "$(log_of "$port")"
  done
}

prepare() {
  local port
  bridge_up
  for port in $FORWARDED; do forwarder_up "$port"; done
}

up() {
  local n=${1:?usage: hosts.sh up N} k namespace
  [[ $n =~ ^[1-9][0-9]?$ ]] || fail "up N: N is a number of hosts from 1 to 99, not '$n'"
  prepare
  for ((k = 1; k <= n; k++)); do host_up "$k"; done
  for namespace in $(our_namespaces); do
    if [ "${namespace#"$PREFIX"}" -gt "$n" ]; then host_down "$namespace"; fi
  done
  say "$n host(s) up: $(address_of 1)..$(address_of "$n"); services at $SERVICE_ADDRESS (ports $FORWARDED)"
}

down() {
  local namespace
  for namespace in $(our_namespaces); do host_down "$namespace"; done
  forwarders_down
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

# What serves each forwarded port of the bridge, then each host and whether it reaches those ports
# (a forwarder accepts a connection even while its server is down: "up" is as far as the forwarder).
status() {
  local port namespace k
  for port in $FORWARDED; do echo "$SERVICE_ADDRESS:$port $(served_by "$port")"; done
  for namespace in $(our_namespaces); do
    k=${namespace#"$PREFIX"}
    printf '%s %s' "$namespace" "$(address_of "$k")"
    for port in $FORWARDED; do
      printf ' %s:%s' "$port" "$(ip netns exec "$namespace" bash -c \
        "(exec 3<>/dev/tcp/$SERVICE_ADDRESS/$port) 2>/dev/null && echo up || echo down")"
    done
    echo
  done
}

served_by() {
  local pid
  pid=$(forwarder_pid "$1")
  if [ -n "$pid" ]; then
    echo "forwarder (pid $pid) to 127.0.0.1:$1"
  elif [ -e "$(pidfile_of "$1")" ]; then
    echo "forwarder dead: $(forwarder_said "$1")"
  elif port_open_at "$SERVICE_ADDRESS" "$1"; then
    echo "served by $(listener_at "$1") (no forwarder)"
  else
    echo "not served"
  fi
}

case "${1:-}" in
  prepare) lock; prepare ;;
  up) lock; up "${2:-}" ;;
  down) lock; down ;;
  exec) shift; run_on "$@" ;;
  kill) kill_namespace "$(namespace_of "${2:?usage: hosts.sh kill K}")" ;;
  status) status ;;
  *) fail "usage: hosts.sh prepare | up N | exec K COMMAND... | kill K | down | status" ;;
esac
