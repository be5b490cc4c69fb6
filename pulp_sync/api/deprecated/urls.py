"""Where the deprecated pulp-sync API's endpoints are: its paths under /api/v3/, and its OpenAPI document."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from pulp_sync.api.deprecated import views
from pulp_sync.api.documents import document_view

__all__ = ["urlpatterns"]

router = DefaultRouter()
router.register("remotes", views.RemoteViewSet, basename="remote")
router.register("repositories", views.RepositoryViewSet, basename="repository")
router.register(r"repositories/(?P<repository_pk>[0-9]+)/versions", views.RepositoryVersionViewSet, basename="version")
router.register(
    r"repositories/(?P<repository_pk>[0-9]+)/versions/(?P<number>[0-9]+)/content",
    views.VersionContentViewSet,
    basename="version-content",
)
router.register("tasks", views.TaskViewSet, basename="task")
router.register("artifacts", views.ArtifactViewSet, basename="artifact")

endpoints = [path("api/v3/", include(router.urls))]
"""The pulp-sync API of before the Pulp dialect, kept for its clients (docs/api.md): the endpoints the
OpenAPI document describes."""

urlpatterns = [
    path("api/v3/docs/api.json", document_view(patterns=endpoints), name="schema"),
    *endpoints,
]
