"""The house's layering, checked statically: every import of every module (inside functions too, and a
module named by a string, as importlib takes it) against the rules below. docs/architecture.md says why.

    pulp_base      the ground floor: imports nothing of ours, and no Django
    downloaders    pulp_base only (a plugin author reads it alone)
    fixtures       pulp_base only (a stand-in for a remote nobody here wrote)
    conformance    pulp_base, downloaders, fixtures
    pulp_sync      pulp_base, downloaders; the commands of harness, fixtures and conformance reach
                   `pulp-sync` through the entry-point group `pulp_sync.commands`, never an import
    harness        pulp_base, downloaders, fixtures, conformance; never pulp_sync (it runs pulp-sync
                   as an operator does, in a child process)

Django and its REST libraries are pulp_sync's alone.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("pulp_base", "downloaders", "fixtures", "conformance", "pulp_sync", "harness")
DJANGO = ("django", "rest_framework", "drf_spectacular")
ALLOWED: dict[str, tuple[str, ...]] = {
    "pulp_base": (),
    "downloaders": ("pulp_base",),
    "fixtures": ("pulp_base",),
    "conformance": ("pulp_base", "downloaders", "fixtures"),
    "pulp_sync": ("pulp_base", "downloaders", *DJANGO),
    "harness": ("pulp_base", "downloaders", "fixtures", "conformance"),
}
"""What each package may import of ours (and of Django's) besides itself."""
_MODULE_NAME = re.compile(r"(?:%s)(?:\.\w+)+(?::\w+)?" % "|".join(OURS))
"""A string that may name a module of ours ("harness.cli", "harness.cli:bench_group"), as importlib or an
entry point takes it; it does if the module is in the tree (`pulp_sync.downloaders`, an entry-point
group, is not)."""


def imported(source: str) -> Iterator[tuple[int, str]]:
    """(line, module) of every module `source` imports or names in a string, docstrings aside."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree) if _has_docstring(node)}  # type: ignore[attr-defined]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if _MODULE_NAME.fullmatch(node.value) and _is_module(node.value.split(":")[0]):
                yield node.lineno, node.value.split(":")[0]


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _has_docstring(node: ast.AST) -> bool:
    body = getattr(node, "body", None)
    return (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and bool(body)
            and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant))


def violations(root: Path, package: str) -> list[str]:
    """`path:line imports module` for each import of `package` (under `root`) that its rules forbid."""
    guarded = set(OURS) | set(DJANGO)
    allowed = {package, *ALLOWED[package]}
    found = []
    for path in sorted((root / package).rglob("*.py")):
        for line, module in imported(path.read_text(encoding="utf-8")):
            top = module.split(".")[0]
            if top in guarded and top not in allowed:
                found.append(f"{path.relative_to(root)}:{line} imports {module}")
    return found


@pytest.mark.parametrize("package", OURS)
def test_each_package_imports_only_what_its_floor_may(package: str) -> None:
    assert violations(ROOT, package) == []


@pytest.mark.parametrize(
    ("package", "planted"),
    [
        ("pulp_base", "import django\n"),
        ("downloaders", "def later():\n    from pulp_sync import models\n"),
        ("fixtures", "from harness.experiment.spec import Experiment\n"),
        ("pulp_sync", "import importlib\nimportlib.import_module('harness.cli')\n"),
        ("pulp_sync", "GROUPS = {'bench': ('harness.cli', 'bench_group')}\n"),
        ("harness", "from pulp_sync.models import Remote\n"),
    ],
)
def test_a_planted_violation_is_found(tmp_path: Path, package: str, planted: str) -> None:
    (tmp_path / package).mkdir()
    (tmp_path / package / "planted.py").write_text('"""A module that breaks the rules: harness.cli."""\n' + planted)

    assert [found.split(" imports ")[0] for found in violations(tmp_path, package)] == [
        f"{package}/planted.py:{planted.count(chr(10)) + 1}"
    ]
