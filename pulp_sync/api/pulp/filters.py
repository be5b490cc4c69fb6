"""Pulp's list filters (`?name=`, `?state__in=`, `?repository_version=<href>`), each declared in the
OpenAPI document: pulp-glue sends only the query parameters an operation declares, and pulp-cli's
list commands always send some (`name__in`, `state__in`, ... empty), so each declared one is applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.db.models import Model, QuerySet
from django.urls import Resolver404, resolve
from drf_spectacular.plumbing import build_parameter_type
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.filters import BaseFilterBackend
from rest_framework.request import Request

from pulp_sync.api.access import visible
from pulp_sync.models import Repository, RepositoryVersion
from pulp_sync.permissions import User

__all__ = [
    "Apply",
    "QueryFilter",
    "QueryFilters",
    "exact",
    "one_of",
    "contains",
    "icontains",
    "startswith",
    "object_of",
    "route_of",
]

Apply = Callable[[QuerySet[Any], list[str], Request], QuerySet[Any]]
"""Narrows a queryset by a parameter's values (one, or many for an `__in` parameter); the request is
for a filter naming another object by its href, which must be one the user may see."""


@dataclass(frozen=True)
class QueryFilter:
    """One query parameter: its name, how it narrows the list, whether it takes many values, and its
    type in the document (pulp-glue checks a value's type against it before it sends it)."""

    name: str
    apply: Apply
    description: str
    many: bool = False
    type: str = "string"

    def parameter(self) -> dict[str, Any]:
        """The OpenAPI parameter, in Pulp's form (an `__in` one is an array, sent exploded or comma-separated)."""
        schema = {"type": "array", "items": {"type": self.type}} if self.many else {"type": self.type}
        return build_parameter_type(
            name=self.name, schema=schema, location=OpenApiParameter.QUERY, description=self.description
        )

    def values(self, request: Request) -> list[str]:
        """The values given, `a,b` and `?x=a&x=b` alike for an `__in` parameter; [] when absent. A value
        with a NUL character (`%00`) is a 400 naming the parameter: PostgreSQL takes no NUL in a query,
        and would answer the filter with an error (a 500), where it cannot match anything anyway."""
        given = request.query_params.getlist(self.name)
        if any("\0" in value for value in given):
            raise ValidationError({self.name: ["Null characters are not allowed."]})
        if not self.many:
            return given[-1:]
        return [part for value in given for part in value.split(",") if part]


class QueryFilters(BaseFilterBackend):
    """Applies the view's `query_filters` to its list, and declares them in the OpenAPI document."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> QuerySet[Any]:
        for query_filter in view.query_filters:
            values = query_filter.values(request)
            if values:
                queryset = query_filter.apply(queryset, values, request)
        return queryset

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [query_filter.parameter() for query_filter in view.query_filters]


# Filters on a model field, named as Django's lookups are (Pulp's `name__contains` is `contains("name")`).


def exact(field: str) -> Apply:
    return lambda queryset, values, _: queryset.filter(**{field: values[0]})


def one_of(field: str) -> Apply:
    return lambda queryset, values, _: queryset.filter(**{f"{field}__in": values})


def contains(field: str) -> Apply:
    return lambda queryset, values, _: queryset.filter(**{f"{field}__contains": values[0]})


def icontains(field: str) -> Apply:
    return lambda queryset, values, _: queryset.filter(**{f"{field}__icontains": values[0]})


_VERSION_LOOKUPS = {"repository_pk": "repository", "number": "number"}
"""A version's href arguments, as its model's fields."""


def startswith(field: str) -> Apply:
    return lambda queryset, values, _: queryset.filter(**{f"{field}__startswith": values[0]})


def flag(field: str) -> Apply:
    """A filter on a true/false field."""
    return lambda queryset, values, _: queryset.filter(**{field: truth(values[0])})


def truth(value: str) -> bool:
    """A true/false filter's value as Pulp's filters read it: `true` or `1`, in any case, is true."""
    return value.lower() in ("true", "1")


def object_of(href: str, route: str, queryset: QuerySet[Any], lookups: dict[str, str], parameter: str) -> Model:
    """The object of `queryset` an href of this API names, for a filter; a 400 naming `parameter` if
    it names none (`queryset` is what the user may see: one they may not is answered the same).

    `route` is the href's URL name (`pulp-file-version-detail`); `lookups` maps the route's
    arguments to the model's fields (`{"repository_pk": "repository", "number": "number"}`).
    """
    name, arguments = route_of(href)
    found = None
    if name == route:
        found = queryset.filter(**{field: arguments[key] for key, field in lookups.items()}).first()
    if found is None:
        raise ValidationError({parameter: [f"no {queryset.model._meta.verbose_name} has the href {href!r}"]})
    return found


def version_of(href: str, parameter: str, user: User,
               versions: QuerySet[RepositoryVersion] | None = None) -> RepositoryVersion:
    """The repository version an href names, of `versions` (every version unless given, e.g. one
    repository's) that `user` sees; a 400 naming `parameter` if none. The one lookup from an href to a
    version, for filters, publications and a modify's base version alike."""
    seen = visible(RepositoryVersion.objects.all() if versions is None else versions, user)
    return cast(RepositoryVersion, object_of(href, "pulp-file-version-detail", seen, _VERSION_LOOKUPS, parameter))


def repository_of(href: str, parameter: str, user: User) -> Repository:
    """The repository an href names, of those `user` sees; a 400 naming `parameter` if none."""
    seen = visible(Repository.objects.all(), user)
    return cast(Repository, object_of(href, "pulp-file-repository-detail", seen, {"pk": "pk"}, parameter))


def route_of(href: str) -> tuple[str | None, dict[str, Any]]:
    """The URL name and arguments of an href's path in this API; (None, {}) if it is none of its paths."""
    try:
        match = resolve(href.split("?", 1)[0])
    except Resolver404:
        return None, {}
    return match.url_name, match.kwargs
