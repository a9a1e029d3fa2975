"""Typed reads and transactional writes over the workspace database."""

from __future__ import annotations

import contextlib
import json
import tempfile
import threading
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..errors import ReadOnly, SchemaTooNew, StoreError
from ..models import Content, Fragment, Scope, Version, utcnow
from . import migrations, upgrade
from .connect import keep_private, open_database, read_only_message
from .counts import CountQueries
from .curation import CurationQueries
from .export import ExportQueries
from .fts import FtsQueries
from .overrides import OverrideQueries
from .proposals import ProposalQueries
from .retrieval import RetrievalQueries
from .rows import Stamp, Stored, Summary, VersionWrite, text_column
from .rows import fragment_from_row as _fragment
from .rows import version_from_row as _version
from .tokens import TokenQueries
from .upkeep_queries import BackupQueries

_FRAGMENT_COLS = ("id, version, kind, title, body, org, repo, persona, session, owner, status, tags, links, "
                  "supersedes, sources, details, content_hash, created_at, updated_at, verified_at")


class Store(RetrievalQueries, FtsQueries, CurationQueries, ExportQueries, OverrideQueries, TokenQueries,
            ProposalQueries, CountQueries, BackupQueries):
    """One open workspace database.

    ``read_only``: None (default) opens read-write when the file system allows it and
    read-only otherwise (see ``connect.open_database``); True always opens read-only;
    False insists on writing. In read-only mode nothing is migrated, user writes raise a
    ``ReadOnly`` error (``require_writable``) and derived data (embeddings, authority, traces,
    the FTS index) is kept in memory or skipped instead of stored."""

    def __init__(self, path: Path, *, read_only: bool | None = None, lock_timeout: float | None = None):
        self.path = Path(path)
        self._mode = read_only
        self.read_only = bool(read_only)  # the mode of the current connection (decided on each connect)
        self.read_only_reason: str | None = "opened read-only" if read_only else None
        self.schema_pending: list[tuple[int, str]] = []  # read-only only: read-compatible migrations not applied
        self.lock_timeout = lock_timeout
        self._con = None
        self._local = threading.local()  # per thread: its DuckDB cursor (shared mode) and transaction depth
        self._write_lock = threading.RLock()  # one writer at a time in this process (shared mode)
        self.shared = False
        self.gen_epoch = 0
        self._blame = self.path
        self._memory_authority = None  # read-only: PageRank computed in memory (see put_authority)
        self._memory_authority_graph: str | None = None
        self._connect()

    # -- plumbing ---------------------------------------------------------------------

    def _connect(self) -> None:
        import duckdb

        con, problem = open_database(self.path, read_only=self._mode, lock_timeout=self.lock_timeout)
        self.forget_generation()  # another process may have written while we were away
        self.epoch = getattr(self, "epoch", 0) + 1  # caches keyed by generation must not outlive a reconnect
        self.read_only = problem is not None
        self._blame, self.read_only_reason = problem if problem else (self.path, None)
        self.schema_pending = []
        try:
            if self.read_only:
                self.schema_pending = migrations.check_readable(con)
            else:
                upgrade.upgrade(con, self.path)  # a backup first when it upgrades an existing schema
        except migrations.SchemaAhead as e:
            con.close()
            raise SchemaTooNew(f"workspace {self.path.parent}: {e}") from e
        except migrations.SchemaBehind as e:
            con.close()
            raise ReadOnly(read_only_message(self._blame, f"{self.read_only_reason}; {e}", "read it")) from e
        except duckdb.Error as e:
            con.close()
            raise StoreError(f"database error: {e}") from e
        self._con = con
        if not self.read_only:
            keep_private(self.path)  # this user's alone: the file, its log, DuckDB's spill folder

    @property
    def con(self):
        """The DuckDB connection, reopened on demand after ``release``; in shared mode, this
        thread's own cursor on it (a DuckDB connection object must not be used by two threads)."""
        if self._con is None:
            self._connect()
        if not self.shared:
            return self._con
        cursor = getattr(self._local, "cursor", None)
        if cursor is None or getattr(self._local, "epoch", None) != self.epoch:
            cursor = self._local.cursor = self._con.cursor()
            self._local.epoch = self.epoch
        return cursor

    def share(self) -> None:
        """Serve many threads at once (the team server): each thread reads through its own
        cursor (DuckDB's MVCC gives it a consistent snapshot), and writes are serialised, one
        writer at a time (``transaction`` and every statement that changes data).

        A write-ahead log left over the checkpoint threshold is checkpointed now: DuckDB would do
        it at the first commit, under a request (~1 s at 10k fragments), instead of before any."""
        self.shared = True
        # One DuckDB thread: the server's queries are small (a block of fragments, a trace batch),
        # and DuckDB's pool (one thread per core) woke for each, competing with the threads
        # answering requests on 2 cores. Measured under benchmarks/load.py: the server used
        # 0.46-0.53 cores for the same load instead of 0.51-0.58, search p95 lower in 3 of 4 pairs.
        # The query runs on the calling thread, so a background build's queries run at its priority.
        self._q("SET threads = 1")
        if not self.read_only:
            self._q("SET checkpoint_threshold = '1TB'")  # checkpoints are ours: see ``checkpoint_if_due``
        self.checkpoint_if_due()

    def checkpoint_if_due(self, *, idle: bool = True) -> bool:
        """In shared mode: checkpoint when the write-ahead log passed the threshold (4 MB when
        ``idle``; under load, 64 MB). A checkpoint rewrites what changed since the last one and
        holds every query up while it runs (0.4-1.5 s at 10k fragments, measured in the team
        server under load: every request in flight stalled). DuckDB would make it at whichever
        commit crossed 4 MB, in the middle of the busiest minute; here it is made when the
        server is quiet (the trace writer's idle tick), at start (``share``, and the server
        again after warming), and under sustained load at most once per 64 MB of log (~10
        minutes of 20 requests a second; a crash replays at most that much, ~1.5 s, on open)."""
        from .connect import CHECKPOINT_BUSY_BYTES, CHECKPOINT_BYTES

        if not self.shared or self.read_only:
            return False
        wal = self.path.with_name(self.path.name + ".wal")
        try:
            due = wal.stat().st_size > (CHECKPOINT_BYTES if idle else CHECKPOINT_BUSY_BYTES)
        except OSError:
            return False
        if due:
            with self._write_lock:
                self._q("CHECKPOINT")
        return due

    @property
    def _depth(self) -> int:
        return getattr(self._local, "depth", 0)

    @_depth.setter
    def _depth(self, value: int) -> None:
        self._local.depth = value

    def forget_generation(self) -> None:
        """Drop the cached generation (a write changed it, or may have); readers that read it
        concurrently do not cache what they read (see ``generation``)."""
        self.gen_epoch += 1
        self._generation = None

    def release(self) -> None:
        """Let go of the file (and its lock) between operations; the next query reconnects.
        Long-running faces call this so other processes can use the workspace meanwhile."""
        if self._con is not None and self._depth == 0:
            from .connect import clear_release_request

            self._con.close()
            self._con = None
            clear_release_request(self.path)

    def release_requested(self) -> bool:
        """Whether another process waits for this workspace (it asked while we held it)."""
        from .connect import release_requested

        return self._con is not None and release_requested(self.path)

    def close(self) -> None:
        self.flush_traces()
        if self.shared and self._con is not None:
            try:  # a shared store's log may be up to 64 MB: leave the next process at most 4 MB to replay
                self.checkpoint_if_due(idle=True)
            except StoreError:
                pass  # DuckDB replays the log on the next open
        if self._con is not None:
            self._con.close()
            self._con = None

    def require_writable(self, what: str = "write") -> None:
        """Raise ``ReadOnly`` (a UserError, exit 2) unless this workspace can be written.
        Called by every user write (``transaction``); derived-data writers ask
        ``can_store_derived`` instead and skip their write."""
        if self._con is None:
            self._connect()  # the mode is decided when the file is (re)opened
        if self.read_only:
            raise ReadOnly(read_only_message(self._blame, self._read_only_why(), what))

    def can_store_derived(self) -> bool:
        """Whether derived data (embeddings, authority, FTS, traces, simhashes) may be stored;
        when not, it is computed in memory and not stored. Never raises for read-only."""
        if self._con is None:
            self._connect()
        return not self.read_only

    def _read_only_why(self) -> str:
        why = self.read_only_reason or "read-only"
        if self.schema_pending:
            why += (f"; also, its schema is older than this workbench's ({migrations.describe(self.schema_pending)} "
                    "not applied) and is upgraded on the first writable open")
        return why

    def _guard(self, fn, *args):
        import duckdb

        try:
            result = fn(*args)
        except duckdb.Error as e:
            if _refused_write(e):  # a write that reached a read-only file: say so, never a traceback
                why = self._read_only_why() if self.read_only else f"DuckDB could not write: {e}"
                raise ReadOnly(read_only_message(self._blame, why)) from e
            raise StoreError(f"database error: {e}") from e
        if not self._depth and not self.read_only:  # a commit (re)creates the log after each checkpoint
            keep_private(self.path, log_only=True)
        return result

    def _q(self, sql: str, params: list[Any] | tuple = ()) -> list[tuple]:
        if self.shared and not self._depth and sql.lstrip()[:6].upper() in _WRITES:
            with self._write_lock:  # an autocommit write (a trace, a meta row): one writer at a time
                return self._guard(lambda: self.con.execute(sql, list(params)).fetchall())
        return self._guard(lambda: self.con.execute(sql, list(params)).fetchall())

    @contextmanager
    def transaction(self, what: str = "write") -> Iterator["Store"]:
        """All writes inside commit together or not at all. Nested use joins the outer one.
        A transaction is a user write: on a read-only workspace it raises before anything runs."""
        if self._depth:
            self._depth += 1
            try:
                yield self
            finally:
                self._depth -= 1
            return
        self.require_writable(what)
        with self._write_lock if self.shared else contextlib.nullcontext():
            self._q("BEGIN TRANSACTION")
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._depth = 0
                self.forget_generation()  # cached state may have seen the rolled-back writes
                self.epoch += 1           # ... and a generation number may be reused after a rollback
                try:
                    self.con.execute("ROLLBACK")
                except Exception:
                    pass
                raise
            self._depth = 0
            self._q("COMMIT")
            if self.shared and getattr(self._local, "bumped", False):
                self.forget_generation()  # a reader may have cached the one before this commit
            self._local.bumped = False

    def schema_versions(self) -> list[int]:
        return sorted(migrations.recorded(self.con) if self.read_only else migrations.applied(self.con))

    # -- reads ------------------------------------------------------------------------

    def get(self, fragment_id: str) -> Fragment | None:
        rows = self._q(f"SELECT {_FRAGMENT_COLS} FROM fragments WHERE id = ?", [fragment_id])
        return _fragment(rows[0]) if rows else None

    def fragments(self, *, owner: str | None = None, kind: str | None = None, within: Scope | None = None,
                  status: str | None = None, ids: list[str] | None = None, id_from: str | None = None,
                  id_to: str | None = None) -> list[Fragment]:
        """Fragments read whole, in id order, filtered; ``id_from`` / ``id_to``: ids in that range (both ends in)."""
        where, params = _filters(owner, kind, within, status)
        for bound, op in ((id_from, ">="), (id_to, "<=")):
            if bound is not None:
                where.append(f"id {op} ?")
                params.append(bound)
        if ids is not None:
            ids = list(ids)
            if not ids:
                return []
            where.append(f"id IN ({', '.join('?' * len(ids))})")  # a key lookup (list_contains scans)
            params.extend(ids)
        sql = f"SELECT {_FRAGMENT_COLS} FROM fragments" + (" WHERE " + " AND ".join(where) if where else "")
        return [_fragment(r) for r in self._q(sql + " ORDER BY id", params)]

    def listing(self, *, owner: str | None = None, kind: str | None = None, within: Scope | None = None,
                status: str | None = None, after: str | None = None, limit: int = 5000) -> list[tuple]:
        """(id, org, repo, persona, session, owner, status) in id order after ``after``, at most ``limit``,
        filtered as ``fragments``: enough to decide who may see a fragment without reading its body."""
        where, params = _filters(owner, kind, within, status, after)
        return self._q("SELECT id, org, repo, persona, session, owner, status FROM fragments"
                       + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id LIMIT ?", [*params, limit])

    def stamps(self, *, status: str = "active") -> list[Stamp]:
        """(id, version, verified_at) in id order: enough to tell what changed since an index was built."""
        return [Stamp(*r) for r in self._q("SELECT id, version, verified_at FROM fragments WHERE status = ? "
                                           "ORDER BY id", [status])]

    def index_columns(self, *, status: str = "active", ids: list[str] | None = None) -> dict[str, np.ndarray]:
        """What ranking needs of each fragment, without its text, as columns in id order: id,
        version, verified and updated (microseconds since 1970; verified -1 when never), kind,
        owner, org, repo, persona, session, tags, supersedes, content_hash (one query; no JSON
        parsed, no objects built)."""
        sql = ("SELECT id, version, coalesce(epoch_us(verified_at), -1) AS verified, epoch_us(updated_at) AS updated, "
               "kind, owner, org, repo, persona, session, tags, supersedes, content_hash FROM fragments WHERE status = ?")
        params: list[Any] = [status]
        if ids is not None:
            sql += " AND list_contains(?, id)"
            params.append(list(ids))
        return dict(self._guard(lambda: self.con.execute(sql + " ORDER BY id", params).fetchnumpy()))

    def stamp_arrays(self, *, status: str = "active") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(ids, versions, verified_at as epoch microseconds, -1 when never verified) in id order,
        as arrays: what an index compares, vectorised, to find what changed since it was built."""
        table = self._guard(lambda: self.con.execute(
            "SELECT id, version, coalesce(epoch_us(verified_at), -1) AS verified FROM fragments "
            "WHERE status = ? ORDER BY id", [status]).fetchnumpy())
        return (np.asarray(table["id"], dtype=object), np.asarray(table["version"], dtype=np.int64),
                np.asarray(table["verified"], dtype=np.int64))

    def fragment_pages(self, *, status: str = "active", size: int = 2000) -> Iterator[list[Fragment]]:
        """Every fragment with ``status``, in id order, a page at a time (a full index build reads
        each text once without holding every fragment in memory)."""
        after = ""
        while True:
            rows = self._q(f"SELECT {_FRAGMENT_COLS} FROM fragments WHERE status = ? AND id > ? ORDER BY id LIMIT ?",
                           [status, after, size])
            if not rows:
                return
            page = [_fragment(r) for r in rows]
            yield page
            after = page[-1].id

    def summaries(self) -> list[Summary]:
        """Light rows for browsing, without bodies or JSON columns."""
        return [Summary(*r) for r in self._q("SELECT id, kind, title, owner, org, repo, persona, session, status, "
                                             "updated_at, verified_at FROM fragments ORDER BY id")]

    def hashes(self) -> dict[str, Stored]:
        """id → (content hash, version, updated_at, verified_at), for change detection."""
        rows = self._q("SELECT id, content_hash, version, updated_at, verified_at FROM fragments")
        return {r[0]: Stored(*r[1:]) for r in rows}

    def origins(self, *, prefix: str) -> dict[str, str]:
        """id → origin (file path, or git:REPO:PATH) of fragments whose origin starts with ``prefix``."""
        rows = self._q("SELECT id, origin FROM fragments WHERE starts_with(coalesce(origin, ''), ?)", [prefix])
        return {r[0]: r[1] for r in rows}

    def ids(self) -> set[str]:
        return {r[0] for r in self._q("SELECT id FROM fragments")}

    def versions(self, fragment_id: str) -> list[Version]:
        rows = self._q("SELECT fragment_id, version, author, created_at, reason, content_hash, content "
                       "FROM fragment_versions WHERE fragment_id = ? ORDER BY version", [fragment_id])
        return [_version(r) for r in rows]

    def version(self, fragment_id: str, number: int) -> Version | None:
        rows = self._q("SELECT fragment_id, version, author, created_at, reason, content_hash, content "
                       "FROM fragment_versions WHERE fragment_id = ? AND version = ?", [fragment_id, number])
        return _version(rows[0]) if rows else None

    def counts(self) -> dict[str, int]:
        frag, ver, ev = self._q("SELECT (SELECT count(*) FROM fragments), (SELECT count(*) FROM fragment_versions), "
                                "(SELECT count(*) FROM events)")[0]
        return {"fragments": frag, "versions": ver, "events": ev}

    def events(self, *, fragment_id: str | None = None, action: str | None = None) -> list[dict[str, Any]]:
        where, params = [], []
        if fragment_id is not None:
            where.append("fragment_id = ?")
            params.append(fragment_id)
        if action is not None:
            where.append("action = ?")
            params.append(action)
        sql = "SELECT id, occurred_at, actor, action, fragment_id, detail FROM events"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._q(sql + " ORDER BY id", params)
        return [{"id": r[0], "at": r[1], "actor": r[2], "action": r[3], "fragment_id": r[4],
                 "detail": json.loads(r[5]) if r[5] else None} for r in rows]

    # -- writes -----------------------------------------------------------------------

    def append_version(self, fragment_id: str, content: Content, *, author: str, reason: str,
                       at: datetime, created_at: datetime | None = None,
                       verified_at: datetime | None = None, origin: str | None = None) -> int:
        """Record a new version of one fragment and make it current. Returns its number."""
        with self.transaction():
            rows = self._q("SELECT coalesce(max(version), 0) FROM fragment_versions WHERE fragment_id = ?",
                           [fragment_id])
            number = rows[0][0] + 1
            self.write_versions([VersionWrite(fragment_id, number, content, author, reason, at,
                                              created_at, verified_at, origin)])
        return number

    def write_versions(self, items: list["VersionWrite"]) -> None:
        """Append many versions at once (bulk, through a temporary JSON lines file) and make
        each current (at most one version per fragment per call). Numbers must be the next ones:
        1 for a new fragment (a bundle import may start a new fragment at its latest number)."""
        if not items:
            return
        with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
            path = Path(tmp) / "batch.jsonl"
            with path.open("w", encoding="utf-8") as out:
                for item in items:
                    out.write(json.dumps(item.row(), ensure_ascii=False) + "\n")
            # the file path is a bound parameter: a folder name with a quote must not become SQL
            source = f"read_json(?, format='newline_delimited', columns={_BATCH_COLUMNS})"
            params = [str(path)]
            with self.transaction():
                self._q("INSERT INTO fragment_versions SELECT id, version, author, written_at, reason, content_hash, "
                        f"content FROM {source}", params)
                self._q("UPDATE fragments SET version = s.version, kind = s.kind, title = s.title, body = s.body, "
                        "org = s.org, repo = s.repo, persona = s.persona, session = s.session, owner = s.owner, "
                        "status = s.status, tags = s.tags, links = s.links, supersedes = s.supersedes, "
                        "sources = s.sources, details = s.details, content_hash = s.content_hash, "
                        "updated_at = s.written_at, verified_at = coalesce(s.verified_at, fragments.verified_at), "
                        f"origin = coalesce(s.origin, fragments.origin) FROM {source} AS s "
                        "WHERE fragments.id = s.id", params)
                self._q(f"INSERT INTO fragments ({_FRAGMENT_COLS}, origin) SELECT {_FRAGMENT_COLS}, origin "
                        f"FROM (SELECT *, written_at AS updated_at FROM {source}) "
                        "WHERE id NOT IN (SELECT id FROM fragments)", params)
                self.bump_generation()

    def ingested_files(self) -> dict[str, tuple[str, str, str]]:
        """path → (file hash, fragment id, content hash) of files ingested before."""
        return {r[0]: (r[1], r[2], r[3]) for r in
                self._q("SELECT path, file_hash, fragment_id, content_hash FROM ingested_files")}

    def put_ingested_files(self, rows: list[tuple[str, str, str, str]], at: datetime) -> None:
        if not rows:
            return

        batch = {name: text_column(r[i] for r in rows)
                 for i, name in enumerate(("path", "file_hash", "fragment_id", "content_hash"))}

        def insert(files_batch=batch):  # DuckDB's replacement scan reads ``files_batch`` from this frame
            return self.con.execute("INSERT OR REPLACE INTO ingested_files SELECT path, file_hash, fragment_id, "
                                    "content_hash, ? FROM files_batch", [at])

        self._guard(insert)

    def set_verified(self, fragment_id: str, at: datetime) -> None:
        with self.transaction():
            self._q("UPDATE fragments SET verified_at = ? WHERE id = ?", [at, fragment_id])
            self.bump_generation()

    def add_event(self, action: str, *, actor: str | None = None, fragment_id: str | None = None,
                  detail: dict[str, Any] | None = None, at: datetime | None = None) -> None:
        self._q("INSERT INTO events (occurred_at, actor, action, fragment_id, detail) VALUES (?, ?, ?, ?, ?)",
                [at or utcnow(), actor, action, fragment_id, json.dumps(detail) if detail is not None else None])


_BATCH_COLUMNS = ("{id: 'VARCHAR', version: 'INTEGER', author: 'VARCHAR', written_at: 'TIMESTAMP', reason: 'VARCHAR', "
                  "content_hash: 'VARCHAR', content: 'JSON', kind: 'VARCHAR', title: 'VARCHAR', body: 'VARCHAR', "
                  "org: 'VARCHAR', repo: 'VARCHAR', persona: 'VARCHAR', session: 'VARCHAR', owner: 'VARCHAR', "
                  "status: 'VARCHAR', tags: 'VARCHAR[]', links: 'VARCHAR[]', supersedes: 'VARCHAR[]', "
                  "sources: 'JSON', details: 'JSON', created_at: 'TIMESTAMP', verified_at: 'TIMESTAMP', "
                  "origin: 'VARCHAR'}")


_WRITES = {"INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "CHECKP", "PRAGMA"}


def _refused_write(error: Exception) -> bool:
    """DuckDB refused a write: the connection is read-only, or the file system said no at commit."""
    text = str(error).lower()
    return ("read-only mode" in text or
            ("failed to commit" in text and ("permission denied" in text or "read-only file system" in text)))


def _filters(owner: str | None, kind: str | None, within: Scope | None, status: str | None,
             after: str | None = None) -> tuple[list[str], list[Any]]:
    """WHERE clauses and their parameters for fragments of this owner, kind, status, within a scope
    (and with an id after ``after``)."""
    where: list[str] = [] if after is None else ["id > ?"]
    params: list[Any] = [] if after is None else [after]
    for column, value in (("owner", owner), ("kind", kind), ("status", status)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if within is not None:
        for level, value in within.to_dict().items():
            if value is not None:
                where.append(f"{level} = ?")
                params.append(value)
    return where, params
