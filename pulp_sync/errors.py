"""The service's own errors that are not one module's: those of a sync, a manifest, the store live beside
their code (sync.SyncError, manifest.ManifestError)."""

from __future__ import annotations

__all__ = ["ConfigurationError", "ApiFailed"]


class ConfigurationError(Exception):
    """A setting from the environment that pulp-sync cannot use. The message names the variable, the
    value it had (never a secret) and what to give instead: the command line shows it as one line."""


class ApiFailed(RuntimeError):
    """`pulp-sync api` could not start or keep its nginx and gunicorn: the message names which, and what it said."""
