"""The environment variables the service reads: one typed list, read once when Django starts.

`Environment` is that list. Each field is one variable (`PULP_SYNC_` and the field's name, upper-case,
or the alias it names: DATABASE_URL, REDIS_URL), typed, with its default and its docstring; pydantic-settings
reads and converts them all, and `read()` turns the first value it refuses into one ConfigurationError line
naming the variable, the value (a URL's password hidden) and what to give. pulp_sync/settings.py makes
Django's settings from it; `pulp-sync settings` shows it as read; docs/settings.md is generated from it
(tests/docs/settings_reference.py), so that the reference cannot drift from the code.

An empty variable means its default, as an unset one, except where the empty text has a meaning of its
own (`Blank`): an empty PULP_SYNC_REMOTE_DENY denies nothing, and an empty DATABASE_URL is a mistake
that must not silently become sqlite.

Variables that one command reads (PULP_SYNC_PASSWORD for `createuser` and `api`, PULP_SYNC_FIXTURES for
`fixtures`, PULP_SYNC_PULPCORE_VENV for the harness) are that command's options, not the service's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, ValidationError, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from downloaders import AddressPolicy, defaults as downloader_defaults
from pulp_sync import defaults
from pulp_sync.errors import ConfigurationError
from pulp_sync.messages import redact

__all__ = ["Environment", "Give", "Blank", "read", "variable", "shown", "takes"]

PREFIX = "PULP_SYNC_"
_DATABASE_SCHEMES = ("sqlite", "postgres", "postgresql", "pgsql", "mysql")
_REDIS_SCHEMES = ("redis", "rediss", "unix")
_SECRETS = ("secret_key",)
"""Fields whose value is never shown, not even in the error that refuses it."""


@dataclass(frozen=True)
class Give:
    """What a variable takes, in the words of the error that refuses a value: `give {words}`."""

    words: str


@dataclass(frozen=True)
class Blank:
    """Marks a variable whose empty value means something of its own, rather than its default."""


def _comma_list(text: Any) -> Any:
    """`a,b,c` as ("a", "b", "c"): the variables hold lists as operators write them, not as JSON."""
    return tuple(entry.strip() for entry in text.split(",")) if isinstance(text, str) else text


def _scheme(schemes: tuple[str, ...]) -> Any:
    def check(url: str | None) -> str | None:
        if url is not None and urlsplit(url).scheme not in schemes:
            raise ValueError("unknown scheme")
        return url

    return check


def _not_a_file(home: Path) -> Path:
    home = home.resolve()
    if home.exists() and not home.is_dir():
        raise ValueError("a file")
    return home


def _location(text: str) -> str:
    if text and not (text.startswith("/") and text.endswith("/") and text.isprintable() and " " not in text):
        raise ValueError("not a location")
    return text


Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False), Give("a number of seconds, 0 or more")]
PositiveSeconds = Annotated[float, Field(gt=0, allow_inf_nan=False), Give("a number of seconds, above 0")]
HostList = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_comma_list)]


class Environment(BaseSettings):
    """The service's settings, as the environment of the process that reads them gives them."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, extra="ignore", frozen=True, use_attribute_docstrings=True)

    home: Annotated[Path, AfterValidator(_not_a_file), Give("a directory (made if missing), not a file")] = Path(
        ".pulp-sync")
    """Where the service keeps its state: the sqlite database `db.sqlite3`, the artifact store `artifacts/`
    (whose `tmp/` is on the same filesystem, so that adopting a download is one atomic rename), the secret
    key and the repositories' lock files. Made readable by its owner only."""

    database_url: Annotated[
        str | None, Field(validation_alias="DATABASE_URL"), AfterValidator(_scheme(_DATABASE_SCHEMES)), Blank(),
        Give("postgres://user@host:port/name, mysql://user@host:port/name or sqlite:////path, or unset it for "
             "sqlite under PULP_SYNC_HOME"),
    ] = None
    """Another database than sqlite under PULP_SYNC_HOME, parsed by dj-database-url (PostgreSQL and MariaDB
    need the `postgres` and `mysql` extras)."""

    redis_url: Annotated[str, Field(validation_alias="REDIS_URL"), AfterValidator(_scheme(_REDIS_SCHEMES)),
                         Give("redis://host:port/db (or rediss://, unix://)")] = "redis://127.0.0.1:6379/0"
    """The Redis of the RQ task queue, which workers take syncs from and record their heartbeats in."""

    queue: Annotated[str, Give("a queue name")] = ""
    """The RQ queue syncs are queued on and workers take from; empty: `pulp-sync-` and a digest of the
    database's identity, so that two installations on one Redis get two queues."""

    fsync: Annotated[bool, Give("1 or 0 (or true, false, yes, no, on, off)")] = False
    """Flush each artifact and its directory to disk when it is adopted, so that a power cut loses no
    artifact a repository version names."""

    max_manifest_bytes: Annotated[int, Field(gt=0), Give("a whole, positive number of bytes")] = 64 * 1024 * 1024
    """The largest PULP_MANIFEST a sync downloads (64 MiB is about 600,000 lines): a remote sending more
    fails the sync before it fills the disk or the memory."""

    repository_wait: Seconds = defaults.REPOSITORY_WAIT
    """Seconds a sync waits for another sync of the same repository to finish: one repository builds one
    version at a time."""

    worker_ttl: PositiveSeconds = defaults.WORKER_TTL
    """Seconds a worker's heartbeat in Redis lasts, renewed every third of that; the other workers fail the
    tasks of a worker, on any host, whose heartbeat lapsed."""

    remote_allow: Annotated[str, Give("comma-separated networks (10.0.0.0/8), addresses and host names")] = ""
    """The only hosts and networks syncs may download from, as comma-separated networks, addresses and host
    names (`*.example.com` for a domain); empty: any, except what PULP_SYNC_REMOTE_DENY denies. Checked at
    every redirect and every address a name resolves to."""

    remote_deny: Annotated[str, Blank(),
                           Give("comma-separated networks (10.0.0.0/8), addresses and host names")] = ",".join(
        downloader_defaults.DENIED_NETWORKS)
    """Hosts and networks syncs may not download from, in the same form; by default link-local addresses,
    where cloud metadata services answer. Empty: none denied."""

    allowed_hosts: Annotated[HostList, Give("comma-separated host names, or * for any")] = (
        "localhost", "127.0.0.1", "[::1]")
    """The host names the REST API answers to (Django's ALLOWED_HOSTS); `*` for any."""

    secret_key: Annotated[SecretStr | None, Give("a secret text")] = None
    """Django's SECRET_KEY, which API sessions (`login/`) are signed with; unset: a random key made on the
    first use into `secret_key` under PULP_SYNC_HOME, readable by its owner only. API hosts behind one
    address must share it, or a session from one host's `login/` is refused by the others (basic and token
    auth work regardless)."""

    api_header_timeout: PositiveSeconds = defaults.API_HEADER_TIMEOUT
    """Seconds a client of `pulp-sync api` has to send a request's head (nginx's client_header_timeout)."""

    api_body_timeout: PositiveSeconds = defaults.API_BODY_TIMEOUT
    """Seconds a client of `pulp-sync api` may pause between two parts of a request's body (nginx's
    client_body_timeout)."""

    api_send_timeout: PositiveSeconds = defaults.API_SEND_TIMEOUT
    """Seconds a client of `pulp-sync api` may take to accept the next part of an answer (nginx's
    send_timeout): one that reads nothing is closed after it."""

    api_client_requests: Annotated[int, Field(gt=0), Give("a whole, positive number of requests")] = (
        defaults.API_CLIENT_REQUESTS)
    """Requests one client address may have in progress at `pulp-sync api` at once (nginx's limit_conn);
    more get 429."""

    content_accel_redirect: Annotated[str, AfterValidator(_location),
                                      Give("a path that starts and ends with /, e.g. /protected/")] = ""
    """The internal location of a proxy before the API (nginx's `internal` one) that sends the content app's
    files from the artifact store, which then answers with `X-Accel-Redirect` once it has decided that the
    request may have the file; empty: gunicorn sends the files itself. `pulp-sync api` sets it for its own
    nginx, `--accel-redirect` for yours."""

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, data: Any) -> Any:
        """An empty variable means its default, unless its field is marked Blank."""
        if not isinstance(data, dict):
            return data
        return {key: value for key, value in data.items() if value != "" or _blank_means_something(key)}

    @model_validator(mode="after")
    def _policy_parses(self) -> Environment:
        """The two address lists parse: the policy is made here, once, and kept."""
        _ = self.address_policy
        return self

    @cached_property
    def address_policy(self) -> AddressPolicy:
        """The remote-address policy every sync's downloads obey."""
        try:
            return AddressPolicy.parse(self.remote_allow, self.remote_deny)
        except ValueError as error:  # "deny: 'x' is neither a network ... nor a host name"
            which, _, why = str(error).partition(": ")
            name = f"remote_{which}"
            raise ConfigurationError(f"{variable(name)}={getattr(self, name)!r}: {why}") from None

    @property
    def artifacts(self) -> Path:
        """The artifact store, under PULP_SYNC_HOME."""
        return self.home / "artifacts"


