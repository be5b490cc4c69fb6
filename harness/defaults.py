"""Every default of the harness, each with a line that says why: one place to look (rq's defaults.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

__all__ = [
    "CHECKOUT",
    "RUNS",
    "WARMUP",
    "SCALE",
    "PROFILE",
    "SERVER",
    "MANIFESTS",
    "CONCURRENCY",
    "RUN_TIMEOUT",
    "CONFIDENCE",
    "ALPHA",
    "BAND",
    "POWER",
    "RESOLVE",
    "BOOTSTRAP_RESAMPLES",
    "CALIBRATION_EXPERIMENTS",
    "CALIBRATION_MANIFESTS",
    "CALIBRATION_RUNS",
    "CALIBRATION_SCALE",
    "CALIBRATION_PROFILE",
    "HIGH_CV",
    "CARRYOVER_RATIO",
    "OUTLIER_Z",
    "OUTLIER_MIN_RUNS",
    "SWEEP_SETTING",
    "SWEEP_CONCURRENCY",
    "SWEEP_RUNS",
    "SWEEP_TOLERANCE",
    "PLAN_RUN_SECONDS",
    "PLAN_FILE_SECONDS",
    "PLAN_BYTES_PER_SECOND",
    "AUTO_BEST_SLOWER",
    "AUTO_DEFAULT_SLOWER",
    "AUTO_LIMITED_SLOWER",
    "RESULTS_DIR",
    "STATE_DIR",
    "TRASH_MANY_FILES",
    "TRASH_MIN_FREE",
    "PULP_SYNC_COMMAND",
    "REPOSITORY",
    "MACHINE_WATCH_SECONDS",
    "PULP_SYNC_API_START_SECONDS",
    "PULP_SYNC_API_STOP_SECONDS",
    "PULPCORE_START_SECONDS",
    "PULPCORE_STOP_SECONDS",
    "PULPCORE_MANAGE_SECONDS",
    "WORKERS_START_SECONDS",
    "WORKERS_STOP_SECONDS",
    "MACHINE_SNAPSHOT_SECONDS",
    "FLEET_TASKS_SECONDS",
    "RESET_SECONDS",
    "PULP_API_POLL_SECONDS",
    "HOSTS_UP_SECONDS",
    "WORKERS_RSS_SAMPLE_SECONDS",
]

CHECKOUT = Path(__file__).resolve().parent.parent
"""The source tree the harness runs from: its git commit is recorded, and scripts/pulpcore.sh installs
pulpcore into its .venv-pulpcore."""
RUNS = 10
"""Counted runs per cell (manifest x variant): the seed ran ten."""
WARMUP = 1
"""Runs per cell made before counting: warms page cache, imports and the server; never averaged."""
SCALE = 1.0
"""Fixture size factor; 1.0 is the seed's ~4 MB files (407 MB for the 100 set)."""
PROFILE = "loopback"
"""Network profile of the fixture server when the spec names none."""
SERVER: Final = "builtin"
"""Fixture server: our own (shapes traffic) or nginx (loopback only)."""
MANIFESTS = ("100", "200", "300", "400", "500")
"""The seed's five file-example manifests."""
CONCURRENCY = 10
"""Downloads in flight when a variant names none (Pulp's download_concurrency default)."""
RUN_TIMEOUT = 3600.0
"""Seconds one sync child may take before it is killed and recorded as failed."""
CONFIDENCE = 0.95
"""Level of every confidence interval reported."""
ALPHA = 0.05
"""Significance level of the test between two variants (after Holm's correction across the pairs)."""
BAND = 0.02
"""Band of practical equivalence: a ratio of times within ±2% is "no difference" even when a test calls
it significant, as criterion's noise threshold and asv's factor do: on a shared machine a real 0.3%
is not worth a verdict."""
POWER = 0.80
"""Power at which the minimum detectable effect is computed: the smallest difference that a run of this
size and noise would detect four times in five."""
RESOLVE = 0.05
"""The difference for which the report says how many runs would resolve it ("about 30 runs would
resolve 5%")."""
BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the percentile bootstrap of the average percent change (Efron & Tibshirani 1993,
ch. 13): enough that the 2.5th and 97.5th percentiles move by a fraction of a percent between seeds."""
CALIBRATION_EXPERIMENTS = 6
"""A/A experiments `bench calibrate` runs: 12 comparisons on its two manifests, about 5 minutes here."""
CALIBRATION_MANIFESTS = ("100", "200")
CALIBRATION_RUNS = 5
"""Counted runs per cell of each A/A experiment (and one warm-up)."""
CALIBRATION_SCALE = 0.05
CALIBRATION_PROFILE = "wan"
"""Without a spec, `bench calibrate` measures the main job's conditions (./manytests.sh: scale 0.05, wan)."""
HIGH_CV = 0.10
"""A cell whose stddev is above this fraction of its mean gets a warning: too noisy to trust."""
CARRYOVER_RATIO = 1.25
"""A cell's runs that came after some variants in their round, all slower than its others and their median this
many times theirs, get a warning: something those variants left behind slowed the next runs (analysis._carryover)."""
OUTLIER_Z = 10.0
"""Modified Z-score (Iglewicz & Hoaglin 1993) above which a run is flagged. They label 3.5 "potential
outliers"; hyperfine warns only beyond 14.826 MADs from the median, which is a score of 10, because
a tight cell's MAD is tiny and 3.5 then flags differences of milliseconds. We warn as hyperfine does."""
OUTLIER_MIN_RUNS = 5
"""Fewer runs than this are not screened for outliers: a median of three says little about a fourth."""
SWEEP_SETTING = "download_concurrency"
"""The Remote setting a sweep varies unless told another (`bench sweep --sweep NAME=...`)."""
SWEEP_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)
"""Concurrency values a sweep tries."""
SWEEP_RUNS = 3
"""Counted runs per value in a sweep: enough for an interval, cheap enough for eight values."""
SWEEP_TOLERANCE = 0.05
"""A sweep recommends the smallest value within this fraction of the best throughput."""
PLAN_RUN_SECONDS: float = 1.5
"""What `bench run`'s plan prices a run at besides its sync: the reset of database, store and services
before it, the sync child's start and its end (harness.experiment.plan). Fitted: the median time between two
runs' starts less the first one's sync, 1.5 s in a run of experiments/auto.toml on the 2-core reference
machine (335 runs, inline, sqlite)."""
PLAN_FILE_SECONDS: float = 0.00075
"""What the plan prices each file at on this machine, whatever the link: the client's and server's work per
file. Fitted with PLAN_BYTES_PER_SECOND to the same run's loopback syncs, where the CPU sets the pace: 2,000
small files (5 MB) in about 1.55 s, 500 files of 195 MB in about 1.2 s."""
PLAN_BYTES_PER_SECOND: float = 240e6
"""The fastest the plan prices a sync's bytes on this machine, whatever the link: fitted with
PLAN_FILE_SECONDS (harness.experiment.plan)."""
AUTO_BEST_SLOWER = 0.05
"""Issue 35's first target: auto takes at most 5% more time than the best fixed concurrency of its sweep, at
the upper end of the ratio's 95% interval, so that the bound is shown and not hoped for. 5% is the sweep's
own tolerance: a value within it of the best is as good as any."""
AUTO_DEFAULT_SLOWER = 0.02
"""Issue 35's second target: auto takes at most 2% more time than the default fixed concurrency (CONCURRENCY)
at the upper end of the interval: whoever leaves the default alone must lose nothing by switching to auto.
2% is the band of practical equivalence (BAND)."""
AUTO_LIMITED_SLOWER = 0.10
"""On a remote that limits its connections, auto's time may be at most this share above the best fixed value
at or below the limit, at the upper end of the interval (issue 35): auto finds the limit by being refused
above it, which costs retries that a fixed value at the limit never makes."""
RESULTS_DIR = Path("results")
"""Where `results/<timestamp>-<experiment>/` folders go."""
STATE_DIR = Path(".pulp-sync") / "bench"
"""PULP_SYNC_HOME of the benchmarked syncs: reset before every run, so never the user's own."""
TRASH_MANY_FILES = 1000
"""A run's tree of this many files or more waits in the trash until the experiment ends, a smaller
one is deleted before the next run (harness/run/trash.py says why)."""
TRASH_MIN_FREE = 0.10
"""Share of the disk kept free: the trash is emptied at once when free space falls below this."""
PULP_SYNC_COMMAND = (sys.executable, "-m", "pulp_sync")
"""How a run starts pulp-sync: the same interpreter as the harness, so the same installed code."""
REPOSITORY = "bench"
"""Repository name every benchmarked sync writes into."""
MACHINE_WATCH_SECONDS = 5.0
"""How often the machine's other processes are sampled while the runs go on (harness.run.machine.Watch):
one pass over /proc, a few milliseconds, so often enough to see a process that ran for a few seconds."""

