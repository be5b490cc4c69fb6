"""The WSGI application of the REST API, for `pulp-sync api` (gunicorn) or any other WSGI server."""

from __future__ import annotations

from django.core.wsgi import get_wsgi_application

from pulp_sync import database

__all__ = ["application"]

database.setup()
application = get_wsgi_application()
