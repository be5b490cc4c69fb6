"""Redis as the tasks see it: the connection, this installation's RQ queue and the workers' heartbeats.

Apart from what the tasks do (pulp_sync/tasking/tasks.py), as rq keeps `connections.py` and
`worker_registration.py` apart from its jobs: the worker, the shards' jobs, the API's status and the
command line's Redis errors need Redis, not the sync, and import this module alone.

A worker's heartbeat is a key that lapses: `still_alive` renews it (worker._Heartbeat), `beating` reads
it, and a task whose worker's key lapsed counts as abandoned (reaping.reap_abandoned_tasks).
"""

from __future__ import annotations

import functools
import hashlib

from django.conf import settings
from redis import Redis
from rq import Queue, Worker
from rq.worker import BaseWorker

from pulp_base.process_names import this_process
from pulp_sync import database
from pulp_sync.messages import redact

__all__ = ["redis_connection", "redis_location", "queue_name", "queue_workers", "still_alive", "beating"]

_ALIVE_KEY = "pulp-sync:alive:"
"""Redis key prefix of a worker's heartbeat: it exists while the worker named after it lives."""


def redis_connection() -> Redis:
    """The Redis of REDIS_URL; connecting gives up after a few seconds rather than hanging."""
    return Redis.from_url(settings.REDIS_URL, socket_connect_timeout=5)


def redis_location() -> str:
    """REDIS_URL for messages, with its password (if any) hidden."""
    return redact(settings.REDIS_URL)


def queue_name() -> str:
    """The RQ queue of this installation's syncs: PULP_SYNC_QUEUE, or `pulp-sync-` and a digest of the
    database's identity (database.identity), so that two installations sharing one Redis never take
    each other's jobs while every worker of one installation, on any host, finds its jobs."""
    return settings.PULP_SYNC_QUEUE or _installation_queue()


@functools.cache
def queue_workers() -> list[BaseWorker]:
    """The RQ workers registered on this service's queue, by name (RedisError if Redis does not answer):
    `status/` and `workers/` list them."""
    return sorted(Worker.all(queue=Queue(queue_name(), connection=redis_connection())), key=lambda w: w.name)


def _installation_queue() -> str:
    return "pulp-sync-" + hashlib.sha256(database.identity().encode()).hexdigest()[:12]


def still_alive(connection: Redis, worker: str, ttl: float) -> None:
    """Record that `worker` lives, for `ttl` seconds (see worker._Heartbeat)."""
    connection.set(_ALIVE_KEY + worker, this_process(), px=int(ttl * 1000))


def beating(connection: Redis, worker: str) -> bool:
    """Whether `worker`'s heartbeat (still_alive) has not lapsed."""
    return bool(connection.exists(_ALIVE_KEY + worker))
