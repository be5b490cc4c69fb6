"""Hyperlinks as Pulp gives and takes them: relative hrefs out; an href, or for scripts an id, in."""

from __future__ import annotations

from typing import Any

from django.db.models import Model, QuerySet
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from pulp_sync.api.access import visible
from pulp_sync.models import RepositoryVersion

__all__ = ["HrefField", "RelatedHrefField", "HrefOrIdField", "VersionHrefField", "version_href"]

_LARGEST_ID = 2**63 - 1
"""A BigAutoField's largest value: a larger number names nothing, and would overflow the database's integer."""


class _RelativeHref:
    """Reverse without the request: `/api/v3/remotes/1/`, right behind any proxy or host name."""

    def get_url(self, obj: Model, view_name: str, request: Any, format: str | None) -> str | None:
        return super().get_url(obj, view_name, None, format)  # type: ignore[misc]


class HrefField(_RelativeHref, serializers.HyperlinkedIdentityField):
    """The object's own href (`pulp_href`), or a sub-resource's with `view_name`."""


class RelatedHrefField(_RelativeHref, serializers.HyperlinkedRelatedField):
    """The href of a related object. One given in a request must name an object the request's user
    may see: any other "does not exist", exactly as one that does not."""

    def get_queryset(self) -> QuerySet[Any] | None:
        queryset = super().get_queryset()  # None for a read-only field, as DRF's
        return None if queryset is None else visible(queryset, self.context["request"].user)


class HrefOrIdField(RelatedHrefField):
    """A related object given by its href, as Pulp takes it, or by its id (handy in shell scripts)."""

    def to_internal_value(self, data: Any) -> Model:
        if not _is_id(data):
            return super().to_internal_value(data)
        pk = int(data)
        queryset = self.get_queryset()
        found = queryset.filter(pk=pk).first() if queryset is not None and pk <= _LARGEST_ID else None
        if found is None:
            self.fail("does_not_exist")
        return found


@extend_schema_field(OpenApiTypes.URI)
class VersionHrefField(serializers.Field):
    """A repository version's href, or one of its sub-resources' (`view_name`); versions are nested
    under their repository and found by number, so the default lookup by pk does not fit."""

    def __init__(self, view_name: str = "version-detail", **kwargs: Any) -> None:
        self.view_name = view_name
        super().__init__(read_only=True, **kwargs)

    def to_representation(self, version: RepositoryVersion) -> str:
        return version_href(version.repository_id, version.number, self.view_name)


def version_href(repository_pk: int, number: int, view_name: str = "version-detail") -> str:
    """`/api/v3/repositories/<repository_pk>/versions/<number>/`, or the sub-resource `view_name`."""
    return reverse(view_name, kwargs={"repository_pk": repository_pk, "number": number})


def _is_id(data: Any) -> bool:
    """An int (not a bool) or a string of ASCII digits."""
    if isinstance(data, str):
        return data.isascii() and data.isdigit()
    return isinstance(data, int) and not isinstance(data, bool)
