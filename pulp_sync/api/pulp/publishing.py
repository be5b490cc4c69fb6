"""Pulp's file publications and distributions: a version made servable, and the base path that serves
it over HTTP (pulp_sync/content/serving.py; the content app is content_app.py).

Who may do what (pulp_sync/permissions.py's roles, `file.filepublication_*` and `file.filedistribution_*`):
whoever sees a repository version may publish it, and owns the publication; a distribution serves its
content to anyone who reaches the server, as Pulp's content app does, so only an owner of the repository
(or an admin) may distribute its versions, by its publication or by the repository itself
(permissions.may_distribute). The creator of a distribution owns it; changing or deleting it is for its
owners and for the owners of the repository it serves, and any change but its delete needs the right to
distribute what it will serve. The content app serves it only while one of its owners still has that
right (permissions.may_serve), so a role taken away ends what its holder distributed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import IntegrityError, transaction
from django.db.models import Model
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import mixins, serializers, viewsets

from pulp_base.manifest import MANIFEST_NAME, path_problem
from pulp_sync.api.access import visible
from pulp_sync.api.base import Scoped
from pulp_sync.api.fields import HrefField, RelatedHrefField
from pulp_sync.api.pulp.filters import QueryFilter, contains, exact, icontains, one_of, repository_of, version_of
from pulp_sync.api.pulp.labels import NoLabelsField
from pulp_sync.api.pulp.roles import Roles
from pulp_sync.api.pulp.serializers import PulpFields, file_version_href
from pulp_sync.api.pulp.views import NAME_FILTERS, PulpViewSet
from pulp_sync.api.serializers import UniqueName
from pulp_sync.content.serving import base_path_problem
from pulp_sync.models import Distribution, Publication, Repository, RepositoryVersion
from pulp_sync.permissions import may_distribute

__all__ = [
    "FilePublicationSerializer",
    "FileDistributionSerializer",
    "FilePublicationViewSet",
    "FileDistributionViewSet",
    "CONTENT_PATH",
]

CONTENT_PATH = "/pulp/content/"
"""Where distributions serve their content, as Pulp's content app (its CONTENT_PATH_PREFIX)."""
T = TypeVar("T")
_NOT_OWNED = "You may distribute only the repositories you own: a distribution serves their content to anyone."


@extend_schema_field({"type": "string", "format": "uri"})
class VersionRef(serializers.Field):
    """A repository version by its href, one the user sees (a 400 as for an href naming nothing if not)."""

    def to_internal_value(self, href: Any) -> RepositoryVersion:
        if not isinstance(href, str):
            raise serializers.ValidationError("Expected a repository version's href.")
        return _field_error(lambda: version_of(href, "repository_version", self.context["request"].user))

    def to_representation(self, version: RepositoryVersion) -> str:
        return file_version_href(version.repository_id, version.number)


class OnlyFalse(serializers.BooleanField):
    """A flag of Pulp's that pulp-sync takes only as false (or null): `checkpoint`."""

    def __init__(self, refusal: str, **kwargs: Any) -> None:
        self.refusal = refusal
        super().__init__(required=False, allow_null=True, default=False, **kwargs)

    def to_internal_value(self, data: Any) -> bool:
        if super().to_internal_value(data):
            raise serializers.ValidationError(self.refusal)
        return False


