"""The house's layering, checked statically: every import of every module (inside functions too, and a
module named by a string, as importlib, an entry point or RQ's dotted job path takes it) against the
rules below, no relative import (it would hide what it imports), and no import cycle between modules, at
function level and through such strings either; and the manifest's file name written once, in the
format's home. docs/architecture.md says why.

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
from collections.abc import Callable, Iterator
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
DJANGO_SETTINGS = "pulp_sync.settings"
"""Django's settings: a table of names (the URLconf, the app, DRF's parser) that Django imports when it
starts or serves, for the process that started it; the module's own code runs none of them. Its strings are
held to the floors like any module's, but are no edges of the cycle graph. (The edge into it is real:
database.configure names it to Django and reads it at once.)"""
_MODULE_NAME = re.compile(r"(?:" + "|".join(OURS) + r")(?:\.\w+)+(?::\w+)?")
"""A string that may name a module of ours: "harness.cli" as importlib takes it, "harness.cli:bench_group"
as an entry point, "pulp_sync.sync.split.jobs.take_shards_job" as RQ's dotted job path."""


def imported(source: str, *, strings: bool = True) -> Iterator[tuple[int, str]]:
    """(line, module) of every module `source` imports or names in a string (unless not `strings`), prose
    aside."""
    tree = ast.parse(source)
    prose = _prose(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif strings and isinstance(node, ast.Constant) and id(node) not in prose:
            if named := _named_module(node.value, _is_module):
                yield node.lineno, named


def relative_imports(source: str) -> Iterator[int]:
    """The line of every relative import in `source`: the checks here read absolute names only, so a
    relative one would import unseen (ruff's TID252 refuses it too)."""
    return (node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom) and node.level)


def _named_module(value: object, is_module: Callable[[str], bool]) -> str | None:
    """The module of ours that a string names, or holds the function or class it names: the longest
    dotted prefix that is a module inside a package. A package alone is not taken, so the entry-point
    group `pulp_sync.downloaders` names nothing."""
    if not isinstance(value, str) or not _MODULE_NAME.fullmatch(value):
        return None
    name = value.split(":")[0]
    while "." in name and not is_module(name):
        name = name.rpartition(".")[0]
    return name if "." in name else None


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _prose(tree: ast.AST) -> set[int]:
    """The string statements of `tree` (docstrings, of modules, classes, functions and attributes): words
    for readers, which never name a module to import."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def violations(root: Path, package: str) -> list[str]:
    """`path:line imports module` for each import of `package` (under `root`) that its rules forbid."""
    guarded = set(OURS) | set(DJANGO)
    allowed = {package, *ALLOWED[package]}
    found = []
    for path in sorted((root / package).rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for line, module in imported(source):
            top = module.split(".")[0]
            if top in guarded and top not in allowed:
                found.append(f"{path.relative_to(root)}:{line} imports {module}")
        found += [f"{path.relative_to(root)}:{line} imports relatively" for line in relative_imports(source)]
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
        ("pulp_sync", "JOB = 'harness.cli.bench_group'\n"),
        ("downloaders", "from .base import Downloader\n"),
    ],
)
def test_a_planted_violation_is_found(tmp_path: Path, package: str, planted: str) -> None:
    (tmp_path / package).mkdir()
    (tmp_path / package / "planted.py").write_text('"""A module that breaks the rules: harness.cli."""\n' + planted)

    assert [found.split(" imports ")[0] for found in violations(tmp_path, package)] == [
        f"{package}/planted.py:{planted.count(chr(10)) + 1}"
    ]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module of ours under `root` and the modules of ours it imports when it runs: at the top or
    inside a function, or later by a string naming it (RQ imports a job's dotted path in the worker), but
    not under `if TYPE_CHECKING:`, which annotations alone read."""
    paths = [path for package in OURS for path in (root / package).rglob("*.py")]
    modules = {_module_name(path.relative_to(root)): path for path in paths}
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _prose(tree) | _settings(name, tree) | {id(node) for block in ast.walk(tree)
                                                          if _is_type_checking(block) for node in ast.walk(block)}
        targets = {_known(candidate, modules) for node in ast.walk(tree) if id(node) not in skipped
                   for candidate in _candidates(node, modules)}
        graph[name] = {target for target in targets if target and not _within(name, target)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, 1972): each holds an import cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _module_name(relative: Path) -> str:
    parts = relative.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _settings(module: str, tree: ast.AST) -> set[int]:
    """The strings of Django's settings (DJANGO_SETTINGS says why), or none of another module."""
    if module != DJANGO_SETTINGS:
        return set()
    return {id(node) for node in ast.walk(tree) if isinstance(node, ast.Constant)}


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _candidates(node: ast.AST, modules: dict[str, Path]) -> list[str]:
    """The modules an import statement names (`from a import b` names `a.b` if b is a module, else `a`),
    or the module a string names."""
    if isinstance(node, ast.Constant):
        return [named] if (named := _named_module(node.value, modules.__contains__)) else []
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        named = [f"{node.module}.{alias.name}" for alias in node.names]
        return [name if name in modules else node.module for name in named]
    return []


