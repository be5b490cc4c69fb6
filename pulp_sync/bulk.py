"""Many rows into one table with one prepared INSERT, through Django's connection but not its models.

A sync writes three rows per file (Artifact, FileContent, RepositoryContent). `bulk_create` makes a
model instance per row and compiles every value into one long statement: on 10,000 small files
that was a tenth of the sync's time (docs/performance.md). Here the statement is made once and the
driver runs it over plain tuples (`cursor.executemany`: sqlite3 in C, psycopg pipelined, mysqlclient
as one multi-row INSERT). The SQL for "ignore rows that already exist" is each backend's own
(`INSERT OR IGNORE`, `ON CONFLICT DO NOTHING`, `INSERT IGNORE`), taken from Django.

The rows go in one transaction. Django runs in autocommit mode, where sqlite3 (isolation_level
None) and psycopg commit every row of an `executemany` on its own: 500 commits per batch, each
writing its pages to sqlite's WAL or waiting for PostgreSQL's WAL flush.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from django.db import connections, router, transaction
from django.db.models import Model
from django.db.models.constants import OnConflict
from django.utils import timezone

__all__ = ["insert_rows", "now_for_insert"]


def insert_rows(
    model: type[Model], fields: Sequence[str], rows: Iterable[Sequence[Any]], ignore_conflicts: bool = False
) -> None:
    """INSERT `rows` (values in the order of `fields`, ready for the driver) into `model`'s table.

    With `ignore_conflicts`, a row whose unique key exists already is skipped, as bulk_create's.
    Values go to the driver as they are: pass what the column stores (a datetime through
    `now_for_insert`), not model instances.
    """
    connection = connections[router.db_for_write(model)]
    operations = connection.ops
    on_conflict = OnConflict.IGNORE if ignore_conflicts else None
    columns = [model._meta.get_field(name).column for name in fields]
    statement = " ".join(
        part
        for part in (
            operations.insert_statement(on_conflict=on_conflict),
            operations.quote_name(model._meta.db_table),
            f"({', '.join(operations.quote_name(column) for column in columns)})",
            f"VALUES ({', '.join(['%s'] * len(columns))})",
            operations.on_conflict_suffix_sql(columns, on_conflict, None, None),
        )
        if part
    )
    with transaction.atomic(using=connection.alias, savepoint=False), connection.cursor() as cursor:
        cursor.executemany(statement, rows)


def now_for_insert(model: type[Model]) -> Any:
    """The current time as `model`'s database stores a DateTimeField (what auto_now_add would write)."""
    connection = connections[router.db_for_write(model)]
    return connection.ops.adapt_datetimefield_value(timezone.now())
