"""The OpenAPI document of each dialect, generated once per process, under one lock, on its first request.

drf-spectacular generates a document per request, and not safely in threads: its view patches the one
global settings object for the time it generates (the Pulp dialect's settings differ from the deprecated
API's), and the generator keeps per-run state of its own. 60 GETs at once of the document pulp-cli reads
first were 24 to 46 500s (issue 32). The document only changes with the code, so it is made once, while
no other is being made, and every later request is answered with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drf_spectacular.views import SpectacularJSONAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from pulp_sync.api.base import DeclaredQuery

__all__ = ["document_view"]

_GENERATING = threading.Lock()
"""Held while any document is made: the settings drf-spectacular patches are shared by all of them."""


@dataclass
class _Made:
    """One document, once made: its body and headers (a Response is rendered per request, so it is not kept)."""

    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


class _OnceDocument(DeclaredQuery, SpectacularJSONAPIView):
    """drf-spectacular's view of a document, made once (`made`, one per document) and then only answered.

    It declares no query parameter: drf-spectacular's `lang` and `version` would ask for another document.
    """

    made: _Made | None = None

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        assert self.made is not None, "document_view gives each document its own"
        with _GENERATING:
            if self.made.body is None:
                response = super().get(request, *args, **kwargs)
                self.made.body, self.made.headers = response.data, dict(response.headers)
        return Response(self.made.body, headers=self.made.headers)


def document_view(**settings: Any) -> Callable[..., Any]:
    """The view of one document: SpectacularJSONAPIView's arguments (`patterns`, `generator_class`,
    `custom_settings`), made once per process."""
    return _OnceDocument.as_view(made=_Made(), **settings)
