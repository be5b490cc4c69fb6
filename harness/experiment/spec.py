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

Values are checked when the spec is read, so a typo fails at once and not an hour into a run: first
each value's type (`runs = "10"` is refused with the key's name), then what it may be.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from downloaders.settings import REMOTE_SETTINGS, RemoteSetting, remote_setting
from harness import defaults
from harness.errors import SpecError
from harness.experiment.operator_remote import is_manifest_url, is_reference, public_url, refuse_credentials_in_url
from harness.experiment.sample import parse_sample
from harness.variants.databases import ALIASES, database_url
from harness.variants.hosts import LOOPBACK, MAX_HOSTS, SERVICE_ADDRESS
from harness.variants.programs import PLACEHOLDERS, placeholders_of
from pulp_base.processes import parse_processes

__all__ = ["SpecError", "Variant", "Experiment", "load_spec", "experiment_from_dict", "manifest_path", "PULPCORE",
           "PULP_SYNC_SERVER", "STARTED_SERVERS",
           "SWEEPABLE"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
SERVERS = ("builtin", "nginx")
KINDS = ("pulp-sync", "command", "pulp-api")
PULPCORE = "pulpcore"
"""A pulp-api variant's `server` that the harness starts itself (harness.variants.pulpcore) rather than a URL."""
PULP_SYNC_SERVER = "pulp-sync"
"""A pulp-api variant's `server`: `pulp-sync api` and a worker, started by the harness
(harness.variants.pulp_sync_server)."""
STARTED_SERVERS = (PULPCORE, PULP_SYNC_SERVER)
TASKING = ("inline", "rq")
WORKERS = ("fork", "simple")
POSTGRESQL_SCHEMES = ("postgres", "postgresql", "pgsql", "postgis")
"""DATABASE_URL schemes of PostgreSQL (dj-database-url's), the one server database the hosts reach."""
SWEEPABLE = tuple(setting.name for setting in REMOTE_SETTINGS if setting.kind in (int, float))
"""The Remote settings a sweep can vary: the numeric ones, whose values are ordered."""


@dataclass(frozen=True)
class Variant:
    """One way of syncing; two variants of an experiment should differ in one setting only.

    `profile` overrides the experiment's network profile for this variant alone (it then gets its
    own fixture server); `kind = "command"` makes it an external program run from the `command`
    template (harness.variants.programs) instead of a pulp-sync sync with `downloader`; `db` is "sqlite",
    "postgresql", "mysql" (harness.variants.databases) or a DATABASE_URL (None: sqlite under the state
    folder); `tasking = "rq"` queues the sync for `workers` fresh RQ workers of class `worker` ("fork" or
    "simple"; harness.variants.workers), and its time is then the task's, from queueing to the end. With
    `repositories = K` a run queues K syncs at once, of K repositories sharing part of their content, and
    its time is their makespan (harness.variants.fleet); with `hosts = N` the `workers` run on each of N
    hosts of scripts/hosts.sh rather than on this machine (harness.variants.hosts), which needs a database
    the hosts reach (PostgreSQL). `remote` holds Remote settings (named as in downloaders.REMOTE_SETTINGS)
    over the experiment's own `remote`; see Experiment.remote_of.
    """

    name: str
    downloader: str = ""
    download_concurrency: int = defaults.CONCURRENCY
    processes: int | str = 1
    profile: str | None = None
    db: str | None = None
    tasking: str = "inline"
    worker: str | None = None
    workers: int = 1
    hosts: int = 0
    repositories: int = 1
    sync_args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    kind: str = "pulp-sync"
    command: str | None = None
    remote: Mapping[str, Any] = field(default_factory=dict)
    server: str | None = None
    api_username: str = "admin"
    api_password: str | None = None

    @property
    def is_command(self) -> bool:
        """An external program (curl, aria2c, ...) rather than a pulp-sync sync; see harness.variants.programs."""
        return self.kind == "command"

    @property
    def is_pulp_api(self) -> bool:
        """A Pulp 3 server driven through its REST API (harness.variants.pulp_api): `server` is "pulpcore" (started
        by the harness) or the server's URL, with `api_username` and `api_password` (a reference)."""
        return self.kind == "pulp-api"


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

    name: str
    variants: tuple[Variant, ...]
    manifests: tuple[str, ...] = defaults.MANIFESTS
    description: str = ""
    scale: float = defaults.SCALE
    runs: int = defaults.RUNS
    warmup: int = defaults.WARMUP
    profile: str = defaults.PROFILE
    server: str = defaults.SERVER
    restart_server: bool = False
    baseline: str | None = None
    timeout: float = defaults.RUN_TIMEOUT
    alpha: float = defaults.ALPHA
    band: float = defaults.BAND
    fixtures: str | None = None
    base_url: str | None = None
    profiles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    kind: str = "experiment"
    tolerance: float = defaults.SWEEP_TOLERANCE
    remote: Mapping[str, Any] = field(default_factory=dict)
    sweep_setting: str = defaults.SWEEP_SETTING
    sample: str | None = None
    sample_seed: int = 0

    @property
    def baseline_variant(self) -> Variant:
        """The variant every other one is compared with: the named one, else the first."""
        return self.variant(self.baseline) if self.baseline else self.variants[0]

    def variant(self, name: str) -> Variant:
        """The variant called `name`."""
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise SpecError(f"no variant named {name!r}; the spec has: {', '.join(v.name for v in self.variants)}")

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
        data["variants"] = [dict(v, sync_args=list(v["sync_args"]), env=dict(v["env"]), remote=_plain(v["remote"]))
                            for v in data["variants"]]
        data["remote"] = _plain(self.remote)
        data["manifests"] = list(self.manifests)
        data["profiles"] = {name: dict(values) for name, values in self.profiles.items()}
        return data


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
    """Build and check an Experiment from plain values; unknown keys are errors (they are typos)."""
    data = dict(data)
    raw_variants = data.pop("variants", None)
    if not raw_variants:
        raise SpecError("the spec has no [[variants]]; add at least one (name, downloader)")
    _reject_unknown(data, Experiment, "experiment")
    _check_types(data, Experiment, "")
    variants = tuple(_variant_from_dict(raw) for raw in raw_variants)
    if "manifests" in data:
        data["manifests"] = tuple(str(manifest) for manifest in data["manifests"])
    return validate(Experiment(variants=variants, **data))


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
    _check(experiment.server in SERVERS, f"server = {experiment.server!r}: one of {', '.join(SERVERS)}")
    _check(experiment.kind in ("experiment", "sweep"), f"kind = {experiment.kind!r}: experiment or sweep")
    _check_remote(experiment.remote, "[remote]")
    _check_sweep(experiment)
    _check_source(experiment)
    _check(experiment.base_url is None or not any(v.hosts for v in experiment.variants),
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
        return f"PULP_MANIFEST_{manifest}"
    return manifest if manifest.endswith("PULP_MANIFEST") else f"{manifest}/PULP_MANIFEST"


def _variant_from_dict(raw: Mapping[str, Any]) -> Variant:
    raw = dict(raw)
    _reject_unknown(raw, Variant, f"variant {raw.get('name', '?')!r}")
    _check_types(raw, Variant, f"variant {raw.get('name', '?')!r}: ")
    if "name" not in raw or ("downloader" not in raw and "command" not in raw and "server" not in raw):
        raise SpecError("every variant needs a name and a downloader (or kind = \"command\" and a command, or "
                        f"kind = \"pulp-api\" and a server); got {sorted(raw)}")
    raw["sync_args"] = tuple(str(arg) for arg in raw.get("sync_args", ()))
    raw["env"] = {str(key): str(value) for key, value in raw.get("env", {}).items()}
    raw["remote"] = dict(raw.get("remote", {}))
    return Variant(**raw)


def _check_processes(variant: Variant, label: str) -> None:
    """`processes` by the rule the command line and the API use, and only on a pulp-sync sync."""
    try:
        processes = parse_processes(variant.processes)
    except ValueError as error:
        raise SpecError(f"{label}: {error}") from None
    _check(processes == 1 or not (variant.is_command or variant.is_pulp_api),
           f"{label}: processes = {variant.processes!r} splits a pulp-sync sync; a {variant.kind} variant has none")


def _check_variant(variant: Variant) -> None:
    label = f"variant {variant.name!r}"
    _check(_NAME.match(variant.name) is not None, f"{label}: use letters, digits, . _ - in its name")
    _check(variant.download_concurrency >= 1, f"{label}: download_concurrency must be 1 or more")
    _check_processes(variant, label)
    _check(variant.kind in KINDS, f"{label}: kind {variant.kind!r} is not one of {', '.join(KINDS)}")
    _check_remote(variant.remote, f"{label}: remote")
    if variant.is_command:
        _check_command(variant, label)
    elif variant.is_pulp_api:
        _check_pulp_api(variant, label)
    else:
        _check(bool(variant.downloader), f"{label}: name a downloader (`pulp-sync downloaders` lists them)")
        _check(variant.command is None, f"{label}: a command needs kind = \"command\"")
    _check(variant.is_pulp_api or variant.server is None, f"{label}: a server needs kind = \"pulp-api\"")
    _check(
        variant.db is None or variant.db in ALIASES or "://" in variant.db,
        f"{label}: db {variant.db!r} is neither one of {', '.join(ALIASES)} nor a DATABASE_URL",
    )
    _check(variant.tasking in TASKING, f"{label}: tasking {variant.tasking!r} is not one of {', '.join(TASKING)}")
    if variant.tasking == "rq":
        _check(variant.worker in (None, *WORKERS),
               f"{label}: worker {variant.worker!r} is not one of {', '.join(WORKERS)}")
        _check(variant.workers >= 1, f"{label}: workers must be 1 or more")
        _check(variant.repositories >= 1,
               f"{label}: repositories = {variant.repositories!r}: how many a run syncs at once, 1 or more")
        _check_hosts(variant, label)
    else:
        _check(variant.worker is None and variant.workers == 1, f"{label}: worker and workers need tasking = \"rq\"")
        _check(variant.hosts == 0, f"{label}: hosts need tasking = \"rq\" (workers on other hosts run queued syncs)")
        _check(variant.repositories == 1,
               f"{label}: repositories need tasking = \"rq\" (syncs at once are tasks queued at once)")


def _check_hosts(variant: Variant, label: str) -> None:
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


def _check_pulp_api(variant: Variant, label: str) -> None:
    """A Pulp server to drive: "pulpcore" (ours to start) or an http(s) URL with a password by reference."""
    _check(not variant.downloader and variant.command is None,
           f"{label}: a pulp-api variant has no downloader or command (the server's own syncs are measured)")
    server = variant.server or ""
    _check(server in STARTED_SERVERS or server.startswith(("http://", "https://")),
           f"{label}: server {server!r}: one of {', '.join(STARTED_SERVERS)} (started by the harness) or a Pulp "
           "server's URL")
    if server not in STARTED_SERVERS:
        _check(is_reference(variant.api_password),
               f"{label}: api_password for {server}: give it as \"env:VAR\" or \"file:PATH\", never in clear")
    _check(variant.tasking == "inline", f"{label}: tasking is the server's own business for a pulp-api variant")
    _check(variant.db is None or server == PULP_SYNC_SERVER,
           f"{label}: db is the server's own business, except for server = \"{PULP_SYNC_SERVER}\"")


def _check_command(variant: Variant, label: str) -> None:
    _check(bool(variant.command and variant.command.strip()), f"{label}: kind = \"command\" needs a command template")
    _check(not variant.downloader, f"{label}: a command variant has no downloader (its program is the command)")
    try:
        unknown = placeholders_of(str(variant.command)) - set(PLACEHOLDERS)
    except ValueError as error:
        raise SpecError(f"{label}: command template: {error} (write {{{{ and }}}} for literal braces)") from error
    _check(not unknown, f"{label}: unknown placeholders {sorted(unknown)}; known: {', '.join(PLACEHOLDERS)}")


def _check_source(experiment: Experiment) -> None:
    """The remote URL and the sample size can be used as given."""
    if experiment.sample is not None:
        parse_sample(experiment.sample)
        _check(not any(v.is_pulp_api for v in experiment.variants),
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


def _check_remote(settings: Mapping[str, Any], label: str) -> None:
    """Every key a Remote setting, every value of its type or a reference; secrets only by reference,
    so that no secret is written into a spec or a results folder."""
    _check(isinstance(settings, Mapping), f"{label}: a table of Remote settings, e.g. {{ rate_limit = 20 }}")
    for name, value in settings.items():
        try:
            setting = remote_setting(name)
        except ValueError as error:
            raise SpecError(f"{label}: {error}") from error
        _check(name != "download_concurrency", f"{label}: set download_concurrency on the variant itself")
        _check_remote_value(setting, value, label)


def _check_remote_value(setting: RemoteSetting, value: Any, label: str) -> None:
    if setting.secret:
        _check(is_reference(value), f"{label}: {setting.name} is a secret: give it as \"env:VAR\" or \"file:PATH\", "
                                    "never in clear")
        return
    if is_reference(value):
        return
    try:
        setting.coerce(value)
    except ValueError as error:
        raise SpecError(f"{label}: {error}") from error


def _plain(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Remote settings as JSON and TOML values (paths as strings, headers as a dict)."""
    return {name: dict(value) if isinstance(value, Mapping) else str(value) if isinstance(value, Path) else value
            for name, value in settings.items()}


def _reject_unknown(data: Mapping[str, Any], kind: type, label: str) -> None:
    known = {f.name for f in dataclasses.fields(kind)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise SpecError(f"{label}: unknown keys {unknown}; known keys are {sorted(known)}")


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise SpecError(message)


_TYPE_NAMES = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}


def _check_types(data: Mapping[str, Any], kind: type, label: str) -> None:
    """Each true/false, number and string of `data` (TOML or results.json) has its field's type, so that
    the checks after it, and the runs, get what Variant and Experiment say they hold: `runs = "10"` or
    `sample = 500` is refused here, in one line naming the key, rather than a TypeError later. A whole
    number is a number too; true and false are not numbers. Tables and lists are converted elsewhere."""
    hints = typing.get_type_hints(kind)
    for key, value in data.items():
        hint = hints[key]
        allowed = typing.get_args(hint) if typing.get_origin(hint) in (types.UnionType, typing.Union) else (hint,)
        if value is None and type(None) in allowed:
            continue
        scalars = [t for t in allowed if t is not type(None)]
        if not all(t in _TYPE_NAMES for t in scalars):
            continue  # a table or a list
        if isinstance(value, bool):
            fits = bool in scalars
        else:
            fits = any(isinstance(value, t) or (t is float and isinstance(value, int)) for t in scalars)
        _check(fits, f"{label}{key} = {value!r}: {' or '.join(_TYPE_NAMES[t] for t in scalars)}")
