"""`pulp-sync api`: gunicorn serving pulp_sync.wsgi, configured through gunicorn's BaseApplication.

The worker class is gthread with a front of our own (pulp_sync.api.front.BufferingWorker): a thread gets a
connection only once its whole request is in, read by the worker's main loop, and a client that does not
send it within the header and body deadlines gets 408. gunicorn's default sync worker gave each connection
a whole process until its request was read (two silent clients held a two-worker API for 30 s), and plain
gthread a thread (80 clients sending part of a request held every thread). This is what nginx or Apache
before gunicorn does in Pulp's installations, without a second server to run: the command line, the
worker processes and the announced URLs stay as they were (docs/reliability.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter

from pulp_sync import defaults
from pulp_sync.api.front import BufferingWorker

__all__ = ["ApiServer", "serve"]


class ApiServer(BaseApplication):
    """gunicorn with our settings instead of its command line; each worker imports the app itself."""

    def __init__(self, options: dict[str, Any]) -> None:
        self._options = options
        super().__init__()

    def load_config(self) -> None:
        for name, value in self._options.items():
            self.cfg.set(name, value)

    def load(self) -> Callable[..., Any]:
        from pulp_sync.wsgi import application

        return application


def serve(bind: str, workers: int, threads: int = defaults.API_THREADS) -> None:
    """Serve the API on `bind` (host:port; port 0 picks a free one) until SIGTERM or SIGINT."""
    ApiServer(
        {
            "bind": bind,
            "workers": workers,
            "worker_class": BufferingWorker,
            "threads": threads,
            "worker_connections": defaults.API_CONNECTIONS,
            "timeout": defaults.API_TIMEOUT,
            "keepalive": defaults.API_KEEPALIVE,
            "proc_name": "pulp-sync-api",
            "when_ready": _announce,
            # gunicornc's socket is one path per user: two servers would fight over it, and we do not use it.
            "control_socket_disable": True,
        }
    ).run()


def _announce(arbiter: Arbiter) -> None:
    """Lines on stdout with the APIs' URLs, once gunicorn listens: for people and for scripts. The
    deprecated API's comes first, as it always has (scripts take the first `http://.../api/v3/`)."""
    for listener in arbiter.LISTENERS:
        print(f"pulp-sync API at {listener}/api/v3/ (deprecated)", flush=True)
        print(f"Pulp 3 API at {listener}/pulp/api/v3/", flush=True)
