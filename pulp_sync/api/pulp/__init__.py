"""The REST API in Pulp 3's file-plugin dialect under /pulp/api/v3/, so that pulp-cli (pulp-glue) works.

    remotes/file/file/                          CRUD; policy "immediate" only; headers as Pulp's list
    repositories/file/file/                     CRUD; {href}sync/ (202 {"task": href}), a default remote
    {remote or repository href}*_role(s)/       Pulp's add_role, remove_role, list_roles, my_permissions
    repositories/file/file/<id>/versions/       list and read, with Pulp's content_summary
    content/file/files/                         list and read; ?repository_version(_added|_removed)=href
    artifacts/                                  list and read (admins)
    tasks/                                      list and read; PATCH {"state": "canceled"} cancels
    orphans/cleanup/                            POST: a task deleting what no version holds (admins)
    status/                                     versions, workers, database, Redis, storage
    docs/api.json                               the OpenAPI document, with Pulp's operation ids

Everything but the OpenAPI document needs a user, as the rest of the API (basic or token auth), who
sees and changes only what pulp_sync/api/access.py lets them.
The document claims the Pulp versions of `schema.APP_VERSIONS`, which pulp-glue checks.
"""
