"""The kinds of variant a spec may hold, each a class with only its own fields, and `Variant`, their union as
pydantic reads a [[variants]] table: told apart by `kind_tag` from what users write (`kind`, and a
pulp-sync variant's `tasking`). harness.run.kinds registers a runner under each kind's tag."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import typing
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Annotated, Literal

from pydantic import ConfigDict, Discriminator, StrictInt, Tag

from downloaders.settings import AUTO
from harness import defaults
from harness.experiment.remote_table import RemoteTable

__all__ = ["Variant", "PulpSyncVariant", "InlineVariant", "RqVariant", "CommandVariant", "PulpApiVariant",
           "VARIANT_KINDS", "KIND_FIELDS", "kind_tag", "field_help", "SCHEMA_CONFIG", "Kind", "KINDS", "PULPCORE",
           "PULP_SYNC_SERVER", "STARTED_SERVERS", "Tasking", "TASKING", "Worker", "WORKERS"]

Kind = Literal["pulp-sync", "command", "pulp-api"]
KINDS: tuple[str, ...] = typing.get_args(Kind)
PULPCORE = "pulpcore"
"""A pulp-api variant's `server` that the harness starts itself (harness.variants.pulpcore) rather than a URL."""
PULP_SYNC_SERVER = "pulp-sync"
"""A pulp-api variant's `server`: `pulp-sync api` and a worker, started by the harness
(harness.variants.pulp_sync_server)."""
STARTED_SERVERS = (PULPCORE, PULP_SYNC_SERVER)
Tasking = Literal["inline", "rq"]
TASKING: tuple[str, ...] = typing.get_args(Tasking)
Worker = Literal["fork", "simple"]
WORKERS: tuple[str, ...] = typing.get_args(Worker)

SCHEMA_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)
"""How pydantic reads a spec into its dataclasses (the variants below, spec.Experiment): an unknown key is
refused (it is a typo), and each field's docstring is its help in the JSON Schema. Values are taken as
written: the numbers and true/false are pydantic's Strict types (no "10" read as 10), and a `str` field
takes text only (pydantic reads no number as text); a TOML array may fill a tuple, a table a dataclass or
a Mapping."""


@dataclass(frozen=True)
class _Variant:
    """What every kind of variant has: one way of syncing, and two variants of an experiment should differ in
    one setting only. `profile` overrides the experiment's network profile for this variant alone (it then
    gets its own fixture server); `manifests`, some of the experiment's, are the only ones it runs (the
    many-small manifest on some links only), None all of them; `remote` holds Remote settings (named as in
    downloaders.REMOTE_SETTINGS) over the experiment's own `remote`; see Experiment.remote_of. A spec's
    variant is one of the kinds below, told apart by `kind_tag` from what users write (`kind`, and a
    pulp-sync variant's `tasking`), each with only its own fields: a field of another kind is refused
    naming the kind's own."""

    __pydantic_config__ = SCHEMA_CONFIG

    name: str
    """The variant's name in tables and reports: letters, digits, . _ -"""
    _: KW_ONLY
    download_concurrency: StrictInt | Literal["auto"] = defaults.CONCURRENCY
    """Downloads in flight at once, 1 to 256 (downloaders.defaults.MAX_DOWNLOAD_CONCURRENCY; a command
    variant's {concurrency}), or "auto" (pulp-sync only): found while syncing, up to max_concurrency."""
    profile: str | None = None
    """This variant's own network profile, over the experiment's."""
    manifests: tuple[str, ...] | None = None
    """The experiment's manifests this variant runs, some of them [default: all]."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables of the variant's processes."""
    remote: RemoteTable = field(default_factory=dict)
    """This variant's Remote settings, over the experiment's [remote]."""

    @property
    def auto_concurrency(self) -> bool:
        """Whether its downloads in flight are found while it syncs (`download_concurrency = "auto"`,
        downloaders.concurrency) rather than fixed: a sweep draws such a variant as a line across the fixed
        values, not as a point among them (harness.analysis.sweep)."""
        return self.download_concurrency == AUTO

    @property
    def database(self) -> str | None:
        """The database its processes use: `db` where the kind has one, else None (sqlite in the state folder)."""
        return None

    @property
    def syncs_per_run(self) -> int:
        """How many syncs one run makes: an RQ variant's `repositories`, queued at once; one for every other kind."""
        return 1


@dataclass(frozen=True)
class PulpSyncVariant(_Variant):
    """pulp-sync's own sync with `downloader` (harness.variants.pulp_sync_cli): in a child process of its own
    (InlineVariant) or queued for RQ workers (RqVariant). `db` is "sqlite", "postgresql", "mysql"
    (harness.variants.databases) or a DATABASE_URL (None: sqlite under the state folder)."""

    downloader: str
    """An installed downloader (`pulp-sync downloaders`)."""
    _: KW_ONLY
    kind: Literal["pulp-sync"] = "pulp-sync"
    """pulp-sync (this kind, the default), command (an external program) or pulp-api (a Pulp server's own syncs)."""
    processes: StrictInt | str = 1
    """Processes one sync splits its downloads across: 1 to 256, or "auto"."""
    db: str | None = None
    """sqlite, postgresql, mysql (the local servers) or a DATABASE_URL [sqlite under the state folder]."""
    sync_args: tuple[str, ...] = ()
    """More `pulp-sync sync` arguments, appended as given."""

    @property
    def engine(self) -> str:
        """What does the syncing, for grouping variants (a plot's colour family): every kind has one, here the
        downloader, a command's program, a pulp-api variant's server."""
        return self.downloader

    @property
    def database(self) -> str | None:
        return self.db


