"""The Pulp dialect's endpoints: one viewset per Pulp resource, named for Pulp's OpenAPI document
(`pulp_id_prefix`, `pulp_tag`, `pulp_href`: see schema.PulpSchema); who sees and changes what is in
pulp_sync/api/access.py, Pulp's role endpoints in roles.py."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import Max, Q, QuerySet
from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from pulp_sync.api.access import ADMINS_ONLY, dispatch_as, signed_in, visible_or_404
from pulp_sync.api.base import ApiViewSet, DeclaredQuery, Scoped
from pulp_sync.api.limits import JsonParser
from pulp_sync.api.pulp import filters
from pulp_sync.api.pulp.changes import ContentCreateSerializer, ModifySerializer, RepairSerializer, modify, repair
from pulp_sync.api.pulp.filters import QueryFilter, QueryFilters, contains, exact, icontains, one_of, startswith
from pulp_sync.api.pulp.orphans import clean_up_orphans
from pulp_sync.api.pulp.roles import Roles
from pulp_sync.api.pulp.schema import SELECTED_FIELDS, PulpSchema, selects_fields
from pulp_sync.api.pulp.serializers import (
    ArtifactSerializer,
    AsyncOperationResponseSerializer,
    FileContentSerializer,
    FileRemoteSerializer,
    FileRepositorySerializer,
    FileRepositoryVersionSerializer,
    OrphansCleanupSerializer,
    SyncSerializer,
    TaskCancelSerializer,
    TaskSerializer,
)
from pulp_sync.api.pulp.status import StatusSerializer, service_status
from pulp_sync.api.pulp.versions import added_content, removed_content
from pulp_sync.api.pulp.workers import WORKER_FILTERS, WorkerSerializer, online_workers, worker_id
from pulp_sync.content.versions import VersionError, delete_version
from pulp_sync.models import Artifact, FileContent, Remote, Repository, RepositoryVersion, Task, TaskState
from pulp_sync.tasking.tasks import cancel_task

__all__ = [
    "FileRemoteViewSet",
    "FileRepositoryViewSet",
    "FileRepositoryVersionViewSet",
    "FileContentViewSet",
    "ArtifactViewSet",
    "TaskViewSet",
    "OrphansCleanupView",
    "StatusView",
    "PulpViewSet",
    "NAME_FILTERS",
]

_ID = "[0-9]+"
_RESERVABLE = {"pulp-file-repository-detail": "repository", "pulp-file-remote-detail": "remote"}
"""The resources a task can reserve, by their route: the task's field naming each."""
NAME_FILTERS = (
    QueryFilter("name", exact("name"), "Filter results where name matches value"),
    QueryFilter("name__contains", contains("name"), "Filter results where name contains value"),
    QueryFilter("name__icontains", icontains("name"), "Filter results where name contains value, any case"),
    QueryFilter("name__in", one_of("name"), "Filter results where name is one of the values", many=True),
)


def _reserving(task_fields: tuple[str, ...]) -> filters.Apply:
    """A filter of the tasks working on any of the repositories or remotes the hrefs name, through
    `task_fields` (Pulp's reserved resources: a sync changes its repository, reads its remote)."""

    def apply(tasks: QuerySet[Task], hrefs: list[str], _: Request) -> QuerySet[Task]:
        reserving = Q(pk__in=[])
        for href in hrefs:
            route, arguments = filters.route_of(href)
            field = _RESERVABLE.get(route or "")
            if field in task_fields:
                reserving |= Q(**{f"{field}_id": arguments["pk"]})
        return tasks.filter(reserving)

    return apply


