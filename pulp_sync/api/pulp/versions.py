"""What a repository version added and removed: Pulp reports both, pulp-sync stores only what each holds.

A version's changes are counted against the version before it in its repository (none before the
first: all it holds was added), in the database, without loading the content.
"""

from __future__ import annotations

from django.db.models import QuerySet

from pulp_sync.models import FileContent, RepositoryVersion

__all__ = ["added_content", "removed_content"]


def added_content(version: RepositoryVersion) -> QuerySet[FileContent]:
    """The content the version holds and the one before it did not."""
    held = version.content.all()
    previous = _previous(version)
    return held if previous is None else held.exclude(pk__in=previous.content.values("pk"))


def removed_content(version: RepositoryVersion) -> QuerySet[FileContent]:
    """The content the version before it held and the version does not."""
    previous = _previous(version)
    if previous is None:
        return FileContent.objects.none()
    return previous.content.exclude(pk__in=version.content.values("pk"))


def _previous(version: RepositoryVersion) -> RepositoryVersion | None:
    earlier = RepositoryVersion.objects.filter(repository=version.repository_id, number__lt=version.number)
    return earlier.order_by("-number").first()
