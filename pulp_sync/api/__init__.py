"""The REST API, served by gunicorn: Pulp 3's file-plugin dialect under /pulp/api/v3/ (pulp_sync/api/pulp/,
what pulp-cli talks to), and the deprecated pulp-sync API under /api/v3/ (docs/api.md), described here:

    remotes/                                   CRUD; password, proxy_password, client_key write-only
    repositories/                              CRUD; POST repositories/<id>/sync/ {"remote": href or id}
    repositories/<id>/versions/<number>/content/
    tasks/<uuid>/                              poll a sync: state, timestamps, progress, error
    artifacts/                                 read-only, for admins
    docs/api.json                              the OpenAPI schema (the only endpoint open to anyone)

Every other endpoint needs a user (basic or token auth, `pulp-sync createuser`), who sees and changes
only what pulp_sync/api/access.py lets them (in both APIs). Hrefs are paths
(`/api/v3/remotes/1/`), as Pulp gives them.
"""
