"""The per-token postings memo of ``SegmentedBM25`` (rank/bm25.py): a query asks for each of its
tokens several times (scores, document frequencies, coverage of its hits) and queries share
tokens, so the live postings of a token are gathered once per index generation. Pure maths,
no I/O: the memo must never change an answer, must stay bounded, and must not be writable
by a caller."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.rank import bm25
from workbench.rank.bm25 import BM25Matrix, Postings, SegmentedBM25


def _segmented(rng: np.random.Generator, n: int = 60, vocab: int = 40) -> SegmentedBM25:
    """A base segment with some documents tombstoned and re-added in a delta, as edits leave it."""
    docs = [rng.integers(0, vocab, size=rng.integers(1, 30)) for _ in range(n)]
    base = Postings.build(docs, vocab)
    changed = rng.choice(n, size=n // 5, replace=False)
    where = np.arange(n, dtype=np.int64)
    where[changed] = -1
    new_docs = [rng.integers(0, vocab, size=rng.integers(1, 30)) for _ in changed]
    delta = Postings.build(new_docs, vocab)
    lengths = base.lengths.astype(np.int64).copy()
    lengths[changed] = delta.lengths
    return SegmentedBM25([(base, where), (delta, np.asarray(changed, dtype=np.int64))], lengths, vocab)


def _fresh_copy(m: SegmentedBM25) -> SegmentedBM25:
    return SegmentedBM25(m.segments, m.lengths, m.vocab_size)


@pytest.mark.parametrize("seed", range(5))
def test_memoised_answers_equal_fresh_ones_with_and_without_a_mask(seed: int):
    rng = np.random.default_rng(seed)
    m = _segmented(rng)
    for _ in range(30):
        query = rng.integers(-2, m.vocab_size + 2, size=rng.integers(1, 6)).tolist()
        mask = rng.random(m.n) < 0.6 if rng.random() < 0.7 else None
        docs = rng.choice(m.n, size=8, replace=False)
        fresh = _fresh_copy(m)   # a new object: an empty memo
        assert np.array_equal(m.scores(query, mask), fresh.scores(query, mask))
        assert np.array_equal(m.contains([t for t in query if t >= 0], docs),
                              fresh.contains([t for t in query if t >= 0], docs))
        for t in query:
            assert m.document_frequency(t, mask) == fresh.document_frequency(t, mask)
            got, want = m.postings(t, mask), fresh.postings(t, mask)
            assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_document_frequency_counts_only_live_documents_in_the_mask():
    docs = [np.array([0, 1]), np.array([1]), np.array([1, 2])]
    base = Postings.build(docs, 3)
    where = np.array([0, -1, 2], dtype=np.int64)           # document 1 was edited away ...
    delta = Postings.build([np.array([2])], 3)              # ... and now holds token 2 only
    m = SegmentedBM25([(base, where), (delta, np.array([1]))], np.array([2, 1, 2]), 3)
    assert m.document_frequency(1) == 2
    assert m.document_frequency(2) == 2
    assert m.document_frequency(1, np.array([False, True, True])) == 1
    assert m.contains([1, 2], np.array([0, 1, 2])).tolist() == [[True, False, True], [False, True, True]]


def test_the_memo_is_bounded_and_read_only(monkeypatch):
    monkeypatch.setattr(bm25, "CACHED_POSTINGS", 50)
    rng = np.random.default_rng(7)
    docs = [rng.integers(0, 10, size=20) for _ in range(40)]
    m = BM25Matrix(docs, 10)
    for t in range(10):
        m.postings(t)
        assert m._cached <= 50
    assert len(m._cache) < 10, "the memo never emptied past its bound"
    pos, tf = m.postings(3)
    with pytest.raises(ValueError):
        pos[0] = 99   # a caller cannot corrupt what the next query reads
    with pytest.raises(ValueError):
        tf[0] = 0.0
    assert np.array_equal(m.scores([3]), BM25Matrix(docs, 10).scores([3]))
