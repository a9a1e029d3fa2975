"""BM25 equivalence with bm25s, as a property: our numpy scorer gives bm25s's scores and rankings.

workbench scores BM25 itself (rank/bm25.py ``BM25Matrix``, called by retrieval/lexical.py
``Bm25``); bm25s is a test-only reference. The variant is bm25s ``method="lucene"``: idf
``log(1 + (N - df + 0.5) / (df + 0.5))`` and term part ``tf / (tf + k1 (1 - b + b dl / avgdl))``
(test_only_the_lucene_variant_of_bm25s_matches pins it). Properties over generated corpora
(a few words, so terms collide; empty documents, as a text of stopwords becomes; repeated terms;
duplicate documents) and queries (repeated, unseen and unknown terms):

- over all documents, and over a mask against bm25s built on only the visible documents,
  scores agree to RTOL, the same documents match, and every pair bm25s orders apart by more than
  the tolerance we order the same way; duplicate documents tie exactly;
- through ``lexical.Bm25`` on generated texts, with bm25s indexing the same tokens (the
  backend's own tokenizer) at the documented k1=1.5, b=0.75.

Tolerance: bm25s rounds each idf to float32 before multiplying, we round the product, so each
term's weight may differ by an ulp or so; both sum float32 in query-token order. Measured worst
relative difference ~2e-7; RTOL is 1e-6 (about 8 float32 ulps).
"""

from __future__ import annotations

from dataclasses import dataclass

import bm25s
import numpy as np
import pytest
from conftest import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from workbench.rank.bm25 import B, K1, BM25Matrix
from workbench.retrieval.lexical import Bm25, tokenize

RTOL = 1e-6
WORDS = [f"t{i}" for i in range(8)]     # the corpus draws from a prefix of these
SILENT = ["u0", "u1"]                     # in the vocabulary (as after an earlier build) but in no document
LATE = ["v0"]                             # added to the shared vocabulary after this matrix was built: id >= its size
UNKNOWN = ["zz"]                          # not in the vocabulary: dropped before scoring (Vocabulary.lookup)


@dataclass(frozen=True)
class Case:
    docs: list[list[str]]
    mask: list[bool]
    queries: list[list[str]]
    k1: float
    b: float
    order: list[str]                      # vocabulary order: token id = position


@st.composite
def cases(draw) -> Case:
    words = WORDS[:draw(st.integers(1, len(WORDS)))]
    docs = draw(st.lists(st.lists(st.sampled_from(words), max_size=12), min_size=1, max_size=12))
    docs += [docs[i] for i in draw(st.lists(st.integers(0, len(docs) - 1), max_size=3))]   # duplicates
    mask = draw(st.lists(st.booleans(), min_size=len(docs), max_size=len(docs)))
    query = st.lists(st.sampled_from(words + SILENT + LATE + UNKNOWN), max_size=6)
    queries = draw(st.lists(query, min_size=1, max_size=4))
    k1 = draw(st.floats(0.1, 3.0))
    b = draw(st.floats(0.0, 1.0))
    return Case(docs, mask, queries, k1, b, draw(st.permutations(WORDS + SILENT)))


def _bm25s(docs: list[list[str]], k1: float, b: float):
    """bm25s's scores over ``docs`` as a function of the query tokens. bm25s cannot index a
    corpus without a single token (nor score an empty query); BM25 there is 0 everywhere."""
    if not any(docs):
        return lambda query: np.zeros(len(docs), dtype=np.float32)
    ref = bm25s.BM25(k1=k1, b=b, method="lucene")
    ref.index(docs, show_progress=False)
    return lambda query: ref.get_scores(list(query)) if query else np.zeros(len(docs), dtype=np.float32)


def _assert_agree(got: np.ndarray, expected: np.ndarray, docs: list[list[str]]) -> None:
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=0)
    assert np.array_equal(got > 0, expected > 0)                            # the same documents match
    apart = expected[:, None] > expected[None, :] * (1 + 4 * RTOL)          # bm25s ranks i clearly above j
    assert (got[:, None] > got[None, :])[apart].all()                       # so do we
    for i in range(len(docs)):
        for j in range(i):
            if docs[i] == docs[j]:
                assert got[i] == got[j]                                     # duplicates tie exactly


def check_matrix(case: Case) -> None:
    vocab = {t: i for i, t in enumerate(case.order)}
    mask = np.array(case.mask, dtype=bool)
    visible = [d for d, keep in zip(case.docs, mask) if keep]
    ours = BM25Matrix([np.array([vocab[t] for t in d], dtype=np.int64) for d in case.docs], len(vocab),
                      k1=case.k1, b=case.b)
    vocab.update((t, len(case.order) + i) for i, t in enumerate(LATE))
    ref_all, ref_visible = _bm25s(case.docs, case.k1, case.b), _bm25s(visible, case.k1, case.b)
    for query in case.queries:
        ids = [vocab[t] for t in query if t in vocab]
        _assert_agree(ours.scores(ids), ref_all(query), case.docs)
        masked = ours.scores(ids, mask)
        assert not masked[~mask].any()
        _assert_agree(masked[mask], ref_visible(query), visible)
    for token in case.order:
        assert ours.document_frequency(vocab[token], mask) == sum(token in d for d in visible)
        assert ours.document_frequency(vocab[token]) == sum(token in d for d in case.docs)
    assert ours.document_frequency(-1) == ours.document_frequency(len(case.order), mask) == 0