@dataclass(frozen=True)
class InlineVariant(PulpSyncVariant):
    """The sync in a child process of its own (`tasking = "inline"`, the default)."""

    _: KW_ONLY
    tasking: Literal["inline"] = "inline"
    """inline (this kind, the default): the sync in its own process; rq: queued for fresh RQ workers."""


@dataclass(frozen=True)
class RqVariant(PulpSyncVariant):
    """The sync queued for `workers` fresh RQ workers of class `worker` ("fork" or "simple"; harness.variants.
    workers); its time is the task's, from queueing to the end. With `repositories = K` a run queues K syncs at
    once, of K repositories sharing part of their content, and its time is their makespan (harness.variants.
    fleet); with `hosts = N` the workers run on each of N hosts of scripts/hosts.sh rather than on this machine
    (harness.variants.hosts), which needs a database the hosts reach (PostgreSQL)."""

    _: KW_ONLY
    tasking: Literal["rq"]
    """rq (this kind): queued for fresh RQ workers."""
    worker: Worker | None = None
    """fork (RQ's Worker, the default) or simple (SimpleWorker)."""
    workers: StrictInt = 1
    """How many workers (on each host, with hosts)."""
    hosts: StrictInt = 0
    """0, the workers on this machine, or N hosts of scripts/hosts.sh."""
    repositories: StrictInt = 1
    """Syncs queued at once, of repositories sharing content."""

    @property
    def syncs_per_run(self) -> int:
        return self.repositories


@dataclass(frozen=True)
class CommandVariant(_Variant):
    """An external program (curl, aria2c, ...) run from the `command` template (harness.variants.programs)."""

    _: KW_ONLY
    kind: Literal["command"]
    """command (this kind): an external program."""
    command: str
    """The program's command line, with {placeholders}."""

    @property
    def engine(self) -> str:
        return self.command.split()[0] if self.command.split() else self.kind


@dataclass(frozen=True)
class PulpApiVariant(_Variant):
    """A Pulp 3 server driven through its REST API (harness.variants.pulp_api): `server` is "pulpcore" or
    "pulp-sync" (started by the harness) or the server's URL, with `api_username` and `api_password` (a
    reference)."""

    _: KW_ONLY
    kind: Literal["pulp-api"]
    """pulp-api (this kind): a Pulp server's own syncs."""
    server: str
    """pulpcore or pulp-sync (started by the harness), or a Pulp server's URL."""
    api_username: str = "admin"
    """The API user."""
    api_password: str | None = None
    """The API user's password, as env:VAR or file:PATH."""
    db: str | None = None
    """With server = "pulp-sync": its database, as a pulp-sync variant's db."""

    @property
    def engine(self) -> str:
        return self.server.split()[0] if self.server.split() else self.kind

    @property
    def database(self) -> str | None:
        return self.db


VARIANT_KINDS: dict[str, type[_Variant]] = {
    "pulp-sync": InlineVariant,
    "pulp-sync-rq": RqVariant,
    "command": CommandVariant,
    "pulp-api": PulpApiVariant,
}
"""Each kind of variant by its tag (`kind_tag`): the harness's runners are registered under the same names
(harness.run.kinds)."""


def kind_tag(variant: object) -> str:
    """The tag of a variant's kind, from a spec's table or a variant alike: its `kind` (none: "pulp-sync"), and
    for pulp-sync its `tasking` ("rq": "pulp-sync-rq"). pydantic's Discriminator calls it to pick the class."""
    def given(key: str, default: object) -> object:
        return variant.get(key, default) if isinstance(variant, Mapping) else getattr(variant, key, default)

    kind = given("kind", "pulp-sync")
    return "pulp-sync-rq" if kind == "pulp-sync" and given("tasking", "inline") == "rq" else str(kind)


Variant = Annotated[
    Annotated[InlineVariant, Tag("pulp-sync")] | Annotated[RqVariant, Tag("pulp-sync-rq")]
    | Annotated[CommandVariant, Tag("command")] | Annotated[PulpApiVariant, Tag("pulp-api")],
    Discriminator(kind_tag),
]
"""One variant of any kind, as a spec's [[variants]] table is read."""


KIND_FIELDS: dict[str, tuple[str, ...]] = {
    tag: ("name", "kind", *(item.name for item in dataclasses.fields(kind) if item.name not in ("name", "kind")))
    for tag, kind in VARIANT_KINDS.items()}
"""The fields each kind of variant takes: a field of another kind is refused naming these, not left unused."""


def field_help(kind: type) -> dict[str, str]:
    """Each field's docstring, the class's own and its bases': pydantic reads a dataclass's own body only
    (pydantic issue 13468), which would leave the fields every kind of variant shares without help."""
    docs: dict[str, str] = {}
    for klass in reversed(kind.__mro__[:-1]):  # object has no source
        body = typing.cast(ast.ClassDef, ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]).body
        for node, after in zip(body, body[1:], strict=False):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs
