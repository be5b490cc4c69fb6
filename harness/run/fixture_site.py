"""The remote the syncs download from: the fixture tree, and one fixture server per network profile.

A variant may override the experiment's profile (e.g. a throttled variant for a sanity check); a custom
profile may also limit the server's connections, as nginx's limit_conn would (`max_connections`); each
profile in use gets its own server, started once, or restarted before every run when the spec says
`restart_server = true`. With `base_url` set, no server is started: the syncs use that remote, whose
manifests are fetched and checked first (harness.experiment.operator_remote). When a variant has `hosts`,
the servers listen on the bridge's address (harness.variants.hosts.SERVICE_ADDRESS), where the hosts'
workers reach them, and every variant's syncs use that address.

Each manifest of the experiment has a ManifestSource: a local copy of the whole manifest (the fixture
tree's file, or the remote's fetched once) and the lines the syncs read, which with `sample` set are
a sub-manifest drawn once and given to every run (`pulp-sync sync --manifest-file`).
"""

from __future__ import annotations

import dataclasses
import difflib
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from fixtures.generate import MANIFEST_NAMES, default_fixture_dir, generate_tree, recorded_scale
from harness.experiment.operator_remote import check_manifest, is_manifest_url, public_url, resolve_settings
from harness.experiment.sample import parse_sample, sample_manifest
from harness.experiment.spec import Experiment, SpecError, manifest_path
from harness.experiment.variant import InlineVariant, PulpSyncVariant, Variant
from harness.variants.hosts import SERVICE_ADDRESS
from harness.variants.programs import CommandInputs, write_inputs
from pulp_base.manifest import MANIFEST_NAME, parse_manifest

if TYPE_CHECKING:
    from fixtures.nginx import RunningNginx
    from fixtures.server import RunningServer

__all__ = ["FixtureSite", "ManifestSource", "resolve_profile", "resolve_limit", "check_site", "check_manifests",
           "prepare_tree", "prepare_sources"]

_LIMIT_KEYS = {"max_connections": "max_connections", "limit_status": "status", "limit_retry_after": "retry_after"}
"""The keys of a [profiles.NAME] table that limit its server's connections (fixtures.limits.ConnectionLimit's
fields, named as `fixtures serve`'s options), rather than shape its network."""


def resolve_profile(name: str, custom: Mapping[str, Mapping[str, Any]]) -> Any:
    """The NetworkProfile called `name`: a built-in one, or one the spec defines under [profiles.NAME]
    as `base` (a built-in, default loopback) with latency / per_connection_bps / total_bps /
    contention_knee / contention_penalty changed."""
    from fixtures.profiles import PROFILES

    if name in custom:
        values = {key: value for key, value in custom[name].items() if key not in _LIMIT_KEYS}
        base = values.pop("base", "loopback")
        if base not in PROFILES:
            raise SpecError(f"profile {name!r}: base {base!r} is not one of {', '.join(PROFILES)}")
        try:
            return dataclasses.replace(PROFILES[base].with_overrides(**values), name=name)
        except (TypeError, ValueError) as error:
            raise SpecError(f"profile {name!r}: {error}") from error
    if name not in PROFILES:
        known = ", ".join([*PROFILES, *custom])
        raise SpecError(f"no network profile named {name!r}; known: {known} (or define [profiles.{name}])")
    return PROFILES[name]


def resolve_limit(name: str, custom: Mapping[str, Mapping[str, Any]]) -> Any:
    """The ConnectionLimit that [profiles.NAME] asks its server for with `max_connections` (and `limit_status`,
    `limit_retry_after`), or None: a server that refuses requests over it, as nginx's limit_conn does."""
    from fixtures.limits import ConnectionLimit

    asked = {_LIMIT_KEYS[key]: value for key, value in custom.get(name, {}).items() if key in _LIMIT_KEYS}
    if not asked:
        return None
    if "max_connections" not in asked:
        raise SpecError(f"profile {name!r}: limit_status and limit_retry_after need max_connections")
    try:
        return ConnectionLimit(**asked)
    except ValueError as error:
        raise SpecError(f"profile {name!r}: {error}") from None


