"""What the views of both dialects share: query parameters only as the OpenAPI document declares them,
pages of at most MAX_LIMIT, objects scoped to the user who asks (pulp_sync/api/access.py), and ownership
of what a user creates."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from rest_framework import viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.serializers import BaseSerializer

from pulp_sync.api.access import ROLES, MayChange, give_role, signed_in, visible
from pulp_sync.api.limits import Pages

__all__ = ["ApiViewSet", "DeclaredQuery", "Scoped"]


class DeclaredQuery:
    """A view mixin (before the view): a query parameter its operation does not declare in the OpenAPI
    document is a 400 naming it, before anything is read or changed.

    Without it a mistyped filter (`?name__regex=`, `?nmae=`) or one this API lacks (`?ordering=`) was
    ignored, and the answer was the whole list: a cleanup script with a typo acted on every object. Pulp
    refuses them too ("Invalid Filter").
    """

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc] # authenticated and allowed first
        declared = self.declared_query_parameters()
        undeclared = sorted(set(request.query_params) - declared)
        if undeclared:
            raise ValidationError({name: [_not_declared(name, declared)] for name in undeclared})

    def declared_query_parameters(self) -> set[str]:
        """The query parameters the request's operation declares: none, unless the view says."""
        return set()


def _not_declared(name: str, declared: set[str]) -> str:
    near = difflib.get_close_matches(name, sorted(declared), n=1)
    takes = f"did you mean {near[0]}?" if near else f"it takes {', '.join(sorted(declared)) or 'none'}"
    return f"not a query parameter of this operation; {takes}"


class ApiViewSet(DeclaredQuery, viewsets.GenericViewSet):
    """Every viewset: for users only; reads need to see an object, changes need `may_change`."""

    pagination_class = Pages
    permission_classes: Sequence[type[BasePermission]] = [IsAuthenticated, MayChange]

    def declared_query_parameters(self) -> set[str]:
        """A list's pages and filters, as drf-spectacular declares them: on a list only (DRF would apply the
        filters to a detail's lookup too, which the document does not say)."""
        if self.action != "list":
            return set()
        declared = [
            backend().get_schema_operation_parameters(self)  # type: ignore[attr-defined] # BaseFilterBackend's
            for backend in self.filter_backends
        ]
        if self.paginator is not None:
            declared.append(self.paginator.get_schema_operation_parameters(self))
        return {parameter["name"] for parameters in declared for parameter in parameters}


class Scoped:
    """A viewset mixin (before the viewset): only the objects the user may see, the others being
    404s as if they did not exist; the creator of an object is given its owner role."""

    def get_queryset(self) -> QuerySet[Any]:
        return visible(super().get_queryset(), self.request.user)  # type: ignore[misc, attr-defined]

    def perform_create(self, serializer: BaseSerializer) -> None:
        with transaction.atomic():
            created = serializer.save()
            give_role(created, signed_in(self.request), ROLES[type(created)].owner)  # type: ignore[attr-defined]
