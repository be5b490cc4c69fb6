"""The `hosts = N` dimension: RQ workers on N hosts of this machine, made by scripts/hosts.sh.

scripts/hosts.sh makes each host a network namespace on a bridge, with its own address and host name;
the services a worker needs (PostgreSQL, Redis, the fixture server) are reached at the bridge's own
address, SERVICE_ADDRESS, as a second machine reaches them over its network (this machine's PostgreSQL
and Redis, left as they are on 127.0.0.1, through forwarders that hosts.sh starts there). The hosts share
this machine's filesystem, so the artifact store and the manifest files are at the same path on every
host, as an NFS mount or a shared volume gives them to real ones (docs/scale-out.md).

The hosts are brought up before the first run and left up afterwards, with their forwarders: they cost
nothing while idle, and the next experiment (or `scripts/hosts.sh status`) finds them; `scripts/hosts.sh
down` removes them.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from harness import defaults
from harness.errors import HarnessError
from harness.run.child import last_words

__all__ = ["HostsFailed", "SCRIPT", "SERVICE_ADDRESS", "LOOPBACK", "MAX_HOSTS", "bring_up", "on_host", "on_bridge"]

SCRIPT = Path(str(resources.files("harness.variants").joinpath("hosts.sh")))
"""hosts.sh, shipped in this package (scripts/hosts.sh links to it): found through the package, not the source tree."""
SERVICE_ADDRESS = "198.18.0.1"
"""The bridge's address, this machine's own side of it: where the hosts reach every service (hosts.sh)."""
LOOPBACK = ("127.0.0.1", "localhost")
"""Addresses a host cannot reach this machine at (its own loopback is its own): rewritten to SERVICE_ADDRESS."""
MAX_HOSTS = 99
"""Most hosts scripts/hosts.sh makes (198.18.0.11 ... 198.18.0.109)."""


class HostsFailed(HarnessError, RuntimeError):
    """scripts/hosts.sh could not bring the hosts up; the message has its last words."""


def bring_up(count: int) -> None:
    """Hosts 1..`count` up (idempotent, and cheap when they are), reaching Redis and PostgreSQL on the bridge."""
    try:
        done = subprocess.run(["bash", str(SCRIPT), "up", str(count)], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=defaults.HOSTS_UP_SECONDS)
    except subprocess.TimeoutExpired as error:
        raise HostsFailed(f"`{SCRIPT} up {count}` did not finish within {defaults.HOSTS_UP_SECONDS:g} s") from error
    if done.returncode != 0:
        said = last_words(done.stderr, done.returncode)
        raise HostsFailed(f"`{SCRIPT} up {count}` failed ({said}); it needs root (network namespaces, "
                          "`ip netns`, socat) and Redis and PostgreSQL on this machine")


def on_host(host: int, arguments: Sequence[str]) -> list[str]:
    """`arguments` as a command run on `host`. hosts.sh execs all the way down, so the process started is
    the command itself: its pid, its signals and its rusage (os.wait4) are the command's."""
    return ["bash", str(SCRIPT), "exec", str(host), *arguments]


def on_bridge(env: Mapping[str, str], redis_url: str) -> dict[str, str]:
    """`env` with its DATABASE_URL and REDIS_URL (`redis_url` when it has none) at SERVICE_ADDRESS rather
    than at loopback: the environment of every process of a variant with hosts, workers and clients alike."""
    bridged = dict(env)
    if bridged.get("DATABASE_URL"):
        bridged["DATABASE_URL"] = _at_service_address(bridged["DATABASE_URL"])
    bridged["REDIS_URL"] = _at_service_address(bridged.get("REDIS_URL") or redis_url)
    return bridged


def _at_service_address(url: str) -> str:
    """`url` with a loopback host replaced by SERVICE_ADDRESS (user, password and port kept)."""
    parts = urlsplit(url)
    if parts.hostname not in LOOPBACK:
        return url
    userinfo, at, _ = parts.netloc.rpartition("@")
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{userinfo}{at}{SERVICE_ADDRESS}{port}"))