def check_site(experiment: Experiment) -> None:
    """Every manifest is one the fixture tree holds (check_manifests), every profile in use exists, with a
    connection limit that can be; nginx is installed when asked for, and only asked for loopback without a
    limit (it can neither shape traffic nor, as started here, limit connections)."""
    check_manifests(experiment)
    if experiment.server == "nginx" and experiment.base_url is None:
        from fixtures.nginx import NginxNotFound, nginx_binary

        try:
            nginx_binary()
        except NginxNotFound as error:
            raise SpecError(f"{error}; or use server = \"builtin\"") from error
    for variant in experiment.variants:
        profile = resolve_profile(experiment.profile_of(variant), experiment.profiles)
        limit = resolve_limit(experiment.profile_of(variant), experiment.profiles)
        if experiment.server == "nginx" and experiment.base_url is None and profile.shaped:
            raise SpecError(
                f"server = \"nginx\" cannot shape traffic, but variant {variant.name!r} uses profile "
                f"{profile.name!r}; use server = \"builtin\" for shaped profiles, or profile = \"loopback\""
            )
        if experiment.server == "nginx" and experiment.base_url is None and limit is not None:
            raise SpecError(
                f"server = \"nginx\" has no connection limit, but variant {variant.name!r} uses profile "
                f"{profile.name!r} with max_connections; use server = \"builtin\""
            )


def prepare_tree(experiment: Experiment) -> Path:
    """The fixture tree of the experiment. A folder the user named (`fixtures`) is only read: it must exist,
    hold every manifest asked for and, if generated here, record the experiment's scale; nothing is ever
    written into it. The tree of the default folder for the scale is the harness's own, generated (or
    brought up to date) when a manifest is missing."""
    if experiment.fixtures:
        return _users_tree(experiment, Path(experiment.fixtures))
    root = default_fixture_dir(experiment.scale)
    if not all((root / manifest_path(m)).is_file() for m in experiment.manifests):
        generate_tree(root, experiment.scale)
    return root


def _users_tree(experiment: Experiment, root: Path) -> Path:
    if not root.is_dir():
        raise SpecError(f"the fixtures folder {root} does not exist; nothing was written: give a tree "
                        f"(`pulp-sync fixtures generate --scale {experiment.scale:g} --out {root}` makes one), or "
                        "leave --fixtures out to use the harness's tree of the scale")
    missing = [m for m in experiment.manifests if not (root / manifest_path(m)).is_file()]
    if missing:
        raise SpecError(f"the fixtures folder {root} has no manifest for {', '.join(missing)}; nothing was written "
                        "into it")
    scale = recorded_scale(root)
    if scale is not None and scale != experiment.scale:
        raise SpecError(f"the fixtures folder {root} holds a tree of scale {scale:g}, not {experiment.scale:g}; "
                        f"nothing was written into it: give --scale {scale:g} (or leave --scale out), or another "
                        "folder")
    return root


