"""Where each endpoint is: the Pulp 3 dialect under /pulp/api/v3/ (pulp_sync/api/pulp/), the deprecated
pulp-sync API under /api/v3/; each with its own OpenAPI document. Errors Django answers itself are JSON too."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework.routers import DefaultRouter

from pulp_sync.api import views
from pulp_sync.api.pulp import urls as pulp_urls

__all__ = ["urlpatterns", "handler400", "handler500"]

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

deprecated = [path("api/v3/", include(router.urls))]
"""The pulp-sync API of before the Pulp dialect, kept for its clients (docs/api.md)."""

urlpatterns = [
    path("api/v3/docs/api.json", SpectacularJSONAPIView.as_view(patterns=deprecated), name="schema"),
    *deprecated,
    *pulp_urls.urlpatterns,
]
handler400 = "rest_framework.exceptions.bad_request"
handler500 = "rest_framework.exceptions.server_error"
