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
the schema (pydantic validating the Experiment dataclass and the variant classes of
harness.experiment.variant themselves): every key known (a near miss is named: "did you mean runs?"),
every value of its field's type, taken as written (no text read as a number: `runs = "10"` and
`manifests = "100"` are mistakes); the Remote settings by the rules of downloaders/settings.py
(harness.experiment.remote_table). Each mistake is one line naming the key, the value and what is
expected (harness.experiment.mistakes). Then `validate`, what the values may be together.
`spec_schema()` is the JSON Schema of a spec file (`pulp-sync bench spec --schema`), each key with its
type and the line of help below it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import StrictBool, StrictFloat, StrictInt, TypeAdapter, ValidationError

from downloaders.errors import SettingError
from downloaders.settings import REMOTE_SETTINGS, RemoteSetting, remote_setting
from harness import defaults
from harness.errors import SpecError
from harness.experiment.mistakes import first_mistake, mistake
from harness.experiment.operator_remote import (
    is_manifest_url,
    is_reference,
    manifest_label,
    public_url,
    refuse_credentials_in_url,
)
from harness.experiment.remote_table import RemoteTable, check_remote_of, plain
from harness.experiment.sample import parse_sample
from harness.experiment.variant import (
    KIND_FIELDS,
    PULP_SYNC_SERVER,
    SCHEMA_CONFIG,
    STARTED_SERVERS,
    VARIANT_KINDS,
    CommandVariant,
    PulpApiVariant,
    PulpSyncVariant,
    RqVariant,
    Variant,
    field_help,
    kind_tag,
)
from harness.experiment.words import check, near_miss, one_of
from harness.variants.databases import ALIASES, database_url
from harness.variants.hosts import LOOPBACK, MAX_HOSTS, SERVICE_ADDRESS
from harness.variants.programs import PLACEHOLDERS, placeholders_of
from pulp_base.download_processes import parse_processes
from pulp_base.manifest import MANIFEST_NAME

