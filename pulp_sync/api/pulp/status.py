"""`status/` in Pulp's shape: the components and their versions, the workers taking this service's
queue, whether the database and Redis answer, and the artifact store's disk space.

pulp-cli's `pulp status` prints it, and compares its versions with the OpenAPI document's
`x-pulp-app-versions` (a difference makes it fetch the document again): both are `APP_VERSIONS`.
"""

from __future__ import annotations

import shutil
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from redis.exceptions import RedisError
from rest_framework import serializers

from pulp_sync.api.pulp.schema import APP_VERSIONS
from pulp_sync.tasking.queues import queue_workers

__all__ = ["StatusSerializer", "service_status"]

_PACKAGES = {"core": "pulp-sync", "file": "pulp-sync", "pulp_sync": "pulp-sync"}
_MODULES = {"core": "pulp_sync.api.pulp", "file": "pulp_sync.api.pulp", "pulp_sync": "pulp_sync"}


class VersionSerializer(serializers.Serializer):
    component = serializers.CharField(help_text="A component of the API (core and file are Pulp's).")
    version = serializers.CharField()
    package = serializers.CharField(help_text="The Python package providing it.")
    module = serializers.CharField()
    domain_compatible = serializers.BooleanField()


class WorkerSerializer(serializers.Serializer):
    name = serializers.CharField()
    last_heartbeat = serializers.DateTimeField(allow_null=True)
    versions = serializers.DictField(child=serializers.CharField())


class ConnectionSerializer(serializers.Serializer):
    connected = serializers.BooleanField()


class StorageSerializer(serializers.Serializer):
    total = serializers.IntegerField(help_text="Bytes on the artifact store's filesystem.")
    used = serializers.IntegerField()
    free = serializers.IntegerField()


class StatusSerializer(serializers.Serializer):
    versions = VersionSerializer(many=True)
    online_workers = WorkerSerializer(many=True, help_text="The `pulp-sync worker`s taking this API's queue.")
    database_connection = ConnectionSerializer()
    redis_connection = ConnectionSerializer()
    storage = StorageSerializer()


def service_status() -> dict[str, Any]:
    """The status as StatusSerializer shows it; a database or Redis that does not answer is reported, not raised."""
    workers = _workers()
    return {
        "versions": [_version(component, version) for component, version in APP_VERSIONS.items()],
        "online_workers": workers or [],
        "database_connection": {"connected": _database_answers()},
        "redis_connection": {"connected": workers is not None},
        "storage": _storage(),
    }


def _version(component: str, version: str) -> dict[str, Any]:
    return {
        "component": component,
        "version": version,
        "package": _PACKAGES[component],
        "module": _MODULES[component],
        "domain_compatible": False,
    }


def _workers() -> list[dict[str, Any]] | None:
    """The workers registered on the queue, from Redis; None if Redis does not answer."""
    try:
        found = queue_workers()
    except RedisError:
        return None
    return [{"name": worker.name, "last_heartbeat": worker.last_heartbeat, "versions": {}} for worker in found]


def _database_answers() -> bool:
    try:
        connection.ensure_connection()
    except DatabaseError:
        return False
    return True


def _storage() -> dict[str, int]:
    """Disk space where the artifact store is (its root made on first use, so it may not be there yet)."""
    root = settings.PULP_SYNC_ARTIFACTS
    where = root if root.exists() else settings.PULP_SYNC_HOME
    usage = shutil.disk_usage(where)
    return {"total": usage.total, "used": usage.used, "free": usage.free}
