"""An experiment: manifests x variants, runs per cell, and where the files come from; read from TOML.

A spec file names everything a run needs, so a results folder can say exactly what was measured:

    name = "seed-002"
    manifests = ["100", "200"]
    runs = 10
    profile = "wan"
    baseline = "futures"

    [remote]                        # Remote settings of every variant
    rate_limit = 50
    password = "env:REMOTE_PASSWORD"  # a secret only by reference: env:VAR or file:PATH

    [[variants]]
    name = "asyncio"
    downloader = "asyncio"
    download_concurrency = 10
    remote = { max_retries = 0 }    # this variant's own settings, over [remote]

Values are checked when the spec is read, so a typo fails at once and not an hour into a run. First
the schema (pydantic validating the Experiment and Variant dataclasses themselves): every key known
(a near miss is named: "did you mean runs?"), every value of its field's type, taken as written (no
text read as a number: `runs = "10"` and `manifests = "100"` are mistakes); the Remote settings by
the rules of downloaders/settings.py. Each mistake is one line naming the key, the value and what is
expected. Then `validate`, what the values may be together. `spec_schema()` is the JSON Schema of a
spec file (`pulp-sync bench spec --schema`), each key with its type and the line of help below it.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import inspect
import re
import textwrap
import tomllib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    ConfigDict,
    Discriminator,
    StrictBool,
    StrictFloat,
    StrictInt,
    Tag,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import ErrorDetails

from downloaders.errors import SettingError
from downloaders.settings import REMOTE_SETTINGS, RemoteSetting, remote_setting
from harness import defaults
from harness.errors import SpecError
from harness.experiment.operator_remote import (
    is_manifest_url,
    is_reference,
    manifest_label,
    public_url,
    refuse_credentials_in_url,
)
from harness.experiment.sample import parse_sample
from harness.variants.databases import ALIASES, database_url
from harness.variants.hosts import LOOPBACK, MAX_HOSTS, SERVICE_ADDRESS
from harness.variants.programs import PLACEHOLDERS, placeholders_of
from pulp_base.download_processes import parse_processes
from pulp_base.manifest import MANIFEST_NAME

__all__ = ["SpecError", "Variant", "PulpSyncVariant", "InlineVariant", "RqVariant", "CommandVariant", "PulpApiVariant",
           "VARIANT_KINDS", "kind_tag", "Experiment", "load_spec", "experiment_from_dict", "experiment_from_record",
           "manifest_path", "spec_schema", "PULPCORE", "PULP_SYNC_SERVER", "STARTED_SERVERS", "SWEEPABLE"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
Server = Literal["builtin", "nginx"]
SERVERS: tuple[str, ...] = typing.get_args(Server)
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
ExperimentKind = Literal["experiment", "sweep"]
EXPERIMENT_KINDS: tuple[str, ...] = typing.get_args(ExperimentKind)
POSTGRESQL_SCHEMES = ("postgres", "postgresql", "pgsql", "postgis")
"""DATABASE_URL schemes of PostgreSQL (dj-database-url's), the one server database the hosts reach."""
SWEEPABLE = tuple(setting.name for setting in REMOTE_SETTINGS if setting.kind in (int, float))
"""The Remote settings a sweep can vary: the numeric ones, whose values are ordered."""

_SCHEMA_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True)
"""How pydantic reads a spec into the dataclasses below: an unknown key is refused (it is a typo), and
each field's docstring is its help in the JSON Schema. Values are taken as written: the numbers and
true/false are pydantic's Strict types (no "10" read as 10), and a `str` field takes text only (pydantic
reads no number as text); a TOML array may fill a tuple, a table a dataclass or a Mapping."""


