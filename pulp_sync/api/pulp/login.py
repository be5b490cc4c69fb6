"""Pulp's `login/`: authenticate once, then send a session cookie instead of a password.

A password is checked with Django's PBKDF2 (1,000,000 iterations, about 0.18 s of CPU), on every request
that sends basic auth: a client polling a task every 0.1 s kept the API at ~70% of a CPU, slowing the sync
it watched. So, as with pulpcore, a client logs in once (POST with basic or token auth) and from then on
sends the `sessionid` cookie, which costs two small queries, and on unsafe methods the `csrftoken` cookie's
value as `X-CSRFToken` (DRF's SessionAuthentication checks it). The endpoint is pulpcore's LoginViewSet,
operation ids and all, but for PATCH `login_update` (a user changing its own name and password), which
this dialect does not serve, as it serves no users/ endpoint.
"""

from __future__ import annotations

from django.contrib.auth import login, logout
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from pulp_sync.api.access import signed_in
from pulp_sync.api.base import DeclaredQuery
from pulp_sync.api.pulp.schema import PulpSchema

__all__ = ["LoginSerializer", "LoginView"]


class LoginSerializer(serializers.Serializer):
    """The user a session is for: its name (pulpcore's `pulp_href` and `prn` name a user of its users/
    endpoint, which this dialect has not)."""

    username = serializers.CharField(read_only=True)


class LoginView(DeclaredQuery, APIView):
    """POST starts a session for the user the request authenticates, GET names the user, DELETE ends the
    session. Any authenticated user may (the default IsAuthenticated): a session is only another way to
    be the same user."""

    schema = PulpSchema()
    pulp_tag = "Login"

    @extend_schema(
        operation_id="login",
        request=None,
        responses={status.HTTP_201_CREATED: LoginSerializer},
        description="Start a session for the user the request authenticates: the `sessionid` and `csrftoken` "
        "cookies. Send the cookie instead of a password from then on, and on POST, PUT, PATCH and DELETE the "
        "`csrftoken` cookie's value as the `X-CSRFToken` header.",
    )
    def post(self, request: Request) -> Response:
        """Django's login stores the user in a new session (the `sessionid` cookie) and rotates the CSRF
        token, which CsrfViewMiddleware then sends as the `csrftoken` cookie."""
        user = signed_in(request)
        login(request, user)
        return Response(LoginSerializer(user).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        operation_id="login_read",
        responses={status.HTTP_200_OK: LoginSerializer},
        description="The user the request is authenticated as.",
    )
    def get(self, request: Request) -> Response:
        return Response(LoginSerializer(request.user).data)

    @extend_schema(
        operation_id="logout",
        responses={status.HTTP_204_NO_CONTENT: None},
        description="End the session: its cookie no longer authenticates.",
    )
    def delete(self, request: Request) -> Response:
        """The session is deleted from the database: its cookie, wherever a copy is, no longer authenticates."""
        logout(request)
        return Response(status=status.HTTP_204_NO_CONTENT)
