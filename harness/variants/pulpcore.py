"""Real pulpcore (Pulp 3 and its file plugin), configured and started so the harness can benchmark it.

scripts/pulpcore.sh installs a pinned pulpcore into a virtualenv of its own (`.venv-pulpcore`, or
PULP_SYNC_PULPCORE_VENV) and creates the PostgreSQL database `pulpcore`. `running_pulpcore` writes
the settings into `<state_dir>/pulpcore/`, migrates the database when it must, and runs one API
server and one tasking worker for as long as the `with` block lasts; the benchmark then drives it
through its REST API alone. Nothing here imports pulpcore: it runs in its own interpreter with its
own pinned Django, as an operator would run it.

The database belongs to one state folder at a time. Pulp finds artifacts by checksum in the database
and skips downloading any it already knows, so a database filled by another folder (whose MEDIA_ROOT
holds the files) would make a sync here look fast and leave this folder's store empty. A comment on
the database names the folder that owns it and the pulpcore release it was migrated with; a folder
that does not own it starts from a freshly created database.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO, Any, TypedDict

from harness import defaults
from harness.errors import HarnessError
from harness.variants.pulp_api import PulpApi
from pulp_base import servers
from pulp_base.private import owner_only

__all__ = ["PulpServer", "PulpcoreError", "default_venv", "running_pulpcore"]

VENV_VARIABLE = "PULP_SYNC_PULPCORE_VENV"
"""Overrides where scripts/pulpcore.sh installed pulpcore; the same variable the script reads."""
DATABASE = "pulpcore"
"""The PostgreSQL database scripts/pulpcore.sh creates."""
USERNAME = "admin"
"""pulpcore's superuser, the one `pulpcore-manager reset-admin-password` would set."""


class _PostgresServer(TypedDict):
    host: str
    port: int
    user: str


_POSTGRES: _PostgresServer = {"host": "127.0.0.1", "port": 5432, "user": "postgres"}
"""The machine's PostgreSQL, as scripts/provision.sh sets it up (trust on 127.0.0.1)."""
_INSTALLED_STAMP = ".pulpcore-installed"
"""Written by scripts/pulpcore.sh into the venv once the install succeeded; holds the release."""
_OWNER_PREFIX = "pulp-sync harness state "
"""Start of the database comment that names its owning state folder (see the module docstring)."""
_STATUS_PATH = "/pulp/api/v3/status/"
_LOG_LINES = 15
"""Lines of a log quoted in an error."""
_API_WORKERS = 1
"""gunicorn workers: the API only takes a few requests per sync; the work happens in the worker."""


class PulpcoreError(HarnessError, RuntimeError):
    """pulpcore is missing, cannot be configured, or does not come up; the message says what to do."""


@dataclass(frozen=True)
class PulpServer:
    """A running pulpcore: where its API answers, its superuser, and its processes (each leads a group)."""

    base_url: str
    username: str
    password: str = field(repr=False)
    api_pid: int
    worker_pids: tuple[int, ...]
    state_dir: Path

    @cached_property
    def api(self) -> PulpApi:
        """Its REST API, as the superuser: one client, so that it logs in once."""
        return PulpApi(self.base_url, self.username, self.password)


def default_venv() -> Path:
    """Where scripts/pulpcore.sh installs pulpcore: PULP_SYNC_PULPCORE_VENV or `.venv-pulpcore`."""
    return Path(os.environ.get(VENV_VARIABLE) or defaults.CHECKOUT / ".venv-pulpcore")


@contextmanager
def running_pulpcore(state_dir: Path, venv: Path | None = None, database: str = DATABASE) -> Iterator[PulpServer]:
    """pulpcore's API on a free port of 127.0.0.1 and one worker, configured under `state_dir/pulpcore`;
    both stopped on exit (SIGTERM to their process groups, SIGKILL after a few seconds)."""
    venv = (venv or default_venv()).resolve()
    version = installed_version(venv)
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", database):
        raise PulpcoreError(f"database name {database!r}: use lower-case letters, digits and _ only")
    folder = (state_dir / "pulpcore").resolve()
    settings = configure(folder, database)
    env = _child_env(venv, settings)
    prepare_database(venv, env, folder, database, version)
    port = servers.free_port()
    logs = folder / "logs"
    with (open(logs / "api.log", "wb", opener=owner_only) as api_log,
          open(logs / "worker.log", "wb", opener=owner_only) as worker_log):
        api = _start([str(venv / "bin" / "pulpcore-api"), *_api_arguments(port)], env, folder, api_log)
        worker = None
        try:
            worker = _start([str(venv / "bin" / "pulpcore-worker")], env, folder, worker_log)
            server = PulpServer(
                base_url=f"http://127.0.0.1:{port}", username=USERNAME,
                password=_read_secret(folder / "admin-password"), api_pid=api.pid, worker_pids=(worker.pid,),
                state_dir=folder,
            )
            servers.wait_until(
                lambda: _worker_online(server), {"pulpcore-api": api, "pulpcore-worker": worker},
                within=defaults.PULPCORE_START_SECONDS,
                what=f"pulpcore did not answer {server.base_url}{_STATUS_PATH} with its worker online",
                output=lambda: _logs_tail(logs), failure=PulpcoreError, interval=0.25,
            )
            yield server
        finally:
            servers.stop_groups([process for process in (api, worker) if process is not None],
                                defaults.PULPCORE_STOP_SECONDS)


