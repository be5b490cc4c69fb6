"""Orphan cleanup: delete the content no repository version holds, then the artifacts (rows and files)
no content names, as Pulp's `orphans/cleanup/` does (the API's task around it: api/pulp/orphans.py).

A sync reuses the artifacts the database has; one planning while the cleanup deletes them would fail
when it makes its version, so the cleanup refuses to run while a sync is unfinished. That check is in
the cleanup's transaction: on sqlite no sync can be queued until it commits; on a server database one
queued meanwhile may fail (and can be synced again), never corrupt anything.

Rows go first, in one transaction; files after the commit, each only if no row names its digest by
then (a sync may have fetched it again). A crash between the two leaves orphan files, which
`pulp-sync verify --repair` removes.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from pulp_sync.content.bulk import batches
from pulp_sync.content.store import ArtifactStore
from pulp_sync.models import UNFINISHED_TASK_STATES, Artifact, FileContent, Task

__all__ = ["delete_orphans", "SyncsUnfinished"]

_BATCH = 500
"""Rows per delete (below every engine's limit on query parameters)."""


class SyncsUnfinished(Exception):
    """Syncs are waiting or running: the cleanup could delete what they are about to use."""


def delete_orphans(store: ArtifactStore, only: list[int] | None = None) -> dict[str, int]:
    """Delete orphan content and artifacts (see the module's docstring), of `only` these content units
    (ids) and their artifacts if given; how many of each, as Pulp's task reports them."""
    content, artifacts = FileContent.objects.all(), Artifact.objects.all()
    if only is not None:
        content = content.filter(pk__in=only)
        artifacts = artifacts.filter(pk__in=list(content.values_list("artifact", flat=True)))
    with transaction.atomic():
        syncs = Task.objects.filter(name="sync", state__in=UNFINISHED_TASK_STATES).count()
        if syncs:
            raise SyncsUnfinished(f"{syncs} sync task(s) waiting or running: clean up orphans once they finish")
        content_removed = _delete(content.filter(memberships__isnull=True))
        orphans = artifacts.filter(contents__isnull=True)
        digests = list(orphans.values_list("sha256", flat=True))
        artifacts_removed = _delete(orphans)
    for batch in batches(digests, _BATCH):
        for digest in set(batch) - set(Artifact.objects.filter(sha256__in=batch).values_list("sha256", flat=True)):
            store.path_for(digest).unlink(missing_ok=True)
    return {"content_removed": content_removed, "artifacts_removed": artifacts_removed}


def _delete(orphans: QuerySet[Any]) -> int:
    """Delete the orphans a batch of ids at a time, each batch still filtered as orphans; how many."""
    removed = 0
    for batch in batches(list(orphans.values_list("pk", flat=True)), _BATCH):
        removed += orphans.filter(pk__in=batch).delete()[0]
    return removed
