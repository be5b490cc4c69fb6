"""The pytest plugin: `--pulp-sync-downloader NAME` runs the conformance suite against that downloader.

pytest loads this module in every session of an environment where pulp-sync is installed, so it
does nothing unless asked: without the option it only adds the option. With it, the contract
module joins whatever else the command line collects, parametrized over the named downloaders.
When the contract module is collected without the option (`pytest --pyargs conformance`), it runs
against every installed downloader.
"""

from __future__ import annotations

import importlib

import pytest

pytest.register_assert_rewrite("conformance.checks")

from conformance import CONTRACT, OPTION, names_contract  # noqa: E402 - after the rewrite hook, as pytest asks
from downloaders.base import Downloader  # noqa: E402
from downloaders.registry import ENTRY_POINT_GROUP, UnknownDownloader, available, load  # noqa: E402

__all__ = ["downloader_names", "resolve"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pulp-sync", "pulp-sync downloader conformance")
    group.addoption(
        OPTION,
        action="append",
        default=[],
        dest="pulp_sync_downloaders",
        metavar="NAME",
        help=f"run the downloader conformance suite against NAME: a downloader installed under {ENTRY_POINT_GROUP} "
        "(see `pulp-sync downloaders`) or module:Class; repeatable; default: every installed downloader",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Check the names at once (a typo is a usage error, not 20 failures), then collect the suite."""
    names = config.getoption("pulp_sync_downloaders")
    for name in names:
        resolve(name)
    if names and not names_contract(config.args, config.invocation_params.dir, config.option.pyargs):
        config.args.append(str(CONTRACT))


def downloader_names(config: pytest.Config) -> list[str]:
    """The downloaders to test: those named on the command line (once each: a plugin's own configuration may
    name the one `python -m conformance NAME` names too), else every installed one."""
    return list(dict.fromkeys(config.getoption("pulp_sync_downloaders"))) or sorted(available())


def resolve(name: str) -> type[Downloader]:
    """The class NAME stands for: an installed downloader's name, or module:Class for one not registered."""
    module, colon, attribute = name.partition(":")
    try:
        if not colon:
            return load(name)
        return getattr(importlib.import_module(module), attribute)
    except UnknownDownloader as error:
        raise pytest.UsageError(f"{OPTION} {name}: {error}; or give module:Class") from None
    except (ImportError, AttributeError) as error:
        raise pytest.UsageError(f"{OPTION} {name}: cannot load the downloader: {error}") from None
