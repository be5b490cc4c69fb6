"""`workers/` in Pulp's shape, read-only: the `pulp-sync worker`s taking this service's queue, as RQ's
registry in Redis knows them (`pulp worker list` and `pulp worker show` read it; `status/` lists the same).

A worker is named by RQ (host.pid.suffix); its href by a UUID made from its name (uuid5), since pulp-glue takes
an href of letters, digits, - and _ only, as Pulp's UUIDs are. RQ forgets a worker that stopped, so
every worker listed is online and none is missing (Pulp keeps a stopped one, `missing`, for a while).
A task's `worker` is the href of the RQ worker that ran it (TaskSerializer).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.urls import reverse
from redis.exceptions import RedisError
from rest_framework import serializers, status
from rest_framework.exceptions import APIException

from pulp_sync.api.pulp.filters import QueryFilter, truth
from pulp_sync.tasking.queues import queue_workers

__all__ = ["WorkerSerializer", "WORKER_FILTERS", "online_workers", "worker_id", "worker_href", "RedisDown"]


class WorkerSerializer(serializers.Serializer):
    pulp_href = serializers.SerializerMethodField()
    name = serializers.CharField()
    last_heartbeat = serializers.DateTimeField(allow_null=True)
    online = serializers.BooleanField(help_text="Always true: RQ forgets a worker that stopped.")
    missing = serializers.BooleanField(help_text="Always false (see online).")
    current_task = serializers.CharField(allow_null=True, help_text="Null: pulp-sync does not track it.")
    versions = serializers.DictField(child=serializers.CharField())

    def get_pulp_href(self, row: dict[str, Any]) -> str:
        return worker_href(row["name"])


def worker_href(name: str) -> str:
    """The href of the worker named `name`."""
    return reverse("pulp-worker-detail", kwargs={"pk": worker_id(name)})


def worker_id(name: str) -> str:
    """The id in the href of the worker named `name`: the same on every call, in every process."""
    return str(uuid.uuid5(_WORKER_IDS, name))


_WORKER_IDS = uuid.UUID("5b0e8d2a-52f4-4f4c-9c36-1f0a4c3f2b77")
"""The namespace of the workers' ids (uuid5): any fixed UUID serves; this one is pulp-sync's."""


def online_workers() -> list[dict[str, Any]]:
    """The workers registered on the queue as WorkerSerializer shows them, by name; a 503 if Redis does not answer."""
    try:
        found = queue_workers()
    except RedisError as error:
        raise RedisDown from error
    return [{"name": worker.name, "last_heartbeat": worker.last_heartbeat, "online": True, "missing": False,
             "current_task": None, "versions": {}} for worker in found]


class RedisDown(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "Redis does not answer, so the workers cannot be listed: see status/"


def _named(match: Any) -> Any:
    """A filter of the rows by their name: `match(name, value)`."""
    return lambda rows, values, _: [row for row in rows if match(row["name"], values[0])]


def _flag(key: str) -> Any:
    """A filter of the rows by a true/false column, the value as Pulp's filters take it."""
    return lambda rows, values, _: [row for row in rows if row[key] == truth(values[0])]


WORKER_FILTERS = (
    QueryFilter("name", _named(str.__eq__), "Filter results where name matches value"),
    QueryFilter("name__contains", _named(lambda name, part: part in name),
                "Filter results where name contains value"),
    QueryFilter("name__icontains", _named(lambda name, part: part.lower() in name.lower()),
                "Filter results where name contains value, whatever the case"),
    QueryFilter("online", _flag("online"), "Filter results where online matches value", type="boolean"),
    QueryFilter("missing", _flag("missing"), "Filter results where missing matches value", type="boolean"),
)
"""The filters of `workers/`, as Pulp's: by name, and online or missing."""
