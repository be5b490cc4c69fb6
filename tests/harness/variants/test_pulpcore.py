"""Real pulpcore, installed by scripts/pulpcore.sh and started by harness.variants.pulpcore, syncs a file
repository from the fixture server through its REST API, and leaves no process behind."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest

from fixtures.server import serve_in_background
from harness.variants.pulp_api import PulpApiError, reset, sync_once
from harness.variants.pulpcore import PulpcoreError, default_venv, running_pulpcore

pytestmark = pytest.mark.machine_wide("pulpcore")  # its database: tests/conftest.py

FILES = {f"files/{index}.bin": os.urandom(10_000 + index * 3_000) for index in range(5)}
"""A tiny remote: random content, so no earlier sync in the same database could hold these artifacts."""
TASK_SECONDS = 60.0

needs_pulpcore = pytest.mark.skipif(
    not (default_venv() / "bin" / "pulpcore-manager").is_file(),
    reason=f"pulpcore is not installed in {default_venv().name}: run scripts/pulpcore.sh (provision does)",
)


def write_tree(root: Path) -> Path:
    """FILES under `root` and their PULP_MANIFEST (`relative_path,sha256,size` per line)."""
    lines = []
    for relative, content in FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(content)
        lines.append(f"{relative},{hashlib.sha256(content).hexdigest()},{len(content)}\n")
    (root / "PULP_MANIFEST").write_text("".join(lines))
    return root


def stored(state_dir: Path) -> list[Path]:
    """The artifact files in pulpcore's MEDIA_ROOT."""
    return [path for path in (state_dir / "media" / "artifact").rglob("*") if path.is_file()]


def group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
@needs_pulpcore
def test_pulpcore_syncs_a_file_repository_and_stops(tmp_path: Path) -> None:
    tree = write_tree(tmp_path / "tree")
    with serve_in_background(tree) as remote_server, running_pulpcore(tmp_path / "state") as server:
        status = server.api.call("GET", "status/")
        assert server.api.session, "the driver logged in: no password hashed for every poll"
        assert {"core", "file"} <= {component["component"] for component in status["versions"]}
        assert any(worker["name"].startswith(f"{server.worker_pids[0]}@") for worker in status["online_workers"])
        logs = [server.state_dir / "logs" / name for name in ("api.log", "worker.log")]
        assert [oct(stat.S_IMODE(log.stat().st_mode)) for log in logs] == ["0o600", "0o600"], "they may quote secrets"

        name = f"tiny-{tmp_path.name}"
        outcome = sync_once(server.api, name, remote_server.url + "PULP_MANIFEST", {"download_concurrency": 3},
                            TASK_SECONDS)
        assert outcome.ok and outcome.task_seconds is not None and 0 < outcome.task_seconds <= outcome.wall_seconds
        assert outcome.content_count == len((tree / "PULP_MANIFEST").read_text().splitlines()) == len(FILES)
        assert remote_server.stats()["bytes_sent"] >= sum(len(content) for content in FILES.values())
        assert len(stored(server.state_dir)) == len(FILES)
        with pytest.raises(PulpApiError, match="400"):
            server.api.call("POST", "repositories/file/file/", {"name": name})  # names are unique

        server.api.call("DELETE", "login/")  # the session ends: the next call logs in again
        reset(server.api, name, TASK_SECONDS)
        assert server.api.session
        assert stored(server.state_dir) == [], "the reset leaves no artifact of the last sync"
        assert server.api.named("repositories/file/file/", name) is None

    for pid in (server.api_pid, *server.worker_pids):
        assert not group_alive(pid), f"process group {pid} of pulpcore outlived running_pulpcore"


def test_a_missing_install_says_to_run_the_script(tmp_path: Path) -> None:
    missing = tmp_path / "no-venv"
    with pytest.raises(PulpcoreError, match="run scripts/pulpcore.sh"), running_pulpcore(tmp_path / "state", missing):
        pass  # pragma: no cover
