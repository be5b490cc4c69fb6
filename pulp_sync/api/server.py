"""`pulp-sync api`: nginx on the bind address before gunicorn on a private unix socket, started, supervised
and stopped as one; or gunicorn alone, behind a proxy of the operator's (`--behind-proxy`).

nginx owns every bound that faces a client (pulp_sync/api/proxy.py), as in Pulp's own installations: gunicorn
never talks to a client, so its threads wait on the database and Redis only. The two run as children of
the command, each the leader of a process group of its own (pulp_base.servers):
- gunicorn first, on `api.sock` in a folder only the service's user may enter (mode 0700, under the
  temporary directory, short enough for the 108-byte limit of a socket's path), which also holds nginx's
  configuration, log and temporary files; then nginx, on the bind address (a free port for port 0);
- the announced URLs are nginx's, printed once both answer;
- either one exiting ends the command with a line naming it (exit status 1); SIGTERM or SIGINT stops both
  (nginx's fast stop, which does not wait for slow readers; gunicorn's workers get API_STOP_SECONDS to end
  their requests) and removes the folder; a SIGKILLed command leaves neither behind, for the kernel sends
  each SIGTERM when their parent dies.
- nginx's workers run as the service's user (as root, its `user` line says so; otherwise they are that
  user already), so they read the owner-only artifact store and the socket as its owner.
"""

from __future__ import annotations

import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from subprocess import Popen
from types import FrameType
from typing import Any

from django.conf import settings
from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from pulp_base import nginx, servers
from pulp_sync import defaults
from pulp_sync.api.proxy import FrontSettings, render
from pulp_sync.errors import ApiFailed

__all__ = ["ApiServer", "serve", "serve_behind_proxy"]

_SOCKET = "api.sock"
_PROBE = b"GET /pulp/api/v3/ HTTP/1.0\r\nHost: localhost\r\n\r\n"


class ApiServer(BaseApplication):
    """gunicorn with our settings instead of its command line; each worker imports the app itself."""

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for name, value in self._options.items():
            self.cfg.set(name, value)

    def load(self) -> Callable[..., Any]:
        from pulp_sync.api.wsgi import application

        return application


def serve_behind_proxy(bind: str, workers: int, threads: int) -> None:
    """gunicorn alone on `bind` (`unix:PATH` or host:port) until SIGTERM or SIGINT: for a proxy before it,
    which must own the deadlines and bounds that nginx has in `pulp-sync api` (docs/api.md)."""
    ApiServer(
        {
            "bind": bind,
            "workers": workers,
            "worker_class": "gthread",
            "threads": threads,
            "timeout": defaults.API_TIMEOUT,
            "graceful_timeout": defaults.API_STOP_SECONDS,
            "keepalive": defaults.API_KEEPALIVE,
            "proc_name": "pulp-sync-api",
            "when_ready": _announce_for_proxy,
            # gunicorn's control socket is one path per user: two servers would fight over it, and we do not use it.
            "control_socket_disable": True,
        }
    ).run()


def _announce_for_proxy(arbiter: Arbiter) -> None:
    """A line with where gunicorn listens for the proxy; the API's URLs, if that is a TCP address."""
    for listener in arbiter.LISTENERS:
        where = str(listener)
        if where.startswith("unix:"):
            print(f"pulp-sync API for a proxy on {where}", flush=True)
        else:
            _announce(where)


def serve(bind: str, workers: int, threads: int) -> None:
    """nginx on `bind` (host:port; port 0 picks a free one) before gunicorn, as one, until SIGTERM or SIGINT.
    Raises ApiFailed when either does not start or exits; NginxNotFound without nginx."""
    host, _, port = bind.rpartition(":")
    nginx.nginx_binary()  # NginxNotFound before anything starts
    with _private_folder() as folder, _stopped_together() as children:
        children["gunicorn"] = _start_gunicorn(folder / _SOCKET, workers, threads)
        write = partial(_write_config, folder, host, workers)
        try:
            children["nginx"], chosen = nginx.start(folder, write, host, int(port) or None, dies_with_parent=True)
        except servers.ServerFailed as error:
            raise ApiFailed(f"nginx did not start: {error}") from error
        print(f"nginx's log: {folder / 'error.log'}", file=sys.stderr, flush=True)
        _announce(f"http://{host}:{chosen}")
        _supervise(children, folder)


