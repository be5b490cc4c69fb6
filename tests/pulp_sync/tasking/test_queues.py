"""pulp_sync/tasking/queues.py: this installation's queue and the workers' heartbeats, on the local Redis.

The queue of an installation without PULP_SYNC_QUEUE, shared by two on one Redis, is in test_tasks.py
(it needs two databases and a worker)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.test import override_settings
from redis import Redis

from pulp_sync.tasking.queues import beating, queue_name, redis_connection, redis_location, still_alive


@pytest.fixture
def worker() -> Iterator[tuple[Redis, str]]:
    """A worker name of this test's own on the local Redis; its heartbeat key removed afterwards."""
    connection, name = redis_connection(), f"test-worker-{uuid.uuid4().hex[:12]}"
    try:
        yield connection, name
    finally:
        connection.delete(f"pulp-sync:alive:{name}")


def test_a_heartbeat_lasts_its_ttl_and_no_longer(worker: tuple[Redis, str]) -> None:
    connection, name = worker
    assert not beating(connection, name)

    still_alive(connection, name, ttl=30)
    assert beating(connection, name)
    assert 0 < connection.pttl(f"pulp-sync:alive:{name}") <= 30_000, "Redis ends it when the TTL lapses"


def test_pulp_sync_queue_names_the_queue() -> None:
    with override_settings(PULP_SYNC_QUEUE="operators-own"):
        assert queue_name() == "operators-own"


def test_redis_location_hides_the_password() -> None:
    with override_settings(REDIS_URL="redis://:s3cret@redis.example:6379/2"):
        assert "s3cret" not in redis_location() and "redis.example:6379/2" in redis_location()
