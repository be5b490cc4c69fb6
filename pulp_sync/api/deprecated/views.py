"""The deprecated API's endpoints: one viewset per resource, each as small as Django REST framework lets
it be; who sees and changes what is the Pulp dialect's (pulp_sync/api/access.py)."""

from __future__ import annotations

from typing import Final

from django.db.models import Count, Max, QuerySet
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from pulp_sync.api.access import ADMINS_ONLY, dispatch_as, signed_in, visible_or_404
from pulp_sync.api.base import ApiViewSet, Scoped
from pulp_sync.api.deprecated.serializers import (
    ArtifactSerializer,
    ContentSerializer,
    RepositorySerializer,
    RepositoryVersionSerializer,
    SyncSerializer,
    TaskRefSerializer,
    TaskSerializer,
)
from pulp_sync.api.serializers import RemoteSerializer
from pulp_sync.models import Artifact, FileContent, Remote, Repository, RepositoryVersion, Task

__all__ = [
    "RemoteViewSet",
    "RepositoryViewSet",
    "RepositoryVersionViewSet",
    "VersionContentViewSet",
    "TaskViewSet",
    "ArtifactViewSet",
]

_ID = "[0-9]+"
_PATH: Final = OpenApiParameter.PATH
_REPOSITORY = OpenApiParameter("repository_pk", OpenApiTypes.INT, _PATH, description="The repository's id")
_NUMBER = OpenApiParameter("number", OpenApiTypes.INT, _PATH, description="The version's number")


class RemoteViewSet(Scoped, ApiViewSet, viewsets.ModelViewSet):
    """Remotes: where repositories sync from, with which downloader and settings."""

    queryset = Remote.objects.order_by("pk")
    serializer_class = RemoteSerializer
    lookup_value_regex = _ID


class RepositoryViewSet(Scoped, ApiViewSet, viewsets.ModelViewSet):
    """Repositories, each with its latest version; syncing one starts a task."""

    queryset = Repository.objects.annotate(latest_number=Max("versions__number")).order_by("pk")
    serializer_class = RepositorySerializer
    lookup_value_regex = _ID

    @extend_schema(request=SyncSerializer, responses={status.HTTP_202_ACCEPTED: TaskRefSerializer})
    @action(detail=True, methods=["post"])
    def sync(self, request: Request, pk: str) -> Response:
        """Queue a sync from the remote for the RQ workers (never run in the request); poll the task it answers.

        A task that Redis could not take is answered all the same, already failed, its error saying why.
        """
        repository = self.get_object()
        body = SyncSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        task = dispatch_as(signed_in(request), repository, body.validated_data["remote"])
        return Response({"task": reverse("task-detail", kwargs={"pk": task.pk})}, status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    list=extend_schema(parameters=[_REPOSITORY]), retrieve=extend_schema(parameters=[_REPOSITORY, _NUMBER])
)
class RepositoryVersionViewSet(ApiViewSet, viewsets.ReadOnlyModelViewSet):
    """A repository's versions, newest first, found by number."""

    queryset = RepositoryVersion.objects.none()
    serializer_class = RepositoryVersionSerializer
    lookup_field = "number"
    lookup_value_regex = _ID

    def get_queryset(self) -> QuerySet[RepositoryVersion]:
        repository = visible_or_404(Repository.objects.all(), self.request.user, pk=self.kwargs["repository_pk"])
        return repository.versions.annotate(content_count=Count("memberships")).order_by("-number")


@extend_schema_view(list=extend_schema(parameters=[_REPOSITORY, _NUMBER]))
class VersionContentViewSet(mixins.ListModelMixin, ApiViewSet):
    """The content of one repository version, by relative path."""

    queryset = FileContent.objects.none()
    serializer_class = ContentSerializer

    def get_queryset(self) -> QuerySet[FileContent]:
        lookups = {"repository": self.kwargs["repository_pk"], "number": self.kwargs["number"]}
        version = visible_or_404(RepositoryVersion.objects.all(), self.request.user, **lookups)
        return version.content.select_related("artifact").order_by("relative_path", "pk")


class TaskViewSet(Scoped, ApiViewSet, viewsets.ReadOnlyModelViewSet):
    """Tasks, newest first: poll one until its state is completed or failed."""

    queryset = Task.objects.select_related("created_version").order_by("-created")
    serializer_class = TaskSerializer


class ArtifactViewSet(ApiViewSet, viewsets.ReadOnlyModelViewSet):
    """The verified files in the store, shared by every repository: for admins only."""

    permission_classes = ADMINS_ONLY
    queryset = Artifact.objects.order_by("pk")
    serializer_class = ArtifactSerializer
    lookup_value_regex = _ID
