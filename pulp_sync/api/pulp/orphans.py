"""Pulp's `orphans/cleanup/`: the cleanup (pulp_sync/content/orphans.py) run in the request that asks for
it (database deletes and file unlinks: no downloads), recorded as a task named "orphan_cleanup" that is
finished before the answer, which points to it as Pulp's does.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import ProtectedError

from pulp_sync.api.pulp.finished import finished_task
from pulp_sync.api.pulp.serializers import ORPHAN_CLEANUP
from pulp_sync.content.orphans import SyncsUnfinished, delete_orphans
from pulp_sync.content.store import artifact_store
from pulp_sync.models import Task

__all__ = ["clean_up_orphans"]


def clean_up_orphans(user: User, content: list[int] | None = None) -> Task:
    """Run an orphan cleanup as a task dispatched by `user`, here and now; the finished task (failed if
    it could not run).

    `content`: only these content units (ids) and their artifacts, of those that are orphans.
    """
    return finished_task(
        ORPHAN_CLEANUP, user, lambda: {"report": delete_orphans(artifact_store(), content)},
        (SyncsUnfinished, ProtectedError, OSError),  # ProtectedError: a sync took one meanwhile
    )
