"""The deprecated pulp-sync API under /api/v3/ (docs/api.md), from before the Pulp dialect and kept for its
clients; new clients use the Pulp dialect (pulp_sync/api/pulp/).

    remotes/                                   CRUD; password, proxy_password, client_key write-only
    repositories/                              CRUD; POST repositories/<id>/sync/ {"remote": href or id}
    repositories/<id>/versions/<number>/content/
    tasks/<uuid>/                              poll a sync: state, timestamps, progress, error
    artifacts/                                 read-only, for admins
    docs/api.json                              the OpenAPI schema (the only endpoint open to anyone)

Every other endpoint needs a user (basic or token auth, `pulp-sync createuser`), who sees and changes
only what pulp_sync/api/access.py lets them. Hrefs are paths (`/api/v3/remotes/1/`), as Pulp gives them.
Its remotes are the shared RemoteSerializer's (pulp_sync/api/serializers.py), which the Pulp dialect extends.
"""
