"""Pulp's role endpoints on remotes and repositories: `{href}list_roles/`, `add_role/`, `remove_role/`
(owners and admins: `manage_roles`) and `my_permissions/` (whoever sees the object).

Roles are given to users only: pulp-sync has no groups, so `groups` must be empty (pulp-cli sends []).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.db.models import Model, QuerySet
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from pulp_sync.api.access import ROLES, give_role, permissions_of
from pulp_sync.api.pulp.serializers import PulpFields
from pulp_sync.models import UserRole

__all__ = ["Roles", "NestedRoleSerializer"]


class NestedRoleSerializer(PulpFields, serializers.Serializer):
    """Pulp's body of add_role and remove_role: a role of the object, and the users to give it to or
    take it from."""

    # context: "object", the remote or repository; "adding", True for add_role.

    users = serializers.ListField(
        child=serializers.SlugRelatedField(slug_field="username", queryset=get_user_model().objects.all()),
        default=list,
        help_text="The users' names.",
    )
    groups = serializers.ListField(child=serializers.CharField(), default=list, help_text="Only []: no groups.")
    role = serializers.CharField(help_text='The role, e.g. "file.fileremote_viewer".')

    def validate_groups(self, groups: list[str]) -> list[str]:
        if groups:
            raise serializers.ValidationError("pulp-sync has no groups: give the role to users")
        return groups

    def validate_role(self, role: str) -> str:
        roles = ROLES[type(self.context["object"])]
        if role not in roles.names:
            raise serializers.ValidationError(f"not a role of this object; its roles: {', '.join(roles.names)}")
        return role

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Pulp's refusals: a role the user has already (adding), or has not (removing). A user named
        twice counts once."""
        adding = self.context["adding"]
        attrs["users"] = list(dict.fromkeys(attrs["users"]))
        for user in attrs["users"]:
            if self.held(user, attrs["role"]).exists() == adding:
                given = "already given to" if adding else "not given to"
                raise serializers.ValidationError({"users": [f"The role is {given} user '{user.username}'."]})
        return attrs

    def held(self, user: Any, role: str) -> QuerySet[UserRole]:
        """The user's role on the object, as a queryset (of one row or none)."""
        obj = self.context["object"]
        content_type = ContentType.objects.get_for_model(obj)
        return UserRole.objects.filter(content_type=content_type, object_id=obj.pk, user=user, role=role)

    def to_representation(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {"role": attrs["role"], "users": [user.username for user in attrs["users"]], "groups": []}


ObjectRolesSerializer = inline_serializer(
    "ObjectRolesSerializer", {"roles": serializers.ListField(child=NestedRoleSerializer())}
)
MyPermissionsSerializer = inline_serializer(
    "MyPermissionsSerializer", {"permissions": serializers.ListField(child=serializers.CharField())}
)


class Roles:
    """A dialect viewset mixin (before the viewset) serving Pulp's role endpoints on its objects."""

    @extend_schema(description="List roles assigned to this object.", responses={200: ObjectRolesSerializer})
    @action(detail=True, methods=["get"])
    def list_roles(self, request: Request, pk: str) -> Response:
        obj = self.get_object()  # type: ignore[attr-defined]
        content_type = ContentType.objects.get_for_model(obj)
        given = UserRole.objects.filter(content_type=content_type, object_id=obj.pk).select_related("user")
        users: dict[str, list[str]] = {}
        for user_role in given.order_by("role", "user__username"):
            users.setdefault(user_role.role, []).append(user_role.user.username)
        return Response({"roles": [{"role": role, "users": names, "groups": []} for role, names in users.items()]})

    @extend_schema(
        description="Add a role for this object to users.",
        request=NestedRoleSerializer,
        responses={201: NestedRoleSerializer},
    )
    @action(detail=True, methods=["post"])
    def add_role(self, request: Request, pk: str) -> Response:
        body = self._role_body(request, adding=True)
        with transaction.atomic():
            for user in body.validated_data["users"]:
                give_role(body.context["object"], user, body.validated_data["role"])
        return Response(body.data, status=status.HTTP_201_CREATED)

    @extend_schema(
        description="Remove a role for this object from users.",
        request=NestedRoleSerializer,
        responses={201: NestedRoleSerializer},
    )
    @action(detail=True, methods=["post"])
    def remove_role(self, request: Request, pk: str) -> Response:
        body = self._role_body(request, adding=False)
        with transaction.atomic():
            for user in body.validated_data["users"]:
                body.held(user, body.validated_data["role"]).delete()
        return Response(body.data, status=status.HTTP_201_CREATED)

    @extend_schema(
        description="List permissions available to the current user on this object.",
        responses={200: MyPermissionsSerializer},
    )
    @action(detail=True, methods=["get"])
    def my_permissions(self, request: Request, pk: str) -> Response:
        return Response({"permissions": permissions_of(request.user, self.get_object())})  # type: ignore[attr-defined]

    def _role_body(self, request: Request, adding: bool) -> NestedRoleSerializer:
        """The checked body of add_role or remove_role, on the object of the href (which only its
        owners and admins may change: MayChange)."""
        obj: Model = self.get_object()  # type: ignore[attr-defined]
        body = NestedRoleSerializer(data=request.data, context={"request": request, "object": obj, "adding": adding})
        body.is_valid(raise_exception=True)
        return body