class PulpViewSet(ApiViewSet):
    """What every dialect viewset shares: Pulp's schema generation and list filters, and ApiViewSet's
    pages and permissions."""

    schema = PulpSchema()
    filter_backends = [QueryFilters]
    query_filters: ClassVar[tuple[QueryFilter, ...]] = ()
    lookup_value_regex = _ID
    pulp_id_prefix: ClassVar[str]
    pulp_tag: ClassVar[str]
    pulp_href: ClassVar[str]

    def declared_query_parameters(self) -> set[str]:
        """Also Pulp's `fields` and `exclude_fields`, where the document declares them."""
        selected = set(SELECTED_FIELDS) if selects_fields(self, self.request.method or "") else set()
        return super().declared_query_parameters() | selected


class FileRemoteViewSet(Scoped, Roles, PulpViewSet, viewsets.ModelViewSet):
    """File remotes: where repositories sync from, with which downloader and settings."""

    queryset = Remote.objects.order_by("pk")
    serializer_class = FileRemoteSerializer
    query_filters = NAME_FILTERS
    pulp_id_prefix = "remotes_file_file"
    pulp_tag = "Remotes: File"
    pulp_href = "file_file_remote_href"


class FileRepositoryViewSet(Scoped, Roles, PulpViewSet, viewsets.ModelViewSet):
    """File repositories; syncing one starts a task on a `pulp-sync worker`."""

    queryset = Repository.objects.annotate(latest_number=Max("versions__number")).order_by("pk")
    serializer_class = FileRepositorySerializer
    query_filters = (
        *NAME_FILTERS,
        QueryFilter("name__startswith", startswith("name"), "Filter results where name starts with value"),
    )
    pulp_id_prefix = "repositories_file_file"
    pulp_tag = "Repositories: File"
    pulp_href = "file_file_repository_href"

    @extend_schema(
        request=SyncSerializer,
        responses={status.HTTP_202_ACCEPTED: AsyncOperationResponseSerializer},
        description="Sync the repository from a remote (its own if none is given), as a task on a worker.",
    )
    @action(detail=True, methods=["post"])
    def sync(self, request: Request, pk: str) -> Response:
        """Queue the sync for the RQ workers (never run in the request); a task Redis could not take is
        answered all the same, already failed, its error saying why."""
        repository = self.get_object()
        body = SyncSerializer(data=request.data, context={**self.get_serializer_context(), "repository": repository})
        body.is_valid(raise_exception=True)
        return _task_started(dispatch_as(signed_in(request), repository, body.validated_data["remote"]))

    @extend_schema(
        request=ModifySerializer,
        responses={status.HTTP_202_ACCEPTED: AsyncOperationResponseSerializer},
        description="Add and remove content units: a new version, made in the request (a finished task).",
    )
    @action(detail=True, methods=["post"])
    def modify(self, request: Request, pk: str) -> Response:
        """Owners and admins (MayChange); the task fails saying why if two added units share a path."""
        repository = self.get_object()
        body = ModifySerializer(data=request.data, context={**self.get_serializer_context(), "repository": repository})
        body.is_valid(raise_exception=True)
        return _task_started(modify(signed_in(request), repository, body))


class FileRepositoryVersionViewSet(mixins.DestroyModelMixin, PulpViewSet, viewsets.ReadOnlyModelViewSet):
    """A file repository's versions, newest first, found by number. Deleting one (its repository's owners)
    is immediate and refused for the latest and a distributed one (Pulp makes a task of it: pulp-cli takes
    both); a repair checks its files, as a finished task."""

    queryset = RepositoryVersion.objects.none()
    serializer_class = FileRepositoryVersionSerializer
    lookup_field = "number"
    query_filters = (
        QueryFilter("number", exact("number"), "Filter results where number matches value", type="integer"),
    )
    pulp_id_prefix = "repositories_file_file_versions"
    pulp_tag = "Repositories: File Versions"
    pulp_href = "file_file_repository_version_href"
    pulp_parent_href = "file_file_repository_href"

    def get_queryset(self) -> QuerySet[RepositoryVersion]:
        repository = visible_or_404(Repository.objects.all(), self.request.user, pk=self.kwargs["repository_pk"])
        return repository.versions.order_by("-number")

    def perform_destroy(self, instance: RepositoryVersion) -> None:
        """A version in use is a 400 saying why (repository_versions.delete_version)."""
        try:
            delete_version(instance)
        except VersionError as error:
            raise ValidationError({"detail": str(error)}) from error

    @extend_schema(
        request=RepairSerializer,
        responses={status.HTTP_202_ACCEPTED: AsyncOperationResponseSerializer},
        description="Check the version's files in the store; mark lost or damaged ones missing (a finished task).",
    )
    @action(detail=True, methods=["post"])
    def repair(self, request: Request, repository_pk: str, number: str) -> Response:
        version = self.get_object()
        body = RepairSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _task_started(repair(signed_in(request), version, body))


