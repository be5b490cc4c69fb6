"""Throwaway databases on the real servers of 127.0.0.1, for tests that run pulp-sync on each engine.

PostgreSQL (5432, trust auth) and MariaDB (3306, root with an empty password) are the servers that
`.ci/run` starts; sqlite needs only a file. Each test gets a database of its own, dropped after it,
so tests never share state and a failed run leaves nothing that breaks the next one. Creating and
dropping is the harness's own code (harness/variants/databases.py), so the tests exercise it too.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.variants.databases import ALIASES, create_database, drop_database

__all__ = ["ENGINES", "throwaway_database"]

ENGINES = ("sqlite", "postgresql", "mysql")


@contextmanager
def throwaway_database(engine: str, folder: Path) -> Iterator[str]:
    """A new, empty database on `engine` (one of ENGINES) and its DATABASE_URL; dropped afterwards."""
    if engine not in ENGINES:
        raise ValueError(f"unknown database engine {engine!r}; expected one of {ENGINES}")
    name = f"pulp_sync_test_{uuid.uuid4().hex[:12]}"
    if engine == "sqlite":
        yield f"sqlite:///{folder / (name + '.sqlite3')}"
        return
    url = str(ALIASES[engine]).rsplit("/", 1)[0] + "/" + name
    create_database(url)
    try:
        yield url
    finally:
        drop_database(url)
