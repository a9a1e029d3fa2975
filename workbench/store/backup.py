"""Backup and restore of a DuckDB workspace database, in the portable format of ``backup_format``.

What is kept: every table of the schema (the whole history, events, traces, pins, sets, tokens
as hashes, proposals, ingest records, the schema's own record) except derived data, which a
restored workspace rebuilds: embeddings (a cache keyed by text and model; ~4 kB a fragment as
JSON), authority (PageRank), simhashes, the full-text index (``fts_docs`` and its schema) and the
``meta`` rows that say how far those were built. A new table is kept unless it is named in ``DERIVED``.

A backup reads every table inside one transaction, so it is one consistent snapshot even while
the team server writes (it runs in the server, on its own cursor: DuckDB's MVCC). A restore
builds a new database file beside the target: the schema up to the backup's migration, every
table loaded and checked (row counts, and the hashes of the tables dumped again when the backup
was written by this backend), then the later migrations, a checkpoint, and a rename into place.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import BackupInvalid, SchemaTooNew
from . import migrations
from .backup_format import Manifest, Reader, Writer

BACKEND = "duckdb"
DERIVED = ("embeddings", "authority", "simhashes", "fts_docs")  # rebuilt from the rest
DERIVED_META = ("fts_generation", "authority_generation", "authority_graph")
SEQUENCES = {"events": ("event_seq", "id")}  # table -> (its sequence, the column it numbers)
_PAGE = 5000


@dataclass(frozen=True)
class Restored:
    database: Path
    manifest: Manifest
    schema_from: int     # the backup's schema version
    schema_to: int       # the restored database's, after the later migrations


def tables(con) -> list[str]:
    """The tables a backup keeps, in name order."""
    rows = con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                       "AND schema_name = 'main' ORDER BY table_name").fetchall()
    return [r[0] for r in rows if r[0] not in DERIVED]


def columns(con, table: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = ? ORDER BY column_index", [table]).fetchall()]


def dump(con, table: str, cols: list[tuple[str, str]]) -> Iterator[str]:
    """The rows of ``table`` as JSON lines, in a deterministic order (every column, ascending)."""
    select = ", ".join(f'CAST("{c}" AS VARCHAR) AS "{c}"' if t == "JSON" else f'"{c}"' for c, t in cols)
    where = (" WHERE key NOT IN (" + ", ".join(f"'{k}'" for k in DERIVED_META) + ")") if table == "meta" else ""
    cursor = con.execute(f'SELECT to_json(t) FROM (SELECT {select} FROM "{table}"{where} ORDER BY ALL) t')
    while rows := cursor.fetchmany(_PAGE):
        for (line,) in rows:
            yield line


def workspace_files(root: Path) -> dict[str, bytes]:
    """The files a backup carries beside the tables: the workspace folder's YAML (workbench.yaml,
    a golden set kept there)."""
    found = {}
    for path in sorted(root.glob("*.yaml")):
        if path.is_file() and path.stat().st_size <= 16 * 1024 * 1024:
            found[path.name] = path.read_bytes()
    return found


def write(con, out: Path, *, files: dict[str, bytes] | None = None) -> Manifest:
    """Write a backup of the database behind ``con`` to ``out``; the caller holds the snapshot
    (one transaction) when the database may change meanwhile."""
    writer = Writer(out)
    try:
        for table in tables(con):
            cols = columns(con, table)
            writer.table(table, cols, dump(con, table, cols))
        for name, data in (files or {}).items():
            writer.file(name, data)
        found = con.execute("SELECT value FROM meta WHERE key = 'workspace_id'").fetchall() \
            if "meta" in writer.tables else []
        return writer.finish(backend=BACKEND, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                             workspace_id=found[0][0] if found else None, schema=sorted(migrations.recorded(con)))
    except BaseException:
        writer.abort()
        raise


def build(reader: Reader, target: Path) -> Restored:
    """Build a database at ``target`` (which must not exist) from a verified backup."""
    from .connect import connect

    manifest = reader.manifest
    ahead = migrations.unknown(manifest.schema)
    if ahead:
        raise SchemaTooNew(f"backup {reader.path} has schema version {max(ahead):03d}, newer than this workbench "
                           f"supports (up to {migrations.newest():03d}): upgrade workbench to restore it")
    version = max(manifest.schema, default=0)
    con = connect(target)
    try:
        migrations.migrate(con, upto=version)
        known = set(tables(con))
        strange = sorted(set(manifest.tables) - known)
        if strange:
            raise BackupInvalid(f"backup {reader.path} holds tables its schema ({version:03d}) does not have: "
                                f"{', '.join(strange)}")
        with tempfile.TemporaryDirectory(prefix="workbench-restore-") as tmp:
            con.execute("BEGIN TRANSACTION")
            for table, entry in manifest.tables.items():
                cols = columns(con, table)
                if [c for c, _ in cols] != [c for c, _ in entry.columns]:
                    raise BackupInvalid(f"backup {reader.path}: table {table}'s columns differ from schema "
                                        f"{version:03d}'s")
                _load(con, table, cols, reader.extract_table(table, Path(tmp) / "rows.jsonl"), entry.rows)
            _advance_sequences(con)
            con.execute("COMMIT")
        if manifest.backend == BACKEND:  # the same writer: the same bytes, or the load changed something
            for table, entry in manifest.tables.items():
                digest = hashlib.sha256()
                for line in dump(con, table, columns(con, table)):
                    digest.update((line + "\n").encode("utf-8"))
                if digest.hexdigest() != entry.sha256:
                    raise BackupInvalid(f"restoring {reader.path}: table {table} does not read back as it was "
                                        "backed up; nothing was restored")
        migrations.migrate(con)
        con.execute("CHECKPOINT")  # everything in the file: no write-ahead log to carry along
    finally:
        con.close()
    return Restored(target, manifest, version, migrations.newest())


def _load(con, table: str, cols: list[tuple[str, str]], path: Path, rows: int) -> None:
    names = ", ".join(f'"{c}"' for c, _ in cols)
    spec = "{" + ", ".join(f"'{c}': '{'VARCHAR' if t == 'JSON' else t}'" for c, t in cols) + "}"
    con.execute(f'DELETE FROM "{table}"')  # what the migrations seeded (meta's generation row)
    if rows:
        con.execute(f'INSERT INTO "{table}" ({names}) SELECT {names} FROM '
                    f"read_json(?, format='newline_delimited', maximum_object_size=1073741824, columns={spec})", [str(path)])
    found = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    if found != rows:
        raise BackupInvalid(f"restoring table {table}: {found} rows loaded, the backup lists {rows}")


def _advance_sequences(con) -> None:
    """Move each sequence past the highest number restored (DuckDB has no setval)."""
    for table, (sequence, column) in SEQUENCES.items():
        top = con.execute(f'SELECT coalesce(max("{column}"), 0) FROM "{table}"').fetchone()[0]
        if top:
            con.execute(f"SELECT max(nextval('{sequence}')) FROM range(?)", [int(top)])


def install(built: Path, database: Path) -> None:
    """Put the database built at ``built`` in place of ``database`` (whose write-ahead log, which
    belongs to the old file, goes first: replayed onto the new one it would corrupt it)."""
    for leftover in (database.with_name(database.name + ".wal"),):
        try:
            leftover.unlink()
        except FileNotFoundError:
            pass
    os.replace(built, database)


def restore(archive: Path, database: Path, *, lock_timeout: float | None = None) -> tuple[Restored, Reader]:
    """Verify the backup at ``archive``, build its database beside ``database`` and put it in place.
    A database already at ``database`` must not be held by another process (a running server): it
    is opened once, to take its lock, before it is replaced. Returns the open reader (for the files
    it carries): the caller closes it."""
    from .connect import connect, keep_private

    reader = Reader(archive)
    try:
        reader.verify()
        built = database.with_name(database.name + ".restoring")
        for leftover in (built, built.with_name(built.name + ".wal")):
            if leftover.exists():
                leftover.unlink()
        try:
            try:
                restored = build(reader, built)
            except Exception as e:
                if not type(e).__module__.startswith("duckdb"):
                    raise
                raise BackupInvalid(f"backup {archive} cannot be loaded ({e}); nothing was restored") from e
            if database.exists():
                connect(database, lock_timeout=lock_timeout).close()  # busy while someone holds it
            install(built, database)
        finally:
            for leftover in (built, built.with_name(built.name + ".wal")):
                if leftover.exists():
                    leftover.unlink()
        keep_private(database)
    except BaseException:
        reader.close()
        raise
    return Restored(database, restored.manifest, restored.schema_from, restored.schema_to), reader
