"""PostgreSQL's own forms of the queries DuckDB answers with its own functions: list columns
(``= ANY``), JSON (``json_array_elements``), upserts (``ON CONFLICT``), bulk loads (COPY into a
temporary table), vectors (pgvector, read and written by binary COPY: 13x faster than text).

Mixed in before the shared query mixins, so each method here replaces the DuckDB form of the same
name with the same meaning and the same results (tests/test_store_contract.py runs both).
"""

from __future__ import annotations

import json
import struct
from datetime import datetime
from typing import Any, Sequence

import numpy as np

from ...errors import StoreError, UserError
from ..core import _FRAGMENT_COLS
from ..retrieval import DIM, _among, _paths
from ..rows import VersionWrite

_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_BATCH = ("id", "version", "author", "written_at", "reason", "content_hash", "content", "kind", "title", "body",
          "org", "repo", "persona", "session", "owner", "status", "tags", "links", "supersedes", "sources",
          "details", "created_at", "verified_at", "origin")
_BATCH_TABLE = ("CREATE TEMP TABLE wb_batch (id VARCHAR COLLATE \"C\", version INTEGER, author VARCHAR, "
                "written_at TIMESTAMP, reason VARCHAR, content_hash VARCHAR, content JSON, kind VARCHAR, "
                "title VARCHAR, body VARCHAR, org VARCHAR, repo VARCHAR, persona VARCHAR, session VARCHAR, "
                "owner VARCHAR, status VARCHAR, tags VARCHAR[], links VARCHAR[], supersedes VARCHAR[], sources JSON, "
                "details JSON, created_at TIMESTAMP, verified_at TIMESTAMP, origin VARCHAR) ON COMMIT DROP")


def _us(column: str) -> str:
    """Microseconds since 1970 of a TIMESTAMP column, exactly (DuckDB's ``epoch_us``)."""
    return f"(extract(epoch FROM {column}) * 1000000)::BIGINT"


