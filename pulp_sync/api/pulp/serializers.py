"""What the Pulp dialect shows and takes: Pulp's field names and shapes over pulp-sync's models.

Hrefs are `/pulp/api/v3/...` paths, as Pulp gives them. A remote is checked exactly as in the rest
of the API (RemoteSerializer: the model's `clean`, no credentials in a URL, the remote-address
policy, PEM text); a field Pulp has and pulp-sync does not (`description`, `retain_repo_versions`, ...) is
refused, never silently dropped, and `pulp_labels` is shown as `{}` and taken only empty (labels.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from pulp_base.process_names import is_process_name
from pulp_sync.api.fields import HrefField, RelatedHrefField, VersionHrefField, version_href
from pulp_sync.api.pulp.filters import object_of
from pulp_sync.api.pulp.labels import NoLabelsField
from pulp_sync.api.pulp.versions import added_content, removed_content
from pulp_sync.api.pulp.workers import worker_href
from pulp_sync.api.serializers import HIDDEN_GIVEN_BACK, RemoteSerializer, UniqueName, shown_headers
from pulp_sync.models import Artifact, FileContent, Remote, Repository, RepositoryVersion, Task, TaskState

__all__ = [
    "FileRemoteSerializer",
    "FileRepositorySerializer",
    "FileRepositoryVersionSerializer",
    "FileContentSerializer",
    "ArtifactSerializer",
    "TaskSerializer",
    "SyncSerializer",
    "TaskCancelSerializer",
    "OrphansCleanupSerializer",
    "AsyncOperationResponseSerializer",
    "ORPHAN_CLEANUP",
    "file_version_href",
]

CONTENT_TYPE = "file.file"
"""Pulp's name for the content of a file repository, the key of a version's content summary."""
ORPHAN_CLEANUP = "orphan_cleanup"
"""The name of an orphan cleanup task."""
_POLICIES = ("immediate", "on_demand", "streamed")


class PulpFields:
    """Pulp's conventions for a dialect serializer (put it first among the bases).

    An unknown field in a request is refused ("Unexpected field"), as Pulp does; `fields` and
    `exclude_fields` query parameters (lists, or comma-separated) choose what a response shows.
    """

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields))  # type: ignore[attr-defined]
            if unknown:
                raise serializers.ValidationError({name: ["Unexpected field"] for name in unknown})
        return super().to_internal_value(data)  # type: ignore[misc]

    def to_representation(self, instance: Any) -> Any:
        shown = super().to_representation(instance)  # type: ignore[misc]
        request = self.context.get("request")  # type: ignore[attr-defined]
        if request is None or not _is_the_response(self):
            return shown
        return _selected(shown, request.query_params)


def _is_the_response(serializer: Any) -> bool:
    """Whether the serializer makes the response itself (or its list's items), not a nested part."""
    parent = serializer.parent
    return parent is None or isinstance(parent, serializers.ListSerializer) and parent.parent is None


def _selected(shown: dict[str, Any], query: QueryDict) -> dict[str, Any]:
    """The fields of `shown` that the query's `fields` (all if none) and `exclude_fields` leave."""
    wanted, dropped = _names(query, "fields"), _names(query, "exclude_fields")
    return {name: value for name, value in shown.items() if (not wanted or name in wanted) and name not in dropped}


def _names(query: QueryDict, parameter: str) -> set[str]:
    return {name for value in query.getlist(parameter) for name in value.split(",") if name}


def file_version_href(repository_pk: int, number: int) -> str:
    """`/pulp/api/v3/repositories/file/file/<repository_pk>/versions/<number>/`."""
    return version_href(repository_pk, number, "pulp-file-version-detail")


@extend_schema_field(
    {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string", "nullable": True}}}
)
class HeadersField(serializers.Field):
    """Pulp's headers, `[{"X-Name": "value"}, ...]`, over the model's one dict of them; a value the
    user may not read is shown as null (`shown_headers`), and taken back only as a string."""

    def to_internal_value(self, data: Any) -> dict[str, str]:
        if not isinstance(data, list) or not all(isinstance(entry, dict) for entry in data):
            raise serializers.ValidationError('Expected a list of objects, as [{"X-Name": "value"}].')
        headers = {name: value for entry in data for name, value in entry.items()}
        if not all(isinstance(value, str) for value in headers.values()):
            raise serializers.ValidationError(f"Header values must be strings; {HIDDEN_GIVEN_BACK}.")
        return headers

    def get_attribute(self, remote: Remote) -> dict[str, str | None]:
        """No headers (null in the model) are shown as Pulp shows them, `[]`."""
        return shown_headers(self, remote) or {}

    def to_representation(self, headers: dict[str, str | None]) -> list[dict[str, str | None]]:
        return [{name: value} for name, value in headers.items()]


class FileRemoteSerializer(PulpFields, RemoteSerializer):
    """A file remote as Pulp shows it, with pulp-sync's `downloader` besides; PEM text in `ca_cert`,
    `client_cert` and `client_key`, as in Pulp. Only the "immediate" policy: a sync downloads every file."""

    pulp_href = HrefField(view_name="pulp-file-remote-detail")
    pulp_created = serializers.DateTimeField(source="created", read_only=True)
    policy = serializers.ChoiceField(  # not on the model: shown as its default
        choices=_POLICIES, default="immediate", help_text='Only "immediate": a sync downloads every file.'
    )
    headers = HeadersField(
        required=False,
        help_text='Headers sent with every request, as [{"X-Name": "value"}]; an update replaces them all. The '
        "value of Authorization, Proxy-Authorization, Cookie and of a header given by reference is never shown "
        "(null), nor any value to a viewer.",
    )
    pulp_labels = NoLabelsField()

    class Meta(RemoteSerializer.Meta):
        fields = [
            "pulp_href",
            "pulp_created",
            "name",
            "url",
            "policy",
            "hidden_fields",
            "ca_cert",
            "client_cert",
            "client_key",
            "tls_validation",
            "proxy_url",
            "proxy_username",
            "proxy_password",
            "username",
            "password",
            "max_retries",
            "total_timeout",
            "connect_timeout",
            "sock_connect_timeout",
            "sock_read_timeout",
            "headers",
            "download_concurrency",
            "auto_concurrency",
            "max_concurrency",
            "rate_limit",
            "downloader",
            "download_processes",
            "pulp_labels",
        ]

    def validate_policy(self, policy: str) -> str:
        if policy != "immediate":
            raise serializers.ValidationError(f"only immediate is supported, not {policy}: a sync downloads every file")
        return policy

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The model has no policy (always immediate): checked above, then left out of what is saved.
        (`pulp_labels` leaves nothing in `attrs`: NoLabelsField.)"""
        attrs.pop("policy", None)
        return super().validate(attrs)


class FileRepositorySerializer(PulpFields, UniqueName, serializers.ModelSerializer):
    """A file repository: where its versions are, its latest one (null before the first sync: there
    is no empty version 0 as in Pulp), and the remote a sync uses when it names none."""

    pulp_href = HrefField(view_name="pulp-file-repository-detail")
    pulp_created = serializers.DateTimeField(source="created", read_only=True)
    versions_href = HrefField(view_name="pulp-file-version-list", lookup_url_kwarg="repository_pk")
    latest_version_href = serializers.SerializerMethodField()
    remote = RelatedHrefField(
        view_name="pulp-file-remote-detail",
        queryset=Remote.objects.all(),
        required=False,
        allow_null=True,
        help_text="The remote a sync uses when it names none.",
    )
    pulp_labels = NoLabelsField()

    class Meta:
        model = Repository
        fields = ["pulp_href", "pulp_created", "versions_href", "latest_version_href", "name", "remote", "pulp_labels"]

    @extend_schema_field({"type": "string", "format": "uri", "nullable": True})
    def get_latest_version_href(self, repository: Repository) -> str | None:
        """From the view's `latest_number` annotation (or a query, after a create or an update)."""
        number = getattr(repository, "latest_number", None)
        if number is None:
            latest = repository.latest_version()
            number = None if latest is None else latest.number
        return None if number is None else file_version_href(repository.pk, number)


class ContentCountSerializer(serializers.Serializer):
    """How many units of a content type, and the href listing them."""

    count = serializers.IntegerField()
    href = serializers.CharField()


@extend_schema_field(
    inline_serializer(
        "ContentSummary",
        {
            part: serializers.DictField(child=ContentCountSerializer(), help_text=f"Content {part}, by content type.")
            for part in ("added", "removed", "present")
        },
    )
)
class ContentSummaryField(serializers.Field):
    """Pulp's `content_summary`: how many `file.file` units the version added, removed and holds,
    with the href listing them; a part with none is left out, as in Pulp."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, version: RepositoryVersion) -> dict[str, Any]:
        href = file_version_href(version.repository_id, version.number)
        parts = {
            "added": (added_content(version), "repository_version_added"),
            "removed": (removed_content(version), "repository_version_removed"),
            "present": (version.content.all(), "repository_version"),
        }
        summary: dict[str, Any] = {}
        for part, (content, parameter) in parts.items():
            count = content.count()
            listed = f"{reverse('pulp-file-content-list')}?{parameter}={href}"
            summary[part] = {CONTENT_TYPE: {"count": count, "href": listed}} if count else {}
        return summary


class FileRepositoryVersionSerializer(PulpFields, serializers.ModelSerializer):
    """One immutable version of a file repository."""

    pulp_href = VersionHrefField("pulp-file-version-detail", source="*")
    pulp_created = serializers.DateTimeField(source="created", read_only=True)
    repository = RelatedHrefField(view_name="pulp-file-repository-detail", read_only=True)
    content_summary = ContentSummaryField()

    class Meta:
        model = RepositoryVersion
        fields = ["pulp_href", "pulp_created", "number", "repository", "content_summary"]


class FileContentSerializer(PulpFields, serializers.ModelSerializer):
    """A file content unit: a relative path and the artifact with its bytes."""

    pulp_href = HrefField(view_name="pulp-file-content-detail")
    artifact = RelatedHrefField(view_name="pulp-artifact-detail", read_only=True)
    sha256 = serializers.CharField(source="artifact.sha256", read_only=True)
    pulp_labels = NoLabelsField(read_only=True)

    class Meta:
        model = FileContent
        fields = ["pulp_href", "artifact", "relative_path", "sha256", "pulp_labels"]


class ArtifactSerializer(PulpFields, serializers.ModelSerializer):
    """A verified file in the store; `file` is its path under the store's root."""

    pulp_href = HrefField(view_name="pulp-artifact-detail")
    pulp_created = serializers.DateTimeField(source="created", read_only=True)
    file = serializers.CharField(source="relative_path", read_only=True)

    class Meta:
        model = Artifact
        fields = ["pulp_href", "pulp_created", "file", "size", "sha256"]


class ProgressReportSerializer(serializers.Serializer):
    """One of a task's progress reports, in Pulp's shape."""

    message = serializers.CharField()
    code = serializers.CharField()
    state = serializers.CharField()
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    suffix = serializers.CharField(allow_null=True)


class TaskSerializer(PulpFields, serializers.ModelSerializer):
    """A task as Pulp shows it; `result` is pulp-sync's report of it (a sync's SyncReport, an orphan
    cleanup's counts), `worker` the href of the RQ worker that ran it (pulp_sync.api.pulp.workers)."""

    pulp_href = HrefField(view_name="pulp-task-detail")
    pulp_created = serializers.DateTimeField(source="created", read_only=True)
    started_at = serializers.DateTimeField(source="started", read_only=True)
    finished_at = serializers.DateTimeField(source="finished", read_only=True)
    error = serializers.SerializerMethodField()
    worker = serializers.SerializerMethodField()
    progress_reports = serializers.SerializerMethodField()
    created_resources = serializers.SerializerMethodField()
    reserved_resources_record = serializers.SerializerMethodField()
    result = serializers.JSONField(source="report", read_only=True)

    class Meta:
        model = Task
        fields = [
            "pulp_href",
            "pulp_created",
            "state",
            "name",
            "started_at",
            "finished_at",
            "error",
            "worker",
            "progress_reports",
            "created_resources",
            "reserved_resources_record",
            "result",
        ]

    @extend_schema_field(
        inline_serializer("TaskError", {"description": serializers.CharField()}, allow_null=True, required=False)
    )
    def get_error(self, task: Task) -> dict[str, str] | None:
        """Pulp's error object; null unless the task failed."""
        return {"description": task.error} if task.error else None

    @extend_schema_field({"type": "string", "nullable": True})
    @extend_schema_field({"type": "string", "format": "uri", "nullable": True})
    def get_worker(self, task: Task) -> str | None:
        """The href of the RQ worker that ran the task; null for a task run in the API's own process (named
        host:pid, as Pulp's immediate tasks have no worker) and for one not yet started."""
        return None if not task.worker or is_process_name(task.worker) else worker_href(task.worker)

    @extend_schema_field(ProgressReportSerializer(many=True))
    def get_progress_reports(self, task: Task) -> list[dict[str, Any]]:
        state = TaskState.RUNNING if task.state == TaskState.CANCELING else task.state
        return [
            {"message": message, "code": code, "state": state, "total": total, "done": done, "suffix": None}
            for message, code, total, done in _progress(task)
        ]

    @extend_schema_field({"type": "array", "items": {"type": "string", "format": "uri"}})
    def get_created_resources(self, task: Task) -> list[str]:
        """The version a sync made (none when nothing changed)."""
        version = task.created_version
        return [] if version is None else [file_version_href(version.repository_id, version.number)]

    @extend_schema_field({"type": "array", "items": {"type": "string"}})
    def get_reserved_resources_record(self, task: Task) -> list[str]:
        """Pulp's record of what a task works on: its repository, and (shared) its remote."""
        record = []
        if task.repository_id is not None:
            record.append(reverse("pulp-file-repository-detail", kwargs={"pk": task.repository_id}))
        if task.remote_id is not None:
            record.append("shared:" + reverse("pulp-file-remote-detail", kwargs={"pk": task.remote_id}))
        return record


def _progress(task: Task) -> list[tuple[str, str, int, int]]:
    """(message, code, total, done) of each progress report: a sync's downloads (and, split, each shard's
    artifacts), an orphan cleanup's deletions."""
    if task.name in ("modify", "repair"):
        return _repair_progress(task) if task.name == "repair" else []
    if task.name == ORPHAN_CLEANUP:
        counts = task.report or {}
        content, artifacts = counts.get("content_removed", 0), counts.get("artifacts_removed", 0)
        return [
            ("Clean up orphan Content", "clean-up.content", content, content),
            ("Clean up orphan Artifacts", "clean-up.artifacts", artifacts, artifacts),
        ]
    shards = task.shards or []
    return [
        ("Downloading Artifacts", "sync.downloading.artifacts", task.artifacts_total, task.artifacts_done),
        ("Downloading Bytes", "sync.downloading.bytes", task.bytes_total, task.bytes_done),
        *((f"Downloading Artifacts, shard {shard['shard']} of {len(shards)}", "sync.downloading.shard",
           shard["files"], shard["files_done"]) for shard in shards),
    ]


def _repair_progress(task: Task) -> list[tuple[str, str, int, int]]:
    """A repair's reports, as Pulp's: the artifacts checked, and those found missing and corrupted."""
    found = task.report or {}
    checked, missing, corrupt = found.get("checked", 0), len(found.get("missing", ())), len(found.get("corrupt", ()))
    return [
        ("Identify missing units", "repair.missing", checked, missing),
        ("Identify corrupted units", "repair.corrupted", checked, corrupt),
    ]


class SyncSerializer(PulpFields, serializers.Serializer):
    """The body of POST {repository href}sync/. A sync always mirrors: the new version holds exactly
    the remote's manifest (Pulp's default, mirror false, would add to the latest version)."""

    remote = RelatedHrefField(
        view_name="pulp-file-remote-detail",
        queryset=Remote.objects.all(),
        required=False,
        help_text="The remote to sync from; the repository's own remote if not given.",
    )
    mirror = serializers.BooleanField(required=False, default=True, help_text="Only true: a sync mirrors.")

    def validate_mirror(self, mirror: bool) -> bool:
        if not mirror:
            raise serializers.ValidationError("only mirror syncs are supported: a version holds exactly the manifest")
        return mirror

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """No remote given: the repository's (`context["repository"]`), or a 400 saying neither is there."""
        if attrs.get("remote") is None:
            attrs["remote"] = self.context["repository"].remote
        if attrs["remote"] is None:
            raise serializers.ValidationError(
                {"remote": ["This field is required since a remote is not set on the repository."]}
            )
        return attrs


class TaskCancelSerializer(PulpFields, serializers.Serializer):
    """The body of PATCH {task href}: Pulp's way to cancel a task."""

    state = serializers.CharField(help_text="The desired state of the task. Only 'canceled' is accepted.")

    def validate_state(self, state: str) -> str:
        if state != TaskState.CANCELED:
            raise serializers.ValidationError("The only acceptable value for 'state' is 'canceled'.")
        return state


class OrphansCleanupSerializer(PulpFields, serializers.Serializer):
    """The body of POST orphans/cleanup/: every orphan, or only the content units named and their
    artifacts. No orphan is protected for a time: pulp-sync keeps no time on its content, so Pulp's
    `orphan_protection_time` is taken only as 0 (or null, this server's default, which is 0)."""

    content_hrefs = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_empty=False,
        help_text="Only these content units (hrefs) and their artifacts, if they are orphans.",
    )
    orphan_protection_time = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Minutes an orphan is kept: only 0, every orphan now.",
    )

    def validate_orphan_protection_time(self, minutes: int | None) -> int | None:
        if minutes:
            raise serializers.ValidationError(f"only 0 is supported, not {minutes}: orphans are not kept for a time")
        return minutes

    def validate_content_hrefs(self, hrefs: list[str]) -> list[int]:
        """The ids of the content units the hrefs name; a 400 for an href naming none."""
        return [
            object_of(href, "pulp-file-content-detail", FileContent.objects.all(), {"pk": "pk"}, "content_hrefs").pk
            for href in hrefs
        ]


class AsyncOperationResponseSerializer(serializers.Serializer):
    """The answer to a request that started a task: where to poll it."""

    task = serializers.CharField(help_text="The task's href.")