def _blank_means_something(key: str) -> bool:
    name = _field_of(key)
    return name is not None and any(isinstance(meta, Blank) for meta in Environment.model_fields[name].metadata)


def _field_of(key: str) -> str | None:
    """The field a key of the read values belongs to: its name, or its alias."""
    for name, field in Environment.model_fields.items():
        if key.lower() in (name, str(field.validation_alias or "").lower()):
            return name
    return None


def variable(name: str) -> str:
    """The environment variable of field `name`."""
    alias = Environment.model_fields[name].validation_alias
    return str(alias) if alias else PREFIX + name.upper()


def shown(name: str, value: Any) -> str:
    """A value as an operator may see it: no secret key, no URL's password."""
    if value is None:
        return ""
    if isinstance(value, SecretStr) or name in _SECRETS:
        return "***"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if name.endswith("_url"):
        return redact(str(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def takes(name: str) -> str:
    """What field `name` takes, in words (its Give)."""
    return next(meta.words for meta in Environment.model_fields[name].metadata if isinstance(meta, Give))


def read() -> Environment:
    """The environment as the service reads it, or a ConfigurationError for the first variable it cannot use."""
    try:
        return Environment()
    except ValidationError as error:
        raise ConfigurationError(_refusal(error)) from None


def _refusal(error: ValidationError) -> str:
    """One line for the first value pydantic refused: the variable, what it held, and what to give."""
    first = error.errors()[0]
    name = _field_of(str(first["loc"][0])) if first["loc"] else None
    if name is None:
        return first["msg"]
    field = Environment.model_fields[name]
    give = takes(name)
    plain = isinstance(field.default, int | float | str) and field.default != "" and "e.g." not in give
    example = f", e.g. {shown(name, field.default)}" if plain else ""
    return f"{variable(name)}={shown(name, first['input'])!r}: give {give}{example}"
