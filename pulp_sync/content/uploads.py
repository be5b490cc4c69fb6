"""A file given to the service (Pulp's `content upload`) made an artifact in the store and a content unit.

The bytes are written into a workspace of the store's temp dir while they are hashed, then adopted by
the one atomic rename a sync uses, under the row protocol of Artifact: the row is recorded missing
before the file moves into place and cleared after, in one transaction, so a crash leaves no row
claiming an absent file (an orphan file at worst, which `pulp-sync verify --repair` removes). Bytes the
store already holds are not written again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from django.db import transaction

from pulp_sync.content.store import ArtifactStore
from pulp_sync.content.versions import changed_version
from pulp_sync.models import Artifact, FileContent, Repository

__all__ = ["uploaded_unit", "stored_artifact", "content_unit"]


def uploaded_unit(relative_path: str, store: ArtifactStore, chunks: Iterable[bytes] = (),
                  artifact: Artifact | None = None, repository: Repository | None = None) -> FileContent:
    """The content unit of an upload: `chunks` stored as an artifact (or an `artifact` the store has),
    named at `relative_path`, and added to `repository` as its next version if one is given. One
    transaction, so that no orphan cleanup takes the artifact before a unit names it."""
    with transaction.atomic():
        unit = content_unit(artifact or stored_artifact(chunks, store), relative_path)
        if repository is not None:
            changed_version(repository, add=[unit.pk])
    return unit


def stored_artifact(chunks: Iterable[bytes], store: ArtifactStore) -> Artifact:
    """The artifact of the bytes `chunks` yield, put in the store unless it holds them already."""
    with store.workspace("upload") as workspace:
        temp_file = workspace / "upload"
        digest, size = hashlib.sha256(), 0
        with temp_file.open("wb") as out:
            for chunk in chunks:
                digest.update(chunk)
                size += out.write(chunk)
        with transaction.atomic():
            artifact, made = Artifact.objects.select_for_update().get_or_create(
                sha256=digest.hexdigest(),
                defaults={"size": size, "relative_path": store.relative_path_for(digest.hexdigest()), "missing": True},
            )
            if made or artifact.missing:
                store.adopt(temp_file, artifact.sha256)
                Artifact.objects.filter(pk=artifact.pk).update(missing=False)
                artifact.missing = False
    return artifact


def content_unit(artifact: Artifact, relative_path: str) -> FileContent:
    """The content unit naming `artifact` at `relative_path`, made if no repository had it yet."""
    unit, _ = FileContent.objects.get_or_create(
        key=FileContent.key_for(relative_path, artifact.sha256),
        defaults={"relative_path": relative_path, "artifact": artifact},
    )
    return unit