class FileContentViewSet(Scoped, PulpViewSet, viewsets.ReadOnlyModelViewSet):
    """File content: every relative path naming an artifact, of the repository versions the user sees
    (an admin sees all, and the content of no version). A create stores a file given in the request
    (multipart, as pulp-cli's `content upload` sends it) or names an artifact (changes.py)."""

    queryset = FileContent.objects.select_related("artifact").order_by("pk")
    serializer_class = FileContentSerializer
    query_filters = (
        QueryFilter("relative_path", exact("relative_path"), "Filter results where relative_path matches value"),
        QueryFilter("sha256", exact("artifact__sha256"), "Filter results where the artifact's sha256 matches value"),
        QueryFilter(
            "repository_version",
            lambda content, hrefs, request: content.filter(
                pk__in=filters.version_of(hrefs[0], "repository_version", request.user).content.all()
            ),
            "Repository version's href: the content it holds",
        ),
        QueryFilter(
            "repository_version_added",
            lambda content, hrefs, request: content.filter(
                pk__in=added_content(filters.version_of(hrefs[0], "repository_version_added", request.user))
            ),
            "Repository version's href: the content it added",
        ),
        QueryFilter(
            "repository_version_removed",
            lambda content, hrefs, request: content.filter(
                pk__in=removed_content(filters.version_of(hrefs[0], "repository_version_removed", request.user))
            ),
            "Repository version's href: the content it removed",
        ),
    )
    pulp_id_prefix = "content_file_files"
    pulp_tag = "Content: Files"
    pulp_href = "file_file_content_href"
    parser_classes = [JsonParser, MultiPartParser]

    @extend_schema(request=ContentCreateSerializer, responses={status.HTTP_201_CREATED: FileContentSerializer})
    def create(self, request: Request) -> Response:
        """The unit made (or found: the same path and bytes are one unit), at once (Pulp makes a task of it)."""
        body = ContentCreateSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        try:
            unit = body.save_unit()
        except VersionError as error:
            raise ValidationError({"detail": str(error)}) from error
        return Response(body.to_representation(unit), status=status.HTTP_201_CREATED)


class ArtifactViewSet(PulpViewSet, viewsets.ReadOnlyModelViewSet):
    """The verified files in the store, shared by every repository: for admins only, as in Pulp."""

    permission_classes = ADMINS_ONLY
    queryset = Artifact.objects.order_by("pk")
    serializer_class = ArtifactSerializer
    query_filters = (QueryFilter("sha256", exact("sha256"), "Filter results where sha256 matches value"),)
    pulp_id_prefix = "artifacts"
    pulp_tag = "Artifacts"
    pulp_href = "artifact_href"


