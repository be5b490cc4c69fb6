"""What the deprecated API shows of each model but the remote, and what it accepts: a repository and
its versions, their content, artifacts, tasks and the body of a sync. Its remotes are the shared
RemoteSerializer's (pulp_sync/api/serializers.py)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from pulp_sync.api.fields import HrefField, HrefOrIdField, RelatedHrefField, VersionHrefField, version_href
from pulp_sync.api.serializers import UniqueName
from pulp_sync.models import Artifact, FileContent, Remote, Repository, RepositoryVersion, Task

__all__ = [
    "RepositorySerializer",
    "RepositoryVersionSerializer",
    "ContentSerializer",
    "ArtifactSerializer",
    "TaskSerializer",
    "SyncSerializer",
    "TaskRefSerializer",
]


class RepositorySerializer(UniqueName, serializers.ModelSerializer):
    """A repository, where its versions are, and its latest version."""

    pulp_href = HrefField(view_name="repository-detail")
    versions_href = HrefField(view_name="version-list", lookup_url_kwarg="repository_pk")
    latest_version_href = serializers.SerializerMethodField()

    class Meta:
        model = Repository
        fields = ["pulp_href", "id", "name", "versions_href", "latest_version_href"]

    @extend_schema_field(OpenApiTypes.URI)
    def get_latest_version_href(self, repository: Repository) -> str | None:
        """From the view's `latest_number` annotation; a repository just created has none, and no version."""
        number = getattr(repository, "latest_number", None)
        if number is None:
            return None
        return version_href(repository.pk, number)


class RepositoryVersionSerializer(serializers.ModelSerializer):
    """One immutable version: its number, when it was made, where its content is and how much."""

    pulp_href = VersionHrefField(source="*")
    repository = RelatedHrefField(view_name="repository-detail", read_only=True)
    content_href = VersionHrefField("version-content-list", source="*")
    content_count = serializers.IntegerField(read_only=True)

    class Meta:
        model = RepositoryVersion
        fields = ["pulp_href", "number", "repository", "created", "content_href", "content_count"]


class ContentSerializer(serializers.ModelSerializer):
    """A manifest line of a version: the path and the artifact it names."""

    sha256 = serializers.CharField(source="artifact.sha256", read_only=True)
    size = serializers.IntegerField(source="artifact.size", read_only=True)
    artifact = RelatedHrefField(view_name="artifact-detail", read_only=True)

    class Meta:
        model = FileContent
        fields = ["relative_path", "sha256", "size", "artifact"]


class ArtifactSerializer(serializers.ModelSerializer):
    """A verified file in the store; `file` is its path under the store's root."""

    pulp_href = HrefField(view_name="artifact-detail")
    file = serializers.CharField(source="relative_path", read_only=True)

    class Meta:
        model = Artifact
        fields = ["pulp_href", "sha256", "size", "file", "created"]


class TaskProgressSerializer(serializers.ModelSerializer):
    """How far a task is: artifacts and bytes to download, and done; for a split sync, each shard's too."""

    class Meta:
        model = Task
        fields = ["artifacts_total", "artifacts_done", "bytes_total", "bytes_done", "shards"]


class TaskSerializer(serializers.ModelSerializer):
    """A sync task, polled until its state is completed or failed; `created_version` is then the href
    of the version it made (null when nothing changed), `error` a readable message if it failed."""

    pulp_href = HrefField(view_name="task-detail")
    repository = RelatedHrefField(view_name="repository-detail", read_only=True)
    remote = RelatedHrefField(view_name="remote-detail", read_only=True)
    created_version = VersionHrefField()
    progress = TaskProgressSerializer(source="*", read_only=True)

    class Meta:
        model = Task
        fields = [
            "pulp_href",
            "name",
            "state",
            "created",
            "started",
            "finished",
            "worker",
            "error",
            "progress",
            "repository",
            "remote",
            "created_version",
            "report",
        ]


class SyncSerializer(serializers.Serializer):
    """The body of POST repositories/<id>/sync/."""

    remote = HrefOrIdField(view_name="remote-detail", queryset=Remote.objects.all(), help_text="Its href or id")


class TaskRefSerializer(serializers.Serializer):
    """The answer to a request that started a task: where to poll it (Pulp's AsyncOperationResponse)."""

    task = serializers.CharField(help_text="The task's href.")
