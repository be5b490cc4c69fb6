"""Starting Django on our settings, creating the schema, and the seed's `pclean` (reset).

Django's migration machinery (and through it every model) is imported only by the functions that
use it: a reset on sqlite needs none of it, and the harness runs one reset per run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pkgutil
import random
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import django
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection, connections
from django.db.utils import load_backend
from django.utils.module_loading import import_string

from pulp_base import private
from pulp_sync import defaults, locks
from pulp_sync.content.store import artifact_store
from pulp_sync.errors import ConfigurationError

__all__ = ["configure", "setup", "migrate", "ensure_schema", "reset", "describe", "explain", "retried", "identity",
           "fresh_connections", "close_before_fork"]

_LOST_A_LOCK = ({"40P01", "40001"}, {1213, 1205}, ("database is locked",),
                "the database gave up on a lock (a deadlock, or another writer held it too long): run it again")
_WHAT_HAPPENED = (
    # (PostgreSQL SQLSTATEs, MySQL/MariaDB error numbers, words of sqlite's message): what it means for people
    _LOST_A_LOCK,
    ({"22001"}, {1406}, ("too long",), "a value is too long for its column"),
    ({"23505", "23503"}, {1062, 1451, 1452}, ("UNIQUE constraint", "FOREIGN KEY constraint"),
     "the database refused a duplicate or a dangling reference"),
    ({"08001", "08006", "57P03"}, {2002, 2003, 2005, 2006, 2013, 1045, 1049},
     ("unable to open database file",), "cannot reach the database: is the server up, and DATABASE_URL right?"),
)
"""How database errors are told apart: by the driver's code where it has one (psycopg's `sqlstate`,
MySQLdb's errno), by sqlite's message where not."""

_SCHEMA_LOCK = "pulp_sync.schema"

_DRIVERS = {
    "django.db.backends.postgresql": ("PostgreSQL", "postgres"),
    "django.db.backends.mysql": ("MariaDB/MySQL", "mysql"),
}
"""The server databases' Django backends: the database's name, and the extra of setup.py that installs its driver."""

T = TypeVar("T")

_INHERITED: list[Any] = []
"""A forked child's copies of its parent's connections, kept unclosed (fresh_connections(forked=True))."""


def explain(error: DatabaseError) -> str:
    """A database error in one line that says what happened, with the driver's own message (and any
    note added on the way, such as how often it was tried) after it."""
    message = " ".join(" ".join([str(error), *getattr(error, "__notes__", ())]).split())
    for entry in _WHAT_HAPPENED:
        if _is(error, entry):
            return f"{entry[3]} ({message})"
    if "connection" in message.lower() and "refused" in message.lower():
        return f"cannot reach the database: is the server up, and DATABASE_URL right? ({message})"
    return f"database error: {message}"


def retried(operation: Callable[[], T], tries: int = defaults.DATABASE_TRIES) -> T:
    """`operation`'s result, running it again (up to `tries` times in all) while the database picks it as a
    deadlock's victim or gives up waiting for a lock; the last such error carries a note saying so.

    Concurrent syncs insert the same rows; sorted inserts make deadlocks rare, but MariaDB's gap locks
    and PostgreSQL's foreign-key checks can still meet in a cycle, and the database then rolls one
    transaction back for the caller to retry. `operation` must be a whole transaction (or a statement
    in autocommit): inside an outer transaction the rollback undid more than `operation`, so there it
    runs once and the outermost caller decides.
    """
    for attempt in range(1, tries + 1):
        try:
            return operation()
        except DatabaseError as error:
            if connection.in_atomic_block or not _is(error, _LOST_A_LOCK) or attempt == tries:
                if attempt > 1:
                    error.add_note(f"tried {attempt} times")
                raise
        time.sleep(random.uniform(0.05, 0.2) * attempt)  # apart, so the same transactions do not meet again
    raise AssertionError("unreachable: the last try returns or raises")


def _is(error: DatabaseError, entry: tuple[set[str], set[int], tuple[str, ...], str]) -> bool:
    cause = error.__cause__
    sqlstate = getattr(cause, "sqlstate", None)
    errno = cause.args[0] if cause is not None and cause.args and isinstance(cause.args[0], int) else None
    sqlstates, errnos, words, _ = entry
    return sqlstate in sqlstates or errno in errnos or any(word in str(error) for word in words)


@contextmanager
def fresh_connections(*, forked: bool = False) -> Iterator[None]:
    """Django's connections opened afresh for the block and closed at its end, however it ends: what a job,
    a worker's thread or a forked child runs in. A forked process must not use a connection its parent
    opened (two processes on one socket), and one kept open between jobs may have gone stale meanwhile.

    `forked`: this process is a child just forked from one that goes on using its connections (children.py).
    Their copies are set aside, unused and unclosed, until the child ends with os._exit: closing one would
    end the parent's session too (a PostgreSQL or MariaDB connection's close says goodbye to the server),
    and with it the locks the parent holds, such as its repository's."""
    if forked:
        _set_aside_the_parents_connections()
    else:
        connections.close_all()
    try:
        yield
    finally:
        connections.close_all()


