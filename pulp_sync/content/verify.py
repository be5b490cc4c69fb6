"""`pulp-sync verify [--repair]`: whether the artifact store and the database agree, and what does not.

    every Artifact row    its file is there, with the recorded size and sha256 (read in full)
    every stored file     has a row, and sits at the path its digest names
    the temp dir          holds only the workspaces of syncs still running
    every version         names only artifacts that are in the store

`--repair` removes orphan files and what dead syncs left in the temp dir, and marks lost or damaged
artifacts missing (deleting a damaged file), so that the next sync listing them fetches them again.
A version naming a missing artifact stays a problem until such a sync has run.

It may run beside syncs: files are listed before their rows are read, and a sync records a row
before it moves the file into place, so a file being adopted is never taken for an orphan.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from django.db.models import Count, Sum

from pulp_sync.content.bulk import batches
from pulp_sync.content.store import ArtifactStore
from pulp_sync.models import Artifact, RepositoryVersion
from pulp_sync.progress import NullProgress, ProgressSink

__all__ = ["Verification", "verify_store", "intact", "mark_lost"]

_BATCH = 500
"""Digests per database query (below every engine's limit on query parameters)."""


@dataclass
class Verification:
    """What `verify_store` found and, with repair, did. `problems()` is what is still wrong."""

    artifacts: int = 0
    bytes: int = 0
    files: int = 0
    versions: int = 0
    missing: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    in_use: int = 0
    marked_missing: int = 0
    incomplete_versions: list[str] = field(default_factory=list)
    repaired: bool = False

    def problems(self) -> int:
        """How many things are wrong now: after a repair, only versions waiting for a sync to refill them."""
        if self.repaired:
            return len(self.incomplete_versions)
        found = (self.missing, self.corrupt, self.orphans, self.temp_files, self.incomplete_versions)
        return sum(len(items) for items in found)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready values, with `problems`."""
        return {**asdict(self), "problems": self.problems()}

    def counts(self) -> list[tuple[str, int, str]]:
        """(what, how many, what repair did or would do) for each check, for people."""
        fix = "removed" if self.repaired else "--repair removes them"
        mark = "marked missing" if self.repaired else "--repair marks them missing"
        scrap = "deleted, marked missing" if self.repaired else "--repair deletes them, marks them missing"
        return [
            ("missing artifacts", len(self.missing), mark),
            ("corrupt artifacts", len(self.corrupt), scrap),
            ("orphan files", len(self.orphans), fix),
            ("temp files left behind", len(self.temp_files), fix),
            ("workspaces of running syncs", self.in_use, "left alone"),
            ("artifacts marked missing", self.marked_missing, "the next sync listing them fetches them"),
            ("incomplete repository versions", len(self.incomplete_versions), "sync their repositories again"),
        ]


def verify_store(store: ArtifactStore, repair: bool = False, progress: ProgressSink | None = None) -> Verification:
    """Check the store against the database (see the module's docstring); with `repair`, fix what can be.
    `progress` follows the longest check, every artifact read in full: artifacts and bytes, to do and done."""
    found = Verification(repaired=repair)
    _check_temp_dir(store, found)
    _check_files(store, found)
    _check_artifacts(store, found, progress or NullProgress())
    if repair:
        _repair(store, found)
    _check_versions(found)
    return found


def _check_temp_dir(store: ArtifactStore, found: Verification) -> None:
    stale, in_use = store.temp_entries()
    found.in_use = len(in_use)
    found.temp_files = [str(path) for entry in stale for path in _files_in(entry)]
    if found.repaired:
        for entry in stale:
            store.remove_temp_entry(entry)


def _files_in(entry: Path) -> list[Path]:
    """The entry itself if it is a file, else the files under it (an empty folder counts as one)."""
    if not entry.is_dir() or entry.is_symlink():
        return [entry]
    return [path for path in entry.rglob("*") if not path.is_dir()] or [entry]


def _check_files(store: ArtifactStore, found: Verification) -> None:
    """Every file outside the temp dir has a row, a batch of files at a time (memory stays flat)."""
    for batch in batches(store.stored_files(), _BATCH):
        found.files += len(batch)
        named = {digest for _, digest in batch if digest is not None}
        recorded = set(Artifact.objects.filter(sha256__in=named).values_list("sha256", flat=True))
        found.orphans += [str(path) for path, digest in batch if digest is None or digest not in recorded]


def _check_artifacts(store: ArtifactStore, found: Verification, progress: ProgressSink) -> None:
    """Every row's file is there (unless the row says it is missing) with the right size and digest."""
    rows = Artifact.objects.order_by("pk").values_list("sha256", "size", "missing")
    totals = rows.aggregate(count=Count("pk"), size=Sum("size"))
    progress.start(totals["count"], totals["size"] or 0)
    try:
        for sha256, size, missing in rows.iterator(chunk_size=2000):
            _check_artifact(store, found, sha256, size, missing)
            progress.advance(1, size)
    finally:
        progress.finish()


def _check_artifact(store: ArtifactStore, found: Verification, sha256: str, size: int, missing: bool) -> None:
    found.artifacts += 1
    found.bytes += size
    found.marked_missing += missing
    path = store.path_for(sha256)
    if not store.holds(path):  # absent, or reached through a link: not in the store, never read or deleted
        if not missing:
            found.missing.append(sha256)
    elif not intact(path, sha256, size):
        found.corrupt.append(sha256)


def intact(path: Path, sha256: str, size: int, read: bool = True) -> bool:
    """Whether the file has the size and, read in full (unless not `read`), the sha256 it should."""
    if path.stat().st_size != size:
        return False
    if not read:
        return True
    with path.open("rb") as body:
        return hashlib.file_digest(body, "sha256").hexdigest() == sha256


def mark_lost(store: ArtifactStore, missing: list[str], corrupt: list[str]) -> int:
    """Delete the damaged files (`corrupt` sha256s) and mark them and the lost ones (`missing`) missing, so
    that the next sync listing them fetches them; how many rows that changed."""
    for sha256 in corrupt:
        store.path_for(sha256).unlink(missing_ok=True)
    marked = 0
    for batch in batches(missing + corrupt, _BATCH):
        marked += Artifact.objects.filter(sha256__in=batch, missing=False).update(missing=True)
    return marked


def _repair(store: ArtifactStore, found: Verification) -> None:
    """Remove orphans, delete damaged files, and mark every lost or damaged artifact missing."""
    for orphan in found.orphans:
        Path(orphan).unlink(missing_ok=True)
    found.marked_missing += mark_lost(store, found.missing, found.corrupt)


def _check_versions(found: Verification) -> None:
    """The versions naming an artifact that is not in the store: marked missing, or found lost or damaged."""
    versions = RepositoryVersion.objects.select_related("repository")
    found.versions = versions.count()
    incomplete = set(versions.filter(memberships__content__artifact__missing=True).distinct())
    if not found.repaired:
        for batch in batches(found.missing + found.corrupt, _BATCH):
            incomplete.update(versions.filter(memberships__content__artifact__sha256__in=batch).distinct())
    found.incomplete_versions = sorted(f"{v.repository.name} version {v.number}" for v in incomplete)
