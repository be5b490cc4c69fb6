"""Pulp's content app inside `pulp-sync api`: `GET /pulp/content/<base_path>/<relative path>` streams a file
of what the distribution at that base path serves (pulp_sync/content/serving.py) from the artifact store, and its
manifest; HEAD answers the same without the body.

Open to anyone who reaches the server, as Pulp's content app is (pulp-sync has no content guards): only
a repository's owners may distribute it (publishing.py). A file the store has lost (marked missing, as
`pulp-sync verify --repair` or a version's repair marks it) is a 404 saying to sync again, never a
partial or wrong body.

Django decides; a proxy sends. Behind `pulp-sync api`'s nginx (or a proxy named by `--accel-redirect`), the
answer carries the file's headers and `X-Accel-Redirect` to the proxy's internal location of the store, and
the proxy sends the bytes (HEAD and Range too), so no Python thread waits on a client that reads slowly.
Without a proxy's location, gunicorn streams the file itself. Either way the file is named by its own name
in the repository (Content-Disposition, RFC 6266), not by its name in the store.
"""

from __future__ import annotations

import mimetypes
from pathlib import PurePosixPath

from django.conf import settings
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_safe

from pulp_sync.content.serving import distribution_at, served
from pulp_sync.content.store import artifact_store
from pulp_sync.models import Artifact

__all__ = ["content"]


@require_safe
def content(request: HttpRequest, path: str) -> HttpResponseBase:
    """The file `path` names under /pulp/content/, or a 404 saying why there is none."""
    found = distribution_at(path)
    if found is None:
        return _not_found(f"no distribution serves {path!r}")
    distribution, relative_path = found
    what = served(distribution, relative_path)
    if what is None:
        return _not_found(f"distribution {distribution.name!r} serves nothing at {relative_path!r}")
    if what.manifest is not None:
        return HttpResponse(what.manifest.encode(), content_type="text/plain; charset=utf-8")
    assert what.artifact is not None
    return _file(what.artifact, relative_path)


def _file(artifact: Artifact, relative_path: str) -> HttpResponseBase:
    """The artifact's bytes, streamed from the store, typed by the name it is served under."""
    store = artifact_store()
    path = store.path_for(artifact.sha256)
    if artifact.missing or not store.holds(path):
        return _not_found(f"{relative_path!r} is missing from the artifact store: sync its repository again")
    content_type = mimetypes.guess_type(relative_path)[0] or "application/octet-stream"
    name = PurePosixPath(relative_path).name
    location = settings.PULP_SYNC_CONTENT_ACCEL_REDIRECT
    if not location:
        return FileResponse(path.open("rb"), content_type=content_type, filename=name)
    headers = {
        "Content-Disposition": content_disposition_header(as_attachment=False, filename=name),
        "X-Accel-Redirect": location + store.relative_path_for(artifact.sha256),
    }
    return HttpResponse(content_type=content_type, headers=headers)


def _not_found(why: str) -> HttpResponse:
    return JsonResponse({"detail": why}, status=404)