def close_before_fork() -> None:
    """Close this process's connections before it forks children that are not ours to run (gunicorn's
    workers, RQ's work horses): each child then opens its own, and none inherits one to share with this
    process (Django's rule: two processes never use one connection)."""
    connections.close_all()


def _set_aside_the_parents_connections() -> None:
    """Make Django open new connections in this forked child, keeping the copied ones from the garbage
    collector, which would close them (fresh_connections says why they stay open)."""
    for each in connections.all(initialized_only=True):
        _INHERITED.append(each.connection)
        each.connection = None


def configure() -> None:
    """Point Django at `pulp_sync.settings` (unless DJANGO_SETTINGS_MODULE names other settings), create
    PULP_SYNC_HOME and the sqlite database, owner-only, and tighten what an earlier installation left
    readable by others: enough for settings and a connection, without loading any app's models.

    Every process that opens the database comes through here first (the CLI, the API's WSGI module,
    `pulp_sync.setup()`), so no connection ever makes the file itself (pulp_base.private says why)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "pulp_sync.settings")
    _check_driver()
    home = Path(settings.PULP_SYNC_HOME)
    private.make_directory(home)
    str(settings.SECRET_KEY)  # read, or made on the first start (pulp_sync.settings): a bad key file fails here
    sqlite_file = _sqlite_file()
    _tighten(home, sqlite_file)
    if sqlite_file is not None:
        _create_sqlite(sqlite_file)


def _check_driver() -> None:
    """The driver of a server database can be imported (Django's backend imports it, as the first query
    would); else a ConfigurationError saying which extra installs it, rather than Django's traceback."""
    engine = settings.DATABASES["default"]["ENGINE"]
    if engine not in _DRIVERS:
        return
    try:
        load_backend(engine)
    except (ImproperlyConfigured, ImportError) as error:
        name, extra = _DRIVERS[engine]
        raise ConfigurationError(f"DATABASE_URL names {name}, but its driver is not installed (or cannot be "
                                 f"imported): pip install 'pulp-sync[{extra}]'") from error


def setup() -> None:
    """Start Django on our settings (see `configure`), models and all."""
    configure()
    django.setup()


def migrate() -> None:
    """Bring the schema up to date, quietly; a no-op when it already is. Under the schema lock, so any
    number of processes starting on an empty database at once (an API, workers, syncs) migrate it once."""
    from django.core.management import call_command

    setup()
    with locks.held(_SCHEMA_LOCK, wait=None):
        call_command("migrate", verbosity=0, interactive=False)


def ensure_schema() -> None:
    """`migrate` unless every migration on disk is already recorded as applied.

    The check is one query and a directory listing per app; a no-op `migrate` costs ~60 ms (it
    loads the migration graph and emits post_migrate, which queries content types and
    permissions), paid by every sync. Anything unexpected (no table yet, a squashed migration)
    falls through to `migrate`, which is always right.
    """
    if not _migrations_on_disk() <= _applied_migrations():
        migrate()


