"""Pure ranking maths: fusion, top-k, priors, metrics and tokenisation (no I/O, fake data)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.errors import UserError
from workbench.rank import fusion, metrics, priors
from workbench.retrieval.lexical import tokenize

NEG = -np.inf


def test_rrf_sums_reciprocal_ranks_with_k60():
    lexical = np.array([3.0, 2.0, NEG, 1.0])
    dense = np.array([0.1, 0.9, 0.5, NEG])
    fused = fusion.rrf(lexical, dense)
    assert fused[0] == pytest.approx(1 / 61 + 1 / 63)
    assert fused[1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[3] == pytest.approx(1 / 63)


def test_rrf_ignores_documents_outside_depth():
    lexical = np.array([5.0, 4.0, 3.0])
    dense = np.full(3, NEG)
    fused = fusion.rrf(lexical, dense, depth=2)
    assert np.isneginf(fused[2]) and fused[0] > fused[1]


def test_weighted_is_07_dense_plus_03_max_normalised_bm25():
    lexical = np.array([4.0, 2.0, NEG])
    dense = np.array([0.5, 0.8, 0.3])
    fused = fusion.weighted(lexical, dense)
    assert fused.tolist() == pytest.approx([0.7 * 0.5 + 0.3, 0.7 * 0.8 + 0.15, 0.7 * 0.3])
    assert np.isneginf(fusion.weighted(np.array([NEG]), np.array([NEG]))[0])


def test_unknown_fusion_lists_valid_names():
    with pytest.raises(UserError, match="valid: weighted, rrf"):
        fusion.fusion("borda")


def test_top_k_orders_by_score_then_index_and_skips_non_candidates():
    scores = np.array([0.5, NEG, 0.9, 0.5, 0.1])
    assert fusion.top_k(scores, 3).tolist() == [2, 0, 3]
    assert fusion.top_k(scores, 10).tolist() == [2, 0, 3, 4]
    assert fusion.top_k(np.array([NEG, NEG]), 3).tolist() == []


def test_freshness_halves_every_half_life():
    ages = np.array([0.0, 90.0, 180.0, -5.0])
    assert priors.freshness(ages, np.full(4, 90.0)).tolist() == pytest.approx([1.0, 0.5, 0.25, 1.0])
    p = priors.Priors()
    assert p.half_life("policy") == 365 and p.half_life("runbook") == 90


def test_priors_break_ties_towards_fresh_and_authoritative():
    fused = np.array([0.5, 0.5, 0.5, 0.2, NEG])
    fresh = np.array([1.0, 0.1, 0.1, 1.0, 1.0])
    authority = np.array([0.0, 0.0, 1.0, 0.0, 1.0])
    out = priors.apply(fused, fresh, authority, priors.Priors(freshness_weight=0.2, authority_weight=0.2))
    assert out[0] > out[1] and out[2] > out[1]
    assert out[3] == pytest.approx(0.0)  # the weakest candidate normalises to 0
    assert np.isneginf(out[4])           # a non-candidate stays out


def test_priors_cannot_overturn_a_clear_relevance_gap_with_default_weights():
    fused = np.array([0.9, 0.3])
    out = priors.apply(fused, np.array([0.0, 1.0]), np.array([0.0, 1.0]), priors.Priors())
    assert out[0] > out[1]


def test_metrics_known_values():
    ranked = ["a", "b", "c", "d"]
    judged = {"b": 1.0, "d": 1.0, "z": 1.0}
    assert metrics.recall_at(ranked, judged, 10) == pytest.approx(2 / 3)
    assert metrics.mrr_at(ranked, judged, 10) == pytest.approx(0.5)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert metrics.ndcg_at(ranked, judged, 10) == pytest.approx(dcg / idcg)
    assert metrics.summarise([(ranked, judged)])["queries"] == 1


def test_tokenize_stems_drops_stopwords_and_keeps_identifiers_whole():
    tokens = tokenize("The retries of NWPAY-4091 in ledger.posting.batch_size")
    assert "the" not in tokens and "of" not in tokens
    assert "retri" in tokens                    # stemmed
    assert "nwpay-4091" in tokens and "nwpay" in tokens and "4091" in tokens
    assert "ledger.posting.batch_size" in tokens and "batch" in tokens


# -- supersession (pure) ------------------------------------------------------------------------

def test_superseders_count_only_visible_ones_and_name_the_newest():
    from workbench.rank import supersession

    pos = {f: i for i, f in enumerate(["a", "b", "c", "d", "e"])}
    newer, older = supersession.edge_arrays([("b", "a"), ("c", "a"), ("d", "c"), ("a", "a"), ("x", "a"),
                                             ("b", "a")], pos)
    assert list(zip(newer.tolist(), older.tolist())) == [(1, 0), (2, 0), (3, 2)]   # distinct, known, no self
    updated = np.array([0.0, 5.0, 9.0, 1.0, 0.0])
    everyone = np.ones(5, dtype=bool)
    assert supersession.superseders(everyone, newer, older, updated).tolist() == [2, -1, 3, -1, -1]
    no_c = everyone.copy()
    no_c[2] = False                                          # c invisible: b is named for a instead
    assert supersession.superseders(no_c, newer, older, updated).tolist() == [1, -1, 3, -1, -1]
    no_bc = no_c.copy()
    no_bc[1] = False                                         # no superseder of a left in view
    assert supersession.superseders(no_bc, newer, older, updated).tolist() == [-1, -1, 3, -1, -1]
    tie = np.array([0.0, 5.0, 5.0, 1.0, 0.0])                # same update time: the smaller position
    assert supersession.superseders(everyone, newer, older, tie)[0] == 1
    empty = supersession.edge_arrays([], pos)
    assert supersession.superseders(everyone, *empty, updated).tolist() == [-1] * 5


def test_demotion_always_lowers_and_keeps_non_candidates_out():
    from workbench.rank import supersession

    scores = np.array([0.8, -0.2, NEG, 0.5])
    out = supersession.demote(scores, np.array([0, 1, 2]))
    assert out[0] == pytest.approx(0.8 * supersession.DEMOTION) and out[1] < -0.2 and np.isneginf(out[2])
    assert out[3] == 0.5 and scores[0] == 0.8                # a copy
    assert np.array_equal(supersession.demote(scores, np.zeros(0, dtype=np.int64)), scores)


def test_supersedes_enters_pagerank_reversed():
    from workbench.rank.authority import edge_arrays, pagerank, visible_authority

    ids = ["new", "old", "c1", "c2"]
    links, refs, _ = edge_arrays(ids, [("c1", "old"), ("c2", "old"), ("new", "old")], [])
    sup = (np.array([0]), np.array([1]))                      # new supersedes old (and also links to it)
    everyone = np.ones(4, dtype=bool)
    rank, in_degree, out_degree = visible_authority(everyone, links, refs, sup)
    plain, _, _ = visible_authority(everyone, links, refs)
    assert rank[0] > plain[0] and rank[1] < plain[1] and rank[0] > rank[1]   # old's citations flow on to new
    assert in_degree.tolist() == [0, 3, 0, 0] and out_degree.tolist() == [1, 0, 1, 1]
    reference = pagerank(ids, [("c1", "old"), ("c2", "old"), ("new", "old")], supersedes=[("new", "old")])
    assert [reference[i][0] for i in ids] == pytest.approx(rank.tolist(), abs=1e-6)
    assert [reference[i][1:] for i in ids] == list(zip(in_degree.tolist(), out_degree.tolist()))


def test_bm25_contains_matches_the_documents_tokens():
    from workbench.rank.bm25 import BM25Matrix

    rng = np.random.default_rng(4)
    docs = [rng.integers(0, 15, size=rng.integers(0, 12)) for _ in range(40)]
    matrix = BM25Matrix(docs, 15)
    tokens = [-1, 0, 3, 7, 14, 15]
    positions = np.array([0, 5, 39, 5, 17])
    expected = np.array([[t in set(docs[p].tolist()) for p in positions] for t in tokens])
    assert np.array_equal(matrix.contains(tokens, positions), expected)
    assert matrix.contains([], positions).shape == (0, 5)
