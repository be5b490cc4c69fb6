"""The Django app of the sync service."""

from __future__ import annotations

from django.apps import AppConfig

__all__ = ["PulpSyncConfig"]


class PulpSyncConfig(AppConfig):
    """Registers the models (remotes, repositories, versions, artifacts, content)."""

    name = "pulp_sync"
    verbose_name = "pulp-sync"
    default_auto_field = "django.db.models.BigAutoField"
