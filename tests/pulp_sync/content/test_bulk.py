"""pulp_sync/content/bulk.py on the tests' database (sqlite); PostgreSQL and MariaDB run it through whole
syncs in test_tasks.py and test_api.py."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from pulp_sync.content.bulk import insert_rows, now_for_insert
from pulp_sync.models import Artifact

FIELDS = ("sha256", "size", "relative_path", "created", "missing")


def test_rows_are_inserted_with_their_values_and_a_readable_time(db: Path) -> None:
    before = timezone.now()
    now = now_for_insert(Artifact)
    insert_rows(
        Artifact, FIELDS, [("a" * 64, 1, "artifact/aa/a", now, True), ("b" * 64, 2, "artifact/bb/b", now, False)]
    )
    rows = {a.sha256[0]: (a.size, a.relative_path, a.missing) for a in Artifact.objects.all()}
    assert rows == {"a": (1, "artifact/aa/a", True), "b": (2, "artifact/bb/b", False)}
    created = Artifact.objects.get(sha256="a" * 64).created
    assert created.tzinfo is not None and before - timedelta(seconds=1) <= created <= timezone.now()


def test_existing_rows_are_kept_when_conflicts_are_ignored_and_refused_otherwise(db: Path) -> None:
    now = now_for_insert(Artifact)
    insert_rows(Artifact, FIELDS, [("a" * 64, 1, "first", now, True)])
    insert_rows(
        Artifact, FIELDS, [("a" * 64, 9, "second", now, False), ("c" * 64, 3, "new", now, False)], ignore_conflicts=True
    )
    assert sorted(Artifact.objects.values_list("relative_path", "size")) == [("first", 1), ("new", 3)]
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows(Artifact, FIELDS, [("a" * 64, 9, "second", now, False)])
    assert Artifact.objects.count() == 2


def test_a_batch_is_one_transaction_even_in_autocommit_mode(db: Path) -> None:
    """Outside any transaction the drivers would commit each row of an executemany on its own:
    a row that fails must take the rows before it in the same call with it."""
    now = now_for_insert(Artifact)
    insert_rows(Artifact, FIELDS, [("a" * 64, 1, "first", now, True)])
    batch = [("b" * 64, 2, "before the duplicate", now, False), ("a" * 64, 9, "duplicate", now, False)]
    with pytest.raises(IntegrityError):
        insert_rows(Artifact, FIELDS, batch)
    assert list(Artifact.objects.values_list("relative_path", flat=True)) == ["first"]
