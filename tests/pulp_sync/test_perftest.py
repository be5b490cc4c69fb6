"""scripts/perftest.sh, the seed's one-sync timer, with api=1: through the Pulp 3 API of a `pulp-sync api`
it starts itself, and of one already running that it is given (reset through the API, as for pulpcore).
The run against pulpcore itself is the harness's (tests/harness/variants/test_pulpcore.py drives the same calls)."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.server import RunningServer, serve_in_background
from tests.pulp_sync.conftest import sample_files, write_repository
from tests.pulp_sync.test_api import Api, pulp_sync, running_api

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
_LINE = re.compile(r"^asyncio 100: (\d+\.\d{3}) s \(through the API at http://127\.0\.0\.1:\d+\)", re.MULTILINE)


@pytest.fixture(scope="module")
def fixture_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """A tree whose PULP_MANIFEST_100 (the name perftest.sh asks for) lists sample_files."""
    root = tmp_path_factory.mktemp("perftest-tree")
    write_repository(root, sample_files())
    (root / "PULP_MANIFEST").rename(root / "PULP_MANIFEST_100")
    with serve_in_background(root) as server:
        yield server


def perftest(
    fixture_server: RunningServer, data: Path, home: Path, **settings: str
) -> subprocess.CompletedProcess[str]:
    """One run of the script with api=1 and these settings (its environment variables)."""
    env = {**os.environ, "api": "1", "num": "100", "url": fixture_server.url, "data": str(data),
           "PULP_SYNC_HOME": str(home), **settings}
    return subprocess.run(["bash", str(ROOT / "scripts" / "perftest.sh")], env=env, capture_output=True, text=True,
                          timeout=300)


def test_api_1_starts_pulp_sync_and_times_the_task(fixture_server: RunningServer, tmp_path: Path) -> None:
    done = perftest(fixture_server, tmp_path / "perf_data.txt", tmp_path / "home")

    assert done.returncode == 0, done.stderr
    seconds = float(_LINE.search(done.stdout).group(1))  # type: ignore[union-attr]
    assert 0 < seconds < 60
    assert (tmp_path / "perf_data.txt").read_text() == f"{seconds:.3f}\n"


def test_api_1_against_a_running_server_resets_through_its_api(fixture_server: RunningServer) -> None:
    with tempfile.TemporaryDirectory(prefix="perftest-") as folder, running_api("sqlite", Path(folder)) as api:
        admin = _admin(api)
        data = Path(folder) / "perf_data.txt"
        runs = [perftest(fixture_server, data, Path(folder) / "home", api_url=api.base, **admin) for _ in range(2)]

        assert [run.returncode for run in runs] == [0, 0], [run.stderr for run in runs]
        assert len(data.read_text().splitlines()) == 2
        listed = api.call("GET", "/pulp/api/v3/repositories/file/file/?name=perftest",
                          headers=_basic(admin)).json
        assert listed["count"] == 1, "the second run deleted the first run's repository before making its own"


def test_api_1_needs_a_password_with_an_api_url(fixture_server: RunningServer, tmp_path: Path) -> None:
    done = perftest(fixture_server, tmp_path / "data", tmp_path / "home", api_url="http://127.0.0.1:9")
    assert done.returncode == 2 and "api_url needs api_user and api_password" in done.stderr


def _admin(api: Api) -> dict[str, str]:
    """An admin of the running server (orphan cleanup needs one), as perftest.sh's settings."""
    password = "perftest admin password"
    pulp_sync({**api.env, "PULP_SYNC_PASSWORD": password}, "createuser", "perftest-admin", "--admin")
    return {"api_user": "perftest-admin", "api_password": password}


def _basic(admin: dict[str, str]) -> dict[str, str]:
    credentials = base64.b64encode(f"{admin['api_user']}:{admin['api_password']}".encode()).decode()
    return {"Authorization": f"Basic {credentials}"}