def reset() -> None:
    """A fresh, empty schema and an empty artifact store: the state before a benchmark run.

    sqlite's file is replaced by a copy of a freshly migrated template (made on first use, next to
    it). A server database whose schema is current is emptied by Django's `flush` (TRUNCATE,
    sequences restarted): the same state as dropping and migrating, several times quicker. Any
    other server schema (older, or half made) is dropped and migrated afresh. A store that could not
    be emptied raises StoreError after the database is reset.
    """
    from django.core.management import call_command

    configure()
    sqlite_file = _sqlite_file()
    connections.close_all()
    try:
        artifact_store().remove_all()
    finally:  # files it could not delete are the store's error to report; the schema is fresh all the same
        if sqlite_file is not None:
            _reset_sqlite(sqlite_file)
        else:
            setup()
            if _schema_is_current():
                call_command("flush", verbosity=0, interactive=False)
            else:
                _drop_tables()
            migrate()


def identity() -> str:
    """Which database this is, as its server knows it, whatever address DATABASE_URL gives it by: the
    same for every process of one installation, on any host, and different for two installations that
    share a Redis (see queues.queue_name). PostgreSQL: its cluster's system identifier and the database;
    MariaDB/MySQL: the server's host name and port and the database; sqlite: this host and the file."""
    queries = {
        "postgresql": "SELECT system_identifier::text, current_database() FROM pg_control_system()",
        "mysql": "SELECT @@hostname, @@port, DATABASE()",
    }
    if connection.vendor not in queries:
        return f"sqlite:{socket.gethostname()}:{Path(str(settings.DATABASES['default']['NAME'])).resolve()}"
    with connection.cursor() as cursor:
        cursor.execute(queries[connection.vendor])
        return f"{connection.vendor}:" + ":".join(str(value) for value in cursor.fetchone())


def describe() -> str:
    """The database in use, for messages: the sqlite file, or engine and name (never credentials)."""
    sqlite_file = _sqlite_file()
    if sqlite_file is not None:
        return f"sqlite {sqlite_file}"
    database = settings.DATABASES["default"]
    return f"{connection.vendor} {database.get('NAME')} on {database.get('HOST') or 'localhost'}"


def _sqlite_file() -> Path | None:
    database = settings.DATABASES["default"]
    name = str(database.get("NAME", ""))
    if database["ENGINE"] != "django.db.backends.sqlite3" or name in ("", ":memory:") or name.startswith("file:"):
        return None
    return Path(name)


def _sqlite_files(sqlite_file: Path) -> tuple[Path, Path, Path]:
    """The database and the -wal and -shm files sqlite keeps beside it in WAL mode."""
    return sqlite_file, Path(f"{sqlite_file}-wal"), Path(f"{sqlite_file}-shm")


def _tighten(home: Path, sqlite_file: Path | None) -> None:
    """Make what holds secrets owner-only where an earlier installation left it readable by others (the
    home, the secret key, the sqlite files), saying so in one line on stderr; silent when nothing was.
    One it cannot change (another user's) is a ConfigurationError: used as it is, it stays readable."""
    files = _sqlite_files(sqlite_file) if sqlite_file is not None else ()
    try:
        tightened = private.tighten([home, home / defaults.SECRET_KEY_FILE, *files])
    except OSError as error:
        raise ConfigurationError(
            f"{error.filename} may be read by other users and pulp-sync cannot make it owner-only "
            f"({error.strerror or error}): run pulp-sync as its owner, or have the owner run "
            f"`chmod go= {error.filename}`"
        ) from error
    if tightened:
        print(f"pulp-sync: made owner-only, as other users could read them: {', '.join(tightened)}", file=sys.stderr)


def _create_sqlite(sqlite_file: Path) -> None:
    """The sqlite database as an empty owner-only file, unless it exists, before a connection opens it:
    sqlite would make it with the umask's mode (and -wal and -shm take the database's), while it takes an
    empty file for an empty database and keeps its mode."""
    try:
        private.create(sqlite_file)
    except OSError as error:
        raise ConfigurationError(
            f"cannot create the sqlite database {sqlite_file} ({error.strerror or error}): give a path in a "
            "folder pulp-sync may write (DATABASE_URL=sqlite:////path), or unset DATABASE_URL"
        ) from error


