"""Store queries for retrieval: embeddings cache, index generation, authority, pins, traces.

Mixed into ``Store``; the only SQL retrieval needs. Embeddings are keyed by the hash of
the embedded text and the model name, so unchanged text is never embedded twice.

Embeddings, authority and traces are derived data: on a read-only workspace their
writers store nothing and return False (authority is kept in memory for this process),
and they never raise the read-only error that user writes raise.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import StoreError
from .rows import text_column
from .tracequeue import _INSERT_TRACE, DeferredTraces

DIM = 384
PUT_ROWS = 1024  # vectors in one INSERT at most (put_embeddings)


def vector_literal(vector: np.ndarray) -> str:
    """A FLOAT[384] SQL literal. Binding a 384-float list as a parameter costs ~30 ms in
    the Python client; a literal made only of formatted floats costs nothing and is safe."""
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    if values.shape != (DIM,) or not np.isfinite(values).all():
        raise ValueError("a query vector must be 384 finite floats")
    return "[" + ",".join(f"{x:.8g}" for x in values.tolist()) + f"]::FLOAT[{DIM}]"


class RetrievalQueries(DeferredTraces):
    # The host class (Store) provides _q, con, transaction(), read_only and can_store_derived().

    # -- generation: bumped by every write that changes what retrieval sees --------------

    # DuckDB lets one process at a time open the file, so every write goes through this
    # Store: the generation can be read once and then tracked in memory.
    _generation: int | None = None
    _memory_authority: tuple[int, dict[str, tuple[float, int, int]]] | None = None

    def generation(self) -> int:
        found = self._generation
        if found is None:
            epoch = self.gen_epoch
            found = int(self._q("SELECT value FROM meta WHERE key = 'generation'")[0][0])
            if epoch == self.gen_epoch and not self._depth:  # no write changed it meanwhile (shared mode)
                self._generation = found
        return found

    def bump_generation(self) -> None:
        self._q("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) WHERE key = 'generation'")
        self.forget_generation()  # re-read: a rolled-back transaction must not leave it ahead
        self._local.bumped = True  # ... and forget it again after the commit (shared mode)
        self._local.bumps = getattr(self._local, "bumps", 0) + 1

    def take_bumps(self) -> int:
        """How many times this thread changed the generation since it last asked (the team
        server refreshes the index after a request that wrote, and only then)."""
        found, self._local.bumps = getattr(self._local, "bumps", 0), 0
        return found

    # -- embeddings ----------------------------------------------------------------------

    def embeddings(self, model: str, hashes: list[str] | None = None) -> dict[str, np.ndarray]:
        """text hash → float32 vector, for ``hashes`` (or all of the model's)."""
        sql = "SELECT text_hash, vector FROM embeddings WHERE model = ?"
        params: list[Any] = [model]
        if hashes is not None:
            sql += " AND list_contains(?, text_hash)"
            params.append(list(hashes))
        res = self._guard(lambda: self.con.execute(sql, params).fetchnumpy())
        if len(res["text_hash"]) == 0:
            return {}
        matrix = np.stack(res["vector"]).astype(np.float32, copy=False)
        return dict(zip(res["text_hash"].tolist(), matrix))

    def embedding_models(self) -> list[str]:
        """The models vectors are stored for."""
        return [r[0] for r in self._q("SELECT DISTINCT model FROM embeddings ORDER BY model")]

    def embedding_count(self, model: str) -> int:
        return self._q("SELECT count(*) FROM embeddings WHERE model = ?", [model])[0][0]

    def put_embeddings(self, model: str, hashes: list[str], matrix: np.ndarray) -> bool:
        """Store vectors; False when nothing was stored (none given, or a read-only workspace).

        DuckDB reads the vectors as a long table (row, dimension, value) and groups it back into
        ``FLOAT[384]``s; the text hashes come in a table of their own, one row per vector, joined
        on the row number. Repeating each hash 384 times in the long table (as before) made DuckDB
        dictionary-encode 98k strings (``np.unique``) and group by them: +65-110 MB for 256 vectors,
        +1.3 GB for 4,096, and the peak of an ingest's ``warm()`` (BENCHMARKS.md, issue 31).
        At most ``PUT_ROWS`` vectors go in one statement, so the transient memory is bounded."""
        if not hashes or not self.can_store_derived():
            return False
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[1] != DIM:
            raise StoreError(f"an embedding must have {DIM} dimensions, not {matrix.shape[1:]}")
        if matrix.shape[0] != len(hashes):
            raise StoreError(f"{len(hashes)} text hashes for {matrix.shape[0]} vectors")
        with self.transaction():
            for start in range(0, len(hashes), PUT_ROWS):
                self._put_vectors(model, hashes[start:start + PUT_ROWS], matrix[start:start + PUT_ROWS])
        return True

    def _put_vectors(self, model: str, hashes: list[str], matrix: np.ndarray) -> None:
        n, dim = matrix.shape
        values = {"r": np.repeat(np.arange(n, dtype=np.int32), dim), "i": np.tile(np.arange(dim, dtype=np.int16), n),
                  "x": matrix.ravel()}
        keys = {"r": np.arange(n, dtype=np.int32), "h": text_column(hashes)}

        def insert(emb_values=values, emb_keys=keys):  # DuckDB's replacement scan reads these from this frame
            return self.con.execute(
                "INSERT OR IGNORE INTO embeddings SELECT emb_keys.h, ?, v.vector FROM "
                f"(SELECT r, list(x ORDER BY i)::FLOAT[{DIM}] AS vector FROM emb_values GROUP BY r) v "
                "JOIN emb_keys USING (r)", [model])

        self._guard(insert)

    # -- DuckDB-native dense path (exact scan), kept for comparison and SQL users ---------
    # (the benchmark's unfiltered scan and HNSW probe are its own: benchmarks/bench_sql.py)

    def dense_scan(self, model: str, query: np.ndarray, text_hashes: list[str], k: int) -> list[tuple[str, float]]:
        sql = (f"SELECT text_hash, 1 - array_cosine_distance(vector, {vector_literal(query)}) AS sim FROM embeddings "
               "WHERE model = ? AND list_contains(?, text_hash) ORDER BY sim DESC LIMIT ?")
        return [(h, float(s)) for h, s in self._q(sql, [model, list(text_hashes), k])]

    # -- authority -------------------------------------------------------------------------

    def links(self, ids: list[str] | None = None) -> list[tuple[str, str]]:
        """(from, to) for every link of an active fragment (of the fragments ``ids`` only, when
        given). ``supersedes`` is not a link: it enters authority reversed (see
        rank/authority.py), from the fragments themselves."""
        where, params = _among(ids)
        if where is None:
            return []
        rows = self._q(f"SELECT id, unnest(links) FROM fragments WHERE status = 'active'{where}", params)
        return [(a, b) for a, b in rows]

    def superseders(self, fragment_id: str) -> list[str]:
        """Ids of the active and archived fragments that list ``fragment_id`` in ``supersedes``, by id."""
        rows = self._q("SELECT id FROM fragments WHERE status IN ('active', 'archived') "
                       "AND list_contains(supersedes, ?) ORDER BY id",
                       [fragment_id])
        return [r[0] for r in rows]

    def source_edges(self, ids: list[str] | None = None) -> list[tuple[str, str]]:
        """(fragment, "source:REPO/PATH") for every source pointer of an active fragment (of the
        fragments ``ids`` only, when given)."""
        where, params = _among(ids)
        if where is None:
            return []
        rows = self._q("SELECT id, s->>'repo', s->>'path' FROM (SELECT id, unnest(from_json(sources, '[\"json\"]')) "
                       f"AS s FROM fragments WHERE status = 'active'{where})", params)
        return [(fid, f"source:{repo or '-'}/{path}") for fid, repo, path in rows]

    def path_links(self) -> list[tuple[str, str, str, list, list | None, list]]:
        """(id, kind, owner, sources, applies_to or None, tags) of every active fragment that cites a
        source or declares ``applies_to``: what links fragments to repository paths (rank/paths.py)."""
        rows = self._q("SELECT id, kind, owner, CAST(sources AS VARCHAR), "
                       "CAST(json_extract(details, '$.applies_to') AS VARCHAR), tags FROM fragments "
                       "WHERE status = 'active' AND (json_array_length(sources) > 0 "
                       "OR json_extract(details, '$.applies_to') IS NOT NULL) ORDER BY id")
        return [(fid, kind, owner, json.loads(sources), json.loads(globs) if globs else None, list(tags or ()))
                for fid, kind, owner, sources, globs, tags in rows]

    def put_authority(self, scores: dict[str, tuple[float, int, int]], generation: int,
                      graph: str | None = None) -> bool:
        """Store PageRank for ``generation``; on a read-only workspace keep it in memory
        (``authority`` answers from there) and return False."""
        if not self.can_store_derived():
            self._memory_authority = (generation, dict(scores))
            self._memory_authority_graph = graph
            return False
        ids = list(scores)
        batch = {"id": text_column(ids),
                 "score": np.array([scores[i][0] for i in ids], dtype=np.float64),
                 "inl": np.array([scores[i][1] for i in ids], dtype=np.int64),
                 "outl": np.array([scores[i][2] for i in ids], dtype=np.int64)}

        def insert(auth_batch=batch):  # DuckDB's replacement scan reads ``auth_batch`` from this frame
            return self.con.execute("INSERT INTO authority SELECT id, score, inl, outl, ? FROM auth_batch",
                                    [generation])

        with self.transaction():
            self._q("DELETE FROM authority")
            if ids:
                self._guard(insert)
            self._q("INSERT OR REPLACE INTO meta VALUES ('authority_generation', ?)", [str(generation)])
            self._q("INSERT OR REPLACE INTO meta VALUES ('authority_graph', ?)", [graph or ""])
        return True

    def touch_authority(self, generation: int) -> bool:
        """The link graph did not change: the stored PageRank holds for ``generation`` too."""
        if not self.can_store_derived():
            if self._memory_authority is not None:
                self._memory_authority = (generation, self._memory_authority[1])
            return False
        # one meta row, not every authority row (an UPDATE of 100k rows per edit)
        self._q("INSERT OR REPLACE INTO meta VALUES ('authority_generation', ?)", [str(generation)])
        return True

    def authority_generation(self) -> int | None:
        """The generation the stored PageRank holds for (None: none stored), without reading it."""
        if self.read_only and self._memory_authority is not None:
            return self._memory_authority[0]
        rows = self._q("SELECT value FROM meta WHERE key = 'authority_generation'")
        if rows:
            return int(rows[0][0])
        rows = self._q("SELECT generation FROM authority LIMIT 1")  # stored before the meta row existed
        return int(rows[0][0]) if rows else None

    def authority_graph(self) -> str | None:
        """The digest of the link graph the stored PageRank was computed on (None: unknown)."""
        if self.read_only and self._memory_authority is not None:
            return self._memory_authority_graph
        rows = self._q("SELECT value FROM meta WHERE key = 'authority_graph'")
        return rows[0][0] or None if rows else None

    def authority(self) -> tuple[int | None, dict[str, tuple[float, int, int]]]:
        if self.read_only and self._memory_authority is not None:
            generation, scores = self._memory_authority
            return generation, dict(scores)
        rows = self._q("SELECT fragment_id, score, in_links, out_links FROM authority")
        if not rows:
            return None, {}
        return self.authority_generation(), {r[0]: (r[1], r[2], r[3]) for r in rows}

    # -- pins ------------------------------------------------------------------------------

    def pins(self, now: datetime | None = None) -> list[dict[str, Any]]:
        """Pins, oldest first; with ``now``, only those that have not expired. (Retrieval reads
        them through ``IndexManager.pins``, which keeps them per generation.)"""
        rows = self._q("SELECT fragment_id, scope, pinned_by, pinned_at, reason, until FROM pins "
                       "ORDER BY pinned_at, fragment_id")
        pins = [{"fragment_id": r[0], "scope": r[1], "pinned_by": r[2], "pinned_at": r[3], "reason": r[4],
                 "until": r[5]} for r in rows]
        return pins if now is None else [p for p in pins if p["until"] is None or p["until"] > now]

    def put_pin(self, fragment_id: str, scope: str, by: str, at: datetime, reason: str | None,
                until: datetime | None) -> None:
        with self.transaction():
            self._q("DELETE FROM pins WHERE fragment_id = ? AND scope = ?", [fragment_id, scope])
            self._q("INSERT INTO pins VALUES (?, ?, ?, ?, ?, ?)", [fragment_id, scope, by, at, reason, until])
            self.bump_generation()

    def delete_pin(self, fragment_id: str, scope: str) -> bool:
        with self.transaction():
            found = self._q("SELECT count(*) FROM pins WHERE fragment_id = ? AND scope = ?", [fragment_id, scope])
            self._q("DELETE FROM pins WHERE fragment_id = ? AND scope = ?", [fragment_id, scope])
            self.bump_generation()
        return found[0][0] > 0

    # -- traces ----------------------------------------------------------------------------

    def put_trace(self, trace: dict[str, Any]) -> bool:
        """Store a trace; False (nothing stored) on a read-only workspace, so the caller can
        say "trace not stored"."""
        if not self.can_store_derived():
            return False
        row = [trace["id"], trace["created_at"], trace["kind"], trace["query"], trace["principal"],
               trace.get("scope"), json.dumps(trace["settings"]), json.dumps(trace["served"])]
        if getattr(self, "shared", False):
            self._trace_writer().put(row)
            return True
        if self._depth:  # inside the caller's transaction: committed (or rolled back) with it
            self._q(_INSERT_TRACE, row)
            return True
        self.defer_trace(row)
        return True

    # In a shared store (the team server) traces are committed by one writer thread, in batches:
    # a search does not wait for an fsync, nor behind another request's write transaction, and
    # many traces share one commit. A trace is readable (``trace``) as soon as it is queued; one
    # not yet committed when the process is killed is lost (a few milliseconds' worth).
    _traces: "_TraceWriter | None" = None

    def _trace_writer(self) -> "_TraceWriter":
        with self._write_lock:
            if self._traces is None:
                self._traces = _TraceWriter(self)
            return self._traces

    def flush_traces(self) -> None:
        """Commit every queued trace (and stop the team server's writer thread): before closing,
        before letting go of the file, or whenever a caller needs them durable now."""
        writer, self._traces = self._traces, None
        if writer is not None:
            writer.stop()
        if self.__dict__.get("_deferred"):
            self.commit_deferred_traces()

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        queued = self._traces.pending(trace_id) if self._traces is not None else self.deferred_trace(trace_id)
        rows = [queued] if queued is not None else self._q(
            "SELECT id, created_at, kind, query, principal, scope, settings, served FROM traces WHERE id = ?",
            [trace_id])
        if not rows:
            return None
        r = rows[0]
        return {"id": r[0], "created_at": r[1], "kind": r[2], "query": r[3], "principal": r[4], "scope": r[5],
                "settings": json.loads(r[6]), "served": json.loads(r[7])}

    def latest_trace_id(self, principal: str) -> str | None:
        """The id of ``principal``'s most recent trace, or None."""
        self._settle_traces()
        rows = self._q("SELECT id FROM traces WHERE principal = ? ORDER BY created_at DESC, id DESC LIMIT 1",
                       [principal])
        return rows[0][0] if rows else None

    def purge_traces(self, before: datetime, *, principal: str | None = None, dry_run: bool = False) -> int:
        """Remove the traces made before ``before`` (only ``principal``'s when given); how many were
        (with ``dry_run``: would be) removed. A user write: refused on a read-only workspace."""
        self._settle_traces()
        where = "created_at < ?" + (" AND principal = ?" if principal is not None else "")
        params: list[Any] = [before, *([principal] if principal is not None else [])]
        if dry_run:
            return int(self._q(f"SELECT count(*) FROM traces WHERE {where}", params)[0][0])
        with self.transaction("purge traces"):
            count = int(self._q(f"SELECT count(*) FROM traces WHERE {where}", params)[0][0])
            if count:
                self._q(f"DELETE FROM traces WHERE {where}", params)
        return count

    def trace_total(self) -> int:
        self._settle_traces()
        return int(self._q("SELECT count(*) FROM traces")[0][0])

    def _settle_traces(self) -> None:
        """Before a query over many traces: commit those still queued (the writer lingers up to
        ``TRACE_LINGER_S`` to batch them), so a count or report includes every call answered."""
        writer = self._traces
        if writer is not None:
            writer.drain()
        if self.__dict__.get("_deferred"):
            self.commit_deferred_traces()

    def trace_usage(self, since: datetime, until: datetime, *, fragment_id: str | None = None
                    ) -> list[tuple[str, str, str | None, int, datetime]]:
        """(fragment id, principal, trace scope, calls that served it, last served) for every
        fragment served by a search, context or get call from ``since`` to ``until`` (inclusive),
        one row per fragment, principal and scope; only ``fragment_id``'s rows when given. A call
        that served a fragment twice counts once."""
        self._settle_traces()
        where = " WHERE fid = ?" if fragment_id is not None else ""
        params: list[Any] = [since, until] + ([fragment_id] if fragment_id is not None else [])
        rows = self._q("SELECT fid, principal, scope, count(DISTINCT tid), max(created_at) FROM ("
                       "SELECT id AS tid, principal, scope, created_at, "
                       "unnest(json_extract_string(served, '$[*].id')) AS fid FROM traces "
                       f"WHERE created_at >= ? AND created_at <= ?){where} "
                       "GROUP BY fid, principal, scope ORDER BY fid, principal, scope", params)
        return [(r[0], r[1], r[2], int(r[3]), r[4]) for r in rows]

    def gap_candidates(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        """Search and context calls from ``since`` to ``until`` (inclusive), oldest first, without
        the served text: per call its query, principal, scope, the ``abstained`` flag and confidence
        floor its settings recorded (None when not recorded), and per served item (pinned, confidence)."""
        self._settle_traces()
        rows = self._q("SELECT id, created_at, kind, query, principal, scope, settings->>'abstained', "
                       "TRY_CAST(settings->>'min_confidence' AS DOUBLE), "
                       "list_transform(from_json(served, '[\"json\"]'), "
                       "j -> [j->'scores'->>'pinned', j->>'confidence']), CAST(settings->'paths' AS VARCHAR) "
                       "FROM traces WHERE kind IN ('search', 'context') AND created_at >= ? AND created_at <= ? "
                       "ORDER BY created_at, id", [since, until])
        return [{"id": r[0], "created_at": r[1], "kind": r[2], "query": r[3], "principal": r[4], "scope": r[5],
                 "abstained": None if r[6] is None else r[6] == "true", "min_confidence": r[7],
                 "served": [(p == "true", None if c is None else float(c)) for p, c in r[8]],
                 "paths": _paths(r[9])} for r in rows]


def _paths(text: str | None) -> list[str] | None:
    """A trace's recorded work paths (``settings.paths``: JSON text), or None."""
    if not text or text == "null":
        return None
    value = json.loads(text)
    return [p for p in value if isinstance(p, str)] if isinstance(value, list) else None


CHECKPOINT_CHECK_S = 5  # an idle trace writer looks at the write-ahead log this often
# A batch of traces is committed this long after its first trace arrived (or at TRACE_BATCH
# traces): at 20 requests a second one commit per request cost ~5 ms of DuckDB work each
# (BEGIN, INSERT, COMMIT and its log write), a tenth of a core; a kill -9 loses at most this
# long's traces, which were never acknowledged as writes.
TRACE_LINGER_S = 0.1
TRACE_BATCH = 500
_FLUSH = ["flush"]  # queued by ``drain``: commit what is queued now


class _TraceWriter:
    """One thread committing queued traces, all those waiting in one transaction."""

    def __init__(self, store) -> None:
        self.store = store
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self._pending: dict[str, list] = {}
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name="workbench-traces", daemon=True)
        self.thread.start()

    def put(self, row: list) -> None:
        with self._lock:
            self._pending[row[0]] = row
        self.queue.put(row)

    def drain(self, timeout: float = 10.0) -> None:
        """Return once every trace queued so far is committed (or failed), ending the linger now."""
        self.queue.put(_FLUSH)
        deadline = time.monotonic() + timeout
        while self.thread.is_alive() and time.monotonic() < deadline:
            with self._lock:
                if not self._pending:
                    return
            time.sleep(0.002)

    def pending(self, trace_id: str) -> list | None:
        with self._lock:
            return self._pending.get(trace_id)

    def stop(self) -> None:
        self.queue.put(None)
        self.thread.join(timeout=60)

    def _run(self) -> None:
        from .background import lower_priority

        lower_priority()  # traces and checkpoints can wait; the requests they record cannot
        done = False
        while not done:
            try:
                batch = [self.queue.get(timeout=CHECKPOINT_CHECK_S)]
            except queue.Empty:
                self._checkpoint(idle=True)
                continue
            deadline = time.monotonic() + TRACE_LINGER_S
            while batch[-1] is not None and batch[-1] is not _FLUSH and len(batch) < TRACE_BATCH:
                wait = deadline - time.monotonic()
                try:
                    batch.append(self.queue.get(timeout=wait) if wait > 0 else self.queue.get_nowait())
                except queue.Empty:
                    break
            done = None in batch
            rows = [r for r in batch if r is not None and r is not _FLUSH]
            if rows:
                self._commit(rows)
                self._checkpoint(idle=False)

    def _checkpoint(self, *, idle: bool) -> None:
        try:
            self.store.checkpoint_if_due(idle=idle)
        except Exception:  # a failed checkpoint is retried later; DuckDB replays the log on open anyway
            pass

    def _commit(self, rows: list[list]) -> None:
        try:
            with self.store.transaction("store traces"):
                self.store._many(_INSERT_TRACE, rows)
        except Exception:  # a trace that cannot be stored must not stop the next ones
            pass
        with self._lock:
            for row in rows:
                self._pending.pop(row[0], None)


def _among(ids: list[str] | None) -> tuple[str | None, list[str]]:
    """The SQL condition (and parameters) restricting a fragments query to ``ids``: "" for all
    (None), None when ``ids`` is empty (nothing to ask)."""
    if ids is None:
        return "", []
    if not ids:
        return None, []
    return f" AND id IN ({', '.join('?' * len(ids))})", list(ids)