class PgQueries:
    # The host class (PgStore) provides _q, _with, _copy_in, transaction() and bump_generation().

    # -- fragments ----------------------------------------------------------------------

    def index_columns(self, *, status: str = "active", ids: list[str] | None = None) -> dict[str, np.ndarray]:
        sql = (f"SELECT id, version, coalesce({_us('verified_at')}, -1), {_us('updated_at')}, kind, owner, org, "
               "repo, persona, session, tags, supersedes, content_hash FROM fragments WHERE status = ?")
        params: list[Any] = [status]
        if ids is not None:
            sql += " AND id = ANY(?)"
            params.append(list(ids))
        rows = self._q(sql + " ORDER BY id", params)
        names = ("id", "version", "verified", "updated", "kind", "owner", "org", "repo", "persona", "session",
                 "tags", "supersedes", "content_hash")
        out: dict[str, np.ndarray] = {}
        for i, name in enumerate(names):
            values = [r[i] for r in rows]
            if name in ("version", "verified", "updated"):
                out[name] = np.array(values, dtype=np.int64)
            else:
                column = np.empty(len(values), dtype=object)
                column[:] = values
                out[name] = column
        return out

    def stamp_arrays(self, *, status: str = "active") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = self._q(f"SELECT id, version, coalesce({_us('verified_at')}, -1) FROM fragments WHERE status = ? "
                       "ORDER BY id", [status])
        ids = np.empty(len(rows), dtype=object)
        ids[:] = [r[0] for r in rows]
        return (ids, np.array([r[1] for r in rows], dtype=np.int64), np.array([r[2] for r in rows], dtype=np.int64))

    def write_versions(self, items: list[VersionWrite]) -> None:
        """Append many versions at once (COPY into a temporary table, then three statements) and
        make each current; the same rules as the DuckDB form."""
        if not items:
            return

        def values(item: VersionWrite) -> list:
            row = item.row()
            for name in ("content", "sources", "details"):
                row[name] = json.dumps(row[name], ensure_ascii=False)
            for name in ("written_at", "created_at", "verified_at"):
                row[name] = None if row[name] is None else datetime.fromisoformat(row[name])
            return [row[name] for name in _BATCH]

        with self.transaction():
            self._q(_BATCH_TABLE)
            self._copy_in("wb_batch", _BATCH, (values(i) for i in items))
            self._q("INSERT INTO fragment_versions SELECT id, version, author, written_at, reason, content_hash, "
                    "content FROM wb_batch")
            self._q("UPDATE fragments SET version = s.version, kind = s.kind, title = s.title, body = s.body, "
                    "org = s.org, repo = s.repo, persona = s.persona, session = s.session, owner = s.owner, "
                    "status = s.status, tags = s.tags, links = s.links, supersedes = s.supersedes, "
                    "sources = s.sources, details = s.details, content_hash = s.content_hash, "
                    "updated_at = s.written_at, verified_at = coalesce(s.verified_at, fragments.verified_at), "
                    "origin = coalesce(s.origin, fragments.origin) FROM wb_batch AS s WHERE fragments.id = s.id")
            self._q(f"INSERT INTO fragments ({_FRAGMENT_COLS}, origin) SELECT id, version, kind, title, body, org, "
                    "repo, persona, session, owner, status, tags, links, supersedes, sources, details, content_hash, "
                    "created_at, written_at, verified_at, origin FROM wb_batch s "
                    "WHERE NOT EXISTS (SELECT 1 FROM fragments f WHERE f.id = s.id)")
            self._q("DROP TABLE wb_batch")
            self.bump_generation()

    def put_ingested_files(self, rows: list[tuple[str, str, str, str]], at: datetime) -> None:
        if not rows:
            return
        with self.transaction():
            self._q("CREATE TEMP TABLE wb_files (path VARCHAR, file_hash VARCHAR, fragment_id VARCHAR, "
                    "content_hash VARCHAR) ON COMMIT DROP")
            self._copy_in("wb_files", ("path", "file_hash", "fragment_id", "content_hash"), rows)
            self._q("INSERT INTO ingested_files SELECT path, file_hash, fragment_id, content_hash, ? FROM wb_files "
                    "ON CONFLICT (path) DO UPDATE SET file_hash = EXCLUDED.file_hash, fragment_id = "
                    "EXCLUDED.fragment_id, content_hash = EXCLUDED.content_hash, ingested_at = EXCLUDED.ingested_at",
                    [at])
            self._q("DROP TABLE wb_files")

    def put_sync_bases(self, rows: list[tuple[str, str, str]], at: datetime) -> None:
        """(fragment id, content hash, source file) per fragment: its sync base moves there."""
        if not rows:
            return
        with self.transaction():
            self._q("CREATE TEMP TABLE wb_bases (fragment_id VARCHAR, content_hash VARCHAR, source VARCHAR) "
                    "ON COMMIT DROP")
            self._copy_in("wb_bases", ("fragment_id", "content_hash", "source"), rows)
            self._q("INSERT INTO sync_bases SELECT fragment_id, content_hash, source, ? FROM wb_bases "
                    "ON CONFLICT (fragment_id) DO UPDATE SET content_hash = EXCLUDED.content_hash, "
                    "source = EXCLUDED.source, taken_at = EXCLUDED.taken_at", [at])
            self._q("DROP TABLE wb_bases")

    # -- embeddings (binary COPY both ways) ---------------------------------------------

    def embeddings(self, model: str, hashes: list[str] | None = None) -> dict[str, np.ndarray]:
        sql, params = "SELECT text_hash, vector FROM embeddings WHERE model = %s", [model]
        if hashes is not None:
            sql += " AND text_hash = ANY(%s)"
            params.append(list(hashes))

        def read(con):
            with con.cursor().copy(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params) as copy:
                return b"".join(bytes(block) for block in copy)

        return _parse_vectors(self._with(read))

    def put_embeddings(self, model: str, hashes: list[str], matrix: np.ndarray) -> bool:
        if not hashes or not self.can_store_derived():
            return False
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if matrix.shape[1] != DIM:
            raise StoreError(f"an embedding must have {DIM} dimensions, not {matrix.shape[1]}")
        if matrix.shape[0] != len(hashes):
            raise StoreError(f"{len(hashes)} text hashes for {matrix.shape[0]} vectors")
        payload = _binary_vectors(hashes, model, matrix)

        def write(con):
            with con.cursor().copy("COPY wb_vectors (text_hash, model, vector) FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(payload)

        with self.transaction():
            self._q(f"CREATE TEMP TABLE wb_vectors (text_hash VARCHAR, model VARCHAR, vector vector({DIM})) "
                    "ON COMMIT DROP")
            self._with(write)
            self._q("INSERT INTO embeddings SELECT text_hash, model, vector FROM wb_vectors ON CONFLICT DO NOTHING")
            self._q("DROP TABLE wb_vectors")
        return True

    def dense_scan(self, model: str, query: np.ndarray, text_hashes: list[str], k: int) -> list[tuple[str, float]]:
        """Exact cosine similarity over the given texts (pgvector's ``<=>``, no index: exact)."""
        literal = _vector_text(query)
        rows = self._q("SELECT text_hash, 1 - (vector <=> ?::vector) AS sim FROM embeddings "
                       "WHERE model = ? AND text_hash = ANY(?) ORDER BY sim DESC, text_hash LIMIT ?",
                       [literal, model, list(text_hashes), k])
        return [(h, float(s)) for h, s in rows]

    # -- authority and links --------------------------------------------------------------

    def superseders(self, fragment_id: str) -> list[str]:
        rows = self._q("SELECT id FROM fragments WHERE status IN ('active', 'archived') AND ? = ANY(supersedes) "
                       "ORDER BY id",
                       [fragment_id])
        return [r[0] for r in rows]

    def source_edges(self, ids: list[str] | None = None) -> list[tuple[str, str]]:
        where, params = _among(ids)
        if where is None:
            return []
        rows = self._q("SELECT f.id, s->>'repo', s->>'path' FROM fragments f, json_array_elements(f.sources) s "
                       f"WHERE f.status = 'active'{where.replace(' id IN', ' f.id IN')}", params)
        return [(fid, f"source:{repo or '-'}/{path}") for fid, repo, path in rows]

    def path_links(self) -> list[tuple[str, str, str, list, list | None, list]]:
        rows = self._q("SELECT id, kind, owner, sources::text, (details->'applies_to')::text, tags FROM fragments "
                       "WHERE status = 'active' AND (json_array_length(sources) > 0 "
                       "OR details->'applies_to' IS NOT NULL) ORDER BY id")
        return [(fid, kind, owner, json.loads(sources), json.loads(globs) if globs and globs != "null" else None,
                 list(tags or ())) for fid, kind, owner, sources, globs, tags in rows]

    def put_authority(self, scores: dict[str, tuple[float, int, int]], generation: int,
                      graph: str | None = None) -> bool:
        if not self.can_store_derived():
            self._memory_authority = (generation, dict(scores))
            self._memory_authority_graph = graph
            return False
        with self.transaction():
            self._q("DELETE FROM authority")
            if scores:
                self._copy_in("authority", ("fragment_id", "score", "in_links", "out_links", "generation"),
                              ([fid, float(s[0]), int(s[1]), int(s[2]), generation] for fid, s in scores.items()))
            self._put_meta("authority_generation", str(generation))
            self._put_meta("authority_graph", graph or "")
        return True

    def touch_authority(self, generation: int) -> bool:
        if not self.can_store_derived():
            if self._memory_authority is not None:
                self._memory_authority = (generation, self._memory_authority[1])
            return False
        self._put_meta("authority_generation", str(generation))
        return True

    def _put_meta(self, key: str, value: str) -> None:
        self._q("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", [key, value])

    # -- traces ---------------------------------------------------------------------------

    def trace_usage(self, since: datetime, until: datetime, *, fragment_id: str | None = None
                    ) -> list[tuple[str, str, str | None, int, datetime]]:
        self._settle_traces()
        where = " WHERE fid = ?" if fragment_id is not None else ""
        params: list[Any] = [since, until] + ([fragment_id] if fragment_id is not None else [])
        rows = self._q("SELECT fid, principal, scope, count(DISTINCT tid), max(created_at) FROM ("
                       "SELECT t.id AS tid, t.principal, t.scope, t.created_at, e->>'id' AS fid "
                       "FROM traces t, json_array_elements(t.served) e "
                       f"WHERE t.created_at >= ? AND t.created_at <= ?) AS served{where} "
                       "GROUP BY fid, principal, scope ORDER BY fid, principal, scope", params)
        return [(r[0], r[1], r[2], int(r[3]), r[4]) for r in rows]

    def gap_candidates(self, since: datetime, until: datetime) -> list[dict[str, Any]]:
        self._settle_traces()
        rows = self._q("SELECT t.id, t.created_at, t.kind, t.query, t.principal, t.scope, t.settings->>'abstained', "
                       "t.settings->>'min_confidence', (SELECT coalesce(json_agg(json_build_array("
                       "j.value->'scores'->>'pinned', j.value->>'confidence') ORDER BY j.n), '[]') "
                       "FROM json_array_elements(t.served) WITH ORDINALITY AS j(value, n)), "
                       "(t.settings->'paths')::text "
                       "FROM traces t WHERE t.kind IN ('search', 'context') AND t.created_at >= ? "
                       "AND t.created_at <= ? ORDER BY t.created_at, t.id", [since, until])
        return [{"id": r[0], "created_at": r[1], "kind": r[2], "query": r[3], "principal": r[4], "scope": r[5],
                 "abstained": None if r[6] is None else r[6] == "true", "min_confidence": _float(r[7]),
                 "served": [(p == "true", None if c is None else float(c)) for p, c in json.loads(r[8])],
                 "paths": _paths(r[9])} for r in rows]

    # -- curation ---------------------------------------------------------------------------

    def simhash_rows(self) -> list[tuple]:
        return [(*r[:8], None if r[8] is None else int(r[8])) for r in self._q(
            "SELECT f.id, f.title, f.content_hash, f.org, f.repo, f.persona, f.session, f.owner, s.simhash "
            "FROM fragments f LEFT JOIN simhashes s ON s.content_hash = f.content_hash "
            "WHERE f.status = 'active' ORDER BY f.id")]

    def put_simhashes(self, values: dict[str, int]) -> bool:
        if not values or not self.can_store_derived():
            return False
        with self.transaction("cache simhashes"):
            self._q("CREATE TEMP TABLE wb_sim (content_hash VARCHAR, simhash NUMERIC(20, 0)) ON COMMIT DROP")
            self._copy_in("wb_sim", ("content_hash", "simhash"), ([h, int(s)] for h, s in values.items()))
            self._q("INSERT INTO simhashes SELECT content_hash, simhash FROM wb_sim ON CONFLICT DO NOTHING")
            self._q("DROP TABLE wb_sim")
        return True

    def in_degrees(self) -> dict[str, int]:
        rows = self._q("SELECT dst, count(*) FROM (SELECT unnest(links || supersedes) AS dst FROM fragments "
                       "WHERE status = 'active') AS edges GROUP BY dst")
        return {r[0]: r[1] for r in rows}

    def replace_links(self, old: str, new: str) -> list[str]:
        rows = self._q("SELECT id FROM fragments WHERE ? = ANY(links) OR ? = ANY(supersedes) ORDER BY id", [old, old])
        return [r[0] for r in rows if r[0] != new]

    def put_git_repo(self, key: str, name: str, path: str, head: str | None, at: datetime, *,
                     root: str | None = None, remote: str | None = None, include: list[str] | None = None,
                     adopted: list[str] | tuple[str, ...] = ()) -> None:
        self._q("INSERT INTO git_repos (repo_key, name, path, head, ingested_at, root_commit, remote, include_globs, "
                "adopted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (repo_key) DO UPDATE SET name = EXCLUDED.name, "
                "path = EXCLUDED.path, head = EXCLUDED.head, ingested_at = EXCLUDED.ingested_at, "
                "root_commit = EXCLUDED.root_commit, remote = EXCLUDED.remote, include_globs = EXCLUDED.include_globs, "
                "adopted = EXCLUDED.adopted",
                [key, name, path, head, at, root, remote, json.dumps(list(include)) if include is not None else None,
                 json.dumps(list(adopted)) if adopted else None])

    # -- overrides, proposals -----------------------------------------------------------------

    def put_secret_override(self, fragment_id: str, version: int, actor: str, at: datetime,
                            findings: list[dict[str, Any]]) -> None:
        with self.transaction():
            self.forget_generation()
            self._q("INSERT INTO secret_overrides VALUES (?, ?, ?, ?, ?) ON CONFLICT (fragment_id, version) DO UPDATE "
                    "SET actor = EXCLUDED.actor, allowed_at = EXCLUDED.allowed_at, findings = EXCLUDED.findings",
                    [fragment_id, version, actor, at, json.dumps(findings)])
            self.add_event("allow-secret", actor=actor, fragment_id=fragment_id,
                           detail={"version": version, "file": "; ".join(dict.fromkeys(f["file"] for f in findings)),
                                   "findings": "; ".join(f["findings"] for f in findings)}, at=at)

    def secret_flagged(self) -> frozenset[str]:
        """As on DuckDB, kept per generation, but keyed by the generation read from the database:
        another replica's write changes it."""
        generation = self.generation()
        held = getattr(self, "_flagged_at", None)
        if held is not None and held[0] == generation and not self._depth:
            return held[1]
        found = frozenset(r[0] for r in self._q("SELECT o.fragment_id FROM secret_overrides o JOIN fragments f "
                                                "ON f.id = o.fragment_id AND f.version = o.version"))
        if not self._depth:
            self._flagged_at = (generation, found)
        return found

    def proposals_since(self, author: str, since: datetime) -> int:
        rows = self._q("SELECT count(*) FROM fragment_versions WHERE author = ? AND version = 1 AND created_at >= ? "
                       "AND content->>'status' = 'proposed'", [author, since])
        return int(rows[0][0])

    # -- the persisted FTS index is DuckDB's ---------------------------------------------------

    def build_fts(self, ids: list[str], texts: list[str], generation: int) -> None:
        raise UserError("the duckdb-fts lexical backend needs a DuckDB workspace; this one is on PostgreSQL "
                        "(use --lexical bm25, the default)")

    def fts_generation(self) -> int | None:
        return None

    def fts_doc_ids(self) -> dict[str, int]:
        return {}

    def fts_scores(self, query: str, visible: Sequence[int]) -> dict[str, float]:
        raise UserError("the duckdb-fts lexical backend needs a DuckDB workspace (use --lexical bm25)")


def _float(text: str | None) -> float | None:
    try:
        return None if text is None else float(text)
    except ValueError:
        return None  # (DuckDB's TRY_CAST)


def _vector_text(vector: np.ndarray) -> str:
    values = np.asarray(vector, dtype=np.float32).reshape(-1)
    if values.shape != (DIM,) or not np.isfinite(values).all():
        raise ValueError(f"a query vector must be {DIM} finite floats")
    return "[" + ",".join(f"{x:.8g}" for x in values.tolist()) + "]"


def _binary_vectors(hashes: list[str], model: str, matrix: np.ndarray) -> bytes:
    """COPY's binary format of (text_hash, model, vector) rows; pgvector's binary vector is a
    16-bit dimension count, 16 unused bits and big-endian float4s."""
    model_bytes = model.encode("utf-8")
    vector_head = struct.pack(">ihh", 4 + 4 * DIM, DIM, 0)
    big = matrix.astype(">f4")
    parts = [_COPY_SIGNATURE, struct.pack(">ii", 0, 0)]
    model_field = struct.pack(">i", len(model_bytes)) + model_bytes
    for h, row in zip(hashes, big):
        hb = h.encode("utf-8")
        parts += [struct.pack(">hi", 3, len(hb)), hb, model_field, vector_head, row.tobytes()]
    parts.append(struct.pack(">h", -1))
    return b"".join(parts)


def _parse_vectors(data: bytes) -> dict[str, np.ndarray]:
    """(text_hash, vector) rows of a binary COPY, as a dict of float32 vectors."""
    if not data:
        return {}
    if not data.startswith(_COPY_SIGNATURE):
        raise StoreError("unexpected COPY output from PostgreSQL")
    pos = len(_COPY_SIGNATURE) + 4
    (ext,) = struct.unpack_from(">i", data, pos)
    pos += 4 + ext
    hashes, offsets = [], []
    unpack = struct.unpack_from
    while True:
        (fields,) = unpack(">h", data, pos)
        pos += 2
        if fields == -1:
            break
        (n,) = unpack(">i", data, pos)
        hashes.append(data[pos + 4:pos + 4 + n].decode("utf-8"))
        pos += 4 + n
        (n,) = unpack(">i", data, pos)
        offsets.append(pos + 8)  # past the length, the dimension count and the unused 16 bits
        pos += 4 + n
    if not hashes:
        return {}
    raw = np.frombuffer(data, dtype=np.uint8)
    index = np.asarray(offsets)[:, None] + np.arange(4 * DIM)[None, :]
    matrix = raw[index].view(">f4").reshape(len(hashes), DIM).astype(np.float32)
    return dict(zip(hashes, matrix))
