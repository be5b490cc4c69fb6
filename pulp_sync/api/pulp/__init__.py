"""The REST API in Pulp 3's file-plugin dialect under /pulp/api/v3/, so that pulp-cli (pulp-glue) works.

    remotes/file/file/                          CRUD; policy "immediate" only; headers as Pulp's list
    repositories/file/file/                     CRUD; {href}sync/ (202 {"task": href}), a default remote
    {remote or repository href}*_role(s)/       Pulp's add_role, remove_role, list_roles, my_permissions
    repositories/file/file/<id>/versions/       list and read, with Pulp's content_summary
    content/file/files/                         list, read, create (a file upload, or an artifact's href)
    {repository href}modify/                    add and remove content: a new version (a finished task)
    {version href}, {version href}repair/       delete a version (not the latest or a distributed one); repair
    publications/file/file/                     a version made servable, with its PULP_MANIFEST
    distributions/file/file/                    a base path serving a publication or a repository's latest
    /pulp/content/<base_path>/<path>            what distributions serve, to anyone (content_app.py)
    acs/, {href}set_label/, uploads/, ...       declared, answered 501 saying why (not_served.py)
    artifacts/                                  list and read (admins)
    tasks/                                      list and read; PATCH {"state": "canceled"} cancels
    workers/                                    list and read: the RQ workers on the queue (workers.py)
    users/                                      list and read; delete (admins), as deleteuser (users.py)
    orphans/cleanup/                            POST: a task deleting what no version holds (admins)
    status/                                     versions, workers, database, Redis, storage
    docs/api.json                               the OpenAPI document, with Pulp's operation ids

Everything but the OpenAPI document and /pulp/content/ needs a user, as the rest of the API (basic or token
auth), who sees and changes only what pulp_sync/api/access.py lets them.
The document claims the Pulp versions of `schema.APP_VERSIONS`, which pulp-glue checks.
"""
