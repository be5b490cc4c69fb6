"""`users/` in Pulp's shape: the API's users (pulp_sync/api/auth.py), so that `pulp user list`, `show` and
`destroy` answer. An admin sees every user and may delete one, which does what `pulp-sync deleteuser` does
(their waiting tasks canceled, their roles and token gone: auth.delete_user); anyone else sees themselves
only. Users are made and changed with `pulp-sync createuser`: the API's create and update (pulp-cli's
`user create` and `user update`) answer 501 saying so."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.exceptions import APIException, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from pulp_sync.api.access import is_admin
from pulp_sync.api.auth import delete_user
from pulp_sync.api.fields import HrefField
from pulp_sync.api.pulp.filters import QueryFilter, contains, exact, flag, icontains, one_of
from pulp_sync.api.pulp.serializers import PulpFields
from pulp_sync.api.pulp.views import PulpViewSet

__all__ = ["UserSerializer", "UserViewSet"]


class UserSerializer(PulpFields, serializers.ModelSerializer):
    pulp_href = HrefField(view_name="pulp-user-detail")
    groups = serializers.SerializerMethodField(help_text="Always empty: pulp-sync has no groups.")

    class Meta:
        model = User
        fields = ["pulp_href", "id", "username", "first_name", "last_name", "email", "is_staff", "is_active",
                  "date_joined", "groups"]
        read_only_fields = fields

    def get_groups(self, user: User) -> list[Any]:
        return []


class MadeOnTheCommandLine(APIException):
    status_code = status.HTTP_501_NOT_IMPLEMENTED
    default_detail = ("users are made and changed on the server's command line: pulp-sync createuser NAME [--admin] "
                      "(PULP_SYNC_PASSWORD in its environment)")


_ANY_BODY = {"application/json": {"type": "object", "additionalProperties": True}}
"""What create and update declare they take: anything, since they take nothing (pulp-glue checks a body
against the document before it sends it)."""


class UserViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.DestroyModelMixin, PulpViewSet):
    """Every user for an admin, oneself for anyone else; an admin may delete a user."""

    queryset = User.objects.order_by("username")
    serializer_class = UserSerializer
    query_filters = (
        QueryFilter("username", exact("username"), "Filter results where username matches value"),
        QueryFilter("username__contains", contains("username"), "Filter results where username contains value"),
        QueryFilter("username__icontains", icontains("username"),
                    "Filter results where username contains value, whatever the case"),
        QueryFilter("username__in", one_of("username"), "Filter results where username is one of the values",
                    many=True),
        QueryFilter("is_staff", flag("is_staff"), "Filter results where is_staff matches value", type="boolean"),
        QueryFilter("is_active", flag("is_active"), "Filter results where is_active matches value", type="boolean"),
    )
    pulp_id_prefix = "users"
    pulp_tag = "Users"
    pulp_href = "auth_user_href"

    def get_queryset(self) -> QuerySet[User]:
        users = super().get_queryset()
        return users if is_admin(self.request.user) else users.filter(pk=self.request.user.pk)

    @extend_schema(request=_ANY_BODY, responses={501: None})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise MadeOnTheCommandLine

    @extend_schema(request=_ANY_BODY, responses={501: None})
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise MadeOnTheCommandLine

    @extend_schema(request=_ANY_BODY, responses={501: None})
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        raise MadeOnTheCommandLine

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """An admin deletes the user as `pulp-sync deleteuser` does; anyone else gets a 403."""
        if not is_admin(request.user):
            raise PermissionDenied("only an admin deletes users")
        delete_user(self.get_object().username)
        return Response(status=status.HTTP_204_NO_CONTENT)
