"""Issue 31's speed work: `workbench bench` times new questions for its headline (the cache-hit path
apart), the length-bucketed corpus embedding gives the reference's vectors, and a search's trace is
there when the search returns, on both backends."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"


def _bench():
    spec = importlib.util.spec_from_file_location("test_speed_bench", BENCHMARKS / "bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_headline_pays_for_every_query_vector(sample_workspace):
    """The headline's timed calls are never answered by the query-vector cache, even when the same
    texts were asked before; the cache-hit path is measured apart and is all hits."""
    from workbench import Workbench

    bench = _bench()
    texts = ["how do we retry failed payment webhooks", "ledger reconciliation at month end",
             "who is on call for dispatch"]
    assert not set(bench.warm_up_texts(texts)) & set(texts)
    with Workbench.open(sample_workspace) as wb:
        for text in texts:  # the texts asked before: their vectors are in the cache now
            wb.search(text, principal="marco.bianchi", trace=False)
        assert wb.embedder.cached_queries() >= len(texts)
        headline = bench._measure(wb, texts, lexical="bm25s", dense="numpy", principal="marco.bianchi")
        cached = bench._measure(wb, texts, lexical="bm25s", dense="numpy", cached=True, principal="marco.bianchi")
    assert headline["query_cache_hits"] == 0
    assert headline["stages_ms"]["embed"]["p50"] > 0
    assert cached["query_cache_hits"] == len(texts)


def _texts() -> list[str]:
    from workbench.ingest.files import parse_fragment

    bodies = [parse_fragment(p.read_text(encoding="utf-8"), file=str(p)).content
              for p in sorted((SAMPLE / "fragments").rglob("*.md"))[:40]]
    texts = [f"{c.title}\n\n{c.body}" for c in bodies]
    # short ones, one far past the model's window, an empty-ish one: buckets of very different widths
    return texts + ["retry", "a b", "ledger " * 400, " ", "payments webhook idempotency key"] + [t[:50] for t in texts]


def test_bucketed_embedding_equals_the_unbucketed_reference():
    from workbench.retrieval.embedder import Embedder

    embedder = Embedder(backend="onnx")
    texts = _texts()
    got = embedder.encode(texts, batch_size=8)
    onnx = embedder._onnx_encoder()
    if onnx is None:
        pytest.skip("the ONNX embedder is unavailable here")
    reference = onnx.encode_unbucketed(texts, batch_size=8)
    single = np.stack([onnx.encode_query(t) for t in texts[:10]])  # no padding at all
    cos = np.sum(got * reference, axis=1)
    assert got.shape == (len(texts), 384) and np.isfinite(got).all()
    assert float(np.abs(1 - cos).max()) <= 1e-5
    assert float(np.abs(1 - np.sum(got[:10] * single, axis=1)).max()) <= 1e-5
    # order is kept: each row is its own text's vector, not a neighbour's in the sorted batches
    assert float(np.sum(got[0] * got[len(texts) - 1])) < 0.999


def test_a_search_trace_is_there_when_search_returns(backend, backend_config, tmp_path):
    from workbench import Workbench

    with Workbench.init(tmp_path / "ws", config=backend_config) as wb:
        report = wb.ingest([SAMPLE / "fragments" / "northwind"], actor="kb.sync")
        assert not report.errors
        before = wb.store.trace_total()
        found = [wb.search(q, principal="marco.bianchi") for q in ("payment retries", "ledger close", "webhooks")]
        for result in found:  # readable at once, as served
            trace = wb.trace(result.trace_id, principal="marco.bianchi")
            assert trace["query"] == result.query
            assert [s["id"] for s in trace["served"] if s.get("section") == "hits"] == [h.id for h in result.hits]
        assert wb.store.trace_total() == before + len(found)
    with Workbench.open(tmp_path / "ws") as wb:  # and durable: there in the next process's view
        for result in found:
            assert wb.trace(result.trace_id, principal="marco.bianchi")["query"] == result.query


def test_queued_traces_are_committed_by_a_flush_and_before_a_write(backend, backend_config, tmp_path):
    """Outside the team server traces are queued and committed many at a time: ``flush_traces``
    (and release, close, a write, any read of traces) commits them; on PostgreSQL another process's
    view then holds them."""
    from workbench import Workbench

    with Workbench.init(tmp_path / "ws", config=backend_config) as wb:
        assert not wb.ingest([SAMPLE / "fragments" / "northwind"], actor="kb.sync").errors
        first = wb.search("payment retries", principal="marco.bianchi")
        assert wb.store.deferred_trace(first.trace_id) is not None  # queued, not yet committed
        wb.store.flush_traces()
        assert wb.store.deferred_trace(first.trace_id) is None
        if backend == "postgresql":
            with Workbench.open(tmp_path / "ws") as other:
                assert other.trace(first.trace_id, principal="marco.bianchi")["query"] == "payment retries"
        second = wb.search("ledger close", principal="marco.bianchi")
        fid = second.hits[0].id
        fragment = wb.get(fid, principal="priya.raman")
        wb.edit(fid, fragment.body + "\n\nEdited.", reason="test", actor="priya.raman")  # a write commits the queue first
        assert wb.store.deferred_trace(second.trace_id) is None
