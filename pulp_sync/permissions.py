"""Pulp's object roles over pulp-sync's models, and who may use a remote: the rules that both the API
(pulp_sync/api/access.py builds what users see and change on them) and the workers (a task checks its
dispatcher's right to its remote when it starts, pulp_sync/tasks.py) apply. Here rather than in the API
package so that a worker checks with the very same rule without loading the API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import models as auth
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model, QuerySet

from pulp_sync.models import Distribution, Publication, Remote, Repository, UserRole

__all__ = ["User", "ObjectRoles", "ROLES", "is_admin", "seen", "may_use_remote"]

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
    content_type = ContentType.objects.get_for_model(model)
    return UserRole.objects.filter(content_type=content_type, user=user.pk, role__in=ROLES[model].names).values(
        "object_id"
    )


def may_use_remote(user: User, remote: Remote) -> bool:
    """Whether a sync that `user` asked for may use `remote` (its URL, and its credentials): only if
    they see it now, an admin or with a role on it. Checked when the sync is dispatched and again when
    a worker starts it, so a role removed in between ends their use of the remote, default or named."""
    return is_admin(user) or seen(Remote, user).filter(object_id=remote.pk).exists()