__all__ = ["SpecError", "Experiment", "load_spec", "experiment_from_dict", "experiment_from_record", "validate",
           "manifest_path", "spec_schema", "SWEEPABLE", "VARIANT_SWEEPABLE", "sweep_value"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
Server = Literal["builtin", "nginx"]
SERVERS: tuple[str, ...] = typing.get_args(Server)
ExperimentKind = Literal["experiment", "sweep"]
EXPERIMENT_KINDS: tuple[str, ...] = typing.get_args(ExperimentKind)
POSTGRESQL_SCHEMES = ("postgres", "postgresql", "pgsql", "postgis")
"""DATABASE_URL schemes of PostgreSQL (dj-database-url's), the one server database the hosts reach."""
VARIANT_SWEEPABLE = ("processes",)
"""The fields of a pulp-sync variant a sweep can vary besides its Remote settings (which remote_of holds)."""
SWEEPABLE = (*(setting.name for setting in REMOTE_SETTINGS if setting.kind in (int, float)), *VARIANT_SWEEPABLE)
"""What a sweep can vary: the numeric Remote settings and VARIANT_SWEEPABLE, whose values are ordered."""


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

    __pydantic_config__ = SCHEMA_CONFIG

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
    """Network profile of the fixture server: loopback, lan, wan, slow, shared, or one of [profiles]."""
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
    """Custom network profiles: a built-in one (base) with values changed, max_connections to limit requests."""
    kind: ExperimentKind = "experiment"
    """experiment, or sweep (of sweep_setting, recommending a value)."""
    tolerance: StrictFloat = defaults.SWEEP_TOLERANCE
    """A sweep recommends its smallest value within this fraction of the best throughput."""
    remote: RemoteTable = field(default_factory=dict)
    """Remote settings of every variant; secrets as env:VAR or file:PATH."""
    sweep_setting: str = defaults.SWEEP_SETTING
    """The numeric Remote setting (or a variant's processes) a sweep varies."""
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
        raise SpecError(f"no variant named {name!r}{near_miss(name, names)}; the spec has: {', '.join(names)}")

    def remote_of(self, variant: Variant) -> dict[str, Any]:
        """The Remote settings `variant` syncs with: the experiment's `remote`, then the variant's own
        over it, and its download_concurrency; secrets still as references (harness.experiment.operator_remote
        resolves them)."""
        return {**self.remote, **variant.remote, "download_concurrency": variant.download_concurrency}

    def profile_of(self, variant: Variant) -> str:
        """The network profile `variant` syncs through."""
        return variant.profile or self.profile

    def connection_limit_of(self, variant: Variant) -> int | None:
        """The connections the fixture server of `variant`'s profile allows at once ([profiles.NAME]'s
        `max_connections`), or None: no limit."""
        limit = self.profiles.get(self.profile_of(variant), {}).get("max_connections")
        return None if limit is None else int(limit)

    def manifests_of(self, variant: Variant) -> tuple[str, ...]:
        """The manifests `variant` runs: its own `manifests`, else all of the experiment's."""
        return self.manifests if variant.manifests is None else variant.manifests

    def variants_of(self, manifest: str) -> tuple[Variant, ...]:
        """The variants that run `manifest`, in the spec's order: a round of it is these, and its cells."""
        return tuple(variant for variant in self.variants if manifest in self.manifests_of(variant))

    @property
    def cells(self) -> tuple[tuple[str, Variant], ...]:
        """Every manifest x variant the experiment runs, manifest by manifest: the cells a variant's own
        `manifests` leaves out are neither run, priced, analysed nor shown."""
        return tuple((manifest, variant) for manifest in self.manifests for variant in self.variants_of(manifest))

    def group_of(self, variant: Variant) -> str:
        """The curve a sweep draws `variant` on, and compares its auto variant within: its engine, and where
        the variants' profiles differ (auto proven on several links) its profile too, "asyncio (wan)": values
        on one link are no points of a curve on another."""
        profiles = {self.profile_of(other) for other in self.variants}
        return variant.engine if len(profiles) == 1 else f"{variant.engine} ({self.profile_of(variant)})"

    def with_overrides(self, **changes: Any) -> Experiment:
        """A copy with the given fields changed (None means: keep the spec's value), checked again."""
        kept = {key: value for key, value in changes.items() if value is not None}
        return validate(dataclasses.replace(self, **kept))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, and read back by `experiment_from_dict` (results.json keeps it for --resume)."""
        data = dataclasses.asdict(self)
        data["variants"] = [_variant_as_dict(variant) for variant in self.variants]
        data["remote"] = plain(self.remote)
        data["manifests"] = list(self.manifests)
        data["profiles"] = {name: dict(values) for name, values in self.profiles.items()}
        return data


def _variant_as_dict(variant: Variant) -> dict[str, Any]:
    """A variant's fields as JSON and TOML values (lists, tables), its kind's only."""
    data = dataclasses.asdict(variant)
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()} | {
        "env": dict(variant.env), "remote": plain(variant.remote)}


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
        raise SpecError(mistake(first_mistake(error.errors()), data, Experiment)) from None
    return validate(experiment)


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
        help_text = field_help(kind)
        for name, entry in schema["$defs"][kind.__name__]["properties"].items():
            entry.setdefault("description", help_text[name])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema,
            "title": "pulp-sync experiment spec (TOML)"}


@functools.cache
def _schema() -> TypeAdapter[Experiment]:
    """pydantic's validator and JSON Schema of an Experiment, made on the first use."""
    return TypeAdapter(Experiment)


def validate(experiment: Experiment) -> Experiment:
    """Check every value that does not need the installed packages; return the experiment."""
    check(_NAME.match(experiment.name) is not None, f"experiment name {experiment.name!r}: use letters, digits, . _ -")
    check(experiment.runs >= 1, f"runs = {experiment.runs}: at least 1 counted run per cell")
    check(experiment.warmup >= 0, f"warmup = {experiment.warmup}: 0 or more")
    check(experiment.scale > 0, f"scale = {experiment.scale}: must be above 0 (1 is the seed's sizes)")
    check(experiment.timeout > 0, f"timeout = {experiment.timeout}: seconds, above 0")
    check(0 < experiment.alpha < 1, f"alpha = {experiment.alpha}: a probability, e.g. 0.05")
    check(0 <= experiment.band < 1, f"band = {experiment.band}: the band of practical equivalence as a fraction, "
                                     "e.g. 0.02 for ±2%")
    check(0 <= experiment.tolerance < 1, f"tolerance = {experiment.tolerance}: a fraction, e.g. 0.05")
    check(bool(experiment.manifests), "manifests is empty; name at least one, e.g. [\"100\"]")
    check(experiment.server in SERVERS,
           f"server {experiment.server!r} is not {one_of(experiment.server, SERVERS)}")
    check(experiment.kind in EXPERIMENT_KINDS,
           f"kind {experiment.kind!r} is not {one_of(experiment.kind, EXPERIMENT_KINDS)}")
    check_remote_of(experiment.remote, "[remote]")
    _check_sweep(experiment)
    _check_source(experiment)
    check(experiment.base_url is None or not experiment.hosts,
           f"base_url with hosts: the hosts reach only {SERVICE_ADDRESS}, where the harness's fixture servers "
           "listen; drop base_url or hosts")
    for manifest in experiment.manifests:
        check(_NAME.match(manifest.replace("/", "_")) is not None, f"manifest {manifest!r}: not a manifest name")
    names = [variant.name for variant in experiment.variants]
    check(len(set(names)) == len(names), f"variant names must be unique: {names}")
    for variant in experiment.variants:
        _check_variant(variant)
        _check_manifests_of(variant, experiment.manifests)
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
    check(_NAME.match(variant.name) is not None, f"{label}: use letters, digits, . _ - in its name")
    if not variant.auto_concurrency:
        _check_setting(remote_setting("download_concurrency"), variant.download_concurrency, label)
    check_remote_of(variant.remote, f"{label}: remote")
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
    check(bool(variant.downloader), f"{label}: name a downloader (`pulp-sync downloaders` lists them)")
    try:
        parse_processes(variant.processes, "processes")
    except ValueError as error:
        raise SpecError(f"{label}: {error}") from None


def _check_manifests_of(variant: Variant, manifests: tuple[str, ...]) -> None:
    """A variant's own `manifests` are some of the experiment's: a cell no round holds is no cell at all."""
    if variant.manifests is None:
        return
    label, listed = f"variant {variant.name!r}", ", ".join(manifests)
    check(bool(variant.manifests), f"{label}: manifests is empty; name some of the experiment's ({listed}), or leave "
                                    "it out to run them all")
    for manifest in variant.manifests:
        check(manifest in manifests, f"{label}: manifests: {manifest!r} is not one of the experiment's ({listed})"
                                     f"{near_miss(manifest, list(manifests))}")


def _check_fixed(variant: Variant, label: str, why: str) -> None:
    """A variant whose concurrency cannot be found while it syncs refuses `download_concurrency = "auto"`."""
    check(not variant.auto_concurrency, f"{label}: download_concurrency = \"auto\": {why}; give it a number")


def _check_db(db: str | None, label: str) -> None:
    check(db is None or db in ALIASES or "://" in db,
           f"{label}: db {db!r} is neither one of {', '.join(ALIASES)} nor a DATABASE_URL"
           f"{near_miss(db, list(ALIASES))}")


def _check_rq(variant: RqVariant, label: str) -> None:
    check(variant.workers >= 1, f"{label}: workers must be 1 or more")
    check(variant.repositories >= 1,
           f"{label}: repositories = {variant.repositories!r}: how many a run syncs at once, 1 or more")
    _check_hosts(variant, label)


def _check_hosts(variant: RqVariant, label: str) -> None:
    """0 hosts (workers on this machine) or 1 to MAX_HOSTS, with a database every host reaches: PostgreSQL
    on this machine (reached on the bridge) or at SERVICE_ADDRESS itself."""
    hosts = variant.hosts
    check(0 <= hosts <= MAX_HOSTS,
           f"{label}: hosts = {hosts!r}: 0 (workers on this machine) or 1 to {MAX_HOSTS} hosts of scripts/hosts.sh")
    if hosts == 0:
        return
    url = urlsplit(database_url(variant.db) or "sqlite:")
    engine = url.scheme.split("+")[0]
    check(engine != "sqlite", f"{label}: hosts = {hosts} needs a database every host reaches: "
                               "db = \"postgresql\" (sqlite is a file of this machine's)")
    check(not engine.startswith("mysql"), f"{label}: hosts = {hosts}: MariaDB listens on 127.0.0.1 only (scripts/"
                                           "hosts.sh leaves it there), which no host reaches; use db = \"postgresql\"")
    check(engine in POSTGRESQL_SCHEMES, f"{label}: hosts = {hosts}: db {engine!r}: the hosts need PostgreSQL, "
                                         "db = \"postgresql\" or a postgres:// URL")
    check(url.hostname in (*LOOPBACK, SERVICE_ADDRESS),
           f"{label}: hosts = {hosts}: the hosts reach the database at {SERVICE_ADDRESS} only; give a PostgreSQL "
           f"URL on 127.0.0.1 (rewritten to {SERVICE_ADDRESS}) or on {SERVICE_ADDRESS}, not {url.hostname}")


def _check_pulp_api(variant: PulpApiVariant, label: str) -> None:
    """A Pulp server to drive: "pulpcore" (ours to start) or an http(s) URL with a password by reference."""
    server = variant.server
    check(server in STARTED_SERVERS or server.startswith(("http://", "https://")),
           f"{label}: server {server!r}: one of {', '.join(STARTED_SERVERS)} (started by the harness) or a Pulp "
           "server's URL")
    if server not in STARTED_SERVERS:
        check(is_reference(variant.api_password),
               f"{label}: api_password for {server}: give it as \"env:VAR\" or \"file:PATH\", never in clear")
    check(variant.db is None or server == PULP_SYNC_SERVER,
           f"{label}: db is the server's own business, except for server = \"{PULP_SYNC_SERVER}\"")
    _check_fixed(variant, label, "a Pulp server's sync takes the number its remote is given (Pulp's "
                                 "download_concurrency is an integer) and cannot adapt it")


def _check_command(variant: CommandVariant, label: str) -> None:
    check(bool(variant.command.strip()), f"{label}: kind = \"command\" needs a command template")
    _check_fixed(variant, label, "a program's {concurrency} is one number, which it cannot adapt while it runs")
    try:
        unknown = placeholders_of(variant.command) - set(PLACEHOLDERS)
    except ValueError as error:
        raise SpecError(f"{label}: command template: {error} (write {{{{ and }}}} for literal braces)") from error
    check(not unknown, f"{label}: unknown placeholders {sorted(unknown)}; known: {', '.join(PLACEHOLDERS)}")


def _check_source(experiment: Experiment) -> None:
    """The remote URL and the sample size can be used as given."""
    if experiment.sample is not None:
        parse_sample(experiment.sample)
        check(not any(isinstance(v, PulpApiVariant) for v in experiment.variants),
               "sample: a pulp-api variant's server syncs the remote's whole manifest; drop sample or that variant")
    if experiment.base_url is None:
        return
    check(experiment.base_url.startswith(("http://", "https://")),
           f"remote {public_url(experiment.base_url)!r}: an http:// or https:// URL")
    refuse_credentials_in_url(experiment.base_url)
    check(not is_manifest_url(experiment.base_url) or len(experiment.manifests) == 1,
           f"the remote {public_url(experiment.base_url)} is one manifest's URL, but {len(experiment.manifests)} "
           "manifests are named; give a base URL ending in / to sync several by name")


def sweep_value(experiment: Experiment, variant: Variant) -> Any:
    """The value of the swept setting `variant` syncs with: its field of VARIANT_SWEEPABLE (None for a kind
    without it), else its Remote setting (download_concurrency among them)."""
    setting = experiment.sweep_setting
    if setting in VARIANT_SWEEPABLE:
        return getattr(variant, setting, None)
    return experiment.remote_of(variant).get(setting)


def _check_sweep(experiment: Experiment) -> None:
    """The swept setting is numeric, and in a sweep every variant has a number for it: values are ordered. A
    sweep of download_concurrency may hold auto variants too, drawn across its values (harness.analysis.sweep)."""
    setting = experiment.sweep_setting
    check(setting in SWEEPABLE,
           f"sweep_setting = {setting!r}: a numeric Remote setting or processes, one of {', '.join(SWEEPABLE)}")
    if experiment.kind != "sweep":
        return
    for variant in experiment.variants:
        value = sweep_value(experiment, variant)
        auto = setting == "download_concurrency" and variant.auto_concurrency
        check(auto or isinstance(value, (int, float)) and not isinstance(value, bool),
               f"variant {variant.name!r}: a sweep of {setting} needs a number for it, not {value!r}")


def _check_setting(setting: RemoteSetting, value: Any, label: str) -> None:
    """`value` by `setting`'s rule (downloaders/settings.py), its message after `label`."""
    try:
        setting.check(value)
    except SettingError as error:
        raise SpecError(f"{label}: {error}") from None


# The schema's errors as one line each: where the mistake is (the variant, the dotted key within it), the
# value given, and what the field expects, in words made from its type.