def _within(module: str, target: str) -> bool:
    """Whether `target` is `module` or a package that holds it: a module importing its own package's
    names (`from downloaders import defaults` in downloaders/base.py) is how packages re-export, not a cycle."""
    return module == target or module.startswith(target + ".")


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ours that `name` is, or that holds it; a package's own names are its __init__'s."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(import_graph(ROOT)) == []


def test_a_planted_cycle_is_found_even_inside_a_function(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "a.py").write_text("from harness.b import thing\n")
    (tmp_path / "harness" / "b.py").write_text("def thing():\n    from harness import a\n")
    (tmp_path / "harness" / "c.py").write_text("import typing\nif typing.TYPE_CHECKING:\n    from harness import a\n")
    (tmp_path / "harness" / "__init__.py").write_text("")

    assert cycles(import_graph(tmp_path)) == [["harness.a", "harness.b"]]


def test_a_planted_cycle_through_a_dotted_string_is_found(tmp_path: Path) -> None:
    (tmp_path / "pulp_sync").mkdir()
    (tmp_path / "pulp_sync" / "board.py").write_text('import pulp_sync.notes\nJOB = "pulp_sync.jobs.take_job"\n')
    (tmp_path / "pulp_sync" / "jobs.py").write_text("from pulp_sync.board import JOB\n")
    (tmp_path / "pulp_sync" / "notes.py").write_text('"""Prose, not an import: pulp_sync.board.JOB."""\n')
    (tmp_path / "pulp_sync" / "__init__.py").write_text("")

    assert cycles(import_graph(tmp_path)) == [["pulp_sync.board", "pulp_sync.jobs"]]


# Inside a package: its folders, in the order data flows up through them (kept apart from the packages'
# rules above).

HARNESS_FLOORS: tuple[tuple[str, ...], ...] = (
    ("defaults", "errors"),
    ("experiment", "results"),
    ("analysis",),
    ("variants",),
    ("run",),
    ("report",),
    ("cli", "__main__"),
)
"""The harness's folders and top-level modules, bottom to top: a module imports from its own floor and those
below, never from one above. The spec and the results are the ground every other folder stands on; the
analysis is computed from the results alone, and the runner saves it after every run; the variants are
what the runner runs; the report shows all of it; cli.py drives it. docs/architecture.md says the same."""
PULP_SYNC_FLOORS: tuple[tuple[str, ...], ...] = (
    ("defaults", "errors", "messages", "environment", "settings", "apps", "models", "migrations", "locks", "database",
     "permissions", "progress"),
    ("content",),
    ("sync",),
    ("tasking",),
    ("api",),
    ("cli", "__main__"),
)
"""pulp_sync's folders and top-level modules, bottom to top: what every part shares (the Django app, its
models and settings, the database, its locks, who may use what, progress); the store and what it holds; the sync
pipeline that fills it; the tasks that run syncs, inline or on workers; the REST API; the command line.
The settings name the API's URLconf and parser to Django as strings, read when Django serves, never
imported by the settings' own code (DJANGO_SETTINGS), so those strings are no arrow up."""
FLOORS = {"harness": HARNESS_FLOORS, "pulp_sync": PULP_SYNC_FLOORS}
BACK_IMPORTS_TO_MEND: frozenset[tuple[str, str]] = frozenset({
    # compare writes its own markdown: it is a report of two folders
    ("harness.analysis.compare", "harness.report.markdown"),
    ("harness.analysis.compare", "harness.report.view"),
    ("harness.analysis.compare", "harness.report.wording"),
    # the plan prices the runs as the runner will make them
    ("harness.experiment.plan", "harness.run.fixture_site"),
    ("harness.experiment.plan", "harness.run.schedule"),
    ("harness.experiment.plan", "harness.variants.fleet"),
    # the spec checks its variants against what the variants support
    ("harness.experiment.spec", "harness.variants.databases"),
    ("harness.experiment.spec", "harness.variants.hosts"),
    ("harness.experiment.spec", "harness.variants.programs"),
    # the variants start their processes through run/child.py
    ("harness.variants.api_runs", "harness.run.child"),
    ("harness.variants.api_runs", "harness.run.schedule"),
    ("harness.variants.fleet", "harness.run.child"),
    ("harness.variants.fleet", "harness.run.fixture_site"),
    ("harness.variants.hosts", "harness.run.child"),
    ("harness.variants.programs", "harness.run.child"),
    ("harness.variants.pulp_sync_cli", "harness.run.child"),
    ("harness.variants.pulp_sync_server", "harness.run.child"),
    ("harness.variants.workers", "harness.run.child"),
    # the seed's pclean resets the schema and empties the store in one step
    ("pulp_sync.database", "pulp_sync.content.store"),
})
"""(module, module it imports) that still run against their package's floors, to be mended: each is allowed
by name, no other, and one that is mended must leave this list."""