@contextmanager
def _private_folder() -> Iterator[Path]:
    """A new folder only this user may enter (mkdtemp's 0700), whose socket path fits the kernel's limit;
    removed afterwards."""
    base = tempfile.gettempdir()
    if len(f"{base}/pulp-sync-api-xxxxxxxx/{_SOCKET}") > defaults.API_SOCKET_PATH_BYTES:
        base = "/tmp"
    folder = Path(tempfile.mkdtemp(prefix="pulp-sync-api-", dir=base))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _stopped_together() -> Iterator[dict[str, Popen[bytes]]]:
    """The children by name, each stopped (SIGTERM, SIGKILL after API_STOP_SECONDS) when the block ends,
    however it ends; SIGTERM ends the block as Ctrl-C does."""
    children: dict[str, Popen[bytes]] = {}
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield children
    except KeyboardInterrupt:
        pass  # asked to stop: the children are stopped below, and the command ends normally
    finally:
        asked = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGTERM, signal.SIGINT)}
        servers.stop_groups(list(children.values()), defaults.API_STOP_SECONDS)  # a second signal waits for it
        signal.signal(signal.SIGINT, asked[signal.SIGINT])
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _start_gunicorn(path: Path, workers: int, threads: int) -> Popen[bytes]:
    """gunicorn behind nginx (`pulp-sync api --behind-proxy`), its output on this command's stderr, and
    once it answers on its socket."""
    command = [sys.executable, "-m", "pulp_sync", "api", "--behind-proxy", str(path),
               "--accel-redirect", defaults.API_CONTENT_LOCATION, "--workers", str(workers), "--threads", str(threads)]
    gunicorn = servers.start(command, sys.stderr.fileno(), dies_with_parent=True)
    servers.wait_until(partial(_answers_on, path), {"gunicorn": gunicorn}, within=defaults.API_START_SECONDS,
                       what="gunicorn did not answer on its socket", output=lambda: "(its output is above)",
                       failure=ApiFailed)
    return gunicorn


def _answers_on(path: Path) -> bool | None:
    """True once gunicorn answers an HTTP request on the unix socket `path` (any status); None until then."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        try:
            probe.connect(str(path))
            probe.sendall(_PROBE)
            return True if probe.recv(16).startswith(b"HTTP/") else None
        except OSError:
            return None


def _write_config(folder: Path, host: str, workers: int, port: int) -> Path:
    config = folder / "nginx.conf"
    config.write_text(render(FrontSettings.from_settings(), prefix=folder, socket=folder / _SOCKET, host=host,
                             port=port, workers=workers, store=settings.PULP_SYNC_ARTIFACTS))
    return config


def _announce(base: str) -> None:
    """Lines on stdout with the APIs' URLs: for people and for scripts. The deprecated API's comes first, as
    it always has (scripts take the first `http://.../api/v3/`)."""
    print(f"pulp-sync API at {base}/api/v3/ (deprecated)", flush=True)
    print(f"Pulp 3 API at {base}/pulp/api/v3/", flush=True)


def _supervise(children: Mapping[str, Popen[bytes]], folder: Path) -> None:
    """Wait until a child exits (ApiFailed, naming it and quoting nginx's log) or SIGTERM or SIGINT (returns)."""
    while True:
        for name, child in children.items():
            if child.poll() is not None:
                said = f"; its log: {servers.tail(folder / 'error.log')}" if name == "nginx" else ""
                raise ApiFailed(f"{name} exited with status {child.returncode}, so the API stopped{said}")
        time.sleep(defaults.API_POLL_SECONDS)
