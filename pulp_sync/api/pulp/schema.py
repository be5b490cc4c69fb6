"""The OpenAPI document as Pulp's own generator writes it, for pulp-glue, which drives pulp-cli from it.

pulp-glue finds every call by its operation id (`remotes_file_file_create`, `tasks_cancel`, ...),
fills a resource's path with its href (`{file_file_remote_href}` is the whole path,
`{file_file_repository_href}sync/` a sub-resource of it), checks the Pulp versions the document
claims in `info.x-pulp-app-versions`, and refuses a query parameter the operation does not declare.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any, Protocol, cast

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_parameter_type
from drf_spectacular.utils import OpenApiParameter
from rest_framework.viewsets import GenericViewSet

from pulp_sync.api.pulp import not_served

__all__ = ["APP_VERSIONS", "SCHEMA_SETTINGS", "SELECTED_FIELDS", "PulpSchema", "PulpSchemaGenerator", "selects_fields"]

APP_VERSIONS = {"core": "3.85.0", "file": "3.85.0", "pulp_sync": version("pulp-sync")}
"""The Pulp release whose dialect this is (pulp-cli 0.41 needs core >= 3.49; from 3.86 on it would
take a task's `result` for its outcome), and pulp-sync's own version. `status/` reports the same."""

SCHEMA_SETTINGS = {
    "TITLE": "Pulp 3 API (pulp-sync)",
    "DESCRIPTION": "Pulp 3's file-plugin API served by pulp-sync: file remotes, repositories and their versions, "
    "content and uploads, publications and distributions (content served under /pulp/content/), syncs, "
    "repairs and orphan cleanups as tasks, status.",
    "VERSION": "v3",
    # Given, not guessed from the paths: drf-spectacular's guess fails on paths that are hrefs.
    "SCHEMA_PATH_PREFIX": "/pulp/api/v3",
    # Separate request and response components, as Pulp's: a response's read-only fields are not
    # required of a request, which pulp-glue validates against the schema before it sends it.
    "COMPONENT_SPLIT_REQUEST": True,
    "EXTENSIONS_INFO": {"x-pulp-app-versions": APP_VERSIONS, "x-pulp-domain-enabled": False},
}
"""drf-spectacular settings of the dialect's document (the deprecated API's stay the project's)."""

_ACTIONS = {"retrieve": "read", "destroy": "delete"}
"""Pulp's names for DRF's actions; the others (list, create, update, partial_update, sync) are the same."""

SELECTED_FIELDS = {
    "fields": "A list of fields to include in the response.",
    "exclude_fields": "A list of fields to exclude from the response.",
}
"""Pulp's query parameters choosing what a response shows (serializers.PulpFields applies them), declared
where `selects_fields` says."""
_SELECTED_FIELDS = [
    OpenApiParameter(name, {"type": "array", "items": {"type": "string"}}, OpenApiParameter.QUERY, description=text)
    for name, text in SELECTED_FIELDS.items()
]


def selects_fields(view: Any, method: str) -> bool:
    """Whether the operation takes SELECTED_FIELDS: every GET of a resource."""
    return method == "GET" and isinstance(view, GenericViewSet)


class _PulpView(Protocol):
    """What a dialect view says of itself, for PulpSchema (a viewset has its `action` from DRF)."""

    action: str
    pulp_id_prefix: str
    pulp_tag: str


class PulpSchema(AutoSchema):
    """A dialect view's operations: `<pulp_id_prefix>_<action>` ids, href path parameters, one tag a view.

    Viewsets say `pulp_id_prefix`, `pulp_tag`, `pulp_href` (the path parameter naming one of their
    objects) and, when nested, `pulp_parent_href` (the one naming their parent, for list and create).
    """

    def get_operation_id(self) -> str:
        view = cast(_PulpView, self.view)
        action = view.action
        return f"{view.pulp_id_prefix}_{_ACTIONS.get(action, action)}"

    def get_tags(self) -> list[str]:
        return [cast(_PulpView, self.view).pulp_tag]

    def _resolve_path_parameters(self, variables: list[str]) -> list[dict[str, Any]]:
        """Every path variable is an href (see PulpSchemaGenerator): a string the client fills in.
        (drf-spectacular's own would look for a model field of that name, and warn.)"""
        return [
            build_parameter_type(name=name, schema={"type": "string"}, location=OpenApiParameter.PATH)
            for name in variables
        ]

    def get_override_parameters(self) -> list[Any]:
        """Pulp's `fields` and `exclude_fields` on every GET of a resource (PulpFields applies them)."""
        parameters: list[Any] = super().get_override_parameters()
        if selects_fields(self.view, self.method):
            parameters = [*parameters, *_SELECTED_FIELDS]
        return parameters


class PulpSchemaGenerator(SchemaGenerator):
    """Paths as Pulp writes them: the part of a path up to its last variable is an href parameter."""

    def _get_paths_and_endpoints(self) -> list[tuple[str, str, str, Any]]:
        endpoints = super()._get_paths_and_endpoints()
        return [(_href_path(path, view), regex, method, view) for path, regex, method, view in endpoints]

    def parse(self, input_request: Any, public: bool) -> dict[str, Any]:
        """drf-spectacular puts a "/" before every path; an href parameter is the whole path, so none goes there.
        The operations pulp-sync does not serve are declared too (not_served.py), so pulp-cli says so."""
        paths = super().parse(input_request, public)
        return not_served.declare(
            {path.removeprefix("/") if path.startswith("/{") else path: ops for path, ops in paths.items()}
        )


def _href_path(path: str, view: Any) -> str:
    """`/pulp/api/v3/remotes/file/file/{id}/sync/` -> `{file_file_remote_href}sync/`; a path without
    variables as it is. A nested viewset's list (and create) is under its parent's href."""
    if "{" not in path:
        return path
    name = view.pulp_parent_href if view.action in ("list", "create") else view.pulp_href
    return "{" + name + "}" + path.rpartition("}/")[2]
