"""The benchmark's own SQL: dense paths that production never runs, measured against exact numpy.

- ``exact_scan_all``: exact top-k over every vector of a model, no scope filter (the DuckDB
  exact SQL scan of the "dense paths" table);
- ``hnsw_probe``: a VSS HNSW index built on a temporary copy of the vectors, timed, with its
  recall against exact results. HNSW persistence is experimental in DuckDB, so nothing is kept.

These lived in ``workbench/store/`` although no feature used them; the store keeps only the
scope-filtered scan that `workbench search --dense duckdb` uses. This module talks to DuckDB
directly on a connection of its own (``open_database``), opened with the store's helper, which
loads the shipped vss and fts extensions by path (never INSTALLed from the network). Opened in
the process that holds the workspace, DuckDB shares that database instance, so the numbers are
taken on the same warm data as the searches. It is loaded by path (no package), so it imports
only ``workbench`` (installed), numpy and duckdb.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from workbench.store.connect import connect
from workbench.store.retrieval import vector_literal


def open_database(path: Path):
    """A DuckDB connection to the workspace database at ``path``, vss and fts loaded."""
    return connect(Path(path))


def exact_scan_all(con, model: str, query: np.ndarray, k: int) -> list[tuple[str, float]]:
    """Exact top-k (text hash, cosine similarity) over every vector of ``model``."""
    sql = (f"SELECT text_hash, 1 - array_cosine_distance(vector, {vector_literal(query)}) AS sim FROM embeddings "
           "WHERE model = ? ORDER BY sim DESC LIMIT ?")
    return [(h, float(s)) for h, s in con.execute(sql, [model, k]).fetchall()]


def hnsw_probe(con, model: str, queries: np.ndarray, k: int, exact: list[set[str]]) -> dict[str, Any]:
    """Build time, query latency and recall@k against ``exact`` (one set of text hashes per query)
    of a VSS HNSW index on a temporary copy of ``model``'s vectors; dropped afterwards."""
    con.execute("CREATE OR REPLACE TEMP TABLE hnsw_probe AS SELECT text_hash, vector FROM embeddings WHERE model = ?",
                [model])
    try:
        t = time.perf_counter()
        con.execute("CREATE INDEX hnsw_probe_idx ON hnsw_probe USING HNSW (vector) WITH (metric = 'cosine')")
        build_s = time.perf_counter() - t
        times, recalls = [], []
        for q, truth in zip(queries, exact):
            t = time.perf_counter()
            rows = con.execute(f"SELECT text_hash FROM hnsw_probe ORDER BY array_cosine_distance(vector, "
                               f"{vector_literal(q)}) LIMIT ?", [k]).fetchall()
            times.append((time.perf_counter() - t) * 1000)
            recalls.append(len({r[0] for r in rows} & truth) / max(1, len(truth)))
    finally:
        con.execute("DROP TABLE IF EXISTS hnsw_probe")
    arr = np.asarray(times)
    return {"build_s": round(build_s, 2), "query_ms": {"p50": round(float(np.percentile(arr, 50)), 3),
                                                        "p95": round(float(np.percentile(arr, 95)), 3)},
            "recall_at_k_vs_exact": round(float(np.mean(recalls)), 3), "k": k}
