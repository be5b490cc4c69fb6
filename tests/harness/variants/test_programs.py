"""External command variants (harness/variants/programs.py): curl as a peer, and a peer whose bytes are wrong.

Real experiments through the command line on the tiny tree; curl is on every machine this runs on.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from harness.experiment.spec import SpecError, experiment_from_dict
from harness.variants.programs import check_output, write_inputs
from tests.harness.helpers import run_bench, write_spec

PEERS = """
runs = 2
warmup = 0
profile = "loopback"
baseline = "curl"

[[variants]]
name = "asyncio"
downloader = "asyncio"

[[variants]]
name = "curl"
kind = "command"
command = "curl --silent --show-error --fail --parallel --parallel-max {concurrency} \
--create-dirs --config {curl_config}"

[[variants]]
name = "liar"
kind = "command"
command = "sh -c 'echo wrong > $0' {out_dir}/stray"
"""


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_is_timed_checked_and_compared_and_a_wrong_peer_fails(tiny_tree: Path, tmp_path: Path) -> None:
    spec = write_spec(tmp_path, tiny_tree, PEERS)
    done = run_bench("run", str(spec), "--out", str(tmp_path / "out"), "--allow-failures",
                    cwd=tmp_path)  # the default, relative state dir
    rows = {(row["variant"], row["round"]): row for row in csv.DictReader((tmp_path / "out" / "runs.csv").open())}
    for round_ in ("1", "2"):
        curl = rows[("curl", round_)]
        assert curl["ok"] == "True" and curl["downloader"] == "curl" and int(curl["artifacts_downloaded"]) == 100
        assert float(curl["sync_seconds"]) == pytest.approx(float(curl["wall_seconds"]))
        liar = rows[("liar", round_)]
        assert liar["ok"] == "False" and liar["error"].endswith("is missing (and 99 more)")
    ratios = json.loads((tmp_path / "out" / "results.json").read_text())["statistics"]["peer_ratios"]
    assert [(r["variant"], r["peer"]) for r in ratios] == [("asyncio", "curl")] and ratios[0]["ratio"] > 0
    assert "asyncio reaches" in done.stdout and "the throughput of curl" in done.stdout
    state = tmp_path / ".pulp-sync" / "bench"
    assert not (state / "trash").exists() and not (state / "command-output").exists()  # emptied at the end


def test_check_output_names_the_first_problem(tiny_tree: Path, tmp_path: Path) -> None:
    inputs = write_inputs(tiny_tree / "PULP_MANIFEST_100", "http://127.0.0.1:1/PULP_MANIFEST_100", tmp_path / "in")
    out = tmp_path / "out"
    for entry in inputs.entries:
        (out / entry.relative_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tiny_tree / entry.relative_path, out / entry.relative_path)
    assert check_output(inputs, out) is None
    first, second = inputs.entries[:2]
    (out / first.relative_path).write_bytes(b"x" * first.size)
    (out / second.relative_path).unlink()
    assert check_output(inputs, out) == f"{first.relative_path} does not match its sha256 (and 1 more)"
    assert f'output = "{first.relative_path}"' in (tmp_path / "in" / "curl_config").read_text()
    assert f"checksum=sha-256={first.sha256}" in (tmp_path / "in" / "aria2_input_sha256").read_text()


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ({"name": "c", "kind": "command", "command": "curl {nope}"}, "unknown placeholders ['nope']"),
        ({"name": "c", "kind": "command", "command": " "}, "needs a command template"),
        ({"name": "c", "downloader": "asyncio", "command": "curl"},
         'a pulp-sync variant takes name, kind, download_concurrency, profile, manifests, env, remote, downloader, '
         'processes, db, sync_args, tasking; not command (kind = "command" takes it)'),
        ({"name": "c", "kind": "command", "command": "curl", "downloader": "asyncio", "workers": 2},
         'a command variant takes name, kind, download_concurrency, profile, manifests, env, remote, command; '
         'not downloader, workers (tasking = "rq" takes them)'),
    ],
)
def test_command_variants_are_checked_when_read(variant: dict[str, str], message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)):
        experiment_from_dict({"name": "x", "variants": [variant]})
