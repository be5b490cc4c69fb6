"""The ground floor: what every other package of pulp-sync may import, and which imports nothing of
theirs and no Django.

- `pulp_base.manifest`: the PULP_MANIFEST format (parse, write, file URLs).
- `pulp_base.servers`: a server in a child process: start it, wait until it is ready, stop its group.
- `pulp_base.private`: files and folders only their owner may read, whatever the umask.
"""
