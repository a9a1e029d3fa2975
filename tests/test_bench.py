"""The benchmark lives in the checkout (benchmarks/bench.py, outside the package), loaded by path
as `workbench bench` loads it; it runs end to end and reports the documented JSON (numbers are not
asserted: speed is measured in benchmarks, not in tests)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str, folder: Path = BENCHMARKS):
    """``folder/name.py`` loaded by path, with no package and no sys.path entry (as the CLI does)."""
    spec = importlib.util.spec_from_file_location(f"test_bench_{name}", folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_bench_run_reports_the_documented_fields(tmp_path):
    said: list[str] = []
    data = load("bench").run(60, queries=3, workdir=tmp_path / "bench", progress=said.append, tui_runs=1, idle_s=1.0)
    assert {"fragments", "search_ms", "stages_ms", "baseline_search_ms", "speedup_p50", "ingest_fragments_per_s",
            "peak_rss_mb"} <= set(data)
    assert set(data["stages_ms"]) == {"embed", "lexical", "dense", "fusion", "compose"}
    assert data["fragments"] == 60 and data["queries"] == 3 and data["search_ms"]["p50"] > 0
    dense = data["dense_paths"]
    assert dense["duckdb_exact_ms"]["p50"] > 0 and dense["hnsw"]["k"] == 59
    paint = data["tui_first_paint_s"]  # benchmarks/firstpaint.py, spawned as a script
    assert paint.get("rows", 0) > 0 and "error" not in paint["flow"], paint
    assert said[0] == "writing 60 synthetic fragment files" and "TUI first paint" in said
    json.dumps(data)  # the documented contract is JSON


def test_synthetic_fragments_are_valid_and_scoped(tmp_path):
    from workbench.ingest.files import parse_fragment

    ids = load("bench").synthesize(40, tmp_path)
    parsed = [parse_fragment((tmp_path / f"{i}.md").read_text(), file=i) for i in ids]
    assert {p.content.scope.org for p in parsed} == {"org0", "org1", "org2", "org3"}
    assert all(p.content.body for p in parsed) and len({p.content.content_hash() for p in parsed}) == 40


def test_bench_sql_scans_every_vector_and_probes_hnsw_without_keeping_it(tmp_path):
    """The benchmark's own SQL, on its own connection next to an open store (as in a run)."""
    from workbench.store import Store

    sql = load("bench_sql")
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(50, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    hashes = [f"h{i:02d}" for i in range(50)]
    store = Store(tmp_path / "wb.duckdb")
    try:
        store.put_embeddings("m", hashes, vectors)
        store.put_embeddings("other", ["x"], vectors[:1])
        con = sql.open_database(store.path)
        try:
            query = vectors[7]
            top = sql.exact_scan_all(con, "m", query, 5)
            expected = [hashes[i] for i in np.argsort(-(vectors @ query))[:5]]
            assert [h for h, _ in top] == expected and top[0] == ("h07", pytest.approx(1.0, abs=1e-5))
            exact = [set(expected)]
            probe = sql.hnsw_probe(con, "m", vectors[7:8], 5, exact)
            assert probe["k"] == 5 and probe["recall_at_k_vs_exact"] == 1.0 and probe["query_ms"]["p50"] >= 0
            assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'hnsw_probe'").fetchone()[0] == 0
        finally:
            con.close()
        assert store.embedding_count("m") == 50  # the store's own connection is untouched
    finally:
        store.close()


def test_bench_rejects_nonsense(cli):
    r = cli("bench", "--fragments", "0")
    assert r.returncode == 2 and "at least 10" in r.stderr


def test_bench_command_loads_the_benchmark_by_path(cli, tmp_path):
    """`workbench bench` loads bench.py from WORKBENCH_BENCHMARKS (default: the checkout's
    benchmarks/) and prints what its run(...) returns."""
    (tmp_path / "bench.py").write_text(
        "def run(n, *, queries=100, workdir=None, progress=None, keep=False):\n"
        "    progress('stub')\n"
        "    return {'fragments': n, 'queries': queries, 'workdir': str(workdir), 'stub': True}\n")
    r = cli("bench", "--fragments", "12", "--queries", "2", "--json", env={"WORKBENCH_BENCHMARKS": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"fragments": 12, "queries": 2, "workdir": "None", "stub": True}
    assert "stub" in r.stderr
