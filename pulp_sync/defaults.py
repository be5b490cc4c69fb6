"""Defaults of the service's processes that are not Django settings (those are in settings.py)."""

from __future__ import annotations

API_BIND: str = "127.0.0.1:24817"
"""Where `pulp-sync api` listens: Pulp's own port, so pulp-cli's default configuration finds it."""

API_WORKERS: int = 2
"""gunicorn worker processes of `pulp-sync api`."""

API_THREADS: int = 32
"""Request threads per API worker (gunicorn's gthread worker). A connection that says nothing holds a
thread for at most a few seconds (then gunicorn parks it in its poller), so it takes more silent clients
than threads to slow the API, where with gunicorn's default sync worker one silent client held a whole
worker for 30 s. Threads that wait cost a little memory each; for untrusted networks, put nginx in front.
"""

API_TIMEOUT: int = 30
"""Seconds a request may run before gunicorn restarts its worker: the API never runs a sync itself, so
a request that takes this long is stuck."""

API_KEEPALIVE: int = 5
"""Seconds an idle kept-alive (or newly opened) connection waits for its next request before it is closed."""

DATABASE_TRIES: int = 4
"""Times a transaction is run before a lost deadlock (or lock wait) is an error: the first and three retries.
Sorted inserts make a deadlock between concurrent syncs rare; three in a row means something else holds
the rows, and the error says so."""

REPOSITORY_WAIT: float = 6 * 3600
"""Seconds a sync waits for another sync of the same repository to finish (PULP_SYNC_REPOSITORY_WAIT):
as long as an RQ job may run (tasks.JOB_TIMEOUT), so a second sync outwaits any first one that is still
alive, and a stuck one does not hold the queue for ever."""

WORKER_TTL: float = 30
"""Seconds a worker's heartbeat lasts (PULP_SYNC_WORKER_TTL), as pulpcore's WORKER_TTL: it is renewed every
third of that, and the other workers fail the tasks of one whose heartbeat lapsed (worker._Heartbeat)."""

SECRET_KEY_FILE: str = "secret_key"
"""The file under PULP_SYNC_HOME that keeps the Django SECRET_KEY made on the first start, when
PULP_SYNC_SECRET_KEY is not set (settings._secret_key)."""
