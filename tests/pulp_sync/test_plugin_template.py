"""`pulp-sync plugin new NAME` writes a plugin's package that passes the conformance suite.

The suite runs on the package from its folder, as module:Class on the import path, in this
virtualenv: installing it into a fresh one is the manual check docs/plugins.md describes.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from conformance.template import PluginNames
from pulp_sync.cli import cli
from tests.conformance.running import CHANGING_LIMIT_TESTS, SUITE_TIMEOUT, run_suite


def _new(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["plugin", "new", *args], prog_name="pulp-sync")
    return result.exit_code, result.output


def test_it_writes_a_package_named_after_the_downloader(tmp_path: Path) -> None:
    assert _new("my-engine", "--directory", str(tmp_path)) == (
        0,
        f"Wrote {tmp_path}/pulp-sync-my-engine/: the downloader 'my-engine', on urllib. Next:\n"
        f"  cd {tmp_path}/pulp-sync-my-engine && pip install -e '.[test]' && pytest\n",
    )
    folder = tmp_path / "pulp-sync-my-engine"
    files = sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
    assert files == ["README.md", "pulp_sync_my_engine/__init__.py", "pulp_sync_my_engine/py.typed", "pyproject.toml"]
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    assert project["project"]["name"] == "pulp-sync-my-engine"
    assert project["project"]["entry-points"]["pulp_sync.downloaders"] == {
        "my-engine": "pulp_sync_my_engine:MyEngineDownloader"
    }
    assert project["tool"]["pytest"]["ini_options"]["addopts"] == "-ra --pulp-sync-downloader=my-engine"
    code = (folder / "pulp_sync_my_engine" / "__init__.py").read_text()
    assert "class MyEngineDownloader(BaseDownloader):" in code and '    name = "my-engine"\n' in code


@pytest.mark.parametrize("name", ["My-Engine", "my_engine", "2fast", "engine-", ""])
def test_a_name_that_makes_no_package_is_refused(tmp_path: Path, name: str) -> None:
    code, output = _new(name, "--directory", str(tmp_path))
    assert code == 2 and "is not a downloader name for a plugin" in output
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_is_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "pulp-sync-urllib").mkdir()
    assert _new("urllib", "--directory", str(tmp_path)) == (
        1,
        f"Error: {tmp_path}/pulp-sync-urllib already exists: not overwritten\n",
    )


@pytest.mark.slow
@pytest.mark.timeout(SUITE_TIMEOUT + 60)
def test_the_plugin_passes_the_conformance_suite(tmp_path: Path) -> None:
    """All but the proxy's test, which it skips: the plugin refuses proxy_url, as the contract allows; and those of
    a changing limit (rule 24), which it does not declare: it keeps its fixed download_concurrency."""
    assert _new("my-engine", "--directory", str(tmp_path))[0] == 0
    names = PluginNames("my-engine")
    target = f"{names.module}:{names.cls}"
    run = run_suite(["-m", "conformance", target, "-q", "-rs"], tmp_path, pythonpath=[tmp_path / names.distribution])
    assert run.returncode == 0, f"the plugin made by `pulp-sync plugin new` fails the suite:\n{run.tail(120)}"
    assert run.counts.keys() == {"passed", "skipped"} and run.counts["skipped"] == 1 + CHANGING_LIMIT_TESTS, run.tail()
    assert "does not support proxy_url" in run.output and "keeps a fixed limit" in run.output, run.tail()
