"""Where each endpoint is: the Pulp 3 dialect under /pulp/api/v3/ (pulp_sync/api/pulp/urls.py), the deprecated
pulp-sync API under /api/v3/ (pulp_sync/api/deprecated/urls.py); each with its own OpenAPI document. Errors
Django answers itself are JSON too."""

from __future__ import annotations

from pulp_sync.api.deprecated import urls as deprecated_urls
from pulp_sync.api.pulp import urls as pulp_urls

__all__ = ["urlpatterns", "handler400", "handler500"]

urlpatterns = [*deprecated_urls.urlpatterns, *pulp_urls.urlpatterns]
handler400 = "rest_framework.exceptions.bad_request"
handler500 = "rest_framework.exceptions.server_error"
