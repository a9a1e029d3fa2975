"""Moving a workspace between backends: ``workbench migrate --to URL`` (its DuckDB file into a
PostgreSQL database) and ``--to DIR`` (a PostgreSQL workspace into a new DuckDB folder).

The path is the portable backup (``backup_format``): the source writes one from a consistent
snapshot, the target loads it, and both sides are compared table by table, rows and a content
digest that does not depend on how a backend prints a value (timestamps compared as times, JSON
columns as parsed JSON, numbers as numbers). Embeddings, which backups leave out (a cache, but
35 minutes to recompute at 100k fragments), are copied after, bit for bit.

Into PostgreSQL the load is one transaction, committed only when every table matches: an
interrupted run leaves nothing behind and is simply run again; a database that already holds
exactly this workspace (a run interrupted after its commit) is reported as done; one holding
anything else is refused.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from ..errors import UserError
from .backup_format import Reader


@dataclass
class Moved:
    target: str
    tables: dict[str, int] = field(default_factory=dict)     # table -> rows, matched on both sides
    embeddings: int = 0
    already: bool = False                                    # the target held this workspace already

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "tables": self.tables, "embeddings": self.embeddings,
                "already_there": self.already}


def digest(lines: Iterable[str], columns: list[tuple[str, str]]) -> str:
    """A content digest of a table's JSON lines, the same whichever backend wrote them."""
    kinds = {name: _kind(kind) for name, kind in columns}
    found = hashlib.sha256()
    for line in lines:
        row = json.loads(line)
        canon = {k: _canonical(v, kinds.get(k, "")) for k, v in row.items()}
        found.update(json.dumps(canon, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n")
    return found.hexdigest()


def _kind(backend_type: str) -> str:
    t = backend_type.lower()
    if t.startswith("timestamp"):
        return "time"
    if t in ("json", "jsonb"):
        return "json"
    return ""


def _canonical(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "time" and isinstance(value, str):
        return datetime.fromisoformat(value.replace("T", " ")).isoformat()
    if kind == "json" and isinstance(value, str):
        return json.loads(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def table_digests(reader: Reader) -> dict[str, tuple[int, str]]:
    """table -> (rows, content digest) of a backup."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="workbench-move-") as tmp:
        for name, entry in reader.manifest.tables.items():
            path = reader.extract_table(name, Path(tmp) / f"{name}.jsonl")
            with open(path, encoding="utf-8") as lines:
                out[name] = (entry.rows, digest((line.rstrip("\n") for line in lines), list(entry.columns)))
    return out


def into_postgresql(reader: Reader, store) -> Moved:
    """Load the backup into the (migrated) PostgreSQL store, verify, commit."""
    from .pg import upkeep as pg

    want = table_digests(reader)
    moved = Moved(store.where)
    con = store._pool.get()
    try:
        present = {t: _pg_digest(con, t) for t in want} if _holds_fragments(con) else None
        if present is not None:
            if present == want:
                moved.tables, moved.already = {t: rows for t, (rows, _) in want.items()}, True
                return moved
            raise UserError(f"{store.where} already holds a workspace, not this one: migrate into an empty "
                            "database")
        known = set(pg.tables(con))
        strange = sorted(set(want) - known)
        if strange:
            raise UserError(f"the backup holds tables this workbench's PostgreSQL schema lacks: {', '.join(strange)}")
        con.execute("BEGIN")
        try:
            with tempfile.TemporaryDirectory(prefix="workbench-move-") as tmp:
                for name, entry in reader.manifest.tables.items():
                    _pg_load(con, name, reader.extract_table(name, Path(tmp) / f"{name}.jsonl"))
            con.execute("SELECT setval('event_seq', greatest((SELECT max(id) FROM events), 1))")
            for name, (rows, expected) in want.items():
                found = _pg_digest(con, name)
                if found != (rows, expected):
                    raise UserError(f"table {name} does not read back as it was in the source ({found[0]} rows of "
                                    f"{rows}, or different content); nothing was written to {store.where}")
                moved.tables[name] = rows
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        store._pool.put(con)
    return moved


def _holds_fragments(con) -> bool:
    return bool(con.execute("SELECT EXISTS (SELECT 1 FROM fragments)").fetchone()[0])


def _pg_digest(con, table: str) -> tuple[int, str]:
    from .pg import upkeep as pg

    cols = pg.columns(con, table)
    lines = list(pg.dump(con, table, cols)) if con.info.transaction_status else _in_snapshot(con, table, cols)
    return len(lines), digest(lines, cols)


def _in_snapshot(con, table: str, cols) -> list[str]:
    from .pg import upkeep as pg

    con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        return list(pg.dump(con, table, cols))
    finally:
        con.execute("ROLLBACK")


def _pg_load(con, table: str, path: Path) -> None:
    from .pg import upkeep as pg

    cols = pg.columns(con, table)
    names = [c for c, _ in cols]
    con.execute(f'DELETE FROM "{table}"')  # what the migrations seeded (meta's rows)
    with open(path, encoding="utf-8") as lines, con.cursor().copy(
            f'COPY "{table}" ({", ".join(chr(34) + n + chr(34) for n in names)}) FROM STDIN') as copy:
        for line in lines:
            row = json.loads(line)
            copy.write_row([_pg_value(row.get(n)) for n in names])


def _pg_value(value: Any) -> Any:
    if isinstance(value, (dict,)):
        return json.dumps(value)
    return value


def copy_embeddings(source, target) -> int:
    """Every stored vector of every model, source to target (both open stores); how many."""
    moved = 0
    for model in source.embedding_models():
        found = source.embeddings(model)
        if found:
            hashes = list(found)
            import numpy as np

            target.put_embeddings(model, hashes, np.stack([found[h] for h in hashes]))
            moved += len(hashes)
    return moved