def installed_version(venv: Path) -> str:
    """The pulpcore release scripts/pulpcore.sh installed into `venv`; an error that says to run it if none."""
    try:
        version = (venv / _INSTALLED_STAMP).read_text(encoding="utf-8").strip()
    except OSError:
        version = ""
    if not version or not (venv / "bin" / "pulpcore-manager").is_file():
        raise PulpcoreError(f"pulpcore is not installed in {venv}: run scripts/pulpcore.sh")
    return version


def configure(folder: Path, database: str) -> Path:
    """Write `folder/settings.py` (0600: it holds SECRET_KEY) and the folders and keys it names.

    Secrets are made once and kept: the database key must stay the one the database's encrypted
    fields (remote passwords) were written with. The settings file itself is rewritten every time, so
    a changed template here reaches folders made earlier.
    """
    for name in ("media", "tmp", "assets", "logs"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    _secret(folder / "database_fields.symmetric.key", lambda: base64.urlsafe_b64encode(os.urandom(32)))  # a Fernet key
    _secret(folder / "admin-password", lambda: secrets.token_urlsafe(24).encode())
    settings = {
        "SECRET_KEY": _secret(folder / "secret-key", lambda: secrets.token_urlsafe(50).encode()).decode(),
        "DATABASES": {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": database,
                                  "USER": _POSTGRES["user"], "HOST": _POSTGRES["host"], "PORT": _POSTGRES["port"]}},
        "MEDIA_ROOT": str(folder / "media"),
        "STATIC_ROOT": str(folder / "assets"),
        "WORKING_DIRECTORY": str(folder / "tmp"),
        "FILE_UPLOAD_TEMP_DIR": str(folder / "tmp"),
        "DB_ENCRYPTION_KEY": str(folder / "database_fields.symmetric.key"),
        # No content app runs: the benchmark syncs and never serves. Pulp builds distribution URLs from it.
        "CONTENT_ORIGIN": "http://127.0.0.1:24816",
        "ALLOWED_CONTENT_CHECKSUMS": ["sha224", "sha256", "sha384", "sha512"],
        # Else the worker schedules a daily POST to analytics.pulpproject.org.
        "ANALYTICS": False,
    }
    lines = ["# Written by harness/variants/pulpcore.py at every start: edit that file, not this one.\n"]
    lines += [f"{name} = {value!r}\n" for name, value in settings.items()]
    path = folder / "settings.py"
    _write_private(path, "".join(lines).encode())
    return path


def prepare_database(venv: Path, env: Mapping[str, str], folder: Path, database: str, version: str) -> None:
    """Make `database` this folder's, migrated with `version` and with our admin password; skipped
    (one query) when its comment says it already is."""
    owner = _OWNER_PREFIX + _secret(folder / "database-owner", lambda: uuid.uuid4().hex.encode()).decode()
    wanted = f"{owner} pulpcore {version}"
    comment = _database_comment(database)
    if comment == wanted:
        return
    if comment is None or not comment.startswith(owner + " "):
        _recreate_database(database)
    _manage(venv, env, folder, "migrate", "--no-input")
    _set_admin_password(venv, env, folder)
    _postgres(f"COMMENT ON DATABASE \"{database}\" IS '{wanted}'")


def _secret(path: Path, make: Callable[[], bytes]) -> bytes:
    """The content of `path`, first created readable by its owner alone with `make()`'s bytes."""
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        value: bytes = make()
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another start made it first: use theirs
            return path.read_bytes().strip()
        with os.fdopen(descriptor, "wb") as file:
            file.write(value + b"\n")
        return value


def _read_secret(path: Path) -> str:
    return path.read_text(encoding="utf-8").strip()


