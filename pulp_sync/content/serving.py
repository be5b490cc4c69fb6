"""What a distribution serves at a path: Pulp's content app, `/pulp/content/<base_path>/<relative path>`.

A distribution's files are the content of the version it serves (its publication's, or its repository's
latest), each under its relative path, and a manifest listing them: the publication's manifest name, or
PULP_MANIFEST for a repository's latest version. The manifest is written from the version when asked
for; versions never change, so it is the same every time. No base path lies under another's (the API
refuses it), so a path names at most one distribution.

A distribution serves only while one of its owners may still distribute what it serves
(permissions.may_serve), checked at every request: one query beside the distribution's own, whatever it
serves.
"""

from __future__ import annotations

from dataclasses import dataclass

from pulp_base.manifest import MANIFEST_NAME, manifest_text, path_problem
from pulp_sync.models import Artifact, Distribution, FileContent, RepositoryVersion
from pulp_sync.permissions import may_serve

__all__ = ["Served", "distribution_at", "served", "version_manifest", "base_path_problem"]


@dataclass(frozen=True)
class Served:
    """What a path names: a manifest's text, or an artifact (which may be marked missing)."""

    manifest: str | None = None
    artifact: Artifact | None = None


def distribution_at(path: str) -> tuple[Distribution, str] | None:
    """The distribution whose base path starts `path`, and the rest of the path; None if none does."""
    segments = path.strip("/").split("/")
    prefixes = ["/".join(segments[:end]) for end in range(1, len(segments) + 1)]
    at = Distribution.objects.filter(base_path__in=prefixes).select_related("publication__repository_version")
    found = at.order_by("-base_path").first()
    if found is None:
        return None
    return found, path.strip("/")[len(found.base_path) :].lstrip("/")


def served(distribution: Distribution, relative_path: str) -> Served | None:
    """What `relative_path` names in what `distribution` serves now; None if nothing, as for a
    distribution none of whose owners may distribute it any more (permissions.may_serve)."""
    if not may_serve(distribution):
        return None
    version = distribution.served_version()
    if version is None:
        return None
    publication = distribution.publication
    manifest = publication.manifest if publication is not None else MANIFEST_NAME
    if relative_path == manifest:
        return Served(manifest=version_manifest(version))
    unit = version.content.filter(relative_path=relative_path).select_related("artifact").first()
    return None if unit is None else Served(artifact=unit.artifact)


def version_manifest(version: RepositoryVersion) -> str:
    """The PULP_MANIFEST listing the version's content, by relative path."""
    units = FileContent.objects.filter(versions=version).select_related("artifact").order_by("relative_path")
    return manifest_text(_Line(unit) for unit in units.iterator(chunk_size=2000))


class _Line:
    """A content unit as a manifest line names it."""

    def __init__(self, unit: FileContent) -> None:
        self.relative_path = unit.relative_path
        self.sha256 = unit.artifact.sha256
        self.size = unit.artifact.size


def base_path_problem(base_path: str, others: list[str]) -> str | None:
    """What makes `base_path` unfit beside the `others` distributions' (None if nothing): it must be a
    relative path (the manifest's rules for one), and neither lie under another nor hold another under it,
    so that a URL names one distribution. The message does not tell the other's base path: it may be a
    distribution the user does not see (base paths are unique across the installation, as names are)."""
    problem = path_problem(base_path)
    if problem:
        return f"base_path {problem}"
    for other in others:
        if base_path.startswith(other + "/") or other.startswith(base_path + "/"):
            return f"base_path {base_path!r} lies under, or holds, another distribution's base path: choose another"
    return None
