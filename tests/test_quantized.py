"""The int8 dense path (rank/quantized.py, ``dense="int8"``): an int8 scan whose top candidates are
re-scored exactly. The re-scored cosines are the exact ones, recall against the exact scan holds on
clustered vectors, the caller's mask is respected, and search through the real Workbench agrees
with the exact numpy path."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np
import pytest

from workbench.errors import UserError
from workbench.rank.quantized import Int8Vectors, _smallest
from workbench.retrieval.pipeline import Settings, _dense, _dot_rows, rank


def unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=-1, keepdims=True)).astype(np.float32)


def clustered(n: int, queries: int, *, seed: int = 7, dim: int = 384) -> tuple[np.ndarray, np.ndarray]:
    """Graded cluster structure (topics → clusters → points at varied distances) plus a shared
    offset, as sentence embeddings have; queries drawn the same way."""
    rng = np.random.default_rng(seed)
    topics = unit(rng.standard_normal((20, dim)))
    centres = unit(topics[rng.integers(0, 20, 200)] + 0.9 * unit(rng.standard_normal((200, dim))))
    offset = unit(rng.standard_normal(dim))

    def draw(m: int) -> np.ndarray:
        spread = rng.uniform(0.6, 1.6, (m, 1))
        return unit(centres[rng.integers(0, 200, m)] + spread * rng.standard_normal((m, dim)) / np.sqrt(dim)
                    + 0.5 * offset)

    return draw(n), draw(queries)


@pytest.fixture(scope="module")
def corpus():
    vectors, queries = clustered(20_000, 20)
    return vectors, queries, Int8Vectors(vectors)


def test_codes_are_a_quarter_of_the_floats(corpus):
    vectors, _, iv = corpus
    assert iv.codes.dtype == np.int8 and iv.codes.shape == vectors.shape
    assert iv.bits.nbytes == vectors.nbytes / 32          # one sign bit a dimension
    assert iv.nbytes <= vectors.nbytes * (1 / 4 + 1 / 32) + 4 * len(vectors) + 4 * vectors.shape[1]
    assert iv.vectors is vectors          # the float rows are referenced for re-scoring, not copied


def test_rescored_scores_are_the_exact_cosines(corpus):
    vectors, queries, iv = corpus
    mask = np.ones(len(vectors), dtype=bool)
    for q in queries[:5]:
        out = iv.scan(q, mask, 100, rescore=4)
        kept = np.flatnonzero(np.isfinite(out))
        assert kept.size == 400
        assert np.max(np.abs(out[kept] - vectors[kept] @ q)) <= 1e-6
        # with the pipeline's row-dot, bitwise the cosines of the exact numpy path
        out = iv.scan(q, mask, 100, exact=_dot_rows)
        assert np.array_equal(out[kept], _dot_rows(vectors, q)[kept].astype(np.float64))


def test_skipping_the_rescoring_would_be_caught(corpus):
    """The approximate scores are not cosines, and among near-duplicates of the query (closer
    to each other than one int8 step) the int8 order is noise: only the exact re-scoring finds
    the best row and the true top 10."""
    vectors, queries, iv = corpus
    q = queries[0]
    assert np.max(np.abs(iv.approximate(q) - vectors @ q)) > 1e-3
    rng = np.random.default_rng(3)
    rows = np.vstack([unit(rng.standard_normal((2000, q.size))),
                      unit(q + 0.0003 * rng.standard_normal((200, q.size)))])
    near = Int8Vectors(rows)
    exact = _dot_rows(rows, q)     # these cosines differ in the 6th digit (some tie): compare values
    best = np.sort(exact)[-10:]
    approx = near.approximate(q)
    assert not np.array_equal(np.sort(exact[np.argsort(-approx)[:10]]), best)
    assert exact[np.argmax(approx)] < exact.max()
    out = near.scan(q, np.ones(len(rows), dtype=bool), 10, rescore=20, exact=_dot_rows)
    assert np.array_equal(np.sort(out)[-10:], best.astype(np.float64))


@pytest.mark.parametrize("prefilter", [0, 20])   # every code ranked; the 2,000 nearest by sign bits only
def test_recall_at_100_against_the_exact_scan(corpus, prefilter):
    vectors, queries, iv = corpus
    mask = np.ones(len(vectors), dtype=bool)
    recalls, before = [], []
    for q in queries:
        truth = set(np.argsort(-(vectors @ q), kind="stable")[:100].tolist())
        out = iv.scan(q, mask, 100, prefilter=prefilter)
        recalls.append(len(truth & set(np.argsort(-out, kind="stable")[:100].tolist())) / 100)
        before.append(len(truth & set(np.argsort(-iv.approximate(q), kind="stable")[:100].tolist())) / 100)
    assert np.mean(recalls) >= 0.99 and min(recalls) >= 0.97
    assert np.mean(before) < np.mean(recalls)    # the int8 order alone misses some: re-scoring recovers them


@pytest.mark.parametrize("prefilter", [0, 10])
@pytest.mark.parametrize("share", [0.9, 0.3, 0.01])  # the wide scan, the narrow-scope scan, fewer than asked
def test_the_mask_is_respected(corpus, share, prefilter):
    vectors, queries, iv = corpus
    rng = np.random.default_rng(11)
    mask = rng.random(len(vectors)) < share
    for q in queries[:3]:
        out = iv.scan(q, mask, 50, prefilter=prefilter)
        finite = np.isfinite(out)
        assert not (finite & ~mask).any()
        assert finite.sum() == min(200, mask.sum())
        exact = np.where(mask, vectors @ q, -np.inf)
        truth = set(np.argsort(-exact, kind="stable")[:50].tolist())
        assert len(truth & set(np.argsort(-out, kind="stable")[:50].tolist())) >= 49


def test_also_rescores_the_positions_named_in_the_mask(corpus):
    vectors, queries, iv = corpus
    q = queries[0]
    mask = np.ones(len(vectors), dtype=bool)
    mask[:100] = False
    far = np.argsort(vectors @ q)[:3]                 # the three least similar rows
    far = far[mask[far]]
    out = iv.scan(q, mask, 10, also=np.concatenate([far, [5, 7]]))    # 5, 7: masked out
    assert np.isfinite(out).sum() == 40 + far.size
    assert np.max(np.abs(out[far] - vectors[far] @ q)) <= 1e-6
    assert np.isinf(out[[5, 7]]).all()


def test_hamming_counts_the_differing_sign_bits(corpus):
    vectors, queries, iv = corpus
    q = queries[0]
    naive = ((iv.codes > 0) != ((q - iv.center) > 0)).sum(axis=1)
    assert np.array_equal(iv.hamming(q), naive)
    rows = np.arange(5, len(vectors), 7)
    assert np.array_equal(iv.hamming(q, rows), naive[rows])


def test_smallest_picks_by_count_with_ties_broken_by_position():
    values = np.array([5, 1, 3, 1, 3, 3, 0, 9], dtype=np.uint16)
    assert _smallest(values, 4, 9).tolist() == [1, 3, 6, 2]     # 0, 1, 1 then the first 3
    assert sorted(_smallest(values, 8, 9).tolist()) == list(range(8))


def test_edge_cases():
    empty = Int8Vectors(np.zeros((0, 8), dtype=np.float32))
    assert empty.scan(np.ones(8, dtype=np.float32), np.zeros(0, dtype=bool), 10).shape == (0,)
    flat = Int8Vectors(unit(np.ones((5, 8), dtype=np.float32)))        # no dimension varies
    out = flat.scan(unit(np.ones(8, dtype=np.float32)), np.ones(5, dtype=bool), 2)
    assert np.all(np.isfinite(out)) and out == pytest.approx(np.ones(5))
    assert np.all(np.isinf(flat.scan(np.ones(8, dtype=np.float32), np.zeros(5, dtype=bool), 2)))
    with pytest.raises(ValueError, match="mask has shape"):
        flat.scan(np.ones(8, dtype=np.float32), np.ones(4, dtype=bool), 2)


# -- through the real Workbench -------------------------------------------------------------

QUERIES = [("pgbouncer pool exhausted", "grace.kim"), ("kafka consumer lag", "lena.fischer"),
           ("double-entry ledger journal postings must balance", "priya.raman"),
           ("incident response for the payments database", "marco.bianchi")]


@pytest.mark.parametrize("pipeline", ["hybrid", "dense"])
def test_int8_search_matches_numpy(sample_wb, pipeline):
    for query, who in QUERIES:
        a = sample_wb.search(query, principal=who, pipeline=pipeline, trace=False)
        b = sample_wb.search(query, principal=who, pipeline=pipeline, dense="int8", trace=False)
        assert [h.id for h in b.hits] == [h.id for h in a.hits] and len(a.hits) == 10
        assert [h.scores["dense"] for h in b.hits] == [h.scores["dense"] for h in a.hits]
        assert [h.id for h in b.avoid] == [h.id for h in a.avoid]


def test_int8_ranking_with_a_shallow_depth_matches_numpy(sample_wb):
    """At depth 5 only 20 of the visible fragments are re-scored: the top 10 still agree."""
    index = sample_wb.search_index()
    now = datetime(2026, 1, 1)
    for query, who in QUERIES:
        principal = sample_wb.principal(who)
        qv = index.embedder.encode_query(query)
        exact = rank(index, query, principal, Settings(pipeline="dense", depth=5), now=now, query_vector=qv)
        quick = rank(index, query, principal, Settings(pipeline="dense", depth=5, dense="int8"), now=now,
                     query_vector=qv)
        assert quick.order[:10] == exact.order[:10]
        assert np.isfinite(quick.parts["dense"]).sum() == 20 < np.count_nonzero(index.visible(principal))
    assert index.quantized() is index.quantized()       # built once per index generation


def test_int8_dense_rescores_the_best_lexical_candidates(sample_wb):
    """Weighted fusion adds every lexical candidate's cosine: the int8 path scores the best
    lexical candidates exactly too when it is given them."""
    index = sample_wb.search_index()
    mask = np.ones(len(index.ids), dtype=bool)
    qv = index.embedder.encode_query("pgbouncer pool exhausted")
    settings = Settings(dense="int8", depth=2)
    exact = _dense(index, qv, mask, Settings())
    far = np.argsort(exact)[:3]                       # far from the query: not among int8's top 8
    lexical = np.full(len(index.ids), -np.inf)
    lexical[far] = [3.0, 2.0, 1.0]
    plain = _dense(index, qv, mask, settings)
    assert np.isinf(plain[far]).all() and np.isfinite(plain).sum() == 8
    given = _dense(index, qv, mask, settings, lexical=lexical)
    assert np.array_equal(given[far], exact[far]) and np.isfinite(given).sum() == 11


def test_int8_from_the_cli_and_the_error_names_it(sample_workspace, cli, sample_wb):
    ids = []
    for dense in ("numpy", "int8"):
        r = cli("search", "deploy rollback", "--as", "dan.kowalski", "--dense", dense, "--json",
                workspace=sample_workspace)
        assert r.returncode == 0, r.stderr
        ids.append([h["id"] for h in json.loads(r.stdout)["hits"]])
    assert ids[0] == ids[1] and ids[0]
    with pytest.raises(UserError, match=r"unknown dense path 'int4' \(valid: numpy, duckdb, int8\)"):
        sample_wb.search("anything", principal="grace.kim", dense="int4")
