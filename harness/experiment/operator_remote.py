"""An operator's own remote: its URL as shown (never a secret), its settings' secrets resolved only when
a run starts, and its manifest fetched once and checked before the first run.

A spec (or `--remote-setting`) names a secret by reference, `env:VAR` or `file:PATH`
(REFERENCE_PREFIXES), so neither the spec, results.json nor a process's arguments hold
it; `resolve_settings` reads the values for the child processes' environment. `check_manifest`
fetches the manifest with the same downloader and settings the syncs use, so a wrong URL, a bad
certificate or a refused password stops the experiment within seconds, not after its first hour.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from downloaders import DownloaderSettings, DownloadFailure, DownloadRequest, TLSVerificationError, load
from downloaders.settings import remote_setting
from harness.errors import HarnessError, SpecError
from pulp_base.manifest import MANIFEST_NAME, ManifestError, parse_manifest

__all__ = [
    "REFERENCE_PREFIXES",
    "is_reference",
    "RemoteError",
    "public_url",
    "is_manifest_url",
    "manifest_label",
    "resolve_settings",
    "resolve_reference",
    "parse_remote_setting",
    "check_manifest",
    "MAX_MANIFEST_BYTES",
]

MAX_MANIFEST_BYTES = 1 << 30
"""Largest manifest the check fetches: 1 GiB, some ten million lines; the sync has its own limit."""
REFERENCE_PREFIXES = ("env:", "file:")
"""How a spec names a secret without holding it: `env:VAR` (an environment variable's value) or
`file:PATH` (a file's content; for client_key, the key file itself). Resolved only when a run starts."""


def is_reference(value: Any) -> bool:
    """Whether a spec value is a reference to a secret (`env:VAR`, `file:PATH`) rather than the value."""
    return isinstance(value, str) and value.startswith(REFERENCE_PREFIXES)


class RemoteError(HarnessError):
    """The remote cannot be synced from as configured: the message names its URL (without secrets) and why."""


def public_url(url: str) -> str:
    """`url` as it may be shown and saved: scheme, host, port and path; no user, password, query or fragment
    (a signed URL's query is a credential too)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def is_manifest_url(url: str) -> bool:
    """A manifest's own URL (`.../PULP_MANIFEST_100`), as opposed to a base URL ending in `/` under which
    the experiment's manifests are found by name."""
    return not urlsplit(url).path.endswith("/")


def manifest_label(url: str) -> str:
    """The manifest name a manifest URL is reported under: `.../PULP_MANIFEST_100` -> "100",
    `.../fedora/PULP_MANIFEST` -> "fedora", `.../other.txt` -> "other.txt"."""
    segments = [segment for segment in urlsplit(url).path.split("/") if segment]
    last = segments[-1] if segments else MANIFEST_NAME
    if last == MANIFEST_NAME:
        return segments[-2] if len(segments) > 1 else (urlsplit(url).hostname or "remote")
    return last.removeprefix(f"{MANIFEST_NAME}_")


def refuse_credentials_in_url(url: str) -> None:
    """A password in the URL would be on the harness's command line and in results.json: refuse it. So
    is a query string: it may hold a token, and would not reach the files, which are fetched relative
    to the manifest's path."""
    parts = urlsplit(url)
    if parts.password is not None:
        raise SpecError(
            f"the remote URL {public_url(url)} holds a password; give it as --remote-setting username=NAME and "
            "--remote-setting password=env:VAR (or file:PATH), or in the spec's [remote] table"
        )
    if parts.query or parts.fragment:
        raise SpecError(
            f"the remote URL {public_url(url)} has a query or fragment, which the files fetched relative to it "
            "would not carry; for a token, give a header: --remote-setting 'headers={\"Authorization\": \"env:VAR\"}'"
        )


def parse_remote_setting(assignment: str) -> tuple[str, Any]:
    """`KEY=VALUE` from `--remote-setting` as a spec value: a reference kept as it is, other text typed.
    A secret given in clear is refused: it would be on the command line and in results.json."""
    name, equals, text = assignment.partition("=")
    if not equals:
        raise SpecError(f"--remote-setting {assignment!r}: expected KEY=VALUE, e.g. rate_limit=20")
    try:
        setting = remote_setting(name.strip())
    except ValueError as error:
        raise SpecError(f"--remote-setting: {error}") from error
    if is_reference(text):
        return setting.name, text
    if setting.secret:
        raise SpecError(f"--remote-setting {setting.name}: a secret is given as env:VAR or file:PATH, never in clear")
    try:
        return setting.name, setting.coerce(text)
    except ValueError as error:
        raise SpecError(f"--remote-setting {error}") from error


def resolve_settings(settings: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings with every reference replaced by what it names; raises SpecError naming the setting
    (never the value) when a variable is unset or a file cannot be read."""
    resolved: dict[str, Any] = {}
    for name, value in settings.items():
        if isinstance(value, Mapping):
            resolved[name] = {key: resolve_reference(f"{name}.{key}", item, environ) for key, item in value.items()}
        else:
            resolved[name] = remote_setting(name).coerce(resolve_reference(name, value, environ)) \
                if is_reference(value) else value
    return resolved


def resolve_reference(label: str, value: Any, environ: Mapping[str, str]) -> Any:
    """What a reference names (`env:VAR`, `file:PATH`; for client_key the path itself), or `value` when
    it is none; SpecError naming `label`, never the value, when it cannot be read."""
    if not is_reference(value):
        return value
    kind, _, where = value.partition(":")
    if kind == "env":
        if not environ.get(where):
            raise SpecError(f"remote setting {label}: the environment variable {where} is not set (or empty)")
        return environ[where]
    path = Path(where).expanduser()
    if label == "client_key":
        if not path.is_file():
            raise SpecError(f"remote setting client_key: no file at {path}")
        return str(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise SpecError(f"remote setting {label}: cannot read {path}: {error.strerror}") from error
    if not lines or not lines[0]:
        raise SpecError(f"remote setting {label}: {path} is empty")
    return lines[0]


def _advice(outcome: DownloadFailure | None) -> str:
    """What to check after the manifest could not be fetched: the CA for an untrusted certificate."""
    if outcome is not None and isinstance(outcome.error, TLSVerificationError):
        return "give the CA that signed the server's certificate as --remote-setting ca_cert=FILE"
    return "check the URL and the remote settings"


def check_manifest(url: str, downloader: str, settings: Mapping[str, Any], folder: Path) -> Path:
    """Fetch the manifest at `url` once, with `downloader` and the resolved `settings`, into `folder`, and
    parse every line; its path. RemoteError naming the URL (without secrets) and the cause otherwise.

    The manifest is read with pulp_base.manifest, the one parser of the format."""
    shown = public_url(url)
    try:
        engine = load(downloader)(DownloaderSettings.from_mapping(settings))
    except ValueError as error:
        raise SpecError(f"the remote settings for {shown} are not valid: {error}") from error
    folder.mkdir(parents=True, exist_ok=True)
    request = DownloadRequest(url, MANIFEST_NAME, max_size=MAX_MANIFEST_BYTES)
    with tempfile.TemporaryDirectory(dir=folder) as workspace:
        with closing(engine.fetch([request], Path(workspace))) as outcomes:
            outcome = next(outcomes, None)
        if isinstance(outcome, DownloadFailure) or outcome is None:
            cause = "no result" if outcome is None else _without_url(str(outcome.error), url)
            raise RemoteError(f"cannot fetch the manifest {shown}: {cause}; {_advice(outcome)}")
        manifest = Path(outcome.path).replace(folder / MANIFEST_NAME)
    try:
        files = sum(1 for _ in parse_manifest(manifest))
    except ManifestError as error:
        raise RemoteError(f"the manifest {shown} is not a PULP_MANIFEST: {error}") from error
    if not files:
        raise RemoteError(f"the manifest {shown} lists no file: there is nothing to measure")
    return manifest


def _without_url(message: str, url: str) -> str:
    """An engine's error message without the " (URL)" it ends with (the caller names the URL) and with any
    other mention of it in its public form (a query may hold a credential)."""
    return message.replace(f" ({url})", "").replace(url, public_url(url))
