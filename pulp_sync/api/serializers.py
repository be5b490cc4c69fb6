"""What the API shows of each model and what it accepts; a remote is checked by the model's own clean()
and, in both dialects, by RemoteSerializer: the remote-address policy, PEM text, no secret kept where
a change would expose it (Remote.safe_change), header values shown only to whom they may be shown."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, models, transaction
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from downloaders import AddressRefused, UnknownDownloader, UnsupportedURL, check_url
from pulp_sync.api import pem
from pulp_sync.api.access import may_change
from pulp_sync.api.fields import HrefField, HrefOrIdField, RelatedHrefField, VersionHrefField, version_href
from pulp_sync.models import Artifact, FileContent, Remote, Repository, RepositoryVersion, Task

__all__ = [
    "UniqueName",
    "shown_headers",
    "HIDDEN_GIVEN_BACK",
    "RemoteSerializer",
    "RepositorySerializer",
    "RepositoryVersionSerializer",
    "ContentSerializer",
    "ArtifactSerializer",
    "TaskSerializer",
    "SyncSerializer",
    "TaskRefSerializer",
]

SECRET_FIELDS = ("password", "proxy_password", "client_key")
"""Remote fields that are written but never shown; `hidden_fields` says which of them are set."""
NOT_SHOWN = ("secret_headers",)
"""Remote fields the API neither shows nor takes: which headers came by reference is the command line's."""
HIDDEN_GIVEN_BACK = "a value shown as null is hidden: give it again, or leave headers out to keep them all"
"""Why a header value of null is refused: a client sending back what it read must not blank a hidden value."""


class HiddenFieldSerializer(serializers.Serializer):
    """Whether a write-only field has a value (Pulp's `hidden_fields`)."""

    name = serializers.CharField()
    is_set = serializers.BooleanField()


class UniqueName:
    """A serializer mixin (before ModelSerializer) for objects whose names are unique across the
    installation, as in Pulp (remotes, repositories). A name another object holds, whoever's and whether
    the user may see it or not, is refused with the name field's own message and nothing more, also when
    that object is saved between the field's check and this save, where the database's index refuses it:
    a taken name is the one thing the API tells of an object the user may not see (docs/api.md)."""

    def create(self, validated_data: dict[str, Any]) -> models.Model:
        with self._name_checked(validated_data.get("name")):
            return super().create(validated_data)  # type: ignore[misc]

    def update(self, instance: models.Model, validated_data: dict[str, Any]) -> models.Model:
        with self._name_checked(validated_data.get("name"), instance.pk):
            return super().update(instance, validated_data)  # type: ignore[misc]

    @contextmanager
    def _name_checked(self, name: str | None, pk: int | None = None) -> Iterator[None]:
        """Save in a transaction (a savepoint in the view's) whose IntegrityError, if another object has
        `name` by then, is the 400 of the name field's unique check; any other is left as it is."""
        try:
            with transaction.atomic():
                yield
        except IntegrityError as error:
            model = self.Meta.model  # type: ignore[attr-defined]
            if name is None or not model.objects.filter(name=name).exclude(pk=pk).exists():
                raise
            raise serializers.ValidationError({"name": [self._taken()]}) from error

    def _taken(self) -> str:
        """The message of the name field's own unique check (`remote with this name already exists.`)."""
        validators = self.fields["name"].validators  # type: ignore[attr-defined]
        return next(validator.message for validator in validators if isinstance(validator, UniqueValidator))


def shown_headers(field: serializers.Field, remote: Remote) -> dict[str, str | None] | None:
    """`remote`'s headers as the request's user may read them (Remote.shown_headers): the values that
    are not secret to the remote's owners and admins only, who may change them anyway."""
    if not remote.headers:  # nothing to hide: no query for the user's roles
        return remote.headers
    request = field.context.get("request")
    return remote.shown_headers(request is not None and may_change(request.user, remote))


class ShownHeadersField(serializers.JSONField):
    """The deprecated API's headers, one JSON object, as `shown_headers` shows them; a null value is refused."""

    def to_internal_value(self, data: Any) -> Any:
        headers = super().to_internal_value(data)
        if isinstance(headers, dict) and None in headers.values():
            raise serializers.ValidationError(HIDDEN_GIVEN_BACK)
        return headers

    def get_attribute(self, remote: Remote) -> dict[str, str | None] | None:
        return shown_headers(self, remote)


class RemoteSerializer(UniqueName, serializers.ModelSerializer):
    """A remote with its downloader settings; validated by `Remote.clean`, exactly as the CLI's are,
    and by what only API users may not do: name a host the remote-address policy refuses, give a
    certificate as anything but PEM text, keep a secret where a change exposes it (Remote.safe_change)."""

    pulp_href = HrefField(view_name="remote-detail")
    headers = ShownHeadersField(
        required=False,
        allow_null=True,
        help_text="Headers sent with every request; an update replaces them all. The value of Authorization, "
        "Proxy-Authorization, Cookie and of a header given by reference is never shown (null), nor any value "
        "to a viewer.",
    )
    hidden_fields = serializers.SerializerMethodField()

    class Meta:
        model = Remote
        fields = [
            "pulp_href",
            "id",
            *(f.name for f in Remote._meta.concrete_fields if f.name not in ("id", *NOT_SHOWN)),
            "hidden_fields",
        ]
        extra_kwargs = {name: {"write_only": True} for name in SECRET_FIELDS}

    @extend_schema_field(HiddenFieldSerializer(many=True))
    def get_hidden_fields(self, remote: Remote) -> list[dict[str, Any]]:
        return [{"name": name, "is_set": getattr(remote, name) not in (None, "")} for name in SECRET_FIELDS]

    def validate_url(self, url: str) -> str:
        return _allowed(url)

    def validate_proxy_url(self, url: str | None) -> str | None:
        return url and _allowed(url)

    def validate_ca_cert(self, text: str | None) -> str | None:
        return pem.certificates(text)

    def validate_client_cert(self, text: str | None) -> str | None:
        return pem.certificates(text)

    def validate_client_key(self, text: str | None) -> str | None:
        return pem.private_key(text)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The remote as it would be saved must pass `Remote.clean` (downloader installed, settings sane);
        a change clears the secrets it would expose that the request does not give again (Remote.safe_change)."""
        if self.instance is not None:
            attrs = self.instance.safe_change(attrs)
        candidate = copy.copy(self.instance) if self.instance is not None else Remote()
        for name, value in attrs.items():
            setattr(candidate, name, value)
        try:
            candidate.clean()
        except DjangoValidationError as error:
            if isinstance(error.__cause__, UnknownDownloader):
                raise DjangoValidationError({"downloader": error.messages}) from error
            raise
        return attrs


def _allowed(url: str) -> str:
    """`url`, if it is http or https (DRF's URLField drops the model's URLValidator, and takes ftp://) and
    the service's remote-address policy lets syncs fetch from its host; else a 400 saying why."""
    try:
        check_url(url)
        settings.PULP_SYNC_ADDRESS_POLICY.check_url(url)
    except (UnsupportedURL, AddressRefused) as error:
        raise serializers.ValidationError(str(error)) from error
    return url


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
    """How far a task is: artifacts and bytes to download, and done."""

    class Meta:
        model = Task
        fields = ["artifacts_total", "artifacts_done", "bytes_total", "bytes_done"]


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