class TaskViewSet(Scoped, mixins.ListModelMixin, mixins.RetrieveModelMixin, PulpViewSet):
    """Tasks, newest first: syncs and orphan cleanups. PATCH {"state": "canceled"} cancels one (its
    dispatcher, its repository's owners and admins may)."""

    queryset = Task.objects.select_related("created_version").order_by("-created")
    serializer_class = TaskSerializer
    lookup_value_regex = "[0-9a-f-]{32,36}"
    query_filters = (
        QueryFilter("name", exact("name"), "Filter results where name matches value"),
        QueryFilter("name__contains", contains("name"), "Filter results where name contains value"),
        QueryFilter("state", exact("state"), "Filter results where state matches value"),
        QueryFilter("state__in", one_of("state"), "Filter results where state is one of the values", many=True),
        *(
            QueryFilter(f"{name}{suffix}", _reserving(task_fields), description, many=bool(suffix))
            for name, task_fields, description in (
                ("reserved_resources", ("repository", "remote"), "Tasks working on these resources (hrefs)"),
                ("exclusive_resources", ("repository",), "Tasks changing these repositories (hrefs)"),
                ("shared_resources", ("remote",), "Tasks reading these remotes (hrefs)"),
            )
            for suffix in ("", "__in")
        ),
        QueryFilter(
            "created_resources",
            lambda tasks, hrefs, request: tasks.filter(
                created_version=filters.version_of(hrefs[0], "created_resources", request.user)
            ),
            "Tasks that created this repository version (href)",
        ),
    )
    pulp_id_prefix = "tasks"
    pulp_tag = "Tasks"
    pulp_href = "task_href"

    @extend_schema(
        operation_id="tasks_cancel",
        request=TaskCancelSerializer,
        responses={200: TaskSerializer, 409: TaskSerializer},
        description="Cancel a waiting or running task; a finished task is answered with 409.",
    )
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """A waiting task is canceled at once; a running one is canceling until its worker stops it."""
        TaskCancelSerializer(data=request.data).is_valid(raise_exception=True)
        task = cancel_task(self.get_object().pk)
        canceled = task.state in (TaskState.CANCELING, TaskState.CANCELED)
        answer = status.HTTP_200_OK if canceled else status.HTTP_409_CONFLICT
        return Response(self.get_serializer(task).data, status=answer)


class OrphansCleanupView(DeclaredQuery, APIView):
    """POST: delete the content no version holds and the artifacts no content names, as a task (admins only)."""

    schema = PulpSchema()
    permission_classes = ADMINS_ONLY
    pulp_tag = "Orphans: Cleanup"

    @extend_schema(
        operation_id="orphans_cleanup_cleanup",
        request=OrphansCleanupSerializer,
        responses={status.HTTP_202_ACCEPTED: AsyncOperationResponseSerializer},
    )
    def post(self, request: Request) -> Response:
        """Runs in this request (see orphans.py); the answer points to the task, finished by then."""
        body = OrphansCleanupSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return _task_started(clean_up_orphans(signed_in(request), body.validated_data.get("content_hrefs")))


class StatusView(DeclaredQuery, APIView):
    """GET: Pulp's status of the service."""

    schema = PulpSchema()
    pulp_tag = "Status"

    @extend_schema(operation_id="status_read", responses={200: StatusSerializer})
    def get(self, request: Request) -> Response:
        return Response(StatusSerializer(service_status()).data)


def _task_started(task: Task) -> Response:
    """Pulp's answer to a request that started a task: 202 and where to poll it."""
    return Response({"task": reverse("pulp-task-detail", kwargs={"pk": task.pk})}, status=status.HTTP_202_ACCEPTED)


class WorkerViewSet(PulpViewSet):
    """The workers taking this service's queue; a list or one of them, for every signed-in user."""

    serializer_class = WorkerSerializer
    lookup_value_regex = "[0-9a-f-]{36}"
    query_filters = WORKER_FILTERS
    pulp_id_prefix = "workers"
    pulp_tag = "Workers"
    pulp_href = "worker_href"

    def get_queryset(self) -> list[dict[str, Any]]:  # type: ignore[override] # rows of Redis, not a QuerySet
        return online_workers()

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))  # type: ignore[arg-type]
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request: Request, pk: str) -> Response:
        row = next((row for row in self.get_queryset() if worker_id(row["name"]) == pk), None)
        if row is None:
            raise Http404
        return Response(self.get_serializer(row).data)
