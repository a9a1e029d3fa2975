"""Schema migrations on PostgreSQL: the same numbers and names as DuckDB's (``../migrations``),
written in PostgreSQL's SQL (``migrations/``), applied in order, each in its own transaction,
recorded in ``schema_migrations``.

Replicas may start at once: the whole upgrade runs under one advisory lock, so a second process
waits and then finds nothing pending. A read-only connection is never migrated (it may read when
every pending migration is read-compatible, as on DuckDB)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from .. import migrations as common

FOLDER = Path(__file__).resolve().parent / "migrations"
MIGRATION_LOCK = 7_302_911  # pg_advisory_lock key of schema upgrades (writes use another)


def available() -> list[tuple[int, str, Path]]:
    return common.available(FOLDER)


def recorded(con) -> set[int]:
    """The applied numbers, creating nothing."""
    found = con.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    if not found:
        return set()
    return {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}


def migrate(con) -> list[int]:
    """Apply every pending migration. Returns the numbers applied (by this process)."""
    from .connect import ensure_pgvector

    con.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK])
    try:
        ensure_pgvector(con)
        con.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                    "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)")
        done = recorded(con)
        ran = []
        for number, name, path in available():
            if number in done:
                continue
            with con.transaction():
                con.execute(path.read_text(encoding="utf-8").replace("%", "%%"), [])
                con.execute("INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                            [number, name, datetime.now(timezone.utc).replace(tzinfo=None)])
            ran.append(number)
        return ran
    finally:
        con.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK])


def check_readable(con) -> list[tuple[int, str]]:
    """For a read-only connection: the pending migrations, all read-compatible; raises
    ``SchemaBehind`` when one is not."""
    done = recorded(con)
    pending = [(n, name, path) for n, name, path in available() if n not in done]
    blocking = [(n, name) for n, name, path in pending if not common.read_compatible(path)]
    if blocking:
        raise common.SchemaBehind(sorted(done), [(n, name) for n, name, _ in pending], blocking)
    return [(n, name) for n, name, _ in pending]
