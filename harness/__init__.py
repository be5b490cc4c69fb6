"""The harness: experiments that compare downloaders fairly (reset, repeat, interleave, statistics).

It drives pulp_sync only through its command line, one child process per run. Its folders, bottom
to top: each imports from itself and the folders listed before it, experiment/ and results/ share the
ground (tests/test_layering.py checks the order; each folder's __init__ names its modules;
docs/architecture.md has the whole house):

    experiment/  the spec (TOML): manifests x variants, runs, warm-up, profile; its cost; samples
    results/     one record per run, results.json (the source of truth), runs.csv
    analysis/    statistics, per-cell findings and warnings, calibration, compare, sweeps
    variants/    what a variant runs: pulp-sync's CLI, external programs, a Pulp API; workers, hosts
    run/         the run order, the loop (reset, sync, record), child processes, fixture servers,
                 provenance
    report/      summary.md and the terminal, the plots, report.html

    cli.py       `pulp-sync bench` / `python -m harness`; defaults.py and errors.py for all of them
"""

__all__: list[str] = []