# the corpus and queries of the former 5-document check in test_ranking_maths.py
FIVE = [["kafka", "lag", "lag", "consumer"], ["pgbouncer", "pool"], ["kafka", "pool", "pool", "pool", "x"],
        ["ledger"], ["lag"]]
FIVE_CASE = Case(FIVE, [True, False, True, True, False],
                 [["kafka"], ["lag", "pool"], ["kafka", "kafka"], ["ledger", "consumer", "x"]], 1.5, 0.75,
                 sorted({t for d in FIVE for t in d}))


@settings(max_examples=examples(200), deadline=None)
@given(cases())
@example(FIVE_CASE)
def test_bm25_scores_and_rankings_equal_bm25s(case):
    check_matrix(case)


@pytest.mark.slow
@pytest.mark.deep   # make test runs the 200-example variant above
@settings(max_examples=2000, deadline=None)
@given(cases())
def test_bm25_scores_and_rankings_equal_bm25s_many(case):
    check_matrix(case)


# -- through the lexical backend, on text --------------------------------------------------------

# stem collisions, case, stopwords, one-character words, identifiers kept whole and split
TEXT_WORDS = ["retry", "retries", "Retrying", "pool", "pools", "KAFKA", "kafka", "lag", "consumer", "42",
              "NWPAY-4091", "nwpay", "ledger.posting.batch_size", "batch", "pool_size",
              "the", "of", "and", "is", "with", "a", "x", "7"]
QUERY_WORDS = TEXT_WORDS + ["zebra", "NWPAY-9999"]
SEPARATORS = [" ", ", ", ". ", "\n", " - "]


def _texts(words: list[str]):
    return st.lists(st.tuples(st.sampled_from(words), st.sampled_from(SEPARATORS)), max_size=10).map(
        lambda pairs: "".join(w + s for w, s in pairs))


@settings(max_examples=examples(100), deadline=None)
@given(texts=st.lists(_texts(TEXT_WORDS), min_size=1, max_size=10), data=st.data())
def test_lexical_backend_scores_equal_bm25s_on_the_same_tokens(texts, data):
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=len(texts), max_size=len(texts))), dtype=bool)
    queries = data.draw(st.lists(_texts(QUERY_WORDS), min_size=1, max_size=3))
    backend = Bm25(texts)                                     # the backend search uses, built from texts
    tokens = [backend.vocabulary.tokenize(t) for t in texts]
    visible = [d for d, keep in zip(tokens, mask) if keep]
    ref_all, ref_visible = _bm25s(tokens, K1, B), _bm25s(visible, K1, B)   # as rank/bm25.py documents
    for query in queries:
        query_tokens = backend.vocabulary.tokenize(query)
        _assert_agree(backend.scores(query), ref_all(query_tokens), tokens)
        masked = backend.scores(query, mask)
        assert not masked[~mask].any()
        _assert_agree(masked[mask], ref_visible(query_tokens), visible)


def test_only_the_lucene_variant_of_bm25s_matches():
    vocab = {t: i for i, t in enumerate(FIVE_CASE.order)}
    ours = BM25Matrix([np.array([vocab[t] for t in d], dtype=np.int64) for d in FIVE], len(vocab), k1=1.5, b=0.75)
    matching = set()
    for method in ("robertson", "lucene", "atire", "bm25l", "bm25+"):
        ref = bm25s.BM25(method=method)
        ref.index(FIVE, show_progress=False)
        if all(np.allclose(ours.scores([vocab[t] for t in q]), ref.get_scores(q), rtol=RTOL, atol=0)
               for q in FIVE_CASE.queries):
            matching.add(method)
    assert matching == {"lucene"}
    assert (ours.k1, ours.b) == (bm25s.BM25().k1, bm25s.BM25().b) == (1.5, 0.75)
    assert (BM25Matrix([], 0).k1, BM25Matrix([], 0).b) == (K1, B)   # the product's, fitted (issue 31)


def test_vendored_stopwords_equal_bm25s_and_the_tokenizer_drops_them():
    from bm25s.stopwords import STOPWORDS_EN as upstream

    from workbench.retrieval.stopwords import STOPWORDS_EN

    assert STOPWORDS_EN == frozenset(upstream) and len(STOPWORDS_EN) == len(upstream) == 33
    assert tokenize(" ".join(sorted(STOPWORDS_EN))) == []
    assert tokenize("retries the of kafka") == ["retri", "kafka"]
