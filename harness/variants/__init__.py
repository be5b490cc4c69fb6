"""What a variant runs: pulp-sync's own command line (pulp_sync_cli), an external program such as curl or
aria2c (programs), a Pulp 3 server through its REST API (pulp_api, api_runs; pulpcore, pulp_sync_server),
and the service dimensions: the database (databases), RQ workers (workers), many syncs at once (fleet)
and workers on several hosts (hosts)."""
