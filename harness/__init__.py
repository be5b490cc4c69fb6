"""The harness: experiments that compare downloaders fairly (reset, repeat, interleave, statistics).

It drives pulp_sync only through its command line, one child process per run. Modules, in the
order data flows through them:

    spec      an experiment (TOML): manifests x variants, runs, warm-up, profile, server
    schedule  the run order: rounds per manifest, variant order alternating
    site      the fixture tree and one fixture server per network profile
    pulpcli   `pulp-sync reset` and `pulp-sync sync --json` as child processes (child.run_child)
    records   one run's measurements; runner: the loop that makes and saves them
    results   results.json, the source of truth; outputs: runs.csv, perf_data files
    stats     scipy statistics; analysis: cells, pairs, warnings; sweep: recommendations
    summary   tables and sentences; plots: matplotlib; report: summary.md, plots, report.html
    compare   two results folders; cli: `pulp-sync bench` / `python -m harness`
"""

__all__: list[str] = []
