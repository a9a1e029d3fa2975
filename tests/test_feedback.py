"""Issue 31 (SciFact, second round): dense pseudo-relevance feedback, opt-in (``Settings.feedback``,
the eval pipeline ``hybrid-prf``). The maths on fake vectors; the pipeline on both backends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.rank.feedback import FEEDBACK_WEIGHT, rocchio, rocchio_many

SAMPLE = Path(__file__).resolve().parents[1] / "sample_corpus"


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


# -- the maths, pure ---------------------------------------------------------------------------

def test_rocchio_moves_the_query_towards_the_feedback_mean_and_stays_a_unit_vector():
    q = unit(1, 0, 0)
    fb = np.stack([unit(0, 1, 0), unit(0, 0, 1)])
    moved = rocchio(q, fb, 0.5)
    expected = unit(1, 0.25, 0.25)                      # q + 0.5 x mean(feedback), normalised
    assert np.allclose(moved, expected, atol=1e-6)
    assert abs(float(np.linalg.norm(moved)) - 1) < 1e-6
    assert np.array_equal(rocchio(q, np.zeros((0, 3)), 0.5), q)     # no feedback: the query as given
    assert np.array_equal(rocchio(q, fb, 0.0), q)
    assert np.array_equal(rocchio(unit(1, 0), unit(-1, 0)[None], 1.0), unit(1, 0))  # the sum vanishes
    many = rocchio_many(np.stack([q, q]), np.stack([fb, fb[::-1]]), FEEDBACK_WEIGHT)
    assert many.shape == (2, 3) and np.allclose(many[0], many[1])


def test_feedback_lifts_a_document_like_the_top_one_above_one_like_the_query_alone():
    # docs: 0 answers the query; 1 is 0's close neighbour, a bit off the query; 2 is equally close
    # to the query as 1 but in another direction. Feedback from doc 0 separates 1 from 2.
    q = unit(1, 0, 0)
    docs = np.stack([unit(1, 0.3, 0), unit(0.8, 0.6, 0), unit(0.8, -0.6, 0)])
    before = docs @ q
    assert before[1] == pytest.approx(before[2])
    after = docs @ rocchio(q, docs[[int(np.argmax(before))]])
    assert after[1] > after[2] and int(np.argmax(after)) == 0


# -- the pipeline, both backends ------------------------------------------------------------------

def test_hybrid_prf_rescores_with_the_moved_query_within_the_callers_scope(backend_config, tmp_path):
    from workbench import Workbench
    from workbench.models import utcnow
    from workbench.retrieval.pipeline import Settings, hits_from, rank

    with Workbench.init(tmp_path / "ws", config=backend_config) as wb:
        assert not wb.ingest([SAMPLE], actor="kb.sync").errors
        index = wb.retrieval.search_index()
        who = wb.principal("marco.bianchi")
        query = "how is the settlement batch reconciled overnight"
        plain = rank(index, query, who, Settings(), now=utcnow())
        prf = rank(index, query, who, Settings(feedback=True), now=utcnow())
        assert "feedback" not in plain.parts and "feedback" in prf.parts
        assert np.array_equal(prf.parts["dense"], plain.parts["dense"])   # a confidence reads the query's own cosine
        seen = index.visible(who)
        assert np.all(np.isneginf(prf.parts["feedback"][~seen]))           # nothing outside the scope is scored
        assert np.isfinite(prf.parts["feedback"][seen]).all()
        assert not np.allclose(prf.parts["feedback"][seen], plain.parts["dense"][seen])
        top = prf.order[0]
        assert seen[top]
        hits, _ = hits_from(index, prf, Settings(feedback=True))
        assert hits and "feedback" in hits[0].scores
        assert Settings(feedback=True).to_dict()["feedback"] is True and "feedback" not in Settings().to_dict()


def test_eval_pipeline_hybrid_prf_on_the_sample_golden_set(sample_wb):
    report = sample_wb.eval_golden(str(SAMPLE / "golden.yaml"), pipelines=["hybrid", "hybrid-prf"])
    prf, plain = report["hybrid-prf"], report["hybrid"]
    # measured on the Makefile's sample workspace: 0.8824 / 0.9838 against hybrid's 0.877 / 0.9773
    assert prf["recall@10"] >= plain["recall@10"] - 0.01 and prf["ndcg@10"] >= plain["ndcg@10"] - 0.01
    assert prf["ndcg@10"] != plain["ndcg@10"] or prf["mrr@10"] != plain["mrr@10"]   # the feedback ran