def back_imports(root: Path, package: str) -> list[tuple[str, str, str]]:
    """(path:line, module, module it imports) for each import of a module of `package` (under `root`) from
    a floor above its own, inside functions and under TYPE_CHECKING too."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        module = _module_name(path.relative_to(root))
        for line, target in _package_modules(path.read_text(encoding="utf-8"), package, module != DJANGO_SETTINGS):
            if _floor(target, package) > _floor(module, package):
                found.append((f"{path.relative_to(root)}:{line}", module, target))
    return found


def _floor(module: str, package: str) -> int:
    """The height of a module's floor in its package; the package's own __init__ is on the ground, since
    importing any of its modules runs it first."""
    floors = FLOORS[package]
    folder = module.split(".")[1] if "." in module else floors[0][0]
    return next(height for height, floor in enumerate(floors) if folder in floor)


def _package_modules(source: str, package: str, strings: bool) -> Iterator[tuple[int, str]]:
    """(line, module) of every module of `package` that `source` imports or names (in strings too, if
    `strings`), as `imported` finds them, with `from harness import run` read as harness.run: the floor a
    name comes from."""
    yield from ((line, module) for line, module in imported(source, strings=strings)
                if module.startswith(package + "."))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == package:
            yield from ((node.lineno, f"{package}.{alias.name}") for alias in node.names)


@pytest.mark.parametrize("package", FLOORS)
def test_every_folder_has_its_floor(package: str) -> None:
    modules = {path.stem for path in (ROOT / package).glob("*.py") if path.stem != "__init__"}
    folders = {path.parent.name for path in (ROOT / package).glob("*/__init__.py")}
    assert modules | folders == {name for floor in FLOORS[package] for name in floor}


@pytest.mark.parametrize("package", FLOORS)
def test_no_folder_imports_from_one_above_it(package: str) -> None:
    found = back_imports(ROOT, package)
    assert [place for place, *pair in found if tuple(pair) not in BACK_IMPORTS_TO_MEND] == []
    listed = {pair for pair in BACK_IMPORTS_TO_MEND if pair[0].startswith(package + ".")}
    assert listed <= {(module, target) for _, module, target in found}, "mended: remove it from the list"


@pytest.mark.parametrize(
    ("package", "folder", "planted"),
    [
        ("harness", "results", "from harness.run.child import ChildRun\n"),
        ("harness", "results", "def later():\n    from harness.variants import fleet\n"),
        ("harness", "results",
         "import typing\nif typing.TYPE_CHECKING:\n    from harness.analysis.findings import Analysis\n"),
        ("harness", "results", "from harness import report\n"),
        ("harness", "results", "import importlib\nimportlib.import_module('harness.run.runner')\n"),
        ("harness", "analysis", "from harness.run.runner import run_experiment\n"),
        ("harness", "run", "import harness.report.render\n"),
        ("pulp_sync", "content", "from pulp_sync.tasking.tasks import dispatch_sync\n"),
        ("pulp_sync", "sync", "def later():\n    from pulp_sync.api import access\n"),
        ("pulp_sync", "tasking", "JOB = 'pulp_sync.cli.sync.sync_command'\n"),
        ("pulp_sync", "api", "from pulp_sync import cli\n"),
    ],
)
def test_a_planted_back_import_is_found(tmp_path: Path, package: str, folder: str, planted: str) -> None:
    here = tmp_path / package / folder
    here.mkdir(parents=True)
    (here / "planted.py").write_text(f'"""A module that reaches up: {package}.cli."""\n' + planted)
    (here / "allowed.py").write_text(f"from {package} import errors\nfrom {package}.{folder} import planted\n")

    assert [place for place, *_ in back_imports(tmp_path, package)] == [
        f"{package}/{folder}/planted.py:{planted.count(chr(10)) + 1}"
    ]


_MANIFEST_FILE = re.compile(r"(?:.*/)?PULP_MANIFEST(?:_\w+)?")
"""A string that is a manifest's file name or path ("PULP_MANIFEST", "many-small/PULP_MANIFEST",
"PULP_MANIFEST_100"), as opposed to prose about the format."""


def manifest_literals(root: Path) -> list[str]:
    """`path:line` of each string naming a manifest's file outside pulp_base/manifest/, where its one
    constant (MANIFEST_NAME) lives; migrations keep the literals Django froze."""
    found = []
    for path in sorted(path for folder in (*OURS, "scripts") for path in (root / folder).rglob("*.py")):
        relative = path.relative_to(root)
        if relative.parts[:2] == ("pulp_base", "manifest") or "migrations" in relative.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        prose = _prose(tree)
        found += [f"{relative}:{node.lineno}" for node in ast.walk(tree) if isinstance(node, ast.Constant)
                  and id(node) not in prose and isinstance(node.value, str) and _MANIFEST_FILE.fullmatch(node.value)]
    return found


def test_the_manifests_file_name_is_written_once() -> None:
    assert manifest_literals(ROOT) == []


def test_a_planted_manifest_name_is_found(tmp_path: Path) -> None:
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "planted.py").write_text('"""Reads a PULP_MANIFEST."""\nNAME = "tiny/PULP_MANIFEST"\n')

    assert manifest_literals(tmp_path) == ["harness/planted.py:2"]
