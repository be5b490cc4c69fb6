"""Record docs/tuning-your-remote.md's session again: `python -m tests.docs.walkthrough`.

The walkthrough quotes what `bench report` and `bench compare` print for three results folders: a
sweep, a baseline run of experiments/remote.toml and the same run with a rate limit. This script makes
those folders for real, against an operator's kind of remote (the fixture server with the `wan`
profile, behind TLS with a certificate of its own and HTTP basic auth, on 127.0.0.1), and keeps what
the quotes are rendered from, results.json and runs.csv, in tests/docs/recorded/, and the manifest,
which the quotes' own remote serves to show the plan of a sweep. Run it from a quiet
machine; then `python -m tests.docs.quoted --write` puts the new outputs into the docs, whose prose
must then be read again against the new figures.
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

from fixtures import PROFILES
from fixtures.generate import generate_tree
from fixtures.server import make_app
from tests.servers import requiring_password, self_signed_certificate, serve_app

ROOT = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).resolve().parent / "recorded"
USER = "ops"
WORK = Path("/tmp/walk")
"""The session's folder, the same every time, so the paths the quotes show (the CA's) do not change."""
KEPT = ("results.json", "runs.csv")


def bench(*args: str, cwd: Path, password: str) -> None:
    """One `pulp-sync bench` command as the walkthrough gives it, its output shown as it goes."""
    command = [sys.executable, "-m", "harness", *args]
    print("$", " ".join(command[2:]), flush=True)
    subprocess.run(command, cwd=cwd, check=True, env={**os.environ, "REMOTE_PASSWORD": password})


def keep(folder: Path, name: str) -> None:
    """Copy what the quotes are rendered from into tests/docs/recorded/NAME."""
    target = RECORDED / name
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for file in KEPT:
        shutil.copy2(folder / file, target / file)


def record(work: Path) -> None:
    """The session: a sweep, a baseline, the same with `rate_limit=100`; each folder kept."""
    password = os.urandom(12).hex()
    tree = work / "fixtures"
    generate_tree(tree, scale=0.05)
    certificate, key = self_signed_certificate(work)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate, key)
    remote_settings = ["--remote-setting", f"username={USER}", "--remote-setting", "password=env:REMOTE_PASSWORD",
                       "--remote-setting", f"ca_cert={certificate}"]
    app = requiring_password(make_app(tree, PROFILES["wan"]), USER, password)
    with serve_app(app, context) as url:
        manifest = url + "PULP_MANIFEST_500"
        bench("sweep", "--downloader", "asyncio,futures", "--concurrency", "4,8,16,32,64", "--remote", manifest,
              *remote_settings, "--sample", "20%", "--runs", "5", "--out", str(work / "sweep"), cwd=work,
              password=password)
        spec = str(ROOT / "experiments" / "remote.toml")
        bench("run", spec, "--remote", manifest, *remote_settings, "--out", str(work / "base"), cwd=work,
              password=password)
        bench("run", spec, "--remote", manifest, *remote_settings, "--remote-setting", "rate_limit=100",
              "--out", str(work / "limited"), cwd=work, password=password)
    for name in ("sweep", "base", "limited"):
        keep(work / name, name)
    (RECORDED / "remote").mkdir(exist_ok=True)
    shutil.copy2(tree / "PULP_MANIFEST_500", RECORDED / "remote" / "PULP_MANIFEST_500")
    (RECORDED / "session.json").write_text(json.dumps({"remote": url, "ca_cert": str(certificate)}, indent=1) + "\n")


def main() -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    record(WORK)
    shutil.rmtree(WORK)
    print(f"recorded in {RECORDED.relative_to(ROOT)}; now: python -m tests.docs.quoted --write")


if __name__ == "__main__":
    main()
