"""The REST API, served by gunicorn behind nginx, in two dialects, each in its own package:

    pulp/           Pulp 3's file-plugin dialect under /pulp/api/v3/, what pulp-cli talks to
    deprecated/     the deprecated pulp-sync API under /api/v3/ (docs/api.md), kept for its clients

and what both share, here:

    access.py       who sees and changes what: Pulp's object roles over pulp-sync's models
    auth.py         the API's users and their tokens (`pulp-sync createuser`)
    base.py         what every view is: query parameters as declared, pages, objects scoped to the user,
                    ownership of what they create
    documents.py    the OpenAPI documents, each made once per process
    fields.py       hrefs as Pulp gives and takes them
    limits.py       the most a request may ask: page sizes, and the JSON bodies every database stores
    pem.py          certificates and keys as PEM text
    serializers.py  RemoteSerializer (Pulp's FileRemoteSerializer extends it), UniqueName, shown headers
    urls.py         the root URLconf: both dialects' endpoints, and JSON for the errors Django answers
    server.py       `pulp-sync api`: nginx before gunicorn, started, supervised and stopped as one
    proxy.py        nginx's configuration, from the service's settings: every bound that faces a client
    nginx.conf.template  its text

Every endpoint but the OpenAPI documents needs a user (basic or token auth, `pulp-sync createuser`), who
sees and changes only what pulp_sync/api/access.py lets them (in both APIs). Hrefs are paths, as Pulp
gives them.
"""