def _remote_table(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """A `remote` table by the rules of downloaders/settings.py (see `_check_remote`): the schema's check."""
    _check_remote(settings)
    return settings


def _remote_schema() -> dict[str, Any]:
    """The JSON Schema of a `remote` table, made from downloaders.REMOTE_SETTINGS (each setting's type and
    help), so the schema names every Remote setting without restating one."""
    kinds = {int: "integer", float: "number", bool: "boolean", str: "string", Path: "string", dict: "object"}
    reference = {"type": "string", "pattern": "^(env|file):", "description": "env:VAR or file:PATH"}
    properties: dict[str, Any] = {}
    for setting in REMOTE_SETTINGS:
        if setting.name == "download_concurrency":
            continue  # the variant's own key
        typed: dict[str, Any] = {"type": kinds[setting.kind]}
        if setting.kind is dict:
            typed["additionalProperties"] = {"type": "string"}
        choices = [reference] if setting.secret else [typed, reference]
        help_text = setting.help + (" A secret: env:VAR or file:PATH only." if setting.secret else "")
        properties[setting.name] = {"anyOf": choices, "description": help_text}
    return {"type": "object", "additionalProperties": False, "properties": properties,
            "description": "Remote settings (downloaders/settings.py); a value may be given as env:VAR or file:PATH."}


RemoteTable = Annotated[Mapping[str, Any], AfterValidator(_remote_table), WithJsonSchema(_remote_schema())]
"""A table of Remote settings, checked by the rules of downloaders/settings.py."""


@dataclass(frozen=True)
class _Variant:
    """What every kind of variant has: one way of syncing, and two variants of an experiment should differ in
    one setting only. `profile` overrides the experiment's network profile for this variant alone (it then
    gets its own fixture server); `remote` holds Remote settings (named as in downloaders.REMOTE_SETTINGS)
    over the experiment's own `remote`; see Experiment.remote_of. A spec's variant is one of the kinds below,
    told apart by `kind_tag` from what users write (`kind`, and a pulp-sync variant's `tasking`), each with
    only its own fields: a field of another kind is refused naming the kind's own."""

    __pydantic_config__ = _SCHEMA_CONFIG

    name: str
    """The variant's name in tables and reports: letters, digits, . _ -"""
    _: KW_ONLY
    download_concurrency: StrictInt = defaults.CONCURRENCY
    """Downloads in flight at once, 1 to 256 (downloaders.defaults.MAX_DOWNLOAD_CONCURRENCY; a command
    variant's {concurrency})."""
    profile: str | None = None
    """This variant's own network profile, over the experiment's."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables of the variant's processes."""
    remote: RemoteTable = field(default_factory=dict)
    """This variant's Remote settings, over the experiment's [remote]."""

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


@dataclass(frozen=True)
class Experiment:
    """The whole matrix and how to run it. `kind` is "sweep" for a sweep of the numeric Remote setting
    `sweep_setting` (harness.analysis.sweep), which recommends its smallest value within `tolerance` of the
    best throughput. `base_url` is a remote of the operator's own instead of the fixture servers: a
    base URL ending in `/` under which the manifests are found by name, or one manifest's own URL.
    `sample` ("10%", "500") syncs a size-stratified subset of each manifest drawn with `sample_seed`
    (harness.experiment.sample), the same lines in every run and variant. `alpha` is the significance level of the
    comparisons (after Holm's correction) and `band` the band of practical equivalence of their verdicts
    (harness.analysis.stats.verdict)."""

    __pydantic_config__ = _SCHEMA_CONFIG

    name: str
    """The experiment's name, in its results folder's [default: the spec file's name]."""
    variants: tuple[Variant, ...]
    """The ways of syncing compared: [[variants]] tables, at least one."""
    manifests: tuple[str, ...] = defaults.MANIFESTS
    """The manifests synced: 100..500, "many-small", or a path ending in PULP_MANIFEST."""
    description: str = ""
    """What the experiment measures, for the report."""
    scale: StrictFloat = defaults.SCALE
    """Fixture size, above 0; 1 is the seed's sizes."""
    runs: StrictInt = defaults.RUNS
    """Counted runs per manifest x variant, 1 or more."""
    warmup: StrictInt = defaults.WARMUP
    """Uncounted runs per cell, first; 0 or more."""
    profile: str = defaults.PROFILE
    """Network profile of the fixture server: loopback, lan, wan, slow, or one of [profiles]."""
    server: Server = defaults.SERVER
    """The fixture server: builtin, or nginx (loopback only: it cannot shape traffic)."""
    restart_server: StrictBool = False
    """Restart the fixture server before each run."""
    baseline: str | None = None
    """The variant every other one is compared with [default: the first]."""
    timeout: StrictFloat = defaults.RUN_TIMEOUT
    """Seconds one sync may take before it is stopped and recorded as failed."""
    alpha: StrictFloat = defaults.ALPHA
    """Significance level of the comparisons, after Holm's correction; between 0 and 1."""
    band: StrictFloat = defaults.BAND
    """Changes within this fraction (0.02: ±2%) are "no difference detected", however significant."""
    fixtures: str | None = None
    """A fixture tree to read [default: fixtures-data/scale-<scale>, generated if missing]."""
    base_url: str | None = None
    """A remote of your own instead of the fixture servers: a base URL ending in /, or a manifest's URL."""
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Custom network profiles: a built-in one (base) with values changed."""
    kind: ExperimentKind = "experiment"
    """experiment, or sweep (of sweep_setting, recommending a value)."""
    tolerance: StrictFloat = defaults.SWEEP_TOLERANCE
    """A sweep recommends its smallest value within this fraction of the best throughput."""
    remote: RemoteTable = field(default_factory=dict)
    """Remote settings of every variant; secrets as env:VAR or file:PATH."""
    sweep_setting: str = defaults.SWEEP_SETTING
    """The numeric Remote setting a sweep varies."""
    sample: str | None = None
    """Sync a size-stratified sample of each manifest: "10%" or a number of files."""
    sample_seed: StrictInt = 0
    """Seed of the sample; the same lines in every run and variant."""

    @property
    def hosts(self) -> int:
        """The most hosts of scripts/hosts.sh any variant's RQ workers run on (0: all on this machine)."""
        return max((v.hosts for v in self.variants if isinstance(v, RqVariant)), default=0)

    @property
    def baseline_variant(self) -> Variant:
        """The variant every other one is compared with: the named one, else the first."""
        return self.variant(self.baseline) if self.baseline else self.variants[0]

    def variant(self, name: str) -> Variant:
        """The variant called `name`."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        names = [variant.name for variant in self.variants]
        raise SpecError(f"no variant named {name!r}{_near_miss(name, names)}; the spec has: {', '.join(names)}")

    def remote_of(self, variant: Variant) -> dict[str, Any]:
        """The Remote settings `variant` syncs with: the experiment's `remote`, then the variant's own
        over it, and its download_concurrency; secrets still as references (harness.experiment.operator_remote
        resolves them)."""
        return {**self.remote, **variant.remote, "download_concurrency": variant.download_concurrency}

    def profile_of(self, variant: Variant) -> str:
        """The network profile `variant` syncs through."""
        return variant.profile or self.profile

    def with_overrides(self, **changes: Any) -> Experiment:
        """A copy with the given fields changed (None means: keep the spec's value), checked again."""
        kept = {key: value for key, value in changes.items() if value is not None}
        return validate(dataclasses.replace(self, **kept))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, and read back by `experiment_from_dict` (results.json keeps it for --resume)."""
        data = dataclasses.asdict(self)
        data["variants"] = [_variant_as_dict(variant) for variant in self.variants]
        data["remote"] = _plain(self.remote)
        data["manifests"] = list(self.manifests)
        data["profiles"] = {name: dict(values) for name, values in self.profiles.items()}
        return data


def _variant_as_dict(variant: Variant) -> dict[str, Any]:
    """A variant's fields as JSON and TOML values (lists, tables), its kind's only."""
    data = dataclasses.asdict(variant)
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()} | {
        "env": dict(variant.env), "remote": _plain(variant.remote)}


def load_spec(path: Path) -> Experiment:
    """Read and check a TOML spec; the experiment is named after the file unless it says otherwise."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError as error:
        raise SpecError(f"no spec file at {path}; see experiments/ for examples") from error
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"{path} is not valid TOML: {error}") from error
    data.setdefault("name", path.stem)
    return experiment_from_dict(data)


def experiment_from_dict(data: Mapping[str, Any]) -> Experiment:
    """Build and check an Experiment from plain values (a TOML spec's, results.json's): the schema, then
    `validate`. The first mistake is a SpecError of one line, naming the key, its value and what is expected."""
    if not data.get("variants"):
        raise SpecError("the spec has no [[variants]]; add at least one (name, downloader)")
    base_url = data.get("base_url")
    if "manifests" not in data and isinstance(base_url, str) and is_manifest_url(base_url):
        data = {**data, "manifests": [manifest_label(base_url)]}  # the URL names what is synced, as --remote's does
    try:
        experiment = _schema().validate_python(dict(data))
    except ValidationError as error:
        raise SpecError(_mistake(_first_mistake(error.errors()), data)) from None
    return validate(experiment)


def _first_mistake(errors: list[ErrorDetails]) -> ErrorDetails:
    """The error to report: an unknown key before a missing one, since a misspelt key is why the other is missing
    (`downlaoder`: "did you mean downloader?", rather than "downloader is missing")."""
    return min(errors, key=lambda error: error["type"] not in ("unexpected_keyword_argument", "extra_forbidden"))


def experiment_from_record(data: Mapping[str, Any]) -> Experiment:
    """An Experiment as a results folder's results.json records it. Folders written before each kind of variant
    took only its own fields recorded every field for every variant: another kind's field left at its default
    (_UNUSED_DEFAULTS) is dropped here. A spec gets no such leniency: a field given there is a field meant."""
    variants = [_own_fields(variant) for variant in data.get("variants") or ()]
    return experiment_from_dict({**data, "variants": variants})


_UNUSED_DEFAULTS: Mapping[str, object] = {
    "downloader": "", "processes": 1, "db": None, "tasking": "inline", "worker": None, "workers": 1, "hosts": 0,
    "repositories": 1, "sync_args": [], "command": None, "server": None, "api_username": "admin",
    "api_password": None}
"""What results.json recorded for the fields a variant's kind did not use, when one class held every kind's."""


def _own_fields(variant: Any) -> Any:
    """A recorded variant without the fields of other kinds that it recorded at their defaults."""
    own = KIND_FIELDS.get(kind_tag(variant)) if isinstance(variant, Mapping) else None
    if own is None:
        return variant
    return {key: value for key, value in variant.items()
            if key in own or key not in _UNUSED_DEFAULTS or value != _UNUSED_DEFAULTS[key]}


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file: every key with its type, default and help (`pulp-sync bench spec
    --schema`); `name` may be left out (the file's name is the default)."""
    schema = _schema().json_schema()
    schema["required"] = [key for key in schema.get("required", []) if key != "name"]
    for kind in VARIANT_KINDS.values():
        help_text = _field_help(kind)
        for name, entry in schema["$defs"][kind.__name__]["properties"].items():
            entry.setdefault("description", help_text[name])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema,
            "title": "pulp-sync experiment spec (TOML)"}


def _field_help(kind: type) -> dict[str, str]:
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


@functools.cache
def _schema() -> TypeAdapter[Experiment]:
    """pydantic's validator and JSON Schema of an Experiment, made on the first use."""
    return TypeAdapter(Experiment)


def validate(experiment: Experiment) -> Experiment:
    """Check every value that does not need the installed packages; return the experiment."""
    _check(_NAME.match(experiment.name) is not None, f"experiment name {experiment.name!r}: use letters, digits, . _ -")
    _check(experiment.runs >= 1, f"runs = {experiment.runs}: at least 1 counted run per cell")
    _check(experiment.warmup >= 0, f"warmup = {experiment.warmup}: 0 or more")
    _check(experiment.scale > 0, f"scale = {experiment.scale}: must be above 0 (1 is the seed's sizes)")
    _check(experiment.timeout > 0, f"timeout = {experiment.timeout}: seconds, above 0")
    _check(0 < experiment.alpha < 1, f"alpha = {experiment.alpha}: a probability, e.g. 0.05")
    _check(0 <= experiment.band < 1, f"band = {experiment.band}: the band of practical equivalence as a fraction, "
                                     "e.g. 0.02 for ±2%")
    _check(0 <= experiment.tolerance < 1, f"tolerance = {experiment.tolerance}: a fraction, e.g. 0.05")
    _check(bool(experiment.manifests), "manifests is empty; name at least one, e.g. [\"100\"]")
    _check(experiment.server in SERVERS,
           f"server {experiment.server!r} is not {_one_of(experiment.server, SERVERS)}")
    _check(experiment.kind in EXPERIMENT_KINDS,
           f"kind {experiment.kind!r} is not {_one_of(experiment.kind, EXPERIMENT_KINDS)}")
    _check_remote_of(experiment.remote, "[remote]")
    _check_sweep(experiment)
    _check_source(experiment)
    _check(experiment.base_url is None or not experiment.hosts,
           f"base_url with hosts: the hosts reach only {SERVICE_ADDRESS}, where the harness's fixture servers "
           "listen; drop base_url or hosts")
    for manifest in experiment.manifests:
        _check(_NAME.match(manifest.replace("/", "_")) is not None, f"manifest {manifest!r}: not a manifest name")
    names = [variant.name for variant in experiment.variants]
    _check(len(set(names)) == len(names), f"variant names must be unique: {names}")
    for variant in experiment.variants:
        _check_variant(variant)
    if experiment.baseline is not None:
        experiment.variant(experiment.baseline)
    return experiment


def manifest_path(manifest: str) -> str:
    """Where a manifest lives in the fixture tree: "100" is PULP_MANIFEST_100; "many-small" is
    many-small/PULP_MANIFEST; a path ending in PULP_MANIFEST is taken as it is."""
    if manifest.isdigit():
        return f"{MANIFEST_NAME}_{manifest}"
    return manifest if manifest.endswith(MANIFEST_NAME) else f"{manifest}/{MANIFEST_NAME}"


def _check_variant(variant: Variant) -> None:
    """What each kind's values may be (the schema has checked that it has only its kind's fields)."""
    label = f"variant {variant.name!r}"
    _check(_NAME.match(variant.name) is not None, f"{label}: use letters, digits, . _ - in its name")
    _check_setting(remote_setting("download_concurrency"), variant.download_concurrency, label)
    _check_remote_of(variant.remote, f"{label}: remote")
    if isinstance(variant, PulpSyncVariant):
        _check_pulp_sync(variant, label)
    elif isinstance(variant, CommandVariant):
        _check_command(variant, label)
    else:
        _check_pulp_api(variant, label)
    _check_db(variant.database, label)
    if isinstance(variant, RqVariant):
        _check_rq(variant, label)


def _check_pulp_sync(variant: PulpSyncVariant, label: str) -> None:
    """A downloader named, and `processes` by the rule the command line and the API use."""
    _check(bool(variant.downloader), f"{label}: name a downloader (`pulp-sync downloaders` lists them)")
    try:
        parse_processes(variant.processes, "processes")
    except ValueError as error:
        raise SpecError(f"{label}: {error}") from None


def _check_db(db: str | None, label: str) -> None:
    _check(db is None or db in ALIASES or "://" in db,
           f"{label}: db {db!r} is neither one of {', '.join(ALIASES)} nor a DATABASE_URL"
           f"{_near_miss(db, list(ALIASES))}")


def _check_rq(variant: RqVariant, label: str) -> None:
    _check(variant.workers >= 1, f"{label}: workers must be 1 or more")
    _check(variant.repositories >= 1,
           f"{label}: repositories = {variant.repositories!r}: how many a run syncs at once, 1 or more")
    _check_hosts(variant, label)


def _check_hosts(variant: RqVariant, label: str) -> None:
    """0 hosts (workers on this machine) or 1 to MAX_HOSTS, with a database every host reaches: PostgreSQL
    on this machine (reached on the bridge) or at SERVICE_ADDRESS itself."""
    hosts = variant.hosts
    _check(0 <= hosts <= MAX_HOSTS,
           f"{label}: hosts = {hosts!r}: 0 (workers on this machine) or 1 to {MAX_HOSTS} hosts of scripts/hosts.sh")
    if hosts == 0:
        return
    url = urlsplit(database_url(variant.db) or "sqlite:")
    engine = url.scheme.split("+")[0]
    _check(engine != "sqlite", f"{label}: hosts = {hosts} needs a database every host reaches: "
                               "db = \"postgresql\" (sqlite is a file of this machine's)")
    _check(not engine.startswith("mysql"), f"{label}: hosts = {hosts}: MariaDB listens on 127.0.0.1 only (scripts/"
                                           "hosts.sh leaves it there), which no host reaches; use db = \"postgresql\"")
    _check(engine in POSTGRESQL_SCHEMES, f"{label}: hosts = {hosts}: db {engine!r}: the hosts need PostgreSQL, "
                                         "db = \"postgresql\" or a postgres:// URL")
    _check(url.hostname in (*LOOPBACK, SERVICE_ADDRESS),
           f"{label}: hosts = {hosts}: the hosts reach the database at {SERVICE_ADDRESS} only; give a PostgreSQL "
           f"URL on 127.0.0.1 (rewritten to {SERVICE_ADDRESS}) or on {SERVICE_ADDRESS}, not {url.hostname}")


def _check_pulp_api(variant: PulpApiVariant, label: str) -> None:
    """A Pulp server to drive: "pulpcore" (ours to start) or an http(s) URL with a password by reference."""
    server = variant.server
    _check(server in STARTED_SERVERS or server.startswith(("http://", "https://")),
           f"{label}: server {server!r}: one of {', '.join(STARTED_SERVERS)} (started by the harness) or a Pulp "
           "server's URL")
    if server not in STARTED_SERVERS:
        _check(is_reference(variant.api_password),
               f"{label}: api_password for {server}: give it as \"env:VAR\" or \"file:PATH\", never in clear")
    _check(variant.db is None or server == PULP_SYNC_SERVER,
           f"{label}: db is the server's own business, except for server = \"{PULP_SYNC_SERVER}\"")


def _check_command(variant: CommandVariant, label: str) -> None:
    _check(bool(variant.command.strip()), f"{label}: kind = \"command\" needs a command template")
    try:
        unknown = placeholders_of(variant.command) - set(PLACEHOLDERS)
    except ValueError as error:
        raise SpecError(f"{label}: command template: {error} (write {{{{ and }}}} for literal braces)") from error
    _check(not unknown, f"{label}: unknown placeholders {sorted(unknown)}; known: {', '.join(PLACEHOLDERS)}")


def _check_source(experiment: Experiment) -> None:
    """The remote URL and the sample size can be used as given."""
    if experiment.sample is not None:
        parse_sample(experiment.sample)
        _check(not any(isinstance(v, PulpApiVariant) for v in experiment.variants),
               "sample: a pulp-api variant's server syncs the remote's whole manifest; drop sample or that variant")
    if experiment.base_url is None:
        return
    _check(experiment.base_url.startswith(("http://", "https://")),
           f"remote {public_url(experiment.base_url)!r}: an http:// or https:// URL")
    refuse_credentials_in_url(experiment.base_url)
    _check(not is_manifest_url(experiment.base_url) or len(experiment.manifests) == 1,
           f"the remote {public_url(experiment.base_url)} is one manifest's URL, but {len(experiment.manifests)} "
           "manifests are named; give a base URL ending in / to sync several by name")


def _check_sweep(experiment: Experiment) -> None:
    """The swept setting is numeric, and in a sweep every variant has a number for it: values are ordered."""
    setting = experiment.sweep_setting
    _check(setting in SWEEPABLE,
           f"sweep_setting = {setting!r}: a numeric Remote setting, one of {', '.join(SWEEPABLE)}")
    if experiment.kind != "sweep":
        return
    for variant in experiment.variants:
        value = experiment.remote_of(variant).get(setting)
        _check(isinstance(value, (int, float)) and not isinstance(value, bool),
               f"variant {variant.name!r}: a sweep of {setting} needs a number for it, not {value!r}")


def _check_remote(settings: Mapping[str, Any]) -> None:
    """Every key a Remote setting, every value of its type (as written: no text for a number) or a
    reference, and passing its setting's rule (downloaders/settings.py, which the command line and the
    API apply too); secrets only by reference, so that no secret is written into a spec or a results
    folder. SpecError naming the setting."""
    _check(isinstance(settings, Mapping), "a table of Remote settings, e.g. { rate_limit = 20 }")
    for name, value in settings.items():
        try:
            setting = remote_setting(name)
        except ValueError as error:
            raise SpecError(str(error)) from None
        _check(name != "download_concurrency", "set download_concurrency on the variant itself")
        _check_remote_value(setting, value)


def _check_remote_value(setting: RemoteSetting, value: Any) -> None:
    if setting.secret:
        _check(is_reference(value), f"{setting.name} is a secret: give it as \"env:VAR\" or \"file:PATH\", "
                                    "never in clear")
        return
    if is_reference(value):
        return
    _check(not isinstance(value, str) or setting.kind in (str, Path),
           f"{setting.name} = {_shown(value)}: {_expected(setting.kind)}, or a reference (env:VAR, file:PATH)")
    try:
        setting.coerce(value)
    except ValueError as error:
        raise SpecError(str(error)) from None


def _check_setting(setting: RemoteSetting, value: Any, label: str) -> None:
    """`value` by `setting`'s rule (downloaders/settings.py), its message after `label`."""
    try:
        setting.check(value)
    except SettingError as error:
        raise SpecError(f"{label}: {error}") from None


def _check_remote_of(settings: Mapping[str, Any], label: str) -> None:
    """`_check_remote`, its message after `label`: for experiments made in Python (overrides, sweeps)."""
    try:
        _check_remote(settings)
    except SpecError as error:
        raise SpecError(f"{label}: {error}") from None


def _plain(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Remote settings as JSON and TOML values (paths as strings, headers as a dict)."""
    return {name: dict(value) if isinstance(value, Mapping) else str(value) if isinstance(value, Path) else value
            for name, value in settings.items()}


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise SpecError(message)


def _one_of(value: object, choices: Sequence[str]) -> str:
    """ "one of a, b", and the nearest choice when `value` looks like a typo of it."""
    return f"one of {', '.join(choices)}{_near_miss(value, choices)}"


def _near_miss(word: object, choices: Sequence[str]) -> str:
    """ "; did you mean X?" when `word` is close to one of `choices` (difflib's ratio of 0.6 or more)."""
    near = difflib.get_close_matches(word, choices, n=1) if isinstance(word, str) else []
    return f"; did you mean {near[0]}?" if near else ""


# The schema's errors as one line each: where the mistake is (the variant, the dotted key within it), the
# value given, and what the field expects, in words made from its type.

_WORDS: dict[Any, str] = {bool: "true or false", int: "a whole number", float: "a number", str: "a string",
                          Path: "a path"}


def _mistake(error: ErrorDetails, data: Mapping[str, Any]) -> str:
    """One pydantic error of `data` as one line: `variant 'a': env.X = 1: a string`."""
    label, keys, expected, known = _where(error["loc"], data)
    key, value = ".".join(keys), _shown(error["input"])
    if error["type"] == "union_tag_invalid":  # a variant's kind that is none of the kinds
        return _unknown_kind(error["loc"], data)
    if error["type"] in ("unexpected_keyword_argument", "extra_forbidden"):
        if label and len(keys) == 1 and keys[0] in _EVERY_FIELD:
            return _foreign_fields(label, error["loc"], data)
        hint = _near_miss(keys[-1], known) or f"; the keys are: {', '.join(known)}"
        return f"{label}{key} = {value}: unknown keys are refused (a typo?){hint}"
    if error["type"] == "missing":
        return f"{label}{key} is missing: {(_MISSING.get(key) if label else None) or _expected(expected)}"
    if error["type"] == "value_error":  # a Remote setting's rule (RemoteTable): its own message names it
        where = key if label else f"[{key}]"  # a table of the experiment itself is headed [key] in TOML
        return f"{label}{where}: {error.get('ctx', {}).get('error')}"
    choices = TASKING if label and keys == ["tasking"] else _choices(expected)
    if choices:
        return f"{label}{key} {value} is not {_one_of(error['input'], choices)}"
    return f"{label}{key} = {value}: {_expected(expected)}"


_EVERY_FIELD = frozenset(name for fields in KIND_FIELDS.values() for name in fields)
_KIND_NAMES = {"pulp-sync": "a pulp-sync variant", "pulp-sync-rq": 'a pulp-sync variant with tasking = "rq"',
               "command": "a command variant", "pulp-api": "a pulp-api variant"}
_KIND_KEYS = {"pulp-sync": 'kind = "pulp-sync"', "pulp-sync-rq": 'tasking = "rq"', "command": 'kind = "command"',
              "pulp-api": 'kind = "pulp-api"'}
"""Each kind of variant named in a message: as the subject, and by the key that makes a variant of it."""
_MISSING = {"downloader": "name one (`pulp-sync downloaders` lists them), or give kind = \"command\" (with a "
                          "command) or kind = \"pulp-api\" (with a server)",
            "command": "the program's command line, e.g. \"curl --config {curl_config}\"",
            "server": f"one of {', '.join(STARTED_SERVERS)} (started by the harness) or a Pulp server's URL"}
"""What a variant's missing key should hold, said better than its type."""


def _foreign_fields(label: str, loc: tuple[int | str, ...], data: Mapping[str, Any]) -> str:
    """Fields of other kinds given to a variant: what its kind takes, and which kind takes them."""
    tag = str(loc[2])
    raw = data["variants"][int(loc[1])]
    own = KIND_FIELDS[tag]
    foreign = [key for key in raw if key not in own]
    owners = [other for other, taken in KIND_FIELDS.items() if other != tag and set(foreign) <= set(taken)]
    whose = f" ({_KIND_KEYS[owners[0]]} takes {'it' if len(foreign) == 1 else 'them'})" if owners else ""
    return f"{label}{_KIND_NAMES[tag]} takes {', '.join(own)}; not {', '.join(foreign)}{whose}"


def _unknown_kind(loc: tuple[int | str, ...], data: Mapping[str, Any]) -> str:
    raw = data["variants"][int(loc[1])]
    return f"{_variant_label(data, loc[1])}kind {_shown(raw.get('kind'))} is not {_one_of(raw.get('kind'), KINDS)}"


def _where(loc: tuple[int | str, ...], data: Mapping[str, Any]) -> tuple[str, list[str], Any, list[str]]:
    """The variant (`variant 'a': `, or "" for the experiment), the keys from there to the error, the type
    expected there, and the keys of the table holding the last one."""
    hint: Any = Experiment
    label, keys, known = "", list[str](), list[str]()
    for step in loc:
        if hint is Variant:  # the step is the variant's kind's tag (kind_tag)
            hint = VARIANT_KINDS.get(str(step))
            continue
        hint = _bare(hint)
        origin = typing.get_origin(hint)
        if dataclasses.is_dataclass(hint):
            known = [f.name for f in dataclasses.fields(hint)]
            hint = _hints(typing.cast(type, hint)).get(str(step))
            keys.append(str(step))
        elif origin is tuple and typing.get_args(hint)[0] == Variant:
            label, keys, hint = _variant_label(data, step), [], Variant
        elif origin is tuple:
            keys[-1] += f"[{step}]"
            hint = typing.get_args(hint)[0]
        elif isinstance(origin, type) and issubclass(origin, Mapping):
            keys.append(str(step))
            hint = typing.get_args(hint)[1]
        else:  # a union's member, named after the key: the whole union is what is expected
            break
    if label and not keys:  # the variant itself is wrong: say where it is
        label, keys = "", [f"variants[{loc[1]}]"]
    return label, keys, hint, known


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    return typing.get_type_hints(kind, include_extras=True)


def _variant_label(data: Mapping[str, Any], index: int | str) -> str:
    """`variant 'a': ` by its name, or `variant 2: ` by its place when it has none."""
    variants = data.get("variants")
    raw = variants[index] if isinstance(variants, list) and isinstance(index, int) else None
    name = raw.get("name") if isinstance(raw, Mapping) else None
    return f"variant {name!r}: " if isinstance(name, str) else f"variant {int(index) + 1}: "


def _choices(hint: Any) -> tuple[str, ...]:
    """The values a Literal field (or an optional one) may take; () for any other type."""
    hint = _bare(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(choice for argument in typing.get_args(hint) for choice in _choices(argument))
    return typing.get_args(hint) if typing.get_origin(hint) is Literal else ()


def _bare(hint: Any) -> Any:
    """`hint` without its Annotated metadata (pydantic's Strict, RemoteTable's validator)."""
    while typing.get_origin(hint) is Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def _expected(hint: Any) -> str:
    """What a field of type `hint` takes, in words: "a whole number", "a list of strings", "one of a, b"."""
    hint = _bare(hint)
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return f"one of {', '.join(map(str, arguments))}"
    if origin in (typing.Union, types.UnionType):  # None is no TOML value: not offered; each kind of variant a table
        return " or ".join(dict.fromkeys(_expected(argument) for argument in arguments if argument is not type(None)))
    if origin is tuple:
        return f"a list of {_expected(arguments[0]).removeprefix('a ')}s"
    if dataclasses.is_dataclass(hint) or isinstance(origin or hint, type) and issubclass(origin or hint, Mapping):
        return "a table"
    return _WORDS.get(hint, "a value")


def _shown(value: Any) -> str:
    """A value as the message quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
