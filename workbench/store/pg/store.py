"""A workspace in PostgreSQL: the plumbing under the shared query mixins.

The same interface as the DuckDB ``Store``, with what PostgreSQL changes underneath:

- **Connections.** A small pool (``WORKBENCH_PG_POOL``, default 8): a statement outside a
  transaction borrows a connection for itself; a transaction holds one from BEGIN to COMMIT on
  its thread. Many threads of the team server read at once; each statement sees what was
  committed when it began.
- **One writer at a time, across processes.** Every write transaction first takes one
  transaction-level advisory lock, so the rules the service checks inside a transaction (the
  ``base`` version rule, "no change", the next version number) hold across replicas on several
  machines exactly as they do for DuckDB's single writer. Writes are a person's pace; reads never
  take the lock.
- **The generation is read, or followed.** Another replica may write at any time, so
  ``generation()`` asks the database (a primary-key lookup) instead of trusting a counter kept in
  this process; caches keyed by it stay right across processes. A server replica ``follow``s the
  change log instead (follow.py): every write transaction that bumps the generation or changes
  tokens adds a ``changes`` row and a NOTIFY, and the follower keeps the generation current
  (never lower than this process's own last commit: a writer reads its own write at once).
- **A consistent start.** ``snapshot()`` holds one REPEATABLE READ transaction on the calling
  thread while an index is built from nothing, so every query of the build sees one state.
- **Placeholders.** The mixins write DuckDB's ``?``; ``_q`` rewrites them to ``%s`` (outside
  string literals) once per statement text.

No DuckDB-only machinery exists here: no checkpoints (``checkpoint_if_due`` is False), no file
lock to release (``release`` only closes idle connections), no persisted FTS index
(``persisted_fts`` is False: lexical ranking is bm25, in memory, as on DuckDB by default).
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from ...errors import ReadOnly, SchemaTooNew, StoreError, StoreUnavailable
from .. import migrations as common
from ..aliases import AliasQueries
from ..core import CoreQueries
from ..counts import CountQueries
from ..curation import CurationQueries
from ..export import ExportQueries
from ..model_registry import ModelQueries
from ..overrides import OverrideQueries
from ..proposals import ProposalQueries
from ..published import PublishQueries
from ..retrieval import RetrievalQueries
from ..tokens import TokenQueries
from . import schema
from .connect import connect, describe
from .follow import CHANNEL, Follower
from .queries import PgQueries
from .upkeep import PgUpkeep

WRITE_LOCK = 7_302_912  # pg_advisory_xact_lock key every write transaction takes
_READ_ONLY_STATES = {"25006", "42501"}  # read_only_sql_transaction, insufficient_privilege
_TRANSLATED: dict[str, str] = {}
_WRITES = {"INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER"}


def translate(sql: str) -> str:
    """``?`` placeholders (outside quotes) as ``%s``, and a literal ``%`` as ``%%``."""
    found = _TRANSLATED.get(sql)
    if found is not None:
        return found
    out, quoted = [], None
    for ch in sql:
        if quoted:
            out.append("%%" if ch == "%" else ch)
            if ch == quoted:
                quoted = None
        elif ch in ("'", '"'):
            quoted = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    found = _TRANSLATED[sql] = "".join(out)
    return found


class _Pool:
    """At most ``size`` connections, handed to one thread at a time; broken ones are dropped."""

    def __init__(self, dsn: str, *, read_only: bool, size: int):
        self.dsn, self.read_only, self.size = dsn, read_only, size
        self.idle: queue.LifoQueue = queue.LifoQueue()
        self.made = 0
        self.lock = threading.Lock()

    def get(self):
        try:
            return self.idle.get_nowait()
        except queue.Empty:
            pass
        with self.lock:
            if self.made < self.size:
                self.made += 1
                try:
                    return connect(self.dsn, read_only=self.read_only)
                except BaseException:
                    self.made -= 1
                    raise
        return self.idle.get()  # every connection is busy: wait for one

    def put(self, con) -> None:
        if con.closed or con.broken or con.info.transaction_status != 0:  # 0: idle
            with self.lock:
                self.made -= 1
            try:
                con.close()
            except Exception:  # noqa: BLE001 - already broken
                pass
            return
        self.idle.put(con)

    def close(self) -> None:
        while True:
            try:
                con = self.idle.get_nowait()
            except queue.Empty:
                return
            with self.lock:
                self.made -= 1
            con.close()


class PgStore(PgQueries, PgUpkeep, CoreQueries, RetrievalQueries, CurationQueries, ExportQueries, OverrideQueries,
              TokenQueries, ProposalQueries, CountQueries, AliasQueries, PublishQueries, ModelQueries):
    """One workspace in a PostgreSQL database (``dsn``). ``root``: the workspace folder, where
    caches derived from the database live (the index snapshot), named after the database so two
    databases never share one."""

    persisted_fts = False
    replicas = True

    def __init__(self, dsn: str, root: Path, *, read_only: bool | None = None, lock_timeout: float | None = None):
        self.dsn = dsn
        digest = hashlib.sha256(dsn.encode("utf-8")).hexdigest()[:12]
        self.path = Path(root) / f"postgresql-{digest}"  # not a file: the name caches are kept under
        self.where = describe(dsn)
        self.read_only = bool(read_only)
        self.read_only_reason: str | None = "opened read-only" if read_only else None
        self.schema_pending: list[tuple[int, str]] = []
        self.lock_timeout = lock_timeout
        self._local = threading.local()
        self._write_lock = threading.RLock()  # (the trace writer's start; writes lock in the database)
        self.shared = False
        self.gen_epoch = 0
        self.epoch = 1
        self._memory_authority = None
        self._memory_authority_graph: str | None = None
        self._follower: Follower | None = None
        self._known_generation: int | None = None  # kept by the follower; None: ask the database
        self._known_lock = threading.Lock()
        self.upgraded = None  # what opening it applied (upgrade.Upgraded), when it could write
        self._pool = _Pool(dsn, read_only=self.read_only, size=int(os.environ.get("WORKBENCH_PG_POOL", "8")))
        self._prepare()

    # -- plumbing ---------------------------------------------------------------------

    def _prepare(self) -> None:
        con = self._pool.get()
        try:
            if self.read_only:
                common.check_not_ahead(schema.recorded(con))
                self.schema_pending = schema.check_readable(con)
            else:
                self._upgrade(con)
        except common.SchemaAhead as e:
            raise SchemaTooNew(f"workspace {self.path.parent} ({self.where}): {e}") from e
        except common.SchemaBehind as e:
            raise ReadOnly(f"workspace is read-only: {self.where} (opened read-only; {e})") from e
        except StoreError:
            raise
        except Exception as e:  # noqa: BLE001 - the driver's errors, said once
            raise StoreError(f"database error on {self.where}: {_first_line(e)}") from e
        finally:
            self._pool.put(con)

    @property
    def con(self):
        """The pool (the mixins touch ``con`` only to make sure the store is connected)."""
        return self._pool

    @property
    def _depth(self) -> int:
        return getattr(self._local, "depth", 0)

    @_depth.setter
    def _depth(self, value: int) -> None:
        self._local.depth = value

    def share(self) -> None:
        """Serve many threads at once (the team server): the pool does it already."""
        self.shared = True

    def checkpoint_if_due(self, *, idle: bool = True) -> bool:
        return False  # PostgreSQL checkpoints itself

    def forget_generation(self) -> None:
        self.gen_epoch += 1

    def generation(self) -> int:
        known = self._known_generation
        follower = self._follower
        if known is not None and not self._depth and follower is not None and follower.connected.is_set():
            return known  # (while the follower is cut off, ask: the database may be away, and say so)
        found = int(self._q("SELECT value FROM meta WHERE key = 'generation'")[0][0])
        if not self._depth:
            self._note_generation(found)
        return found

    def _note_generation(self, value: int) -> None:
        """A generation seen committed: kept while following (it only ever goes up)."""
        if self._follower is None:
            return
        with self._known_lock:
            if self._known_generation is None or value > self._known_generation:
                self._known_generation = value

    def bump_generation(self) -> None:
        """The generation goes up by one, and the change log says so (once per transaction)."""
        super().bump_generation()
        self._log_change("generation")

    def _log_change(self, kind: str) -> None:
        logged = getattr(self._local, "logged", None)
        if self._depth and logged is not None:
            if kind in logged:
                return
            logged.add(kind)
        self._q("INSERT INTO changes (kind) VALUES (?)", [kind])
        self._q(f"SELECT pg_notify('{CHANNEL}', ?)", [kind])  # delivered at commit

    def put_token(self, token_id, principal, token_hash, created_at, expires_at, note) -> None:
        with self.transaction():
            super().put_token(token_id, principal, token_hash, created_at, expires_at, note)
            self._log_change("tokens")

    def revoke_token(self, token_id: str, at) -> None:
        with self.transaction():
            super().revoke_token(token_id, at)
            self._log_change("tokens")

    # -- replicas ---------------------------------------------------------------------

    def shared_snapshot(self) -> dict[str, bytes] | None:
        """The index snapshot a replica shared last (its files), for a replica starting without one:
        loaded instead of tokenising and reading every fragment and vector (at 100k: seconds, not a
        minute). A cache: the replica checks it as its own and reads what changed since from the store."""
        rows = self._q("SELECT name, data FROM index_snapshot_files WHERE snapshot = "
                       "(SELECT max(snapshot) FROM index_snapshot_files WHERE name = 'meta.json')")
        return {name: bytes(data) for name, data in rows} or None

    def has_shared_snapshot(self) -> bool:
        return bool(self._q("SELECT EXISTS (SELECT 1 FROM index_snapshot_files WHERE name = 'meta.json')")[0][0])

    def share_snapshot(self, files: dict[str, bytes]) -> bool:
        """Share this replica's index snapshot through the database (replacing the one before), in
        a transaction of its own: derived data, so not under the write lock; binary COPY."""
        if self.read_only or "meta.json" not in files:
            return False

        def write(con) -> None:
            con.execute("BEGIN")
            try:
                number = int(con.execute("SELECT coalesce(max(snapshot), 0) + 1 FROM index_snapshot_files")
                             .fetchone()[0])
                with con.cursor().copy("COPY index_snapshot_files (snapshot, name, data) FROM STDIN "
                                       "(FORMAT BINARY)") as copy:
                    copy.set_types(["int4", "text", "bytea"])
                    for name, data in files.items():
                        if name != "meta.json":
                            copy.write_row([number, name, data])
                    copy.write_row([number, "meta.json", files["meta.json"]])  # last: the snapshot is whole
                con.execute("DELETE FROM index_snapshot_files WHERE snapshot < %s", [number])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

        self._with(write, write=True)
        return True

    def follow(self, on_change: Callable[[set[str]], None]) -> None:
        """Follow the change log from now on (a server replica): ``on_change(kinds)`` is called on
        the follower's thread after other processes' writes (and this one's) are read."""
        if self._follower is not None:
            return

        def report(kinds: set[str], generation: int) -> None:
            self._note_generation(generation)
            if kinds:
                on_change(kinds)

        self._follower = Follower(lambda: connect(self.dsn, read_only=True), report).start()
        self._follower.connected.wait(10)

    @contextmanager
    def snapshot(self) -> Iterator["PgStore"]:
        """Every read on this thread inside sees one state of the database (REPEATABLE READ, read
        only): an index built from nothing is built from one moment. Writes inside (embeddings,
        authority) go through their own transactions, as always."""
        if self._depth or getattr(self._local, "con", None) is not None:
            yield self
            return
        con = self._pool.get()
        self._local.con, self._local.snapshot = con, True
        try:
            self._guard(lambda: con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"))
            yield self
        finally:
            self._local.con, self._local.snapshot = None, False
            try:
                con.execute("COMMIT")
            except Exception:  # noqa: BLE001 - dropped by the pool if broken
                pass
            self._pool.put(con)

    def release(self) -> None:
        """Close idle connections (between calls of a long-running face); state is kept."""
        if self._depth == 0:
            self.flush_traces()  # the queued traces are committed before the connections go
            self._pool.close()

    def release_requested(self) -> bool:
        return False  # nobody waits for a lock PostgreSQL does not take

    def close(self) -> None:
        self.flush_traces()
        if self._follower is not None:
            self._follower.stop()
            self._follower, self._known_generation = None, None
        self._pool.close()

    def require_writable(self, what: str = "write") -> None:
        if self.read_only:
            raise ReadOnly(f"workspace is read-only: {self.where} ({self.read_only_reason}; cannot {what})")

    def can_store_derived(self) -> bool:
        return not self.read_only

    def schema_versions(self) -> list[int]:
        return sorted(self._with(lambda con: schema.recorded(con)))

    def _with(self, fn, *, write: bool = False):
        """Run ``fn(connection)`` on this thread's transaction connection, or a borrowed one (a
        ``write`` outside a transaction never goes through a read-only snapshot's connection)."""
        held = getattr(self._local, "con", None)
        if held is not None and not (write and not self._depth and getattr(self._local, "snapshot", False)):
            return self._guard(fn, held)
        con = self._pool.get()
        try:
            return self._guard(fn, con)
        finally:
            self._pool.put(con)

    def _guard(self, fn, *args):
        import psycopg

        try:
            return fn(*args)
        except psycopg.Error as e:
            state = getattr(e, "sqlstate", None)
            if state in _READ_ONLY_STATES:
                raise ReadOnly(f"workspace is read-only: {self.where} (PostgreSQL refused the write: "
                               f"{_first_line(e)})") from e
            if isinstance(e, psycopg.OperationalError):
                raise StoreUnavailable(f"cannot reach {self.where}: {_first_line(e)}") from e
            raise StoreError(f"database error on {self.where}: {_first_line(e)}") from e

    def _q(self, sql: str, params: list[Any] | tuple = ()) -> list[tuple]:
        if self.__dict__.get("_deferred") and "traces" in sql and not self._depth:
            self.commit_deferred_traces()  # any statement over traces sees the queued ones (see put_trace)
        text = translate(sql)

        def run(con):
            cur = con.execute(text, list(params))
            return cur.fetchall() if cur.description is not None else []

        return self._with(run, write=sql.lstrip()[:6].upper() in _WRITES)

    def _many(self, sql: str, rows: list[list]) -> None:
        text = translate(sql)
        self._with(lambda con: con.cursor().executemany(text, rows))

    def _copy_in(self, table: str, columns: tuple[str, ...], rows) -> None:
        """Rows into ``table`` by COPY (text format; psycopg formats each value)."""
        sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"  # names are the store's own, never input

        def run(con):
            with con.cursor().copy(sql) as copy:
                for row in rows:
                    copy.write_row(row)

        self._with(run)

    @contextmanager
    def transaction(self, what: str = "write") -> Iterator["PgStore"]:
        """All writes inside commit together or not at all; nested use joins the outer one. The
        first statement takes the workspace's write lock (across processes)."""
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
        con = self._pool.get()
        outer = getattr(self._local, "con", None)  # a snapshot's, when a build writes derived data
        self._local.con, self._local.logged = con, set()
        try:
            self._guard(lambda: con.execute("BEGIN"))
            self._guard(lambda: con.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK]))
            self._depth = 1
            try:
                yield self
            except BaseException:
                self._depth = 0
                self.forget_generation()
                self.epoch += 1
                try:
                    con.execute("ROLLBACK")
                except Exception:  # noqa: BLE001 - the connection is dropped below if broken
                    pass
                raise
            bumped = getattr(self._local, "bumped", False)
            ours = int(con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]) \
                if bumped and self._follower is not None else None
            self._depth = 0
            self._guard(lambda: con.execute("COMMIT"))
            if bumped:
                self.forget_generation()
                if ours is not None:
                    self._note_generation(ours)  # this process reads its own write at once
            self._local.bumped = False
        finally:
            self._depth = 0
            self._local.con, self._local.logged = outer, None
            self._pool.put(con)


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
