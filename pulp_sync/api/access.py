"""Who may see and change what, in both dialects: Pulp's object roles over pulp-sync's models.

An admin (a superuser or staff user) sees and changes everything. Anyone else sees the remotes,
repositories, publications and distributions they have a role on, and changes (updates, deletes, syncs,
gives roles on) those they are the owner of; the creator of one is its owner, as in Pulp. A version and
its content follow their repository. A repository's owners also see and change every distribution of it
(of the repository, or of a publication of its versions), whoever made it: what is served of their
repository is theirs to see and end. A task is seen by whoever dispatched it and whoever sees its
repository, and canceled by its dispatcher and its repository's owners. Objects no one has a role on
(made by the command line, or before roles existed) are for admins only. Content units are added to a
repository only by whoever may distribute a repository holding them (`addable`).

Views list only what the user sees (`visible`), so an object they may not see is a 404 like one
that does not exist; one they see but may not change is a 403 (`MayChange`). The roles themselves,
and who may use a remote in a sync, are in pulp_sync/permissions.py, which the workers apply too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User as Account
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, Q, QuerySet
from django.shortcuts import get_object_or_404
from rest_framework.exceptions import NotAuthenticated, ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request

from pulp_sync.models import (
    Artifact,
    Distribution,
    FileContent,
    Publication,
    Remote,
    Repository,
    RepositoryContent,
    RepositoryVersion,
    Task,
    UserRole,
)
from pulp_sync.permissions import ROLES, ObjectRoles, User, is_admin, may_use_remote, owned, seen
from pulp_sync.tasking.tasks import dispatch_sync

__all__ = [
    "ObjectRoles",
    "ROLES",
    "is_admin",
    "visible",
    "visible_or_404",
    "addable",
    "roles_of",
    "may_change",
    "permissions_of",
    "signed_in",
    "give_role",
    "dispatch_as",
    "REMOTE_REFUSED",
    "IsAdmin",
    "ADMINS_ONLY",
    "MayChange",
    "READ_ACTIONS",
]

READ_ACTIONS = frozenset({"list", "retrieve", "my_permissions"})
"""The viewsets' actions that only read an object: seeing it is enough."""


_SCOPES: dict[type[Model], Callable[[User], Q]] = {
    Remote: lambda user: Q(pk__in=seen(Remote, user)),
    Repository: lambda user: Q(pk__in=seen(Repository, user)),
    RepositoryVersion: lambda user: Q(repository__in=seen(Repository, user)),
    FileContent: lambda user: Q(
        pk__in=RepositoryContent.objects.filter(version__repository__in=seen(Repository, user)).values("content")
    ),
    Task: lambda user: Q(dispatched_by=user.pk) | Q(repository__in=seen(Repository, user)),
    Publication: lambda user: Q(pk__in=seen(Publication, user)),
    Distribution: lambda user: Q(pk__in=seen(Distribution, user)) | _of_owned_repositories(user),
    Artifact: lambda user: Q(pk__in=()),
}
"""What a user who is not an admin sees of each model: no artifacts, which every repository shares (admins'
only, as in Pulp), so that an artifact's href in a body, such as a content create's, names nothing for
them: a 400 naming the field, not a 500."""


def visible(queryset: QuerySet[Any], user: User) -> QuerySet[Any]:
    """The objects of `queryset` that `user` may see (all of them for an admin)."""
    if is_admin(user):
        return queryset
    return queryset.filter(_SCOPES[queryset.model](user))


def _of_owned_repositories(user: User) -> Q:
    """The distributions of the repositories `user` owns: of the repository itself, or of a publication
    of one of its versions."""
    repositories = owned(Repository, user)
    return Q(repository__in=repositories) | Q(publication__repository_version__repository__in=repositories)


def visible_or_404(queryset: QuerySet[Any], user: User, **lookups: Any) -> Any:
    """The object of `queryset` that `lookups` find, if `user` may see it; else a 404 (Http404)."""
    return get_object_or_404(visible(queryset, user), **lookups)


