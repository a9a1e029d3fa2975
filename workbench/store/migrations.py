"""Numbered schema migrations, applied in order and recorded in ``schema_migrations``.

Migrations are data: ``migrations/NNN_name.sql`` files. An applied migration is
never edited; a change is a new file with the next number.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_NAME = re.compile(r"^(\d{3})_([a-z0-9_]+)\.sql$")


def available() -> list[tuple[int, str, Path]]:
    found = []
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        match = _NAME.match(path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    return found


def applied(con) -> set[int]:
    con.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                "version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)")
    return {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}


def migrate(con) -> list[int]:
    """Apply every pending migration, each in its own transaction. Returns the numbers applied."""
    done = applied(con)
    ran = []
    for number, name, path in available():
        if number in done:
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
