"""Command-line errors: one `Error:` line, exit status 2 for a usage error (1 for others), and no results
folder left behind."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import bench_group
from harness.run.child import descendants
from tests.harness.helpers import run_bench, write_spec

SEED = Path(__file__).resolve().parents[2] / "experiments" / "seed-002.toml"


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(bench_group, list(args))
    return result.exit_code, result.output


def test_a_downloader_that_is_not_installed_fails_before_any_run(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('[[variants]]\nname = "a"\ndownloader = "carrier-pigeon"\n')
    code, output = _invoke("run", str(spec), "--results-dir", str(tmp_path / "results"))
    assert code == 2 and "Error: variant 'a': no downloader named 'carrier-pigeon'; installed: asyncio" in output
    assert not (tmp_path / "results").exists()


def test_nginx_with_a_shaped_profile_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('server = "nginx"\nprofile = "wan"\n[[variants]]\nname = "a"\ndownloader = "asyncio"\n')
    code, output = _invoke("run", str(spec), "--results-dir", str(tmp_path / "results"))
    assert code == 2 and "cannot shape traffic" in output


@pytest.mark.parametrize(
    ("experiment", "variant", "line"),
    [
        ('runs = "lots"', "", "runs = 'lots': a whole number"),
        ('scale = "0.01"', "", "scale = '0.01': a number"),
        ('alpha = "0.05"', "", "alpha = '0.05': a number"),
        ("", 'download_concurrency = "10"', "variant 'a': download_concurrency = '10': a whole number or \"auto\""),
        ('manifests = "100"', "", "manifests = '100': a list of strings"),
        ('restart_server = "no"', "", "restart_server = 'no': true or false"),
        ("rusn = 3", "", "rusn = 3: unknown keys are refused (a typo?); did you mean runs?"),
        ("", 'downlaoder = "futures"',
         "variant 'a': downlaoder = 'futures': unknown keys are refused (a typo?); did you mean downloader?"),
        ("", "remote = { max_retires = 2 }",
         "variant 'a': remote: no remote setting named 'max_retires'; did you mean max_retries?"),
    ],
)
def test_each_wrongly_typed_or_misspelt_spec_value_is_exit_2_and_one_line(
        tmp_path: Path, experiment: str, variant: str, line: str) -> None:
    """As a user meets it, in a `bench run` of their own: no traceback, the key, its value and what it takes."""
    spec = tmp_path / "s.toml"
    spec.write_text(f'{experiment}\n[[variants]]\nname = "a"\ndownloader = "asyncio"\n{variant}\n')
    command = [sys.executable, "-m", "harness", "run", str(spec), "--results-dir", str(tmp_path / "results")]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"Error: {line}\n")
    assert not (tmp_path / "results").exists()


def test_bench_spec_checks_a_spec_and_prints_it_or_the_schema(tmp_path: Path) -> None:
    from harness.experiment.spec import load_spec, spec_schema

    checked = CliRunner().invoke(bench_group, ["spec", str(SEED)])
    assert checked.exit_code == 0 and json.loads(checked.output) == load_spec(SEED).as_dict()
    schema = CliRunner().invoke(bench_group, ["spec", "--schema"])
    assert schema.exit_code == 0 and json.loads(schema.output) == spec_schema()
    bad = tmp_path / "bad.toml"
    bad.write_text('runs = "lots"\n[[variants]]\nname = "a"\ndownloader = "asyncio"\n')
    code, output = _invoke("spec", str(bad))
    assert (code, output) == (2, "Error: runs = 'lots': a whole number\n")
    code, output = _invoke("spec")
    assert code == 2 and "give a SPEC to check, or --schema" in output


def test_resume_without_a_folder_says_what_to_do(tmp_path: Path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('[[variants]]\nname = "a"\ndownloader = "asyncio"\n')
    code, output = _invoke("run", str(spec), "--resume", "--results-dir", str(tmp_path / "results"))
    assert code == 1 and "nothing to resume" in output and "drop --resume" in output


def test_report_of_a_folder_without_results(tmp_path: Path) -> None:
    code, output = _invoke("report", str(tmp_path))
    assert code == 1 and "holds no results.json" in output


def test_sweep_refuses_a_zero_concurrency() -> None:
    code, output = _invoke("sweep", "--downloader", "asyncio", "--concurrency", "0,4")
    assert code == 2 and "1 or more" in output


@pytest.mark.parametrize(("value", "why"), [("0", "from 1 to 256, or auto, not '0'"),
                                            ("257", "from 1 to 256, or auto, not '257'"),
                                            ("x", "a whole number from 1 up, or auto, not 'x'")])
@pytest.mark.parametrize("command", [["run", str(SEED)], ["sweep", "--downloader", "asyncio"]], ids=["run", "sweep"])
def test_processes_out_of_range_are_a_usage_error_of_one_line(command: list[str], value: str, why: str) -> None:
    code, output = _invoke(*command, "--processes", value)
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert code == 2 and errors == [f"Error: Invalid value for '--processes': processes must be {why}"], output


def test_processes_go_to_every_pulp_sync_variant_of_a_spec(tmp_path: Path) -> None:
    """As `bench run` would run it: programs split nothing, so they keep what they had; a spec with no
    pulp-sync variant, or one that sweeps processes itself, refuses the flag."""
    spec = tmp_path / "s.toml"
    spec.write_text('[[variants]]\nname = "a"\ndownloader = "asyncio"\n'
                    '[[variants]]\nname = "b"\nkind = "command"\ncommand = "true"\n')
    code, output = _invoke("spec", str(spec), "--processes", "auto")
    assert code == 0, output
    assert [variant.get("processes") for variant in json.loads(output)["variants"]] == ["auto", None]
    code, output = _invoke("spec", str(spec), "--variants", "b", "--processes", "2")
    assert code == 2 and "Error: --processes: no variant is a pulp-sync sync" in output
    spec.write_text('kind = "sweep"\nsweep_setting = "processes"\n[[variants]]\nname = "a"\ndownloader = "asyncio"\n')
    code, output = _invoke("spec", str(spec), "--processes", "2")
    assert code == 2 and "Error: give --processes or a sweep of processes, not both" in output


def test_manifests_narrow_the_variants_that_name_their_own(tmp_path: Path) -> None:
    """--manifests keeps, of a variant's own manifests, those given; a variant left with none is left out."""
    spec = tmp_path / "s.toml"
    spec.write_text('manifests = ["100", "many-small"]\n'
                    '[[variants]]\nname = "all"\ndownloader = "asyncio"\n'
                    '[[variants]]\nname = "both"\ndownloader = "asyncio"\nmanifests = ["100", "many-small"]\n'
                    '[[variants]]\nname = "small"\ndownloader = "asyncio"\nmanifests = ["many-small"]\n')
    code, output = _invoke("spec", str(spec), "--manifests", "100")
    assert code == 0, output
    experiment = json.loads(output)
    assert experiment["manifests"] == ["100"]
    assert [(v["name"], v["manifests"]) for v in experiment["variants"]] == [("all", None), ("both", ["100"])]
    code, output = _invoke("spec", str(spec), "--manifests", "200", "--variants", "small")
    assert code == 2 and "Error: no variant of the spec runs 200" in output, output


