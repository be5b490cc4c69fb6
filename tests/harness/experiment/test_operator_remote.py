"""An operator's own remote, measured through the real command line against servers of the tests' own:
https with basic auth and a self-signed CA, a remote that answers 503 once per file, rate limits,
samples, a wrong URL; secrets never in the results, the output or a process's arguments."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from fixtures.server import make_app
from harness.experiment.operator_remote import manifest_label, public_url
from pulp_base.manifest import parse_manifest
from tests.harness.helpers import write_spec
from tests.servers import Handler, requiring_password, self_signed_certificate, serve_app

PASSWORD = "correct-horse-battery-staple-7f3a"


def bench(*args: str, cwd: Path, env: dict[str, str] | None = None,
          timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`python -m harness ARGS` as a user runs it, whatever its exit status."""
    command = [sys.executable, "-m", "harness", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def failing_first(app: web.Application) -> web.Application:
    """`app` answering 503 to the first request of each file after each manifest request: every sync
    (which starts by fetching the manifest) meets one 503 per file, whatever happened in the last one."""
    seen: set[str] = set()

    @web.middleware
    async def fail(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path.endswith("PULP_MANIFEST") or "PULP_MANIFEST_" in request.path:
            seen.clear()
        elif request.path not in seen:
            seen.add(request.path)
            return web.Response(status=503)
        return await handler(request)

    app.middlewares.append(fail)
    return app


class ArgumentWatch:
    """Reads every process's arguments (/proc/*/cmdline) until stopped; `seen` holds any with `needle`."""

    def __init__(self, needle: str) -> None:
        self.needle, self.seen, self.looks = needle.encode(), [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> ArgumentWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.looks += 1
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        arguments = Path(f"/proc/{entry}/cmdline").read_bytes()
                    except OSError:
                        continue
                    if self.needle in arguments:
                        self.seen.append(arguments.replace(b"\0", b" ").decode(errors="replace"))
            time.sleep(0.02)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1 (the CA the remote settings name) and a server context."""
    cert, key = self_signed_certificate(tmp_path_factory.mktemp("tls"))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return cert, context


@pytest.fixture(scope="module")
def private_remote(tiny_tree: Path, tls: tuple[Path, ssl.SSLContext]) -> Iterator[str]:
    """The tiny tree over https, behind basic auth; its base URL."""
    with serve_app(requiring_password(make_app(tiny_tree), "operator", PASSWORD), tls[1]) as url:
        yield url


def test_sweep_of_a_private_https_remote_keeps_the_password_secret(
    private_remote: str, tls: tuple[Path, ssl.SSLContext], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    secret_file = tmp_path / "password"
    secret_file.write_text(PASSWORD + "\n")
    args = ("sweep", "--downloader", "asyncio", "--concurrency", "1,4", "--runs", "2", "--warmup", "0",
            "--remote", private_remote + "PULP_MANIFEST_100", "--remote-setting", "username=operator",
            "--remote-setting", "password=env:REMOTE_PASSWORD", "--remote-setting", f"ca_cert={tls[0]}",
            "--out", str(out), "--state-dir", str(tmp_path / "state"))
    with ArgumentWatch(PASSWORD) as watch:
        done = bench(*args, cwd=tmp_path, env={"REMOTE_PASSWORD": PASSWORD})
    assert done.returncode == 0, done.stderr
    assert watch.looks > 10 and watch.seen == [], "no process had the password among its arguments"
    assert PASSWORD not in done.stdout + done.stderr
    for path in out.rglob("*"):
        assert not path.is_file() or PASSWORD.encode() not in path.read_bytes(), f"{path} holds the password"

    document = json.loads((out / "results.json").read_text())
    assert all(run["ok"] for run in document["runs"]) and len(document["runs"]) == 4
    assert document["manifests"]["100"]["url"] == private_remote + "PULP_MANIFEST_100"
    assert document["experiment"]["remote"]["password"] == "env:REMOTE_PASSWORD", "a reference, never the value"
    for shown in (done.stdout, (out / "summary.md").read_text(), (out / "report.html").read_text()):
        assert "remote " + private_remote + "PULP_MANIFEST_100" in shown
    (pick,) = document["recommendations"]
    assert pick["downloader"] == "asyncio" and pick["verdict"] in ("recommended", "indistinguishable")
    assert 0 < pick["ci_low"] <= pick["ci_high"]

    again = bench(*args[:-4], "--results-dir", str(tmp_path / "r2"), "--state-dir", str(tmp_path / "state"),
                  "--remote-setting", f"password=file:{secret_file}", "--runs", "1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize(
    ("remote", "cause"),
    [
        ("missing/PULP_MANIFEST", "HTTP 404"),
        ("refused", "connect"),
        ("untrusted", "certificate"),
        ("unauthorised", "HTTP 401"),
    ],
)
def test_a_wrong_remote_fails_before_any_run(
    private_remote: str, tls: tuple[Path, ssl.SSLContext], tmp_path: Path, remote: str, cause: str
) -> None:
    settings = ["--remote-setting", "username=operator", "--remote-setting", "password=env:REMOTE_PASSWORD",
                "--remote-setting", f"ca_cert={tls[0]}"]
    url = private_remote + remote
    if remote == "refused":
        url, settings = f"http://127.0.0.1:{_closed_port()}/PULP_MANIFEST", ["--remote-setting", "max_retries=0"]
    elif remote == "untrusted":
        url, settings = private_remote + "PULP_MANIFEST_100", []
    elif remote == "unauthorised":
        url = private_remote + "PULP_MANIFEST_100"
        settings = settings[:2] + ["--remote-setting", "password=env:WRONG_PASSWORD"] + settings[4:]
    started = time.monotonic()
    done = bench("run", str(write_spec(tmp_path, tmp_path, '[[variants]]\nname = "a"\ndownloader = "asyncio"\n')),
                 "--remote", url, *settings, "--results-dir", str(tmp_path / "results"),
                 "--state-dir", str(tmp_path / "state"),
                 cwd=tmp_path, env={"REMOTE_PASSWORD": PASSWORD, "WRONG_PASSWORD": "guess"}, timeout=60)
    assert done.returncode == 1, done.stderr
    assert time.monotonic() - started < 20
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert public_url(url) in line and cause in line, line
    assert not (tmp_path / "results").exists(), "no results folder for an experiment that never ran"


def test_a_password_in_the_url_its_query_or_in_clear_is_refused(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, tmp_path, '[[variants]]\nname = "a"\ndownloader = "asyncio"\n')
    in_url = bench("run", str(spec), "--remote", f"https://me:{PASSWORD}@127.0.0.1:1/PULP_MANIFEST", cwd=tmp_path)
    in_clear = bench("run", str(spec), "--remote", "https://127.0.0.1:1/PULP_MANIFEST",
                     "--remote-setting", f"password={PASSWORD}", cwd=tmp_path)
    in_query = bench("run", str(spec), "--remote", f"https://127.0.0.1:1/PULP_MANIFEST?token={PASSWORD}", cwd=tmp_path)
    for done in (in_url, in_clear, in_query):
        assert done.returncode == 2 and "env:VAR" in done.stderr
        assert PASSWORD not in done.stderr + done.stdout


def test_max_retries_zero_fails_on_the_first_503_where_the_default_retries(tiny_tree: Path, tmp_path: Path) -> None:
    variants = """
runs = 2
warmup = 0

[[variants]]
name = "default"
downloader = "asyncio"

[[variants]]
name = "no-retries"
downloader = "asyncio"
remote = { max_retries = 0 }
"""
    with serve_app(failing_first(make_app(tiny_tree))) as url:
        done = bench("run", str(write_spec(tmp_path, tiny_tree, variants)), "--remote", url + "PULP_MANIFEST_100",
                     "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert done.returncode == 1 and "2 of 4 counted runs failed" in done.stderr, done.stderr
    runs = json.loads((tmp_path / "out" / "results.json").read_text())["runs"]
    default = [run for run in runs if run["variant"] == "default"]
    no_retries = [run for run in runs if run["variant"] == "no-retries"]
    assert all(run["ok"] and run["retries"] >= run["artifacts_downloaded"] > 0 for run in default), default
    assert all(not run["ok"] and "after 1 attempt(s): HTTP 503" in run["error"] for run in no_retries), no_retries


def test_rate_limit_holds_a_sample_of_many_small_files_to_its_rate(tiny_tree: Path, tmp_path: Path) -> None:
    """20 requests a second: the limited variant never syncs faster than its rate, which no load on the
    machine can break (load only slows a run down), and is slower than the unlimited one beside it. How
    close to the rate it comes is a matter of timing, for benchmarks."""
    variants = """
runs = 2
warmup = 0
profile = "loopback"
sample = "100"

[[variants]]
name = "limited"
downloader = "futures"
remote = { rate_limit = 20 }

[[variants]]
name = "unlimited"
downloader = "futures"
"""
    spec = write_spec(tmp_path, tiny_tree, variants)
    done = bench("run", str(spec), "--manifests", "many-small", "--out", str(tmp_path / "out"),
                 "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "files each run syncs" not in done.stderr
    runs = json.loads((tmp_path / "out" / "results.json").read_text())["runs"]
    assert all(run["artifacts_downloaded"] == 100 for run in runs), runs
    unlimited = max(run["sync_seconds"] for run in runs if run["variant"] == "unlimited")
    for run in (run for run in runs if run["variant"] == "limited"):
        files_per_second = run["artifacts_downloaded"] / run["sync_seconds"]
        assert files_per_second <= 21, (files_per_second, run["sync_seconds"])  # 20 a second, one request early
        assert run["sync_seconds"] > unlimited, (run["sync_seconds"], unlimited)


def test_a_ten_percent_sample_is_the_same_lines_in_every_run(tiny_tree: Path, tmp_path: Path) -> None:
    variants = """
runs = 2
warmup = 0
sample = "10%"

[[variants]]
name = "asyncio"
downloader = "asyncio"

[[variants]]
name = "futures"
downloader = "futures"
"""
    spec = write_spec(tmp_path, tiny_tree, variants).read_text().replace('["100"]', '["500"]')
    (tmp_path / "tiny.toml").write_text(spec)
    done = bench("run", str(tmp_path / "tiny.toml"), "--out", str(tmp_path / "out"),
                 "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    whole = sum(entry.size for entry in parse_manifest(tiny_tree / "PULP_MANIFEST_500"))
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    facts = document["manifests"]["500"]
    assert facts["sample"]["size"] == "10%" and facts["sample"]["files"] == 500 and facts["files"] == 50
    assert "to download (a 10% sample of each manifest)" in done.stderr
    assert "files each run syncs" not in done.stderr
    assert "500: 500 files" in done.stdout
    assert "each run a 10% sample (size-stratified, seed 0): 50 files" in done.stdout
    assert "each run a 10% sample" in (tmp_path / "out" / "summary.md").read_text()
    for run in document["runs"]:
        assert run["ok"] and run["artifacts_downloaded"] == 50
        assert 0.08 * whole <= run["bytes_downloaded"] <= 0.12 * whole
        assert run["bytes_downloaded"] == facts["bytes"], "the same lines in every run and variant"


def test_a_concurrency_above_the_files_of_a_run_is_warned_of(tiny_tree: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, tiny_tree, 'sample = "5"\n[[variants]]\nname = "a"\ndownloader = "asyncio"\n'
                                           'download_concurrency = 8\n')
    done = bench("run", str(spec), "--max-bytes", "1", "--results-dir", str(tmp_path / "results"), cwd=tmp_path)
    assert "Warning: manifest 100: concurrency 8 is above the 5 files each run syncs:" in done.stderr


def test_max_bytes_refuses_a_plan_above_it(tiny_tree: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, tiny_tree, 'runs = 2\n[[variants]]\nname = "a"\ndownloader = "asyncio"\n')
    done = bench("run", str(spec), "--max-bytes", "1M", "--results-dir", str(tmp_path / "results"), cwd=tmp_path)
    assert done.returncode == 2 and "above --max-bytes 1.0 MB" in done.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("url", "label"),
    [
        ("https://h/repo/PULP_MANIFEST_100", "100"),
        ("https://h/fedora/41/PULP_MANIFEST", "41"),
        ("https://h/PULP_MANIFEST", "h"),
        ("https://h/lists/other.txt", "other.txt"),
    ],
)
def test_manifest_label(url: str, label: str) -> None:
    assert manifest_label(url) == label


def test_public_url_drops_every_credential() -> None:
    assert public_url("https://me:pw@host:8443/a/PULP_MANIFEST?token=x#y") == "https://host:8443/a/PULP_MANIFEST"


def _closed_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_sample_reaches_rq_workers_too(tiny_tree: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, tiny_tree, 'runs = 1\nwarmup = 0\nsample = "5"\n'
                                           '[[variants]]\nname = "rq"\ndownloader = "asyncio"\ntasking = "rq"\n')
    done = bench("run", str(spec), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads((tmp_path / "out" / "results.json").read_text())["runs"]
    assert run["ok"] and run["artifacts_downloaded"] == 5 and run["content_units"] == 5
