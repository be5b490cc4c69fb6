"""The ground floor: what every other package of pulp-sync may import, and which imports nothing of
theirs and no Django.

- `pulp_base.manifest`: the PULP_MANIFEST format (parse, write, file URLs).
"""
