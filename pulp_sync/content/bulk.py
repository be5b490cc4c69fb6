"""Many rows into one table with one prepared INSERT, through Django's connection but not its models.

A sync writes three rows per file (Artifact, FileContent, RepositoryContent). `bulk_create` makes a
model instance per row and compiles every value into one long statement: on 10,000 small files
that was a tenth of the sync's time (docs/performance.md). Here the statement is made once and the
driver runs it over plain tuples: `cursor.executemany` on sqlite (a loop in C) and MariaDB
(mysqlclient sends one multi-row INSERT); on PostgreSQL one multi-row INSERT per chunk, because
Django's client-side-binding cursor runs an executemany as one statement per row (10,000 rows:
0.64-0.72 s against 0.46 s for multi-row statements, psycopg 3.3 on this project's CI machine).
The SQL for "ignore rows that already exist" is each backend's own (`INSERT OR IGNORE`,
`ON CONFLICT DO NOTHING`, `INSERT IGNORE`), taken from Django.

The rows of one call go in one transaction, on every backend: all or none. Django runs in
autocommit mode, where sqlite3 (isolation_level None) commits every row of an `executemany` on its
own: 500 commits per batch, each writing its pages to the WAL and taking sqlite's locks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, TypeVar

from django.db import connections, router, transaction
from django.db.models import Field, Model
from django.db.models.constants import OnConflict
from django.utils import timezone

__all__ = ["insert_rows", "now_for_insert", "batches"]

_MAX_PARAMETERS = 65535
"""Parameters PostgreSQL's protocol allows in one statement."""

T = TypeVar("T")


def insert_rows(
    model: type[Model], fields: Sequence[str], rows: Sequence[Sequence[Any]], ignore_conflicts: bool = False
) -> None:
    """INSERT `rows` (values in the order of `fields`, ready for the driver) into `model`'s table. A
    sequence, not an iterator: an insert that `database.retried` runs again reads them again.

    With `ignore_conflicts`, a row whose unique key exists already is skipped, as bulk_create's.
    Values go to the driver as they are: pass what the column stores (a datetime through
    `now_for_insert`), not model instances.
    """
    connection = connections[router.db_for_write(model)]
    operations = connection.ops
    on_conflict = OnConflict.IGNORE if ignore_conflicts else None
    columns = [_column(model, name) for name in fields]
    head = (
        f"{operations.insert_statement(on_conflict=on_conflict)} {operations.quote_name(model._meta.db_table)} "
        f"({', '.join(operations.quote_name(column) for column in columns)}) VALUES "
    )
    placeholders = f"({', '.join(['%s'] * len(columns))})"
    tail = operations.on_conflict_suffix_sql(columns, on_conflict, None, None) or ""
    with transaction.atomic(using=connection.alias, savepoint=False), connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.executemany(f"{head}{placeholders} {tail}", rows)
            return
        for chunk in batches(rows, _MAX_PARAMETERS // len(columns)):
            values = ", ".join([placeholders] * len(chunk))
            cursor.execute(f"{head}{values} {tail}", [value for row in chunk for value in row])


def _column(model: type[Model], name: str) -> str:
    """The column of `model`'s field `name`; a ValueError for a name that has none (a reverse relation,
    a many-to-many field)."""
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or field.column is None:
        raise ValueError(f"{model.__name__}.{name} is not a column: insert_rows takes concrete fields")
    return field.column


def now_for_insert(model: type[Model]) -> Any:
    """The current time as `model`'s database stores a DateTimeField (what auto_now_add would write)."""
    connection = connections[router.db_for_write(model)]
    return connection.ops.adapt_datetimefield_value(timezone.now())


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of up to `size` items, drawn lazily (itertools.batched needs Python 3.12)."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
