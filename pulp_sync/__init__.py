"""pulp-sync, the service: Django models, the artifact store, the sync pipeline and the CLI.

Use from Python (the harness's "small documented entry point"):

    import pulp_sync
    pulp_sync.setup()                       # Django on pulp_sync.settings
    from pulp_sync.sync.pipeline import sync_repository
"""

from pulp_sync.database import setup

__all__ = ["setup"]
