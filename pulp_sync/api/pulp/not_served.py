"""Pulp operations pulp-sync does not serve, declared all the same, so that pulp-cli says so in one line.

pulp-glue finds each call by its operation id in the OpenAPI document; an id the document lacks ends
in a KeyError traceback inside pulp-cli. So the operations its `file` commands may call and this
server does not serve (alternate content sources, labels, chunked uploads, content guards) are in the
document, each taking any body, and answered 501 with `{"detail": "<why, and what to do instead>"}`,
which pulp-cli prints as its one-line error. Whoever is not signed in gets the 401 of every endpoint.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, re_path
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from pulp_sync.api.pulp.labels import NO_LABELS

__all__ = ["NotServed", "NOT_SERVED", "urlpatterns", "declare"]

_API = "/pulp/api/v3/"
_HREFS = {
    "file_file_remote_href": "remotes/file/file/[0-9]+/",
    "file_file_repository_href": "repositories/file/file/[0-9]+/",
    "file_file_distribution_href": "distributions/file/file/[0-9]+/",
    "file_file_content_href": "content/file/files/[0-9]+/",
    "file_file_alternate_content_source_href": "acs/file/file/[^/]+/",
    "upload_href": "uploads/[^/]+/",
}
"""The href parameters of the paths below, and the paths they stand for (under /pulp/api/v3/)."""
_HREF_PATH = re.compile(r"\{(\w+)\}(.*)")
_ACS = "alternate content sources (ACS) are not supported by pulp-sync: a remote's URL is where a sync downloads"
_UPLOADS = (
    "chunked uploads are not supported by pulp-sync: upload the file in one request (leave out --chunk-size), "
    "of at most 2.5 MiB"
)
_GUARDS = "content guards are not supported by pulp-sync: a distribution serves anyone who reaches the server"
_LIST_PARAMETERS = (
    "limit", "offset", "fields", "exclude_fields", "ordering", "name", "name__contains", "name__icontains",
    "name__in", "pulp_label_select",
)
"""What pulp-cli's list and lookup commands may send, declared so that pulp-glue sends it and gets the 501."""
_LIST_ARRAYS = frozenset({"fields", "exclude_fields", "ordering", "name__in"})
"""Those of them that are lists."""
_LIST_TYPES = {"limit": "integer", "offset": "integer"}
"""Those of them that are not strings."""


@dataclass(frozen=True)
class NotServed:
    """One operation declared but not served: its id, method, path as the document writes it (an href
    parameter, or a path under /pulp/api/v3/), and why, which is the answer's detail."""

    operation_id: str
    method: str
    path: str
    why: str

    def regex(self) -> str:
        """The URL pattern of the path (without the leading slash, as Django matches)."""
        href = _HREF_PATH.fullmatch(self.path)
        if href is None:
            return "^" + re.escape(self.path.lstrip("/")) + "$"
        return "^" + (_API + _HREFS[href.group(1)]).lstrip("/") + re.escape(href.group(2)) + "$"

    def operation(self, security: list[dict[str, list[str]]]) -> dict[str, Any]:
        """The operation in the document: any parameter pulp-cli sends, any JSON or multipart body, and the
        `security` of the served ones (pulp-glue sends credentials only to an operation that asks for them)."""
        href = _HREF_PATH.fullmatch(self.path)
        parameters = [_parameter(href.group(1), "path")] if href else []
        if self.method == "get":
            parameters += [_parameter(name, "query") for name in _LIST_PARAMETERS]
        operation: dict[str, Any] = {
            "operationId": self.operation_id,
            "description": f"Not served: {self.why}.",
            "parameters": parameters,
            "tags": ["Not served"],
            "responses": {"501": {"description": "Not served; the detail says why."}},
            "security": security,
        }
        if self.method in ("post", "put", "patch"):
            any_object = {"schema": {"type": "object", "additionalProperties": True}}
            operation["requestBody"] = {"content": {"application/json": any_object, "multipart/form-data": any_object}}
        return operation


