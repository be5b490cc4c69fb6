"""Pulp's ways to change a repository's content outside a sync, and to delete and repair its versions:
the bodies they take and the tasks they answer with (pulp_sync/content/versions.py does the work).

    POST content/file/files/            a file (multipart, as `pulp file content upload`) or an artifact's
                                        href, at a relative path; added to `repository` if given
    POST {repository href}modify/       add and remove content units: a new version
    DELETE {version href}               the version, unless it is the latest or distributed
    POST {version href}repair/          check the version's files in the store; mark lost ones missing

All run in the request (database rows and local files: no downloads). A modify and a repair are
recorded as tasks, finished when the 202 answer points to them, as an orphan cleanup is (finished.py).
Adding to a repository, deleting and repairing its versions are for its owners and admins; content
made outside a repository belongs to no one, so only admins make it (anyone else names a repository).
A unit added by its href needs the same right over its source that distributing it would: a repository
the user owns holds it already (access.addable), so that a viewer of another's repository cannot copy
its content into their own and serve it from there.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from rest_framework import serializers

from pulp_base.manifest import path_problem
from pulp_sync.api.access import addable, is_admin, may_change, visible
from pulp_sync.api.fields import RelatedHrefField
from pulp_sync.api.pulp.filters import object_of, version_of
from pulp_sync.api.pulp.finished import finished_task
from pulp_sync.api.pulp.serializers import FileContentSerializer, PulpFields
from pulp_sync.content.store import artifact_store
from pulp_sync.content.uploads import uploaded_unit
from pulp_sync.content.versions import VersionError, changed_version, repair_version
from pulp_sync.models import Artifact, FileContent, Repository, RepositoryVersion, Task

__all__ = [
    "ContentCreateSerializer",
    "ModifySerializer",
    "RepairSerializer",
    "MODIFY",
    "REPAIR",
]

MODIFY = "modify"
"""The name of a task changing a repository's content (Pulp's general_modify)."""
REPAIR = "repair"
"""The name of a task repairing a version."""
_NOT_OWNER = "You may change only the repositories you own."
_NOT_DISTRIBUTABLE = (
    "You may add only content that a repository you own holds (an upload of yours does), as adding it to a "
    "repository lets that repository's distributions serve it."
)
_EXPECTED = (VersionError, OSError)
"""What fails a change or a repair with its message alone: a refusal, or the store's file system."""


def _owned(repository: Repository | None, user: Any) -> Repository | None:
    """`repository` if `user` may change it; a 400 naming `repository` if they only see it."""
    if repository is not None and not may_change(user, repository):
        raise serializers.ValidationError({"repository": [_NOT_OWNER]})
    return repository


class ContentCreateSerializer(PulpFields, serializers.Serializer):
    """The body of a content create (pulp-cli's `content upload` and `content create`): the bytes, as a
    `file` or an existing `artifact` (admins: artifacts are theirs), at `relative_path`; `repository` to add
    the unit to (a new version of it). Pulp's `upload` (chunked) and `file_url` are refused, saying why."""

    file = serializers.FileField(required=False, help_text="The file's bytes (multipart/form-data).")
    artifact = RelatedHrefField(
        view_name="pulp-artifact-detail",
        queryset=Artifact.objects.all(),
        required=False,
        help_text="An artifact's href, instead of a file (admins).",
    )
    relative_path = serializers.CharField(help_text="Where the file is in a version and a distribution.")
    repository = RelatedHrefField(
        view_name="pulp-file-repository-detail",
        queryset=Repository.objects.all(),
        required=False,
        help_text="A repository you own to add the content to: its new version.",
    )
    upload = serializers.CharField(required=False, help_text="Not supported: chunked uploads are not served.")
    file_url = serializers.CharField(required=False, help_text="Not supported: sync a remote, or upload the file.")

    def validate_relative_path(self, relative_path: str) -> str:
        problem = path_problem(relative_path)
        if problem:
            raise serializers.ValidationError(f"relative_path {problem}")
        return relative_path

    def validate_upload(self, _: str) -> None:
        raise serializers.ValidationError("chunked uploads are not supported: give the file itself")

    def validate_file_url(self, _: str) -> None:
        raise serializers.ValidationError("content from a URL is not supported: sync a remote, or upload the file")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        user = self.context["request"].user
        if ("file" in attrs) == ("artifact" in attrs):
            raise serializers.ValidationError("Give either a file or an artifact.")
        if attrs.get("repository") is None and not is_admin(user):
            raise serializers.ValidationError({"repository": ["Name a repository you own to add the content to."]})
        _owned(attrs.get("repository"), user)
        return attrs

    def save_unit(self) -> FileContent:
        """The upload's unit (content.uploads.uploaded_unit), in the repository if one is named."""
        data = self.validated_data
        upload: UploadedFile | None = data.get("file")
        return uploaded_unit(data["relative_path"], artifact_store(), upload.chunks() if upload else (),
                             data.get("artifact"), data.get("repository"))

    def to_representation(self, unit: FileContent) -> dict[str, Any]:
        return FileContentSerializer(unit, context=self.context).data


