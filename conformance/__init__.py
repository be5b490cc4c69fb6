"""The downloader conformance suite: the plugin contract as pytest tests that any downloader can run.

    pytest --pulp-sync-downloader NAME          # NAME: an installed downloader, or module:Class
    python -m conformance NAME [pytest args]    # the suite alone

`plugin` is the pytest plugin (pytest finds it through the `pytest11` entry point of pulp-sync),
`test_contract` holds the tests, `checks` the assertions they share, each of which says which rule
of the contract (`rules`, numbered as docs/plugins.md numbers them) a downloader broke, and `wire`
the suite's own servers. `template` is what `pulp-sync plugin new` writes. This package imports
`downloaders` and `fixtures`, never Django, `pulp_sync` or `harness`. The contract itself is
described in docs/plugins.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = ["OPTION", "CONTRACT", "CONTRACT_MODULE", "names_contract"]

OPTION = "--pulp-sync-downloader"
"""The pytest option naming a downloader to test."""
CONTRACT = Path(__file__).with_name("test_contract.py")
"""The module holding the suite's tests."""
CONTRACT_MODULE = "conformance.test_contract"
"""Its name, as `pytest --pyargs` takes it."""
_MODULES = frozenset({"conformance", CONTRACT_MODULE})


def names_contract(arguments: Iterable[str], directory: Path, pyargs: bool) -> bool:
    """Whether a pytest argument names the contract module, so it is not added again: pytest would
    merge `test_contract.py::one_test` into the whole module."""
    for argument in arguments:
        target = argument.split("::", 1)[0]
        if pyargs and target in _MODULES:
            return True
        if (directory / target).resolve() == CONTRACT.resolve():
            return True
    return False
