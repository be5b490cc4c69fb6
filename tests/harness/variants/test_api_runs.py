"""`kind = "pulp-api"` variants: real pulpcore, started by the harness, measured through its REST API
beside a pulp-sync variant in one experiment; and the spec's rules for such variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.experiment.spec import SpecError, experiment_from_dict
from tests.harness.helpers import run_bench, write_spec
from tests.harness.variants.test_pulpcore import needs_pulpcore

pytestmark = pytest.mark.machine_wide("pulpcore")  # one test starts pulpcore on its database: tests/conftest.py

VARIANTS = """
runs = 2
warmup = 0

[[variants]]
name = "pulpcore"
kind = "pulp-api"
server = "pulpcore"
download_concurrency = 5

[[variants]]
name = "asyncio"
downloader = "asyncio"
download_concurrency = 5
"""


@pytest.mark.slow
@needs_pulpcore
def test_pulpcore_and_pulp_sync_side_by_side(tiny_tree: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, tiny_tree, VARIANTS)
    run_bench("run", str(spec), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    files = document["manifests"]["100"]["files"]
    runs = document["runs"]
    assert len(runs) == 4 and all(run["ok"] and run["content_units"] == files for run in runs)
    for run in (run for run in runs if run["variant"] == "pulpcore"):
        assert 0 < run["sync_seconds"] <= run["wall_seconds"], "the task's own time is within the observed one"
        assert run["worker_user_seconds"] + run["worker_system_seconds"] > 0 and run["worker_peak_rss_mb"] > 10
        assert run["reset_seconds"] > 0 and run["queue_seconds"] >= 0
    assert "pulpcore" in (tmp_path / "out" / "summary.md").read_text()
    media = tmp_path / "state" / "pulpcore" / "media" / "artifact"
    assert len([path for path in media.rglob("*") if path.is_file()]) == files, "only the last run's artifacts"


@pytest.mark.slow
def test_pulp_sync_as_a_pulp_server_through_the_same_driver(tiny_tree: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, tiny_tree, """
runs = 2
warmup = 0

[[variants]]
name = "pulp-sync-api"
kind = "pulp-api"
server = "pulp-sync"
download_concurrency = 5
""")
    run_bench("run", str(spec), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    files = document["manifests"]["100"]["files"]
    assert all(run["ok"] and run["content_units"] == files for run in document["runs"]), document["runs"]
    assert all(0 < run["sync_seconds"] <= run["wall_seconds"] and run["worker_user_seconds"] > 0
               for run in document["runs"])
    store = tmp_path / "state" / "pulp-sync-server-sqlite" / "artifacts" / "artifact"
    assert len([path for path in store.rglob("*") if path.is_file()]) == files, "the reset by API left one run's files"


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ({"server": "https://pulp.example"}, "api_password for https://pulp.example: give it as"),
        ({"server": "https://pulp.example", "api_password": "hunter2"}, "never in clear"),
        ({"server": "ftp://pulp.example"}, "one of pulpcore, pulp-sync \\(started by the harness\\)"),
        ({"server": "pulpcore", "downloader": "asyncio"}, "a pulp-api variant takes name, kind, .*; not downloader"),
        ({"server": "pulpcore", "tasking": "rq"}, 'not tasking \\(kind = "pulp-sync" takes it\\)'),
        ({"server": "pulpcore", "db": "postgresql"}, "db is the server's own business, except"),
    ],
)
def test_a_pulp_api_variant_is_checked(variant: dict[str, str], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        experiment_from_dict({"name": "e", "variants": [{"name": "p", "kind": "pulp-api", **variant}]})


def test_a_server_needs_the_pulp_api_kind_and_no_sample() -> None:
    with pytest.raises(SpecError, match='not server \\(kind = "pulp-api" takes it\\)'):
        experiment_from_dict({"name": "e", "variants": [{"name": "p", "downloader": "asyncio", "server": "pulpcore"}]})
    with pytest.raises(SpecError, match="syncs the remote's whole manifest"):
        experiment_from_dict({"name": "e", "sample": "10%",
                              "variants": [{"name": "p", "kind": "pulp-api", "server": "pulpcore"}]})
