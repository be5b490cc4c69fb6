"""`pulp-sync plugin new NAME`: the package of a downloader plugin, ready to install and to test.

The files are templates in `files/` (package data of pulp-sync) filled in with the names NAME
makes: the distribution `pulp-sync-NAME`, its package `pulp_sync_NAME` and the class
`NameDownloader` in it, registered as the downloader NAME. The package's code is the minimal plugin
of docs/plugins.md, which passes the conformance suite (tests/conformance/test_plugins_doc.py keeps
the two the same), so a new plugin starts from code that passes and stays in reach of the suite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

import click

__all__ = ["PluginNames", "render", "write_plugin", "plugin_group"]

FILES = Path(__file__).with_name("files")
"""The templates: `$name`, `$module` and `$cls` stand for the names of PluginNames."""
_NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*\Z")


@dataclass(frozen=True)
class PluginNames:
    """The names a downloader's name makes: its entry point's, its distribution's, its package's, its class's."""

    name: str

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(
                f"{self.name!r} is not a downloader name for a plugin: lowercase letters and digits, words joined"
                " by hyphens, starting with a letter (e.g. urllib, my-engine)"
            )

    @property
    def distribution(self) -> str:
        return f"pulp-sync-{self.name}"

    @property
    def module(self) -> str:
        return "pulp_sync_" + self.name.replace("-", "_")

    @property
    def cls(self) -> str:
        return "".join(word.capitalize() for word in self.name.split("-")) + "Downloader"


def render(name: str) -> dict[str, str]:
    """The plugin's files for the downloader `name`: each one's path in the plugin's folder, and its text."""
    names = PluginNames(name)
    values = {"name": names.name, "module": names.module, "cls": names.cls}
    sources = {
        "pyproject.toml": "pyproject.toml.in",
        "README.md": "README.md.in",
        f"{names.module}/__init__.py": "plugin.py.in",
    }
    files = {path: _filled(source, values) for path, source in sources.items()}
    files[f"{names.module}/py.typed"] = ""  # PEP 561: the plugin's types are checked by those who import it
    return files


def _filled(source: str, values: dict[str, str]) -> str:
    return Template((FILES / source).read_text(encoding="utf-8")).substitute(values)


def write_plugin(name: str, parent: Path) -> Path:
    """Write the plugin for the downloader `name` into a new folder under `parent`; its path."""
    folder = parent / PluginNames(name).distribution
    if folder.exists():
        raise FileExistsError(f"{folder} already exists: not overwritten")
    for path, text in render(name).items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder


@click.group("plugin")
def plugin_group() -> None:
    """Make a downloader plugin (docs/plugins.md)."""


@plugin_group.command("new")
@click.argument("name")
@click.option(
    "--directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Where to make the plugin's folder, pulp-sync-NAME.",
)
def new(name: str, directory: Path) -> None:
    """Write pulp-sync-NAME/: a package registering the downloader NAME, which passes the conformance suite."""
    try:
        folder = write_plugin(name, directory)
    except ValueError as error:  # a NAME that makes no package: a usage error, exit status 2
        raise click.BadParameter(str(error), param_hint="NAME") from error
    except OSError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"Wrote {folder}/: the downloader {name!r}, on urllib. Next:")
    click.echo(f"  cd {folder} && pip install -e '.[test]' && pytest")
