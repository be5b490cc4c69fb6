"""Pulp's object roles over pulp-sync's models, who may use a remote and who may distribute a repository:
the rules that the API (pulp_sync/api/access.py builds what users see and change on them), the workers (a
task checks its dispatcher's right to its remote when it starts, pulp_sync/tasking/tasks.py) and the content app (a
distribution serves only while an owner of it may distribute what it serves, pulp_sync/content/serving.py) apply.
Here rather than in the API package so that each checks with the very same rule without loading the API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import models as auth
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, Q, QuerySet

from pulp_sync.models import Distribution, Publication, Remote, Repository, UserRole

__all__ = [
    "User",
    "ObjectRoles",
    "ROLES",
    "is_admin",
    "seen",
    "owned",
    "may_use_remote",
    "may_distribute",
    "may_serve",
]

User = auth.User | auth.AnonymousUser
"""Whoever a request carries: one of Django's users (AUTH_USER_MODEL is the default), or anonymous."""


@dataclass(frozen=True)
class ObjectRoles:
    """Pulp's roles on one kind of object (`file.fileremote_owner`, `file.fileremote_viewer`) and the
    permissions each gives (Pulp's `file.view_fileremote`, ...): a viewer views, an owner does it all."""

    app: str
    model: str
    owner_actions: tuple[str, ...]

    @property
    def owner(self) -> str:
        return f"{self.app}.{self.model}_owner"

    @property
    def viewer(self) -> str:
        return f"{self.app}.{self.model}_viewer"

    @property
    def names(self) -> tuple[str, str]:
        return self.owner, self.viewer

    def permissions(self, roles: Iterable[str]) -> list[str]:
        """What the roles allow, by Pulp's permission names."""
        held = set(roles)
        actions = ("view", *self.owner_actions) if self.owner in held else ("view",) if self.viewer in held else ()
        return [f"{self.app}.{action}_{self.model}" for action in actions]


ROLES: dict[type[Model], ObjectRoles] = {
    Remote: ObjectRoles("file", "fileremote", ("change", "delete", "manage_roles")),
    Repository: ObjectRoles("file", "filerepository", ("change", "delete", "sync", "manage_roles")),
    Publication: ObjectRoles("file", "filepublication", ("delete", "manage_roles")),
    Distribution: ObjectRoles("file", "filedistribution", ("change", "delete", "manage_roles")),
}
"""The objects users have roles on: Pulp's roles and permissions of each."""


def is_admin(user: User) -> bool:
    """A superuser or staff user: sees and changes everything, and alone cleans up orphans and lists artifacts."""
    return bool(user.is_superuser or user.is_staff)


def seen(model: type[Model], user: User) -> QuerySet[UserRole, Mapping[str, Any]]:
    """The ids (`object_id`) of the `model` objects on which `user` has a role, as a subquery: what
    someone who is not an admin sees of a model with roles (`ROLES`)."""
    return _held(model, user=user.pk, role__in=ROLES[model].names).values("object_id")


def owned(model: type[Model], user: User) -> QuerySet[UserRole, Mapping[str, Any]]:
    """The ids (`object_id`) of the `model` objects `user` is an owner of, as a subquery: what they change."""
    return _held(model, user=user.pk, role=ROLES[model].owner).values("object_id")


def may_use_remote(user: User, remote: Remote) -> bool:
    """Whether a sync that `user` asked for may use `remote` (its URL, and its credentials): only if
    they see it now, an admin or with a role on it. Checked when the sync is dispatched and again when
    a worker starts it, so a role removed in between ends their use of the remote, default or named."""
    return is_admin(user) or seen(Remote, user).filter(object_id=remote.pk).exists()


def may_distribute(user: User, repository: Repository) -> bool:
    """Whether `user` may serve `repository`'s versions to anyone, by a distribution of it or of its
    publication: an admin or an owner of it, as for any change of it (a viewer reads it, and may publish it,
    but a distribution would hand it to people the owners never chose)."""
    return is_admin(user) or owned(Repository, user).filter(object_id=repository.pk).exists()


def may_serve(distribution: Distribution) -> bool:
    """Whether `distribution` may serve what it names now: only while one of its owners may distribute the
    repository it serves (its publication's, or its own), as `may_distribute` says. Checked when a file is
    asked for, not only when the distribution is saved, so that a role taken away, a user deleted or an
    admin demoted ends what they distributed at once. One query, however many files and roles: the served
    repository is read from `distribution`'s publication and version, which the caller selects with it.
    A distribution that names nothing serves nothing, and needs no one."""
    publication = distribution.publication
    repository = distribution.repository_id if publication is None else publication.repository_version.repository_id
    if repository is None:
        return False
    owners = _held(Distribution, object_id=distribution.pk, role=ROLES[Distribution].owner).values("user")
    repository_owners = _held(Repository, object_id=repository, role=ROLES[Repository].owner).values("user")
    distributors = Q(is_superuser=True) | Q(is_staff=True) | Q(pk__in=repository_owners)
    return auth.User.objects.filter(distributors, pk__in=owners).exists()


def _held(model: type[Model], **lookups: Any) -> QuerySet[UserRole]:
    """The roles on `model` objects that `lookups` select (by `user`, `object_id`, `role`)."""
    return UserRole.objects.filter(content_type=ContentType.objects.get_for_model(model), **lookups)
