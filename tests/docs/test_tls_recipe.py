"""docs/tuning-your-remote.md's recipe for a repository behind TLS and basic auth, run as it is written: its
openssl commands, its nginx server block and its sync command, only the paths, the host and the port the
test's own. Real nginx, real openssl, `pulp-sync sync` in a child process with a PULP_SYNC_HOME of its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from pulp_base import nginx, servers
from tests.pulp_sync.conftest import sample_files, write_repository

DOC = Path(__file__).resolve().parents[2] / "docs" / "tuning-your-remote.md"
HEADING = "## 6. Your repository behind TLS and basic auth, with nginx"
PULP_SYNC = Path(sys.executable).parent / "pulp-sync"
PASSWORD = "correct horse battery staple"


def _blocks(language: str) -> list[str]:
    """The fenced `language` blocks of the recipe's section, in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index(HEADING):]
    return re.findall(rf"^```{language}\n(.*?)^```", section, re.S | re.M)


def _as_here(text: str, keys: Path, files: Path, port: int) -> str:
    """The recipe's text with this test's folders, host and port."""
    return (text.replace("/etc/nginx/repo/", f"{keys}/").replace("/srv/files/", f"{files}/")
            .replace("listen 8443 ssl;", f"listen 127.0.0.1:{port} ssl;")
            .replace("https://repo.example:8443/", f"https://127.0.0.1:{port}/"))


def _config(prefix: Path, server_block: str, port: int) -> Path:
    """A whole nginx configuration around the recipe's server block, everything nginx writes in `prefix`."""
    config = prefix / "nginx.conf"
    config.write_text(f"""daemon off;
{nginx.user_directive()}
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
{_as_here(server_block, prefix / "keys", prefix / "files", port)}
}}
""", encoding="utf-8")
    return config


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """The recipe's keys and nginx serving a repository; the folder and nginx's port."""
    keys, files = tmp_path / "keys", tmp_path / "files"
    keys.mkdir()
    write_repository(files, sample_files())
    [make_keys] = _blocks("sh")[:1]
    made = subprocess.run(["bash", "-euc", make_keys], cwd=keys, env={**os.environ, "REMOTE_PASSWORD": PASSWORD},
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    [server_block] = _blocks("nginx")
    process, port = nginx.start(tmp_path, partial(_config, tmp_path, server_block), "127.0.0.1", None)
    try:
        yield tmp_path, port
    finally:
        servers.stop_groups([process], 5)


def _sync(folder: Path, port: int, password: str, *more: str) -> subprocess.CompletedProcess[str]:
    """The recipe's sync command as written, with `password` in REMOTE_PASSWORD."""
    command = _as_here(_blocks("sh")[1], folder / "keys", folder / "files", port).replace("\\\n", " ").split()
    assert command[0] == "pulp-sync"
    env = {**os.environ, "PULP_SYNC_HOME": str(folder / "home"), "REMOTE_PASSWORD": password}
    env.pop("DATABASE_URL", None)
    return subprocess.run([str(PULP_SYNC), *command[1:], *more], env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_recipe_serves_a_repository_over_tls_with_basic_auth(served: tuple[Path, int]) -> None:
    folder, port = served
    synced = _sync(folder, port, PASSWORD, "--json")
    assert synced.returncode == 0, synced.stderr
    report = json.loads(synced.stdout)
    assert (report["version"], report["content_units"]) == (1, len(sample_files()))

    refused = _sync(folder, port, "wrong")
    assert refused.returncode == 1 and "401" in refused.stderr, refused.stderr
    system_cas = Path("/etc/ssl/certs/ca-certificates.crt")  # trusted by the system, not the recipe's signer
    unverified = _sync(folder, port, PASSWORD, "--ca-cert", str(system_cas))
    assert unverified.returncode == 1, unverified.stderr
    assert "TLS certificate not trusted: self-signed" in unverified.stderr, unverified.stderr
