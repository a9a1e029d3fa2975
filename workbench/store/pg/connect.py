"""Connect to a PostgreSQL workspace: check the DSN, connect, check pgvector, and turn the
driver's errors into clear ones.

A DSN in workbench.yaml never carries a password (config.check_store refuses one: the file is
shared, committed, copied): libpq reads it from ``PGPASSWORD`` or ``~/.pgpass`` (``PGPASSFILE``),
as every PostgreSQL client does. Connections use client-side parameter binding (``ClientCursor``): the store's queries bind
``NULL`` and lists where the server could not infer a type, as DuckDB's text binding does.
JSON columns come back as their text (the store parses them, as with DuckDB). This module
decides and connects; it must not run migrations or queries beyond the version check.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ...errors import StoreError, StoreUnavailable

PGVECTOR_MIN = (0, 8)


def describe(dsn: str) -> str:
    """Where ``dsn`` points, for messages: database, host and port, never credentials."""
    try:
        parts = urlsplit(dsn)
        where = f"{parts.hostname}{f':{parts.port}' if parts.port else ''}" if parts.hostname else "the local socket"
        return f"PostgreSQL database {parts.path.lstrip('/') or '(default)'} at {where}"
    except ValueError:
        return "PostgreSQL"


def connect(dsn: str, *, read_only: bool = False):
    """A new autocommit connection (transactions are the store's own BEGIN/COMMIT)."""
    try:
        import psycopg
        from psycopg.types.string import TextLoader
    except ImportError as e:  # pragma: no cover - psycopg is a dependency
        raise StoreError("a PostgreSQL workspace needs psycopg: pip install 'psycopg[binary]'") from e
    try:
        con = psycopg.connect(dsn, autocommit=True, cursor_factory=psycopg.ClientCursor,
                              application_name="workbench", connect_timeout=10)
    except psycopg.Error as e:  # down, restarting, unreachable, or refusing us: the server answers 503
        raise StoreUnavailable(f"cannot connect to {describe(dsn)}: {_first_line(e)}") from e
    for name in ("json", "jsonb"):
        con.adapters.register_loader(name, TextLoader)
    if read_only:
        con.execute("SET default_transaction_read_only = on")
    return con


def pgvector_version(con) -> tuple[int, ...] | None:
    row = con.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return tuple(int(p) for p in row[0].split(".") if p.isdigit()) if row else None


def ensure_pgvector(con) -> None:
    """Create the extension when it is available and missing; refuse pgvector older than 0.8
    (iterative index scans, which filtered HNSW needs to return k rows)."""
    import psycopg

    found = pgvector_version(con)
    if found is None:
        try:
            con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as e:
            raise StoreError(f"pgvector is not installed in this database and cannot be created here "
                             f"({_first_line(e)}): run CREATE EXTENSION vector as its owner") from e
        found = pgvector_version(con)
    if found is None or found < PGVECTOR_MIN:
        have = ".".join(map(str, found)) if found else "none"
        raise StoreError(f"pgvector {'.'.join(map(str, PGVECTOR_MIN))} or newer is needed (found {have}): "
                         "ALTER EXTENSION vector UPDATE")


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or ["unknown error"])[0]