class ContentHrefs(serializers.ListField):
    """Content units by their hrefs, of those the user sees (a 400 for any other); "*" for all of them.
    Units to add must also be ones the user may add (access.addable: content they may distribute)."""

    def __init__(self, everything: bool = False, adding: bool = False, **kwargs: Any) -> None:
        self.everything = everything
        self.adding = adding
        super().__init__(child=serializers.CharField(), required=False, **kwargs)

    def to_internal_value(self, hrefs: Any) -> list[int] | None:  # type: ignore[override]
        listed = super().to_internal_value(hrefs)
        if self.everything and listed == ["*"]:
            return None
        user = self.context["request"].user
        seen = visible(FileContent.objects.all(), user)
        try:
            pks = [object_of(href, "pulp-file-content-detail", seen, {"pk": "pk"}, "").pk for href in listed]
        except serializers.ValidationError as error:  # object_of's {parameter: [message]}
            raise serializers.ValidationError(error.detail[""]) from error  # type: ignore[call-overload]
        if self.adding:
            allowed = set(addable(FileContent.objects.filter(pk__in=pks), user).values_list("pk", flat=True))
            refused = [href for href, pk in zip(listed, pks, strict=True) if pk not in allowed]
            if refused:
                raise serializers.ValidationError(f"{_NOT_DISTRIBUTABLE} Not yours to add: {', '.join(refused)}")
        return pks


class ModifySerializer(PulpFields, serializers.Serializer):
    """The body of POST {repository href}modify/: Pulp's content changes, into a new version."""

    add_content_units = ContentHrefs(
        adding=True, help_text="Content units to add (hrefs): of repositories you own, or uploaded by you."
    )
    remove_content_units = ContentHrefs(everything=True, help_text='Content units to remove (hrefs), or ["*"].')
    base_version = serializers.CharField(
        required=False, help_text="The version to start from (an href of the repository's); its latest if not given."
    )

    def validate_base_version(self, href: str) -> RepositoryVersion:
        """A version of the repository being changed (filters.version_of, scoped to its versions)."""
        return version_of(href, "base_version", self.context["request"].user, self.context["repository"].versions.all())


class RepairSerializer(PulpFields, serializers.Serializer):
    """The body of POST {version href}repair/."""

    verify_checksums = serializers.BooleanField(
        required=False, default=True, help_text="Read each file in full to check its sha256 (else sizes only)."
    )


def modify(user: User, repository: Repository, body: ModifySerializer) -> Task:
    """The finished task of a content change: the new version it made (none if nothing changed)."""
    data = body.validated_data
    remove = data.get("remove_content_units", [])

    def change() -> dict[str, Any]:
        version = changed_version(repository, data.get("add_content_units", []), remove, data.get("base_version"))
        return {"version": None if version is None else version.number, "created_version": version}

    return finished_task(MODIFY, user, change, _EXPECTED, repository)


def repair(user: User, version: RepositoryVersion, body: RepairSerializer) -> Task:
    """The finished task of a version's repair, what it found in its report."""
    verify = body.validated_data["verify_checksums"]

    def check() -> dict[str, Any]:
        return {"report": repair_version(version, artifact_store(), verify).as_dict()}

    return finished_task(REPAIR, user, check, _EXPECTED, version.repository)
