"""Numbered schema migrations, applied in order and recorded in ``schema_migrations``.

Migrations are data: ``migrations/NNN_name.sql`` files. An applied migration is
never edited; a change is a new file with the next number.

A read-only workspace is never migrated. It can still be read when every pending
migration is one this code can read without: a migration says so with a comment line
``-- read-compatible: WHY`` (e.g. it adds an index, or a table only writes use).
Without that line a pending migration blocks reads, with a message saying so.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")
_READ_COMPATIBLE = re.compile(r"^--\s*read-compatible:", re.MULTILINE)


def available(folder: Path | None = None) -> list[tuple[int, str, Path]]:
    """(number, name, path) of every migration in ``folder`` (each backend has its own SQL, numbered
    alike); DuckDB's, ``MIGRATIONS_DIR`` as it is when called, by default."""
    found = []
    for path in sorted((folder or MIGRATIONS_DIR).glob("*.sql")):
        match = _NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    return found


def applied(con) -> set[int]:
    con.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)")
    return {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}


def migrate(con, *, upto: int | None = None) -> list[int]:
    """Apply every pending migration (up to number ``upto``), each in its own transaction. Returns
    the numbers applied. A database with a migration this code does not know raises ``SchemaAhead``."""
    done = applied(con)
    check_not_ahead(done)
    ran = []
    for number, name, path in available():
        if number in done or (upto is not None and number > upto):
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(path.read_text(encoding="utf-8"))
            con.execute("INSERT INTO schema_migrations VALUES (?, ?, ?)",
                        [number, name, datetime.now(timezone.utc).replace(tzinfo=None)])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        ran.append(number)
    return ran


def pending(con) -> list[int]:
    done = applied(con)
    return [n for n, _, _ in available() if n not in done]


def recorded(con) -> set[int]:
    """The applied numbers, creating nothing: safe on a read-only connection."""
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                        "AND schema_name = 'main' AND table_name = 'schema_migrations'").fetchone()[0]
    if not found:
        return set()
    return {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}


def read_compatible(path: Path) -> bool:
    """Whether this code can read a database that lacks migration ``path``."""
    return bool(_READ_COMPATIBLE.search(path.read_text(encoding="utf-8")))


def check_readable(con) -> list[tuple[int, str]]:
    """For a read-only connection: the pending migrations (number, name), all read-compatible.
    Raises ``SchemaBehind`` when one of them is not (reads would fail on missing tables)."""
    done = recorded(con)
    check_not_ahead(done)
    pending = [(n, name, path) for n, name, path in available() if n not in done]
    blocking = [(n, name) for n, name, path in pending if not read_compatible(path)]
    if blocking:
        raise SchemaBehind(sorted(done), [(n, name) for n, name, _ in pending], blocking)
    return [(n, name) for n, name, _ in pending]


def newest() -> int:
    """The highest migration number this code knows."""
    return max((n for n, _, _ in available()), default=0)


def unknown(done: set[int] | list[int] | tuple[int, ...]) -> list[int]:
    """Applied numbers this code has no migration for (a newer workbench applied them)."""
    known = {n for n, _, _ in available()}
    return sorted(n for n in done if n not in known)


def check_not_ahead(done: set[int] | list[int]) -> None:
    """Raise ``SchemaAhead`` when the database records a migration this code does not know."""
    ahead = unknown(done)
    if ahead:
        raise SchemaAhead(max(ahead), newest())


def describe(pending: list[tuple[int, str]]) -> str:
    return ", ".join(f"{n:03d}_{name}" for n, name in pending)


class SchemaBehind(Exception):
    """A read-only database whose schema is too old for this code to read (Store turns this
    into a UserError naming the file)."""

    def __init__(self, done: list[int], pending: list[tuple[int, str]], blocking: list[tuple[int, str]]):
        self.done, self.pending, self.blocking = done, pending, blocking
        super().__init__(f"its schema is older than this workbench's (migration {max(done, default=0)} applied, "
                         f"{describe(pending)} pending; reads need {describe(blocking)}), and a read-only "
                         "database cannot be upgraded: open it once with write access")


class SchemaAhead(Exception):
    """The database was upgraded by a newer workbench (Store names the workspace in a UserError)."""

    def __init__(self, found: int, supported: int):
        self.found, self.supported = found, supported
        super().__init__(f"its schema version is {found:03d}, newer than this workbench supports "
                         f"(up to {supported:03d}): upgrade workbench")
