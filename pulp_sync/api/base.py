"""What the viewsets of both dialects share: pages of at most MAX_LIMIT, objects scoped to the user
who asks (pulp_sync/api/access.py), and ownership of what a user creates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from rest_framework import viewsets
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.serializers import BaseSerializer

from pulp_sync.api.access import ROLES, MayChange, give_role, signed_in, visible
from pulp_sync.api.limits import Pages

__all__ = ["ApiViewSet", "Scoped"]


class ApiViewSet(viewsets.GenericViewSet):
    """Every viewset: for users only; reads need to see an object, changes need `may_change`."""

    pagination_class = Pages
    permission_classes: Sequence[type[BasePermission]] = [IsAuthenticated, MayChange]


class Scoped:
    """A viewset mixin (before the viewset): only the objects the user may see, the others being
    404s as if they did not exist; the creator of an object is given its owner role."""

    def get_queryset(self) -> QuerySet[Any]:
        return visible(super().get_queryset(), self.request.user)  # type: ignore[misc, attr-defined]

    def perform_create(self, serializer: BaseSerializer) -> None:
        with transaction.atomic():
            created = serializer.save()
            give_role(created, signed_in(self.request), ROLES[type(created)].owner)  # type: ignore[attr-defined]
