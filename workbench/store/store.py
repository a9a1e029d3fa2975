"""Typed reads and transactional writes over the workspace database."""

from __future__ import annotations

import contextlib
import json
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ReadOnly, SchemaTooNew, StoreError
from . import migrations, upgrade
from .aliases import AliasQueries
from .connect import keep_private, open_database, read_only_message
from .core import _FRAGMENT_COLS, CoreQueries
from .counts import CountQueries
from .curation import CurationQueries
from .export import ExportQueries
from .fts import FtsQueries
from .model_registry import ModelQueries
from .overrides import OverrideQueries
from .proposals import ProposalQueries
from .retrieval import RetrievalQueries
from .rows import VersionWrite, text_column
from .published import PublishQueries
from .tokens import TokenQueries
from .upkeep_queries import BackupQueries


class Store(CoreQueries, RetrievalQueries, FtsQueries, CurationQueries, ExportQueries, OverrideQueries, TokenQueries,
            ProposalQueries, CountQueries, BackupQueries, AliasQueries, PublishQueries, ModelQueries):
    """One open workspace database (DuckDB).

    ``persisted_fts``: whether the ``duckdb-fts`` lexical backend's index can live here;
    ``replicas``: whether several processes may serve it at once.

    ``read_only``: None (default) opens read-write when the file system allows it and
    read-only otherwise (see ``connect.open_database``); True always opens read-only;
    False insists on writing. In read-only mode nothing is migrated, user writes raise a
    ``ReadOnly`` error (``require_writable``) and derived data (embeddings, authority, traces,
    the FTS index) is kept in memory or skipped instead of stored."""

    persisted_fts = True
    KEEPS_PUBLISHED_STAMP = True  # forgotten with the generation (each commit, rollback, reconnect)
    replicas = False  # one process holds the file: `server --workers` needs PostgreSQL

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

            self.flush_traces()  # the queued traces are committed while the file is still held

            self._con.close()
            self._con = None
            clear_release_request(self.path)

    def shared_snapshot(self) -> dict[str, bytes] | None:
        """An index snapshot another process shared (replicas elsewhere): none here, the index
        snapshot lives beside the file, where every process that can open it finds it."""
        return None

    def share_snapshot(self, files: dict[str, bytes]) -> bool:
        return False

    def has_shared_snapshot(self) -> bool:
        return True  # nothing to share: see shared_snapshot

    def follow(self, on_change) -> None:
        """Nothing to follow: a DuckDB file is written by the one process holding it (replicas
        need a PostgreSQL workspace; see pg/follow.py)."""

    @contextmanager
    def snapshot(self) -> Iterator["Store"]:
        """Reads inside see one state: the process holding the file is its only writer, and
        it is building (see pg.PgStore.snapshot)."""
        yield self

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
        if self.__dict__.get("_deferred") and "traces" in sql and not self._depth:
            self.commit_deferred_traces()  # any statement over traces sees the queued ones (see put_trace)
        if self.shared and not self._depth and sql.lstrip()[:6].upper() in _WRITES:
            with self._write_lock:  # an autocommit write (a trace, a meta row): one writer at a time
                return self._guard(lambda: self.con.execute(sql, list(params)).fetchall())
        return self._guard(lambda: self.con.execute(sql, list(params)).fetchall())

    def _many(self, sql: str, rows: list[list]) -> None:
        """One statement, once per row (inside the caller's transaction)."""
        self._guard(lambda: self.con.executemany(sql, rows))

    @contextmanager
    def transaction(self, what: str = "write") -> Iterator[Store]:
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
        if self.__dict__.get("_deferred"):  # queued traces first, in a commit of their own (see put_trace)
            self.commit_deferred_traces()
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

    # -- writes -----------------------------------------------------------------------

    def write_versions(self, items: list[VersionWrite]) -> None:
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

    def put_ingested_files(self, rows: list[tuple[str, str, str, str]], at: datetime) -> None:
        if not rows:
            return

        batch = {name: text_column(r[i] for r in rows)
                 for i, name in enumerate(("path", "file_hash", "fragment_id", "content_hash"))}

        def insert(files_batch=batch):  # DuckDB's replacement scan reads ``files_batch`` from this frame
            return self.con.execute("INSERT OR REPLACE INTO ingested_files SELECT path, file_hash, fragment_id, "
                                    "content_hash, ? FROM files_batch", [at])

        self._guard(insert)

    def put_sync_bases(self, rows: list[tuple[str, str, str]], at: datetime) -> None:
        """(fragment id, content hash, source file) per fragment: its sync base moves there."""
        if not rows:
            return
        batch = {name: text_column(r[i] for r in rows) for i, name in enumerate(("fragment_id", "content_hash", "source"))}

        def insert(bases_batch=batch):  # DuckDB's replacement scan reads ``bases_batch`` from this frame
            return self.con.execute("INSERT OR REPLACE INTO sync_bases SELECT fragment_id, content_hash, source, ? "
                                    "FROM bases_batch", [at])

        self._guard(insert)

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
