"""A repository's versions changed outside a sync: a new version made from another by adding and removing
content (Pulp's `modify`, and an upload into a repository), a version deleted, a version's files repaired.

Every new version is numbered after the latest under the repository's row lock, as a sync's is
(pulp_sync/sync/pipeline.py), so versions made here and by syncs never share a number. A version holds whole
content units, never a difference to the one before, so deleting one leaves the others as they were.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from pulp_sync import defaults
from pulp_sync.content.bulk import batches, insert_rows
from pulp_sync.content.store import ArtifactStore
from pulp_sync.content.verify import intact, mark_lost
from pulp_sync.database import retried
from pulp_sync.models import Artifact, FileContent, Repository, RepositoryContent, RepositoryVersion

__all__ = [
    "VersionError",
    "PathConflict",
    "VersionInUse",
    "Repair",
    "changed_version",
    "delete_version",
    "repair_version",
]


class VersionError(Exception):
    """A version could not be made or deleted as asked; the message says why and what to do."""


class PathConflict(VersionError):
    """Two content units to add share a relative path: a version holds one file per path."""


class VersionInUse(VersionError):
    """The version is the repository's latest, or a distribution serves it: deleting it would change
    what a repository holds or a URL serves."""


def changed_version(
    repository: Repository,
    add: Collection[int] = (),
    remove: Collection[int] | None = (),
    base: RepositoryVersion | None = None,
) -> RepositoryVersion | None:
    """The repository's new version: `base`'s content (the latest version's if None) without `remove`
    (every unit if None) and with `add` (content ids); an added unit replaces the one of the same relative
    path, as in Pulp's file plugin. None when that is what the latest version already holds."""
    _check_paths(add)

    def make() -> RepositoryVersion | None:
        with transaction.atomic():
            locked = Repository.objects.select_for_update().get(pk=repository.pk)
            latest = locked.latest_version()
            held = _content_of(base or latest) if remove is not None else set()
            held = _replaced(held - set(remove or ()), add) | set(add)
            if held == _content_of(latest):
                return None
            return _new_version(locked, latest, held)

    return retried(make)


def _check_paths(add: Collection[int]) -> None:
    paths = list(FileContent.objects.filter(pk__in=add).values_list("relative_path", flat=True))
    twice = sorted({path for path in paths if paths.count(path) > 1})
    if twice:
        raise PathConflict(f"more than one content unit to add has the relative path {twice[0]!r}: add one of them")


def _content_of(version: RepositoryVersion | None) -> set[int]:
    return set() if version is None else set(version.content.values_list("pk", flat=True))


def _replaced(held: set[int], add: Collection[int]) -> set[int]:
    """`held` without the units whose relative path an added unit takes."""
    paths = set(FileContent.objects.filter(pk__in=add).values_list("relative_path", flat=True))
    for batch in batches(sorted(held), defaults.LOOKUP_BATCH):
        held -= set(FileContent.objects.filter(pk__in=batch, relative_path__in=paths).values_list("pk", flat=True))
    return held


def _new_version(repository: Repository, latest: RepositoryVersion | None, content: set[int]) -> RepositoryVersion:
    version = RepositoryVersion.objects.create(repository=repository, number=latest.number + 1 if latest else 1)
    for batch in batches(((version.pk, pk) for pk in sorted(content)), defaults.INSERT_BATCH):
        insert_rows(RepositoryContent, ("version", "content"), batch)
    return version


def delete_version(version: RepositoryVersion) -> None:
    """Delete a version and its publications, unless it is in use (VersionInUse): the latest is what the
    repository holds, and what the next version is numbered after (deleting it would give its number to
    other content); a distributed publication of it is what a URL serves (delete or point the
    distribution elsewhere first)."""
    with transaction.atomic():
        locked = Repository.objects.select_for_update().get(pk=version.repository_id)
        latest = locked.latest_version()
        if latest is not None and latest.pk == version.pk:
            raise VersionInUse(
                f"version {version.number} is the latest of repository {locked.name}: it is what the repository "
                "holds; only earlier versions can be deleted"
            )
        served = version.publications.filter(distributions__isnull=False).values_list("distributions__name", flat=True)
        if served:
            raise VersionInUse(
                f"distribution {served[0]!r} serves a publication of version {version.number}: point it elsewhere "
                "or delete it first"
            )
        version.delete()


@dataclass
class Repair:
    """What repairing a version found: its artifacts checked, and those lost or damaged (sha256s), which
    are now marked missing (a damaged file deleted) so that the next sync listing them fetches them."""

    checked: int = 0
    missing: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def repair_version(version: RepositoryVersion, store: ArtifactStore, verify_checksums: bool = True) -> Repair:
    """Check each artifact of the version against the store, as `pulp-sync verify --repair` does for all:
    there, of its size and (`verify_checksums`) its sha256 read in full; mark each one that is not missing."""
    found = Repair()
    artifacts: QuerySet[Artifact] = Artifact.objects.filter(contents__versions=version).distinct().order_by("pk")
    for artifact in artifacts.iterator(chunk_size=defaults.LOOKUP_BATCH):
        found.checked += 1
        path = store.path_for(artifact.sha256)
        if not store.holds(path):  # absent, or reached through a link: never read or deleted
            found.missing.append(artifact.sha256)
        elif not intact(path, artifact.sha256, artifact.size, read=verify_checksums):
            found.corrupt.append(artifact.sha256)
    mark_lost(store, found.missing, found.corrupt)
    return found