# The servers the harness starts (pulp_base.servers): how long each may take to be ready, and how long
# its process group gets between SIGTERM and SIGKILL.
PULP_SYNC_API_START_SECONDS = 60.0
"""Bound on `pulp-sync api` announcing its address: Django's start-up on a busy machine, with margin."""
PULP_SYNC_API_STOP_SECONDS = 10.0
"""How long gunicorn gets to stop its workers after SIGTERM before its process group is killed."""
PULPCORE_START_SECONDS = 90.0
"""Bound on pulpcore's API answering with its worker online: two Django start-ups and a worker heartbeat."""
PULPCORE_STOP_SECONDS = 5.0
"""How long pulpcore's API and worker get to stop after SIGTERM before their groups are killed: a worker
in the middle of a task would otherwise wait for it."""
PULPCORE_MANAGE_SECONDS = 600.0
"""Bound on one `pulpcore-manager` command: a full migrate takes ~13 s here."""
WORKERS_START_SECONDS = 30.0
"""Bound on the RQ workers of a run all registering with Redis."""
WORKERS_STOP_SECONDS = 30.0
"""How long a worker gets to finish after SIGTERM (a warm shutdown waits for its job) before SIGKILL."""
WORKERS_RSS_SAMPLE_SECONDS = 0.01
"""How often the workers' peak RSS is sampled while a run goes on (work horses included): often enough to
see a work horse that lives for a few milliseconds."""
HOSTS_UP_SECONDS = 120.0
"""`hosts.sh up` may wait a minute for another run of it (another session's hosts), then make 99 hosts."""
PULP_API_POLL_SECONDS = 0.1
"""Between two looks at a Pulp server's running task: the observed end is at most this late."""
RESET_SECONDS = 600.0
"""Seconds a reset may take (a large store on a slow disk) before the experiment stops."""
FLEET_TASKS_SECONDS = 120.0
"""How long reading a fleet run's tasks back may take (one `pulp-sync tasks --json`)."""
MACHINE_SNAPSHOT_SECONDS = 0.5
"""How long the busiest processes are watched for each snapshot of the machine's state."""
