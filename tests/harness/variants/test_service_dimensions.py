"""The service dimensions of a variant: db by name and RQ tasking with fresh workers, on the real servers.

One tiny experiment through the command line: inline on sqlite, RQ's SimpleWorker on PostgreSQL and
RQ's forking Worker on MariaDB (Redis, PostgreSQL and MariaDB on 127.0.0.1, started by .ci/run), each
database a throwaway one given to the variant as a DATABASE_URL.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from redis import Redis
from rq import Worker

from harness.experiment.spec import SpecError, experiment_from_dict
from tests.databases import throwaway_database
from tests.harness.helpers import run_bench, write_spec

SERVICE = """
runs = 1
warmup = 0
profile = "loopback"
baseline = "inline"

[[variants]]
name = "inline"
downloader = "asyncio"

[[variants]]
name = "rq-simple-postgresql"
downloader = "asyncio"
db = "{postgresql}"
tasking = "rq"
worker = "simple"

[[variants]]
name = "rq-fork-mysql"
downloader = "futures"
db = "{mysql}"
tasking = "rq"
worker = "fork"
workers = 2
"""


def test_rq_variants_run_on_fresh_workers_and_count_their_cpu(tiny_tree: Path, tmp_path: Path) -> None:
    with throwaway_database("postgresql", tmp_path) as postgresql, throwaway_database("mysql", tmp_path) as mysql:
        _run_service_experiment(tiny_tree, tmp_path, SERVICE.format(postgresql=postgresql, mysql=mysql))


def _run_service_experiment(tiny_tree: Path, tmp_path: Path, body: str) -> None:
    spec = write_spec(tmp_path, tiny_tree, body)
    run_bench("run", str(spec), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    rows = {row["variant"]: row for row in csv.DictReader((tmp_path / "out" / "runs.csv").open())}
    assert {name: row["error"] for name, row in rows.items()} == dict.fromkeys(rows, "")
    assert rows["inline"]["worker_user_seconds"] == "" and rows["inline"]["queue_seconds"] == ""
    assert rows["inline"]["hosts"] == rows["inline"]["repositories"] == ""
    for name in ("rq-simple-postgresql", "rq-fork-mysql"):
        row = rows[name]
        assert int(row["artifacts_downloaded"]) == 100
        assert float(row["worker_user_seconds"]) > 0 and float(row["worker_peak_rss_mb"]) > 10
        assert 0 < float(row["queue_seconds"]) < float(row["sync_seconds"])
        assert (row["hosts"], row["repositories"], row["hosts_used"]) == ("0", "1", "1")
    workers = Worker.all(connection=Redis.from_url("redis://127.0.0.1:6379/0"))
    benchmarked = [w.name for w in workers if any(q.startswith("pulp-sync-bench-") for q in w.queue_names())]
    assert benchmarked == [], "every worker was stopped"


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ({"tasking": "celery"}, "tasking 'celery' is not one of inline, rq"),
        ({"tasking": "rq", "worker": "thread"}, "worker 'thread' is not one of fork, simple"),
        ({"worker": "fork"}, r'not worker \(tasking = "rq" takes it\)'),
        ({"tasking": "rq", "workers": 0}, "workers must be 1 or more"),
        ({"db": "oracle"}, "db 'oracle' is neither one of sqlite, postgresql, mysql nor a DATABASE_URL"),
        ({"db": "postgress"}, "db 'postgress' is neither one of sqlite, postgresql, mysql nor a DATABASE_URL; "
                              "did you mean postgresql?"),
    ],
)
def test_service_settings_are_checked_when_read(variant: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        experiment_from_dict({"name": "x", "variants": [{"name": "v", "downloader": "asyncio", **variant}]})
