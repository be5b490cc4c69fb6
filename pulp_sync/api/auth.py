"""API users: Django's own users, with a password (basic auth) and/or a token (DRF's token auth)."""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

__all__ = ["save_user", "token_for"]


def save_user(name: str, password: str | None) -> tuple[User, bool]:
    """Create the user or set its password; None keeps an existing password (or, for a new user, allows
    token access only). Raises django's ValidationError for a name Django refuses. Returns (user, created)."""
    user = User.objects.filter(username=name).first()
    created = user is None
    if user is None:
        user = User(username=name)
        user.set_unusable_password()
    if password is not None:
        user.set_password(password)
    user.full_clean()
    user.save()
    return user, created


def token_for(user: User) -> str:
    """The user's API token, made on first use (`Authorization: Token <key>`)."""
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