def test_a_sweep_of_processes_splits_each_variants_syncs_as_it_says(tiny_tree: Path, tmp_path: Path) -> None:
    """`bench sweep --sweep processes=1,2` end to end: each variant's runs used its processes."""
    run_bench("sweep", "--downloader", "asyncio", "--sweep", "processes=1,2", "--runs", "1", "--warmup", "0",
              "--fixtures", str(tiny_tree), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"),
              "--quiet", cwd=tmp_path)
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert {(run["variant"], run["ok"], run["processes"]) for run in document["runs"]} == {
        ("asyncio-p1", True, 1), ("asyncio-p2", True, 2)}
    (pick,) = document["recommendations"]
    assert pick["setting"] == "processes" and pick["values"] == [1, 2]
    assert (tmp_path / "out" / "sweep.png").is_file()


def test_a_sweep_with_auto_judges_it_against_the_fixed_values(tiny_tree: Path, tmp_path: Path) -> None:
    """`bench sweep --concurrency 2,auto` end to end: `--download-concurrency auto` reaches the syncs, whose
    records say so, and the report has its section and plot (no timing asserted: any machine may run it)."""
    run_bench("sweep", "--downloader", "asyncio", "--concurrency", "2,auto", "--runs", "2", "--warmup", "0",
              "--fixtures", str(tiny_tree), "--out", str(tmp_path / "out"), "--state-dir", str(tmp_path / "state"),
              "--quiet", cwd=tmp_path)
    folder = tmp_path / "out"
    document = json.loads((folder / "results.json").read_text())
    auto = [run for run in document["runs"] if run["variant"] == "asyncio-auto"]
    assert len(auto) == 2 and all(run["ok"] and run["auto_concurrency"] for run in auto), auto
    assert all(run["concurrency_trajectory"] and run["connections"] == 64 for run in auto), auto
    (row,) = document["statistics"]["auto_against_fixed"]
    assert (row["variant"], row["best_value"], row["default_tried"]) == ("asyncio-auto", 2, False)
    (pick,) = document["recommendations"]
    assert pick["values"] == [2], "auto is no candidate"
    assert "## auto against the fixed settings" in (folder / "summary.md").read_text()
    assert 'id="auto"' in (folder / "report.html").read_text()
    assert (folder / "auto-concurrency.png").is_file() and (folder / "sweep.png").is_file()


