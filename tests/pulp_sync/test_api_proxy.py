"""nginx's configuration for `pulp-sync api` (pulp_sync/api/proxy.py): docs/api.md lists every directive it
generates, with its default value, and nothing else; the settings reach it; nginx itself accepts it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pulp_base import nginx
from pulp_sync.api.proxy import FrontSettings, render

DOCS = Path(__file__).parents[2] / "docs" / "api.md"
_ROW = re.compile(r"^\| `([^`]+)` \|", re.MULTILINE)
_DIRECTIVE = re.compile(r"^[ \t]*([a-z_]+(?: [^;{}\n]+)?);[ \t]*$", re.MULTILINE)
PREFIX, STORE = Path("/PREFIX"), Path("/STORE")


def generated(front: FrontSettings, prefix: Path = PREFIX, store: Path = STORE, workers: int = 2) -> str:
    return render(front, prefix=prefix, socket=prefix / "api.sock", host="HOST", port=24817, workers=workers,
                  store=store)


def directives(config: str) -> set[str]:
    """Every `name value` line of the configuration, the folders as PREFIX and STORE and the machine's user as
    `user USER GROUP`."""
    config = config.replace(f"{PREFIX}/", "PREFIX/").replace(f"{STORE}/", "STORE/")
    found = set(_DIRECTIVE.findall(config)).union({"user USER GROUP"})
    return {line for line in found if not line.startswith("user ") or line == "user USER GROUP"}


def documented() -> set[str]:
    section = DOCS.read_text().split("## The front: nginx before gunicorn", 1)[1].split("\n## ", 1)[0]
    return {row.replace("HOST:PORT", "HOST:24817") for row in _ROW.findall(section)}


def test_the_docs_list_every_directive_and_no_other(db: Path) -> None:
    assert documented() == directives(generated(FrontSettings.from_settings()))


def test_the_settings_reach_nginx(db: Path) -> None:
    front = FrontSettings(header_timeout=0.5, body_timeout=7, send_timeout=8, client_requests=3, body_bytes=10)
    lines = directives(generated(front, workers=5))
    assert {"client_header_timeout 500ms", "client_body_timeout 7000ms", "send_timeout 8000ms",
            "limit_conn client 3", "client_max_body_size 10", "worker_processes 5"} <= lines


def test_nginx_accepts_the_configuration(db: Path, tmp_path: Path) -> None:
    try:
        binary = nginx.nginx_binary()
    except nginx.NginxNotFound as error:
        pytest.fail(str(error))
    config = tmp_path / "nginx.conf"
    config.write_text(generated(FrontSettings.from_settings(), prefix=tmp_path, store=tmp_path).replace(
        "HOST:24817", "127.0.0.1:24817"))
    checked = subprocess.run([str(binary), "-t", "-p", str(tmp_path), "-c", str(config), "-e", str(tmp_path / "e")],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stderr