def _write_private(path: Path, data: bytes) -> None:
    """Replace `path` atomically with a file only its owner can read."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    with open(temporary, "wb", opener=owner_only) as file:
        file.write(data)
    os.replace(temporary, path)


def _child_env(venv: Path, settings: Path) -> dict[str, str]:
    """Our environment without PULP_* variables, which pulpcore reads as settings (PULP_SYNC_HOME would
    become a SYNC_HOME setting, an operator's PULP_DATABASES would replace ours), plus PULP_SETTINGS."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PULP_")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env["PULP_SETTINGS"] = str(settings)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}"
    return env


def _postgres(statement: str) -> Any:
    """Run one statement on the server's `postgres` database (autocommit: CREATE DATABASE needs it);
    the first column of the first row, or None."""
    try:
        import psycopg
    except ImportError as error:
        raise PulpcoreError(f"the PostgreSQL driver is missing ({error}): run scripts/bootstrap.sh") from error
    where = f"PostgreSQL on {_POSTGRES['host']}:{_POSTGRES['port']} as {_POSTGRES['user']}"
    try:
        with psycopg.connect(dbname="postgres", autocommit=True, connect_timeout=10, **_POSTGRES) as connection:
            cursor = connection.execute(statement)
            row = cursor.fetchone() if cursor.description else None
    except psycopg.Error as error:
        raise PulpcoreError(f"{where}: {' '.join(str(error).split())}; run scripts/provision.sh") from error
    return row[0] if row else None


def _database_comment(database: str) -> str | None:
    """The comment on `database`; an error that says to run scripts/pulpcore.sh if it does not exist."""
    found = _postgres(
        "SELECT coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database "
        f"WHERE datname = '{database}'"
    )
    if found is None:
        raise PulpcoreError(f"the PostgreSQL database {database} does not exist: run scripts/pulpcore.sh")
    return found or None


def _recreate_database(database: str) -> None:
    """An empty `database`, closing the connections of any pulpcore still running on the old one."""
    _postgres(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    _postgres(f'CREATE DATABASE "{database}"')


def _manage(venv: Path, env: Mapping[str, str], folder: Path, *arguments: str) -> None:
    """`pulpcore-manager ARGUMENTS`; its output's last lines in the error if it fails."""
    command = [str(venv / "bin" / "pulpcore-manager"), *arguments]
    try:
        done = subprocess.run(command, env=env, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=defaults.PULPCORE_MANAGE_SECONDS, check=False)
    except subprocess.TimeoutExpired as error:
        raise PulpcoreError(f"`pulpcore-manager {arguments[0]}` took over {defaults.PULPCORE_MANAGE_SECONDS:g} s; "
                            "is PostgreSQL overloaded?") from error
    if done.returncode != 0:
        tail = servers.tail(done.stdout + done.stderr, _LOG_LINES)
        raise PulpcoreError(f"`pulpcore-manager {arguments[0]}` failed (exit {done.returncode}); fix the cause "
                            f"below or reinstall with scripts/pulpcore.sh. Its last lines: {tail}")


def _set_admin_password(venv: Path, env: Mapping[str, str], folder: Path) -> None:
    """Give `admin` the password of `folder/admin-password`. Django's shell reads the file itself, so
    the password appears on no command line and in no environment (reset-admin-password --password
    would show it to every user of the machine in `ps`)."""
    code = (
        "from pathlib import Path\n"
        "from django.contrib.auth import get_user_model\n"
        f"user = get_user_model().objects.get_or_create(username={USERNAME!r})[0]\n"
        "user.is_superuser = user.is_staff = user.is_active = True\n"
        f"user.set_password(Path({str(folder / 'admin-password')!r}).read_text().strip())\n"
        "user.save()\n"
    )
    _manage(venv, env, folder, "shell", "--command", code)


def _api_arguments(port: int) -> list[str]:
    """`pulpcore-api` on 127.0.0.1 only; no control socket, whose default path in $HOME two instances
    (or another gunicorn of the user) would share."""
    return ["--bind", f"127.0.0.1:{port}", "--workers", str(_API_WORKERS), "--no-control-socket"]


def _start(command: list[str], env: Mapping[str, str], folder: Path, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """`command` as a server (pulp_base.servers); cwd is the state folder, so no stray gunicorn.conf.py is read."""
    return servers.start(command, log, env=env, cwd=folder)


def _worker_online(server: PulpServer) -> bool | None:
    """True once the status endpoint (anonymous) answers and names one of our workers online (by its pid:
    an earlier worker, killed, stays "online" for WORKER_TTL); None until then."""
    try:
        with urllib.request.urlopen(server.base_url + _STATUS_PATH, timeout=5) as response:
            status = json.loads(response.read())
    except (OSError, ValueError):
        return None
    names = {str(worker.get("name", "")) for worker in status.get("online_workers") or []}
    return any(name.startswith(f"{pid}@") for pid in server.worker_pids for name in names) or None


def _logs_tail(logs: Path) -> str:
    """The last lines of the API's and the worker's logs, one line: `name: line | line ...`."""
    return " ".join(f"{name}.log ({logs / f'{name}.log'}): {servers.tail(logs / f'{name}.log', _LOG_LINES)}"
                    for name in ("api", "worker"))