def _parameter(name: str, where: str) -> dict[str, Any]:
    """Typed as Pulp types it (pulp-glue checks a value against it): a string, an integer (`limit`), or a list
    of strings (`fields`, `name__in`, ...)."""
    many = name in _LIST_ARRAYS
    schema = {"type": "array", "items": {"type": "string"}} if many else {"type": _LIST_TYPES.get(name, "string")}
    parameter = {"name": name, "in": where, "required": where == "path", "schema": schema}
    return parameter | ({"explode": False} if many else {})


def _resource(prefix: str, collection: str, href: str, why: str, actions: dict[str, str]) -> list[NotServed]:
    """A whole resource not served: list and create, read, update and delete, and its `actions` (name: method)."""
    return [
        NotServed(f"{prefix}_list", "get", _API + collection, why),
        NotServed(f"{prefix}_create", "post", _API + collection, why),
        NotServed(f"{prefix}_read", "get", "{" + href + "}", why),
        NotServed(f"{prefix}_update", "put", "{" + href + "}", why),
        NotServed(f"{prefix}_partial_update", "patch", "{" + href + "}", why),
        NotServed(f"{prefix}_delete", "delete", "{" + href + "}", why),
        *(NotServed(f"{prefix}_{name}", how, "{" + href + "}" + name + "/", why) for name, how in actions.items()),
    ]


_ROLE_ACTIONS = {"list_roles": "get", "my_permissions": "get", "add_role": "post", "remove_role": "post"}

NOT_SERVED: list[NotServed] = [
    *_resource(
        "acs_file_file", "acs/file/file/", "file_file_alternate_content_source_href", _ACS,
        {"refresh": "post", **_ROLE_ACTIONS},
    ),
    *(
        NotServed(f"{prefix}_{action}", "post", "{" + href + "}" + action + "/", NO_LABELS)
        for prefix, href in (
            ("remotes_file_file", "file_file_remote_href"),
            ("repositories_file_file", "file_file_repository_href"),
            ("distributions_file_file", "file_file_distribution_href"),
            ("content_file_files", "file_file_content_href"),
        )
        for action in ("set_label", "unset_label")
    ),
    NotServed("uploads_create", "post", _API + "uploads/", _UPLOADS),
    NotServed("uploads_update", "put", "{upload_href}", _UPLOADS),
    NotServed("uploads_commit", "post", "{upload_href}commit/", _UPLOADS),
    NotServed("uploads_delete", "delete", "{upload_href}", _UPLOADS),
    *(
        NotServed(f"contentguards_core_{kind}_list", "get", f"{_API}contentguards/core/{kind}/", _GUARDS)
        for kind in ("rbac", "content_redirect", "header", "composite")
    ),
]
"""What pulp-cli's `file` commands may call and pulp-sync does not serve."""


class NotServedView(APIView):
    """Answers every method of its path's operations with 501 and why (for a signed-in user)."""

    why: dict[str, str] = {}
    schema = None  # declared by `declare`, not by drf-spectacular

    def _answer(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        why = self.why.get(request.method.lower()) if request.method else None
        if why is None:
            self.http_method_not_allowed(request)
        return Response({"detail": why}, status=status.HTTP_501_NOT_IMPLEMENTED)

    get = post = put = patch = delete = _answer


def _views() -> list[URLPattern]:
    """One route per path, answering each method it declares."""
    by_path: dict[str, dict[str, str]] = {}
    for operation in NOT_SERVED:
        by_path.setdefault(operation.regex(), {})[operation.method] = operation.why
    return [re_path(regex, NotServedView.as_view(why=why)) for regex, why in by_path.items()]


urlpatterns = _views()


def declare(paths: dict[str, Any]) -> dict[str, Any]:
    """The document's paths with the operations not served added (none of them is served elsewhere), each
    asking for the credentials the served ones do."""
    declared = {path: dict(operations) for path, operations in paths.items()}
    security: list[dict[str, list[str]]] = next(
        (operation["security"] for operations in paths.values() for operation in operations.values()
         if isinstance(operation, dict) and operation.get("security")),
        [],
    )
    for not_served in NOT_SERVED:
        declared.setdefault(not_served.path, {})[not_served.method] = not_served.operation(security)
    return declared
