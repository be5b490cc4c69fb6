"""The typed list of the service's settings (pulp_sync/environment.py): what each variable becomes, what
an empty one means, and the one line that refuses a value; `pulp-sync settings` shows it as read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from downloaders import AddressPolicy
from pulp_sync import environment
from pulp_sync.errors import ConfigurationError


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only what each test sets: none of the variables the suite's own environment may hold."""
    for name in environment.Environment.model_fields:
        monkeypatch.delenv(environment.variable(name), raising=False)
    monkeypatch.chdir(tmp_path)


def test_unset_is_the_default(tmp_path: Path) -> None:
    read = environment.read()
    assert read.home == tmp_path / ".pulp-sync" and read.artifacts == tmp_path / ".pulp-sync" / "artifacts"
    assert (read.database_url, read.redis_url, read.worker_ttl, read.fsync) == (
        None, "redis://127.0.0.1:6379/0", 30, False)
    assert read.address_policy == AddressPolicy.parse(None, None)
    assert read.model_fields_set == set()


def test_values_are_converted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for variable, value in [("PULP_SYNC_HOME", "state"), ("PULP_SYNC_FSYNC", "1"), ("PULP_SYNC_WORKER_TTL", "2.5"),
                            ("PULP_SYNC_ALLOWED_HOSTS", "a.example, b.example"), ("DATABASE_URL", "mysql://x@h/d")]:
        monkeypatch.setenv(variable, value)
    read = environment.read()
    assert (read.home, read.fsync, read.worker_ttl) == (tmp_path / "state", True, 2.5)
    assert (read.allowed_hosts, read.database_url) == (("a.example", "b.example"), "mysql://x@h/d")


def test_empty_is_the_default_except_where_it_means_something(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PULP_SYNC_WORKER_TTL", "PULP_SYNC_HOME", "PULP_SYNC_QUEUE", "PULP_SYNC_REMOTE_DENY"):
        monkeypatch.setenv(name, "")
    read = environment.read()
    assert read.worker_ttl == 30 and read.home.name == ".pulp-sync"
    assert read.address_policy.refusal("169.254.169.254", "169.254.169.254") is None, "an empty DENY denies none"
    monkeypatch.setenv("DATABASE_URL", "")
    with pytest.raises(ConfigurationError, match="^DATABASE_URL='': give postgres://"):
        environment.read()


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("PULP_SYNC_FSYNC", "maybe", "PULP_SYNC_FSYNC='maybe': give 1 or 0 (or true, false, yes, no, on, off), e.g. 0"),
        ("PULP_SYNC_API_CLIENT_REQUESTS", "-3",
         "PULP_SYNC_API_CLIENT_REQUESTS='-3': give a whole, positive number of requests, e.g. 32"),
        ("PULP_SYNC_API_SEND_TIMEOUT", "-inf", "PULP_SYNC_API_SEND_TIMEOUT='-inf': give a number of seconds, above 0"),
        ("PULP_SYNC_CONTENT_ACCEL_REDIRECT", "protected",
         "PULP_SYNC_CONTENT_ACCEL_REDIRECT='protected': give a path that starts and ends with /, e.g. /protected/"),
        ("REDIS_URL", "redis.example:6379", "REDIS_URL='redis.example:6379': give redis://host:port/db"),
    ],
)
def test_a_value_it_cannot_use_is_named_with_what_to_give(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError) as refused:
        environment.read()
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value), refused.value


def test_the_first_of_several_mistakes_is_named_in_the_list_s_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULP_SYNC_API_SEND_TIMEOUT", "x")
    monkeypatch.setenv("PULP_SYNC_WORKER_TTL", "y")
    with pytest.raises(ConfigurationError, match="^PULP_SYNC_WORKER_TTL="):
        environment.read()


def test_pulp_sync_settings_shows_what_it_reads_and_hides_secrets(tmp_path: Path) -> None:
    env = {**os.environ, "PULP_SYNC_HOME": str(tmp_path / "home"), "PULP_SYNC_SECRET_KEY": "s3cret-key",
           "DATABASE_URL": "postgres://ops:s3cret@127.0.0.1/pulp_sync", "PULP_SYNC_WORKER_TTL": "12"}
    env.pop("PULP_SYNC_QUEUE", None)
    done = subprocess.run([sys.executable, "-m", "pulp_sync", "settings", "--json"], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    rows = {row["variable"]: row for row in json.loads(done.stdout)}
    assert list(rows) == [environment.variable(name) for name in environment.Environment.model_fields]
    assert rows["PULP_SYNC_WORKER_TTL"] == {"variable": "PULP_SYNC_WORKER_TTL", "value": "12", "set": True}
    assert rows["PULP_SYNC_QUEUE"] == {"variable": "PULP_SYNC_QUEUE", "value": "", "set": False}
    assert rows["DATABASE_URL"]["value"] == "postgres://ops:***@127.0.0.1/pulp_sync"
    assert rows["PULP_SYNC_SECRET_KEY"]["value"] == "***" and "s3cret" not in done.stdout
    assert not (tmp_path / "home").exists(), "showing the settings makes nothing"

    table = subprocess.run([sys.executable, "-m", "pulp_sync", "settings"], env=env, capture_output=True, text=True,
                           timeout=60, check=True).stdout
    assert "PULP_SYNC_WORKER_TTL" in table and "s3cret" not in table