def _reset_sqlite(sqlite_file: Path) -> None:
    """Replace the database with a copy of the migrated template: a file copy instead of running
    every migration, which takes most of a reset's time. The template's name carries a digest of
    the migration files, so changing any migration makes (and uses) a new one. The database and the
    template are owner-only whatever the umask: each copy is made so, and so is the database that
    `migrate` starts from (its `configure` creates it)."""
    for path in _sqlite_files(sqlite_file):
        path.unlink(missing_ok=True)
    template = sqlite_file.with_name(f"{sqlite_file.name}.template-{_migrations_digest()[:16]}")
    if template.exists():
        private.copy(template, sqlite_file)
        return
    migrate()
    connections.close_all()
    for stale in sqlite_file.parent.glob(f"{sqlite_file.name}.template-*"):
        stale.unlink(missing_ok=True)
    partial = template.with_name(f"{template.name}.{os.getpid()}.part")
    private.copy(sqlite_file, partial)
    os.replace(partial, template)


def _migrations_digest() -> str:
    """sha256 over every installed app's migration files (names and contents) and Django's version."""
    digest = hashlib.sha256(django.get_version().encode())
    for app, name, path in sorted(_migration_files()):
        digest.update(f"{app}.{name}".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _migration_files() -> Iterator[tuple[str, str, Path]]:
    """(app label, migration name, file) of every installed app's migrations, named as Django's
    loader names them, found without importing a migration, a model or even the app's package
    (django.contrib.auth's imports most of Django)."""
    for label, package in _migration_packages():
        parent, _, last = package.rpartition(".")
        spec = importlib.util.find_spec(parent) if parent else None
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location) / last
            for module in pkgutil.iter_modules([str(folder)]):
                if not module.ispkg and module.name[0] not in "_~":
                    yield label, module.name, folder / f"{module.name}.py"


def _migration_packages() -> Iterator[tuple[str, str]]:
    """(app label, migrations package) per INSTALLED_APPS entry, an app's module or its AppConfig."""
    for entry in settings.INSTALLED_APPS:
        try:
            is_module = importlib.util.find_spec(entry) is not None
        except ModuleNotFoundError:  # "package.apps.SomeConfig": its parent is not a package
            is_module = False
        name, label = entry, entry.rpartition(".")[2]
        if not is_module:
            config = import_string(entry)
            name = config.name
            label = getattr(config, "label", name.rpartition(".")[2])
        package = settings.MIGRATION_MODULES.get(label, f"{name}.migrations")
        if package is not None:
            yield label, package


def _migrations_on_disk() -> set[tuple[str, str]]:
    """(app label, migration name) of every migration file of every installed app."""
    return {(label, name) for label, name, _ in _migration_files()}


def _applied_migrations() -> set[tuple[str, str]]:
    """What django_migrations records as applied; empty when there is no such table yet."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT app, name FROM django_migrations")
            return {(app, name) for app, name in cursor.fetchall()}
    except DatabaseError:
        return set()


def _schema_is_current() -> bool:
    """Every migration is applied and every model's table exists, so emptying them gives a fresh schema."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return False
    introspection = connection.introspection
    return len(introspection.django_table_names(only_existing=True)) == len(introspection.django_table_names())


def _drop_tables() -> None:
    """Drop the tables of every installed model and Django's migration record, on any engine.

    `delete_model` also drops a model's implicit many-to-many tables. A proxy model (DRF's
    TokenProxy) shares its concrete model's table, so it is skipped. Constraint checks are off
    while dropping (MySQL refuses to drop a referenced table otherwise; PostgreSQL's DROP TABLE
    ... CASCADE needs no help).
    """
    from django.apps import apps
    from django.db.migrations.recorder import MigrationRecorder
    from django.db.models import Model

    existing = set(connection.introspection.table_names())
    models: list[type[Model]] = [*apps.get_models(), MigrationRecorder.Migration]
    with connection.constraint_checks_disabled(), connection.schema_editor() as editor:
        for model in models:
            if model._meta.managed and not model._meta.proxy and model._meta.db_table in existing:
                editor.delete_model(model)