def test_bench_plan_prices_each_variant_and_runs_nothing(tiny_tree: Path, tmp_path: Path) -> None:
    """One at a time behind `slow` is priced above auto; the plan's sentence first, then a line per variant,
    or, with --json, each variant's syncs, bytes and seconds; no run is made, no results folder written."""
    spec = tmp_path / "s.toml"
    spec.write_text('manifests = ["100"]\nruns = 2\nwarmup = 0\nprofile = "slow"\n'
                    '[[variants]]\nname = "one"\ndownloader = "asyncio"\ndownload_concurrency = 1\n'
                    '[[variants]]\nname = "auto"\ndownloader = "asyncio"\ndownload_concurrency = "auto"\n')
    flags = ("--fixtures", str(tiny_tree), "--state-dir", str(tmp_path / "state"))
    code, output = _invoke("plan", str(spec), *flags)
    assert code == 0, output
    sentence, *rows = output.splitlines()
    assert sentence.startswith("Plan: 1 manifest(s) x 2 variant(s) x 2 runs (0 warm-up) = 4 syncs, "), sentence
    assert sentence.endswith(("minute", "minutes", "hours")), sentence
    assert [row.split()[:3] for row in rows] == [["one", "2", "syncs"], ["auto", "2", "syncs"]]
    code, output = _invoke("plan", str(spec), *flags, "--json")
    assert code == 0, output
    prices = json.loads(output)
    assert prices["one"]["syncs"] == prices["auto"]["syncs"] == 2
    assert prices["one"]["bytes"] == prices["auto"]["bytes"] > 0
    assert prices["one"]["seconds"] > prices["auto"]["seconds"] > 0
    assert not (tmp_path / "results").exists()