def addable(queryset: QuerySet[FileContent], user: User) -> QuerySet[FileContent]:
    """The content units of `queryset` that `user` may add to a repository: all of them for an admin;
    for anyone else, those a version of a repository they own holds, that is, content they may distribute
    already (permissions.may_distribute). Adding a unit to a repository is distributing it, once that
    repository is distributed: a viewer who sees another's content may not copy it into their own. Content
    a user uploaded qualifies, as a user's upload goes into a repository they own."""
    if is_admin(user):
        return queryset
    holding = RepositoryContent.objects.filter(version__repository__in=owned(Repository, user)).values("content")
    return queryset.filter(pk__in=holding)


def roles_of(user: User, obj: Model) -> list[str]:
    """The roles `user` has on `obj` (a remote or repository)."""
    content_type = ContentType.objects.get_for_model(obj)
    held = UserRole.objects.filter(content_type=content_type, object_id=obj.pk, user=user.pk)
    return list(held.values_list("role", flat=True))


def may_change(user: User, obj: Model) -> bool:
    """Whether `user` may change `obj`: an admin; the owner of a remote, repository, publication or
    distribution; a task's dispatcher or its repository's owner (a task's only change is its cancel); a
    version's: its repository's owner; a distribution's: also the owner of the repository it serves."""
    if is_admin(user):
        return True
    if isinstance(obj, Task):
        repository = obj.repository
        return obj.dispatched_by_id == user.pk or repository is not None and may_change(user, repository)
    if isinstance(obj, RepositoryVersion):
        return may_change(user, obj.repository)
    if isinstance(obj, Distribution) and Distribution.objects.filter(_of_owned_repositories(user), pk=obj.pk).exists():
        return True
    return ROLES[type(obj)].owner in roles_of(user, obj)


def permissions_of(user: User, obj: Model) -> list[str]:
    """Pulp's names of what `user` may do with `obj` (an object with roles): all of an owner's for whoever
    may change it (an admin, a distribution's repository's owner), else what their roles on it give."""
    roles = ROLES[type(obj)]
    return roles.permissions([roles.owner] if may_change(user, obj) else roles_of(user, obj))


def signed_in(request: Request) -> Account:
    """The request's user, whom the view's permissions (IsAuthenticated) let in: never anonymous."""
    user = request.user
    if not isinstance(user, Account):
        raise NotAuthenticated()
    return user


def give_role(obj: Model, user: Account, role: str) -> UserRole:
    """Give `user` the `role` on `obj`."""
    return UserRole.objects.create(content_object=obj, user=user, role=role)


REMOTE_REFUSED = (
    "Not a remote you may use: you do not see it (any more). Name a remote you see, or set one on the repository."
)
"""The 400 of a sync whose remote the user may not use: the repository's own, when they lost their
role on it after setting it there (a remote named in the body is checked by its field first)."""


def dispatch_as(user: Account, repository: Repository, remote: Remote) -> Task:
    """Queue a sync for the RQ workers as `user`, who is its dispatcher, if they may use the remote
    (permissions.may_use_remote: the worker checks again when it starts the task); a 400 naming
    `remote` if not, as for an href that names nothing: the remote is one they do not see."""
    if not may_use_remote(user, remote):
        raise ValidationError({"remote": [REMOTE_REFUSED]})
    return dispatch_sync(repository, remote, tasking="rq", dispatched_by=user)


class IsAdmin(BasePermission):
    """Admins only (artifacts, orphan cleanup: shared by every repository, as in Pulp)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return is_admin(request.user)


ADMINS_ONLY = [IsAuthenticated, IsAdmin]
"""The permission classes of a view for admins only (anyone else: 403, whatever the object)."""


class MayChange(BasePermission):
    """Reading an object (READ_ACTIONS) needs only to see it, which the view's `visible` queryset sees
    to; any other action on it needs `may_change`."""

    def has_object_permission(self, request: Request, view: Any, obj: Model) -> bool:
        return view.action in READ_ACTIONS or may_change(request.user, obj)