@extend_schema_field({"type": "string", "format": "uri"})
class LatestVersionOf(serializers.Field):
    """A publication's repository: shown, its version's; given, a repository the user sees whose latest
    version to publish (instead of `repository_version`, as Pulp takes it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", required=False, **kwargs)

    def to_internal_value(self, href: Any) -> dict[str, Repository]:
        if not isinstance(href, str):
            raise serializers.ValidationError("Expected a repository's href.")
        return {"repository": _field_error(lambda: repository_of(href, "repository", self.context["request"].user))}

    def to_representation(self, publication: Publication) -> str:
        return reverse("pulp-file-repository-detail", kwargs={"pk": publication.repository_version.repository_id})


class FilePublicationSerializer(PulpFields, serializers.ModelSerializer):
    """A file publication: a repository version (given, or the repository's latest) and the name its
    manifest is served under."""

    pulp_href = HrefField(view_name="pulp-file-publication-detail")
    pulp_created = serializers.DateTimeField(source="created", read_only=True)
    repository_version = VersionRef(required=False, help_text="The version to publish.")
    repository = LatestVersionOf(help_text="A repository whose latest version to publish (or repository_version).")
    manifest = serializers.CharField(
        required=False,
        allow_null=True,
        default=MANIFEST_NAME,
        help_text="The name of the manifest listing the publication's files.",
    )
    distributions = serializers.SerializerMethodField()
    checkpoint = OnlyFalse("checkpoint publications are not supported", help_text="Only false.")

    class Meta:
        model = Publication
        fields = [
            "pulp_href",
            "pulp_created",
            "repository_version",
            "repository",
            "manifest",
            "distributions",
            "checkpoint",
        ]

    @extend_schema_field({"type": "array", "items": {"type": "string", "format": "uri"}})
    def get_distributions(self, publication: Publication) -> list[str]:
        """The distributions serving it that the user sees."""
        shown = visible(publication.distributions.order_by("pk"), self.context["request"].user)
        pks = shown.values_list("pk", flat=True)
        return [reverse("pulp-file-distribution-detail", kwargs={"pk": pk}) for pk in pks]

    def validate_manifest(self, manifest: str | None) -> str:
        manifest = manifest or MANIFEST_NAME
        problem = path_problem(manifest)
        if problem:
            raise serializers.ValidationError(f"the manifest's name {problem}")
        return manifest

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """One of repository_version and repository; a repository's latest version, which must exist."""
        version, repository = attrs.pop("repository_version", None), attrs.pop("repository", None)
        attrs.pop("checkpoint", None)
        if (version is None) == (repository is None):
            raise serializers.ValidationError("Give either repository_version or repository.")
        if repository is not None:
            version = repository.latest_version()
            if version is None:
                raise serializers.ValidationError({"repository": ["The repository has no version yet: sync it first."]})
        return {**attrs, "repository_version": version}


class FileDistributionSerializer(PulpFields, UniqueName, serializers.ModelSerializer):
    """A file distribution: a name, the base path it serves under, and what it serves (a publication, or
    a repository's latest version, or nothing)."""

    pulp_href = HrefField(view_name="pulp-file-distribution-detail")
    pulp_created = serializers.DateTimeField(source="created", read_only=True)
    base_url = serializers.SerializerMethodField()
    repository = RelatedHrefField(
        view_name="pulp-file-repository-detail",
        queryset=Repository.objects.all(),
        required=False,
        allow_null=True,
        help_text="A repository whose latest version to serve (instead of a publication).",
    )
    publication = RelatedHrefField(
        view_name="pulp-file-publication-detail",
        queryset=Publication.objects.all(),
        required=False,
        allow_null=True,
        help_text="The publication to serve.",
    )
    content_guard = serializers.CharField(
        required=False, allow_null=True, default=None, help_text="Only null: the content is served to anyone."
    )
    pulp_labels = NoLabelsField()
    checkpoint = OnlyFalse("checkpoint distributions are not supported", help_text="Only false.")

    class Meta:
        model = Distribution
        fields = [
            "pulp_href",
            "pulp_created",
            "name",
            "base_path",
            "base_url",
            "repository",
            "publication",
            "content_guard",
            "pulp_labels",
            "checkpoint",
        ]

    @extend_schema_field({"type": "string", "format": "uri"})
    def get_base_url(self, distribution: Distribution) -> str:
        """Where its content is served, on the host the request reached."""
        path = f"{CONTENT_PATH}{distribution.base_path}/"
        request = self.context.get("request")
        return path if request is None else request.build_absolute_uri(path)

    def validate_content_guard(self, guard: str | None) -> None:
        if guard is not None:
            raise serializers.ValidationError("content guards are not supported: a distribution serves anyone")

    def validate_base_path(self, base_path: str) -> str:
        base_path = base_path.strip("/")
        others = Distribution.objects.exclude(pk__in=[self.instance.pk] if self.instance is not None else [])
        problem = base_path_problem(base_path, list(others.values_list("base_path", flat=True)))
        if problem:
            raise serializers.ValidationError(problem)
        return base_path

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Not both a repository and a publication; and only what the user may distribute: what the
        distribution will serve once saved, named in the body or kept from before, so that an owner of a
        distribution who may no longer distribute what it serves cannot change it but to point it elsewhere
        (or at nothing)."""
        for name in ("content_guard", "checkpoint", "pulp_labels"):
            attrs.pop(name, None)
        if attrs.get("repository") is not None and attrs.get("publication") is not None:
            raise serializers.ValidationError("Give a repository or a publication, not both.")
        for name in ("repository", "publication"):
            served = attrs[name] if name in attrs else getattr(self.instance, name, None)
            repository = served.repository_version.repository if isinstance(served, Publication) else served
            if repository is not None and not may_distribute(self.context["request"].user, repository):
                raise serializers.ValidationError({name: [_NOT_OWNED]})
        return attrs

    def create(self, validated_data: dict[str, Any]) -> Model:
        with self._base_path_checked(validated_data):
            return super().create(validated_data)

    def update(self, instance: Model, validated_data: dict[str, Any]) -> Model:
        with self._base_path_checked(validated_data):
            return super().update(instance, validated_data)

    @contextmanager
    def _base_path_checked(self, validated_data: dict[str, Any]) -> Iterator[None]:
        """A base path another distribution took since it was checked is the 400 of the check, not a 500."""
        try:
            with transaction.atomic():
                yield
        except IntegrityError as error:
            base_path = validated_data.get("base_path")
            if base_path is None or not Distribution.objects.filter(base_path=base_path).exists():
                raise
            taken = "distribution with this base path already exists."
            raise serializers.ValidationError({"base_path": [taken]}) from error


class FilePublicationViewSet(
    Scoped,
    Roles,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    PulpViewSet,
    viewsets.ReadOnlyModelViewSet,
):
    """File publications, newest first. Created at once (Pulp makes a task of it: pulp-cli takes both);
    a publication a distribution serves is not deleted (400 naming it)."""

    queryset = Publication.objects.select_related("repository_version").order_by("-created", "-pk")
    serializer_class = FilePublicationSerializer
    query_filters = (
        QueryFilter(
            "repository_version",
            lambda publications, hrefs, request: publications.filter(
                repository_version=version_of(hrefs[0], "repository_version", request.user)
            ),
            "Repository version's href: its publications",
        ),
        QueryFilter(
            "repository",
            lambda publications, hrefs, request: publications.filter(
                repository_version__repository=repository_of(hrefs[0], "repository", request.user)
            ),
            "Repository's href: the publications of its versions",
        ),
    )
    pulp_id_prefix = "publications_file_file"
    pulp_tag = "Publications: File"
    pulp_href = "file_file_publication_href"

    def perform_destroy(self, instance: Publication) -> None:
        distribution = instance.distributions.first()
        if distribution is not None:
            raise serializers.ValidationError(
                f"distribution {distribution.name!r} serves this publication: point it elsewhere or delete it first"
            )
        instance.delete()


class FileDistributionViewSet(Scoped, Roles, PulpViewSet, viewsets.ModelViewSet):
    """File distributions: base paths serving content under /pulp/content/. Changes are immediate."""

    queryset = Distribution.objects.select_related("publication", "repository").order_by("pk")
    serializer_class = FileDistributionSerializer
    query_filters = (
        *NAME_FILTERS,
        QueryFilter("base_path", exact("base_path"), "Filter results where base_path matches value"),
        QueryFilter("base_path__contains", contains("base_path"), "Filter results where base_path contains value"),
        QueryFilter("base_path__icontains", icontains("base_path"), "Filter results where base_path contains value"),
        QueryFilter("base_path__in", one_of("base_path"), "Filter results where base_path is one of the values",
                    many=True),
    )
    pulp_id_prefix = "distributions_file_file"
    pulp_tag = "Distributions: File"
    pulp_href = "file_file_distribution_href"


def _field_error(find: Callable[[], T]) -> T:
    """What `find` finds; its 400 naming a parameter (object_of's) as a field's own error."""
    try:
        return find()
    except serializers.ValidationError as error:
        detail = error.detail
        message = next(iter(detail.values())) if isinstance(detail, dict) else detail
        raise serializers.ValidationError(message) from error