def test_run_and_sweep_list_their_exit_codes() -> None:
    for command in ("run", "sweep"):
        code, output = _invoke(command, "--help")
        assert code == 0 and "Exit status:" in output
        assert "1  a counted run failed" in output and "2  a usage error" in output


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_experiment_and_the_servers_it_started(
    tiny_tree: Path, tmp_path: Path, signum: signal.Signals
) -> None:
    spec = write_spec(tmp_path, tiny_tree, 'runs = 50\n[[variants]]\nname = "a"\ndownloader = "asyncio"\n')
    bench = subprocess.Popen([sys.executable, "-m", "harness", "run", str(spec), "--out", str(tmp_path / "out"),
                              "--state-dir", str(tmp_path / "state")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    servers: list[int] = []
    deadline = time.monotonic() + 120
    while not (servers and (tmp_path / "out" / "runs.csv").exists()) and time.monotonic() < deadline:
        assert bench.poll() is None, f"the experiment ended early ({bench.returncode}): {bench.communicate()[1]}"
        servers = [pid for pid in descendants(bench.pid) if _is_fixture_server(pid)]
        time.sleep(0.1)
    assert servers, "the fixture server runs while the experiment does"
    bench.send_signal(signum)
    _, stderr = bench.communicate(timeout=60)
    assert bench.returncode == 130 and "Interrupted. The runs made so far are saved" in stderr
    for pid in servers:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2], \
            f"fixture server {pid} outlived the experiment"


def _is_fixture_server(pid: int) -> bool:
    try:
        return b"fixtures\0serve" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("path", [(), ("run",), ("compare",)])
def test_h_is_help_without_pulp_sync_too(path: tuple[str, ...]) -> None:
    """`python -m harness` is bench_group alone, so it takes -h itself, not from pulp-sync's group."""
    assert _invoke(*path, "-h") == _invoke(*path, "--help")
    assert _invoke(*path, "-h")[0] == 0


def test_spec_refuses_what_run_refuses_before_any_run(tmp_path: Path) -> None:
    """`bench spec` exits 2 with run's own line for a downloader that is not installed, where it said 0."""
    spec = tmp_path / "s.toml"
    spec.write_text('[[variants]]\nname = "a"\ndownloader = "carrier-pigeon"\n')
    checked, ran = _invoke("spec", str(spec)), _invoke("run", str(spec), "--results-dir", str(tmp_path / "results"))
    assert checked[0] == ran[0] == 2
    line = "Error: variant 'a': no downloader named 'carrier-pigeon'; installed: asyncio"
    assert line in checked[1] and line in ran[1]


def test_spec_checks_a_spec_with_runs_flags(tmp_path: Path) -> None:
    """--remote, --remote-setting, --runs, --manifests and --variants shape what `bench spec` prints as they
    shape what `bench run` runs."""
    spec = tmp_path / "s.toml"
    spec.write_text('[[variants]]\nname = "a"\ndownloader = "asyncio"\n'
                    '[[variants]]\nname = "b"\ndownloader = "futures"\n')
    code, output = _invoke("spec", str(spec), "--remote", "https://repo.example/base/PULP_MANIFEST", "--runs", "3",
                           "--remote-setting", "rate_limit=20", "--variants", "b")
    assert code == 0, output
    experiment = json.loads(output)
    assert experiment["base_url"] == "https://repo.example/base/PULP_MANIFEST" and experiment["runs"] == 3
    assert experiment["manifests"] == ["base"] and experiment["remote"] == {"rate_limit": 20}
    assert [variant["name"] for variant in experiment["variants"]] == ["b"]


def test_report_json_is_the_statistics_for_machines(tmp_path: Path) -> None:
    """`bench report --json` prints one JSON object (the folder, the report and results.json's statistics)
    and nothing else on stdout; run and sweep take the flag too."""
    folder = tmp_path / "main-job"
    shutil.copytree(Path(__file__).resolve().parents[1] / "docs" / "recorded" / "main-job", folder)
    result = CliRunner().invoke(bench_group, ["report", str(folder), "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["folder"] == str(folder) and document["report"].endswith("report.html")
    cells = {(cell["manifest"], cell["variant"]) for cell in document["cells"]}
    assert {("100", "asyncio"), ("100", "futures")} <= cells
    for command in ("run", "sweep"):
        assert "--json" in _invoke(command, "--help")[1]
