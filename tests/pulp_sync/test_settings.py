"""Settings from the environment that pulp-sync cannot use: one `Error:` line naming the variable and what
to give, exit status 1, nothing made (a real `pulp-sync` process each, as an operator starts one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PULP_SYNC = [sys.executable, "-m", "pulp_sync"]


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DATABASE_URL", "", "DATABASE_URL='': give postgres://"),
        ("DATABASE_URL", "foo://user:s3cret@host/db", "DATABASE_URL='foo://user:***@host/db': give postgres://"),
        ("REDIS_URL", "localhost:6379", "REDIS_URL='localhost:6379': give redis://host:port/db"),
        ("PULP_SYNC_MAX_MANIFEST_BYTES", "64M", "PULP_SYNC_MAX_MANIFEST_BYTES='64M': give a whole, positive number"),
        ("PULP_SYNC_MAX_MANIFEST_BYTES", "0", "PULP_SYNC_MAX_MANIFEST_BYTES='0': give a whole, positive number"),
        ("PULP_SYNC_REMOTE_DENY", "169.254.0.0/16,not a host",
         "PULP_SYNC_REMOTE_DENY='169.254.0.0/16,not a host': 'not a host' is neither"),
        ("PULP_SYNC_REMOTE_ALLOW", "10.0.0.0/33", "PULP_SYNC_REMOTE_ALLOW='10.0.0.0/33': '10.0.0.0/33' is neither"),
        ("PULP_SYNC_REPOSITORY_WAIT", "inf", "PULP_SYNC_REPOSITORY_WAIT='inf': give a number of seconds, 0 or more"),
        ("PULP_SYNC_REPOSITORY_WAIT", "nan", "PULP_SYNC_REPOSITORY_WAIT='nan': give a number of seconds, 0 or more"),
        ("PULP_SYNC_WORKER_TTL", "0", "PULP_SYNC_WORKER_TTL='0': give a number of seconds, above 0"),
        ("PULP_SYNC_REPOSITORY_WAIT", "1h", "PULP_SYNC_REPOSITORY_WAIT='1h': give a number of seconds, 0 or more"),
    ],
)
def test_a_setting_it_cannot_use_is_one_line(tmp_path: Path, variable: str, value: str, message: str) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "PULP_SYNC_HOME": str(home), variable: value}
    if variable != "DATABASE_URL":
        env.pop("DATABASE_URL", None)
    done = subprocess.run([*PULP_SYNC, "repositories"], env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 1
    assert done.stderr.startswith("Error: " + message) and done.stderr.count("\n") == 1, done.stderr
    assert "s3cret" not in done.stderr
    assert not home.exists(), "nothing is made before the settings are right"


def test_a_home_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "not-a-directory"
    home.write_text("")
    env = {**os.environ, "PULP_SYNC_HOME": str(home)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([*PULP_SYNC, "repositories"], env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 1
    assert done.stderr == f"Error: PULP_SYNC_HOME={str(home)!r}: give a directory (made if missing), not a file\n"


@pytest.mark.parametrize("url", ["postgres://postgres@127.0.0.1:9/pulp_sync", "mysql://root@127.0.0.1:9/pulp_sync"])
def test_a_database_nobody_answers_for_says_so(tmp_path: Path, url: str) -> None:
    env = {**os.environ, "PULP_SYNC_HOME": str(tmp_path / "home"), "DATABASE_URL": url}
    done = subprocess.run([*PULP_SYNC, "repositories"], env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 1
    assert done.stderr.startswith("Error: cannot reach the database: is the server up, and DATABASE_URL right? (")
    assert done.stderr.count("\n") == 1, done.stderr


_BLOCKER = '''
import sys

class _NotInstalled:
    """Imports of the database drivers fail, as where they are not installed."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("psycopg", "psycopg2", "MySQLdb"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
'''


@pytest.mark.parametrize(("url", "database", "extra"), [
    ("postgres://postgres@127.0.0.1:9/pulp_sync", "PostgreSQL", "postgres"),
    ("mysql://root@127.0.0.1:9/pulp_sync", "MariaDB/MySQL", "mysql"),
])
def test_a_database_whose_driver_is_not_installed_names_the_extra(
        tmp_path: Path, url: str, database: str, extra: str) -> None:
    """Not Django's ImproperlyConfigured traceback: one line saying what to install, and nothing made."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(_BLOCKER)
    home = tmp_path / "home"
    python_path = os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PULP_SYNC_HOME": str(home), "DATABASE_URL": url, "PYTHONPATH": python_path}
    done = subprocess.run([*PULP_SYNC, "repositories"], env=env, capture_output=True, text=True, timeout=60)

    assert done.returncode == 1
    assert done.stderr == (f"Error: DATABASE_URL names {database}, but its driver is not installed (or cannot be "
                           f"imported): pip install 'pulp-sync[{extra}]'\n")
    assert not home.exists(), "nothing is made before the settings are right"
