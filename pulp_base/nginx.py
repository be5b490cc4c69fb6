"""nginx as a child process: find the binary, start it on a configuration the caller writes, on a port it
names or a free one, and know when it answers. The fixtures' nginx (fixtures/nginx.py, a remote nobody
here wrote) and the API's front (pulp_sync/api/server.py, nginx before gunicorn) both start it here.

nginx runs in the foreground (`daemon off`) as the leader of a process group of its own
(pulp_base.servers), with its prefix, pid file, logs and temporary files in a folder the caller owns, so
it needs nothing under /var and leaves nothing behind. nginx cannot listen on port 0: for "any free
port", one is picked here and nginx started on it, again with another while it was taken meanwhile.
"""

from __future__ import annotations

import grp
import http.client
import os
import pwd
import shutil
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path

from pulp_base import defaults, servers

__all__ = ["NginxNotFound", "nginx_binary", "user_directive", "listen_address", "start", "answers"]

_FALLBACK = Path("/usr/sbin/nginx")


class NginxNotFound(RuntimeError):
    """No nginx binary on this machine."""


def nginx_binary() -> Path:
    """The nginx executable: on PATH, else /usr/sbin/nginx (often not on a non-root PATH)."""
    found = shutil.which("nginx") or (str(_FALLBACK) if os.access(_FALLBACK, os.X_OK) else None)
    if found is None:
        raise NginxNotFound(
            f"nginx is neither on PATH nor at {_FALLBACK}: install it (Debian's package nginx-light; "
            "scripts/provision.sh does)"
        )
    return Path(found)


def user_directive() -> str:
    """nginx's `user` line: as root, nginx would run its workers as nobody, who can read neither a tree in
    root's temp dirs nor an owner-only artifact store; they run as the user who started it instead (root).
    Not root, nginx cannot switch users, and its workers are that user already."""
    if os.geteuid() != 0:
        return ""
    return f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};"


def listen_address(host: str, port: int) -> str:
    """What nginx's `listen` takes for host:port, IPv6 in brackets."""
    host = host.removeprefix("[").removesuffix("]")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def start(prefix: Path, write_config: Callable[[int], Path], host: str, port: int | None, *,
          dies_with_parent: bool = False) -> tuple[subprocess.Popen[bytes], int]:
    """Start nginx with the configuration `write_config(port)` writes (it returns its path), its prefix and
    start-up log in `prefix`; wait until it answers HTTP on host:port. With `port` None, a free port is
    picked, and another one while nginx finds it taken. Returns nginx and its port; raises ServerFailed
    with what nginx said, NginxNotFound without nginx."""
    binary = nginx_binary()
    log = prefix / "nginx-start.log"
    for _ in range(1 if port else defaults.NGINX_PORT_ATTEMPTS):
        chosen = port or servers.free_port(host.removeprefix("[").removesuffix("]"))
        config = write_config(chosen)
        with open(log, "wb") as output:
            command = [str(binary), "-p", str(prefix), "-c", str(config), "-e", str(prefix / "error.log")]
            process = servers.start(command, output, dies_with_parent=dies_with_parent)
        try:
            servers.wait_until(partial(answers, host, chosen), {"nginx": process}, within=defaults.NGINX_START_SECONDS,
                               what=f"nginx did not answer on {host}:{chosen}", output=lambda: servers.tail(log),
                               failure=servers.ServerFailed)
            return process, chosen
        except servers.ServerFailed:
            if process.poll() is None or "Address already in use" not in servers.tail(log):
                servers.stop_groups([process], defaults.NGINX_STOP_SECONDS)
                raise
    raise servers.ServerFailed(f"nginx could not bind a port on {host}: {servers.tail(log)}")


def answers(host: str, port: int) -> bool | None:
    """True once something answers an HTTP request on host:port (any status); None until then."""
    connection = http.client.HTTPConnection(host.removeprefix("[").removesuffix("]"), port, timeout=1)
    try:
        connection.request("GET", "/")
        connection.getresponse()
        return True
    except OSError:
        return None
    finally:
        connection.close()