def check_manifests(experiment: Experiment) -> None:
    """Each manifest is one a fixture tree holds (100..500, many-small, PULP_MANIFEST) or a path ending in
    PULP_MANIFEST in the user's own tree, before anything is generated: a typo (600) would otherwise
    regenerate a tree only to find it missing. A near miss is suggested."""
    for name in experiment.manifests:
        if name in MANIFEST_NAMES or (name.endswith(MANIFEST_NAME) and experiment.fixtures):
            continue
        close = difflib.get_close_matches(name, MANIFEST_NAMES, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise SpecError(f"no manifest named {name!r}{hint}; a fixture tree holds {', '.join(MANIFEST_NAMES)}, "
                        "and a tree of your own (--fixtures) any path ending in PULP_MANIFEST")


@dataclass(frozen=True)
class ManifestSource:
    """One manifest of the experiment as the runs use it. `whole` is a local copy of the manifest,
    `lines` what the syncs read (the sample, or `whole` itself), `facts` what results.json says of it:
    files and bytes of what each run downloads, the remote's public URL, the sample drawn."""

    name: str
    whole: Path
    lines: Path
    facts: Mapping[str, Any]

    @property
    def sampled(self) -> bool:
        """Whether the runs sync a sample of the manifest rather than all of it."""
        return self.lines != self.whole


def prepare_sources(experiment: Experiment, root: Path | None, folder: Path,
                    environ: Mapping[str, str]) -> dict[str, ManifestSource]:
    """Each manifest's source: from the fixture tree, or fetched from the remote with every pulp-sync
    variant's downloader and settings (so each is checked before the first run), then sampled if asked.
    `folder` receives the fetched manifests and the samples."""
    sources = {}
    for manifest in experiment.manifests:
        where = folder / manifest.replace("/", "_")
        facts: dict[str, Any] = {}
        if root is not None:
            whole = root / manifest_path(manifest)
        else:
            whole = _fetched(experiment, manifest, where, environ)
            facts["url"] = public_url(remote_manifest_url(experiment, manifest))
        sources[manifest] = _sampled(experiment, manifest, whole, where, facts)
    return sources


def remote_manifest_url(experiment: Experiment, manifest: str) -> str:
    """Where `manifest` is on the experiment's remote: its URL itself, or found by name under a base URL."""

    url = str(experiment.base_url)
    return url if is_manifest_url(url) else url.rstrip("/") + "/" + manifest_path(manifest)


def _fetched(experiment: Experiment, manifest: str, where: Path, environ: Mapping[str, str]) -> Path:
    """The remote's manifest, fetched by every distinct (downloader, settings) of the pulp-sync variants."""

    url = remote_manifest_url(experiment, manifest)
    checked: list[tuple[str, dict[str, Any]]] = []
    fetched = None
    ours = [v for v in experiment.variants if isinstance(v, PulpSyncVariant)]
    for variant in ours or [InlineVariant("check", "asyncio")]:
        settings = resolve_settings(experiment.remote_of(variant), environ)
        if (variant.downloader, settings) not in checked:
            checked.append((variant.downloader, settings))
            fetched = check_manifest(url, variant.downloader, settings, where)
    assert fetched is not None
    return fetched


def _sampled(experiment: Experiment, manifest: str, whole: Path, where: Path, facts: dict[str, Any]) -> ManifestSource:
    whole_facts = _totals(whole)
    if experiment.sample is None:
        return ManifestSource(manifest, whole, whole, {**facts, **whole_facts})

    where.mkdir(parents=True, exist_ok=True)
    lines = where / "sample"
    drawn = sample_manifest(whole, parse_sample(experiment.sample), lines, experiment.sample_seed)
    facts = {**facts, "files": drawn.sample_files, "bytes": drawn.sample_bytes, "sample": drawn.as_dict()}
    return ManifestSource(manifest, whole, lines, facts)


def _totals(manifest: Path) -> dict[str, int]:
    entries = list(parse_manifest(manifest))
    return {"files": len(entries), "bytes": sum(entry.size for entry in entries)}


class FixtureSite:
    """The running servers of an experiment, by profile; a context manager that stops them all."""

    def __init__(self, experiment: Experiment, root: Path | None) -> None:
        self.experiment = experiment
        self.root = root
        self.host = SERVICE_ADDRESS if experiment.hosts else "127.0.0.1"
        self._servers: dict[str, tuple[ExitStack, Any]] = {}
        self._inputs: dict[str, CommandInputs] = {}

    def __enter__(self) -> FixtureSite:
        if self.experiment.base_url is None:
            for name in sorted({self.experiment.profile_of(v) for v in self.experiment.variants}):
                self._start(name)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for name in list(self._servers):
            self._stop(name)

    def manifest_url(self, variant: Variant, manifest: str) -> str:
        """The URL of `manifest` as `variant` downloads it."""
        if self.experiment.base_url is not None:
            return remote_manifest_url(self.experiment, manifest)
        return self._servers[self.experiment.profile_of(variant)][1].url + manifest_path(manifest)

    def restart(self, variant: Variant) -> float | None:
        """Restart `variant`'s server when the spec asks for it; returns the seconds it took, or None."""
        if not self.experiment.restart_server or self.experiment.base_url is not None:
            return None
        started = time.monotonic()
        name = self.experiment.profile_of(variant)
        self._stop(name)
        self._start(name)
        return time.monotonic() - started

    def command_inputs(self, variant: Variant, source: ManifestSource, folder: Path) -> CommandInputs:
        """The input files of command variants for `source`'s lines as `variant` downloads them (written once)."""

        url = self.manifest_url(variant, source.name)
        if url not in self._inputs:
            where = folder / f"{len(self._inputs)}-{source.name.replace('/', '_')}"
            self._inputs[url] = write_inputs(source.lines, url, where)
        return self._inputs[url]

    def stats(self) -> dict[str, Any]:
        """Each builtin server's own counters (requests, bytes, ...) by profile, for results.json."""
        return {name: _stats_of(server) for name, (_, server) in self._servers.items()}

    def _start(self, name: str) -> None:
        assert self.root is not None, "a fixture server needs a fixture tree"
        stack = ExitStack()
        server: RunningNginx | RunningServer
        if self.experiment.server == "nginx":
            from fixtures.nginx import serve_with_nginx

            server = stack.enter_context(serve_with_nginx(self.root, self.host))
        else:
            from fixtures.server import serve_in_background

            profile = resolve_profile(name, self.experiment.profiles)
            limit = resolve_limit(name, self.experiment.profiles)
            server = stack.enter_context(serve_in_background(self.root, profile=profile, host=self.host, limit=limit))
        self._servers[name] = (stack, server)

    def _stop(self, name: str) -> None:
        stack, _ = self._servers.pop(name)
        stack.close()


def _stats_of(server: Any) -> Any:
    stats = getattr(server, "stats", None)
    if stats is None:
        return None
    try:
        value = stats()
    except Exception as error:  # noqa: BLE001 - a server that cannot report must not lose the experiment's results
        return f"unavailable: {error}"
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) and not isinstance(value, type) else value
