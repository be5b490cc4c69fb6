"""A fixtures folder the user names is only read: every mistake below is one line, exit 2, and leaves the
folder as it was (the same files, sizes and mtimes), or, when it does not exist, not made. And the servers
the site starts are the ones the spec's profiles ask for."""

from __future__ import annotations

import shutil
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import bench_group
from harness.experiment.spec import experiment_from_dict
from harness.run.fixture_site import FixtureSite
from tests.harness.helpers import TINY_SCALE

Snapshot = dict[str, tuple[int, int]]


def snapshot(root: Path) -> Snapshot:
    return {str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted(root.rglob("*"))}


@pytest.fixture
def tree(tiny_tree: Path, tmp_path: Path) -> Path:
    """A copy of the session's tiny tree, this test's to watch."""
    return Path(shutil.copytree(tiny_tree, tmp_path / "mine"))


@pytest.mark.parametrize(("command", "said"), [
    (["sweep", "--fixtures", "{tree}", "--manifest", "600", "--downloader", "asyncio", "--concurrency", "2,4"],
     "Error: no manifest named '600' (did you mean 500?)"),
    (["sweep", "--fixtures", "{tree}", "--downloader", "asyncoi", "--concurrency", "2,4"],
     "Error: variant 'asyncoi-c2': no downloader named 'asyncoi'"),
    (["sweep", "--fixtures", "{tree}", "--scale", "1", "--downloader", "asyncio", "--concurrency", "2,4"],
     f"Error: the fixtures folder {{tree}} holds a tree of scale {TINY_SCALE:g}, not 1; nothing was written"),
], ids=["manifest", "downloader", "scale"])
def test_a_mistake_leaves_the_users_fixtures_as_they_were(tree: Path, tmp_path: Path, command: list[str],
                                                          said: str) -> None:
    before = snapshot(tree)
    arguments = [part.replace("{tree}", str(tree)) for part in command]
    result = CliRunner().invoke(bench_group, [*arguments, "--state-dir", str(tmp_path / "state"),
                                              "--results-dir", str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(said.replace("{tree}", str(tree))), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert snapshot(tree) == before, "nothing in the user's folder changed"


def test_a_fixtures_folder_that_does_not_exist_is_not_made(tmp_path: Path) -> None:
    missing = tmp_path / "typo"
    result = CliRunner().invoke(bench_group, ["sweep", "--fixtures", str(missing), "--scale", f"{TINY_SCALE:g}",
                                              "--downloader", "asyncio", "--concurrency", "2,4",
                                              "--state-dir", str(tmp_path / "state"),
                                              "--results-dir", str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: the fixtures folder {missing} does not exist; nothing was written")
    assert not missing.exists()


def test_a_profile_with_max_connections_gets_a_server_that_refuses_past_it(tiny_tree: Path) -> None:
    """One request held in flight by the profile's latency, then one more: refused with the spec's 429."""
    limited = {"base": "loopback", "latency": 3.0, "max_connections": 1, "limit_status": 429}
    experiment = experiment_from_dict({"name": "t", "profile": "limited", "profiles": {"limited": limited},
                                       "variants": [{"name": "a", "downloader": "asyncio"}]})
    with FixtureSite(experiment, tiny_tree) as site:
        url = site.manifest_url(experiment.variants[0], "100")
        held = threading.Thread(target=lambda: urllib.request.urlopen(url, timeout=30).read())
        held.start()
        deadline = time.monotonic() + 30
        while site.stats()["limited"]["in_flight"] < 1:
            assert time.monotonic() < deadline, site.stats()
            time.sleep(0.05)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=30)
        held.join()
        assert (refused.value.code, refused.value.headers["Retry-After"]) == (429, "1")
        assert site.stats()["limited"]["limited"] == 1
