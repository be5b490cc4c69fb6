"""API users: Django's own users, with a password (basic auth) and/or a token (DRF's token auth).

An admin (Django's superuser and staff flags, both set) sees and changes everything; any other user
only the objects they own or were given a role on (pulp_sync/api/access.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from pulp_sync.models import Task, TaskState
from pulp_sync.tasking.tasks import cancel_task

__all__ = ["save_user", "delete_user", "token_for"]


def save_user(name: str, password: str | None, admin: bool | None = None) -> tuple[User, bool]:
    """Create the user or set its password and whether it is an admin; None keeps an existing password
    (or, for a new user, allows token access only) and an existing user's admin flag (a new user is no
    admin). Raises django's ValidationError for a name Django refuses. Returns (user, created)."""
    user = User.objects.filter(username=name).first()
    created = user is None
    if user is None:
        user = User(username=name)
        user.set_unusable_password()
    if password is not None:
        user.set_password(password)
    if admin is not None:
        user.is_superuser = user.is_staff = admin
    user.full_clean()
    user.save()
    return user, created


def delete_user(name: str) -> int:
    """Delete the user named `name`, their waiting tasks canceled first (their RQ jobs off the queue); how
    many were canceled. LookupError if no user has the name.

    A task waits on its dispatcher's behalf: once they are gone no one answers for it, so it is canceled
    rather than left to a worker (which would refuse it anyway, tasks._why_refused, had it been dispatched
    meanwhile). A running task is left to finish: it was checked when it started. The user's roles and
    token go with them, so what they alone owned is for admins only, and the distributions they alone owned
    stop serving (permissions.may_serve); their tasks stay, naming no dispatcher."""
    user = User.objects.filter(username=name).first()
    if user is None:
        raise LookupError(f"no user named {name!r}")
    waiting = Task.objects.filter(dispatched_by=user, state=TaskState.WAITING).values_list("pk", flat=True)
    canceled = [task for task in map(cancel_task, list(waiting)) if task.state == TaskState.CANCELED]
    user.delete()
    return len(canceled)


def token_for(user: User) -> str:
    """The user's API token, made on first use (`Authorization: Token <key>`)."""
    token, _ = Token.objects.get_or_create(user=user)
    return token.key
