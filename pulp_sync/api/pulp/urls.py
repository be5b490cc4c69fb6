"""Where the Pulp dialect's endpoints are: Pulp's paths under /pulp/api/v3/ (with the operations declared but
not served: not_served.py), its OpenAPI document, and the content distributions serve under /pulp/content/."""

from __future__ import annotations

from django.urls import include, path, re_path
from rest_framework.routers import SimpleRouter

from pulp_sync.api.documents import document_view
from pulp_sync.api.pulp import not_served, publishing, users, views
from pulp_sync.api.pulp.content_app import content
from pulp_sync.api.pulp.login import LoginView
from pulp_sync.api.pulp.schema import SCHEMA_SETTINGS, PulpSchemaGenerator

__all__ = ["urlpatterns"]

router = SimpleRouter()
router.register("remotes/file/file", views.FileRemoteViewSet, basename="pulp-file-remote")
router.register("repositories/file/file", views.FileRepositoryViewSet, basename="pulp-file-repository")
router.register(
    r"repositories/file/file/(?P<repository_pk>[0-9]+)/versions",
    views.FileRepositoryVersionViewSet,
    basename="pulp-file-version",
)
router.register("content/file/files", views.FileContentViewSet, basename="pulp-file-content")
router.register("publications/file/file", publishing.FilePublicationViewSet, basename="pulp-file-publication")
router.register("distributions/file/file", publishing.FileDistributionViewSet, basename="pulp-file-distribution")
router.register("artifacts", views.ArtifactViewSet, basename="pulp-artifact")
router.register("tasks", views.TaskViewSet, basename="pulp-task")
router.register("users", users.UserViewSet, basename="pulp-user")
router.register("workers", views.WorkerViewSet, basename="pulp-worker")

endpoints = [
    path("pulp/api/v3/", include(router.urls)),
    path("pulp/api/v3/orphans/cleanup/", views.OrphansCleanupView.as_view(), name="pulp-orphans-cleanup"),
    path("pulp/api/v3/status/", views.StatusView.as_view(), name="pulp-status"),
    path("pulp/api/v3/login/", LoginView.as_view(), name="pulp-login"),
]
"""The endpoints the OpenAPI document describes (PulpSchemaGenerator adds not_served's)."""

urlpatterns = [
    *endpoints,
    *not_served.urlpatterns,
    re_path(r"^pulp/content/(?P<path>.+)$", content, name="pulp-content"),
    path(
        "pulp/api/v3/docs/api.json",
        document_view(patterns=endpoints, generator_class=PulpSchemaGenerator, custom_settings=SCHEMA_SETTINGS),
        name="pulp-schema",
    ),
]
