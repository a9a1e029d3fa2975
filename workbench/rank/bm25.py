"""BM25 (the Lucene variant that bm25s implements) over the documents a caller may see.

The index keeps only postings (token → documents, term frequencies) and document lengths;
N, df, idf and the average document length are computed per query over the documents in
the caller's mask, so one caller's scores never depend on documents they cannot see (no
statistic of another org's text leaks through a score). Per query the work is numpy over
the postings of the query's tokens only (at 10k fragments, ~0.15 ms for a golden query).

With no mask (or a full one) the scores equal ``bm25s.BM25(method="lucene", k1=K1,
b=B)``'s to float32 precision (a test checks it, at these and other k1, b): same idf, same float32 weights, summed
per document in query-token order, as bm25s does. Building
from token ids is one sort instead of bm25s's per-document Python loop, which measured
1.07-1.19 s at 10k fragments against our 1 s budget for a rebuild.
Incremental: the documents live in segments (``Postings``), each document mapped to its position
in the index (-1: a tombstone, the document was edited or removed since the segment was built).
A large base segment is built once (and persisted by the caller); an edit re-builds only a small
delta segment of the changed documents. Scores are computed per query over all segments from the
same statistics and in the same query-token order, so they equal a full rebuild's exactly (a
test checks it after random edit sequences).
Pure: token ids and masks in, score arrays out.
"""

from __future__ import annotations

import numpy as np

K1, B = 1.5, 0.75    # bm25s's. SciFact's 5-fold CV picks 1.2, 0.75 with TITLE_WEIGHT 4: +0.002 nDCG@10 held-out
TITLE_WEIGHT = 1     # (SE 0.004) but -0.006 on the golden set, so not the default (BENCHMARKS.md, issue 31).
#                      A title token counts as this many body tokens (lexical.field_tokens: BM25F, one b).


class Postings:
    """One segment's postings by token (CSR: ``indptr`` over tokens, then the segment-local
    ``doc`` and ``tf`` of each posting, sorted by token, then document) and its documents' lengths."""

    def __init__(self, indptr: np.ndarray, doc: np.ndarray, tf: np.ndarray, lengths: np.ndarray):
        self.indptr, self.doc, self.tf, self.lengths = indptr, doc, tf, lengths
        self.n = int(lengths.size)
        self.vocab_size = int(indptr.size - 1)

    @classmethod
    def build(cls, docs: list[np.ndarray], vocab_size: int) -> "Postings":
        n = len(docs)
        lengths = np.fromiter((len(d) for d in docs), dtype=np.int32, count=n)
        if n == 0 or int(lengths.sum()) == 0:
            return cls(np.zeros(vocab_size + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                       np.zeros(0, dtype=np.float32), lengths)
        tokens = np.concatenate(docs).astype(np.int64)
        doc_of = np.repeat(np.arange(n, dtype=np.int64), lengths)
        pairs, tf = np.unique(tokens * n + doc_of, return_counts=True)  # sorted by token, then doc
        token = pairs // n
        return cls(np.searchsorted(token, np.arange(vocab_size + 1)).astype(np.int64),
                   (pairs % n).astype(np.int32), tf.astype(np.float32), lengths)

    def check(self) -> None:
        """Raise ValueError unless the arrays are a well-formed segment (a loaded file is checked)."""
        if (self.indptr.ndim != 1 or self.indptr.size < 1 or self.indptr[0] != 0
                or int(self.indptr[-1]) != self.doc.size or self.doc.size != self.tf.size
                or (self.doc.size and (int(self.doc.min()) < 0 or int(self.doc.max()) >= self.n))
                or np.any(np.diff(self.indptr) < 0)):
            raise ValueError("malformed postings")

    def rows(self, token: int) -> tuple[np.ndarray, np.ndarray]:
        if not 0 <= token < self.vocab_size:
            return _EMPTY_I, _EMPTY_F
        start, end = self.indptr[token], self.indptr[token + 1]
        return self.doc[start:end], self.tf[start:end]


_EMPTY_I = np.zeros(0, dtype=np.int32)
_EMPTY_F = np.zeros(0, dtype=np.float32)
_NONE_I = np.zeros(0, dtype=np.int64)
_NONE_F = np.zeros(0, dtype=np.float64)
CACHED_POSTINGS = 4_000_000  # postings (12 bytes each) memoised per SegmentedBM25, ~48 MB at most


def accumulate(size: int, postings, lengths: np.ndarray, n: int, total: int, *, k1: float = K1,
               b: float = B) -> np.ndarray:
    """BM25 of positions 0..size-1 from each query token's ``(positions, tf)`` in query order, over
    a basis of ``n`` documents of ``total`` length (``lengths`` per position). Each document sums
    its tokens' float32 weights in that order, as bm25s does: every BM25 score is made here (the
    index's, and edit impact's re-score of one changed document), so they agree to the bit."""
    out = np.zeros(size, dtype=np.float32)
    if n == 0 or total == 0:
        return out
    avgdl = total / n
    for docs, tf in postings:
        if docs.size == 0:
            continue
        dl = lengths[docs].astype(np.float64)
        df = docs.size
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        norm = k1 * ((1 - b) + b * dl / avgdl)
        out[docs] += (idf * tf / (norm + tf)).astype(np.float32)  # a token names each doc once
    return out


class SegmentedBM25:
    """BM25 over index positions 0..n-1 whose documents live in segments: ``segments`` pairs each
    ``Postings`` with the position of each of its documents (-1: a tombstone; ``None``: document i is
    position i). Every position must be live in exactly one segment; ``lengths`` are per position."""

    def __init__(self, segments: list[tuple[Postings, np.ndarray | None]], lengths: np.ndarray,
                 vocab_size: int, *, k1: float = K1, b: float = B):
        self.segments = segments
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.n = int(self.lengths.size)
        self.vocab_size = vocab_size
        self.k1, self.b = k1, b
        self._cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._cached = 0

    def _live(self, token: int) -> tuple[np.ndarray, np.ndarray]:
        """(positions, tf as float64) of every live document holding ``token``, in segment order.
        Memoised: a query asks for each of its tokens several times (scores, document
        frequencies, coverage of its hits, supersession) and queries share common tokens; the
        segments never change once built, so the cache lives as long as this object, bounded
        by ``CACHED_POSTINGS`` entries in all."""
        got = self._cache.get(token)
        if got is not None:
            return got
        found = []
        for postings, where in self.segments:
            docs, tf = postings.rows(token)
            if docs.size == 0:
                continue
            if where is None:
                pos = docs.astype(np.int64)
            else:
                pos = where[docs]
                live = pos >= 0
                pos, tf = pos[live], tf[live]
            if pos.size:
                found.append((pos, tf))
        if not found:
            got = (_NONE_I, _NONE_F)
        elif len(found) == 1:
            got = (found[0][0], found[0][1].astype(np.float64))
        else:
            got = (np.concatenate([p for p, _ in found]), np.concatenate([t for _, t in found]).astype(np.float64))
        got[0].flags.writeable = False
        got[1].flags.writeable = False
        if self._cached + got[0].size > CACHED_POSTINGS:
            self._cache, self._cached = {}, 0
        self._cache[token] = got
        self._cached += got[0].size
        return got

    def _postings(self, token: int, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(positions, tf) of the live documents holding ``token`` (in ``mask``)."""
        pos, tf = self._live(token)
        if mask is None or not pos.size:
            return pos, tf
        inside = mask[pos]
        return pos[inside], tf[inside]

    def scores(self, query_ids: list[int], mask: np.ndarray | None = None) -> np.ndarray:
        """BM25 of every document for the query, with N, df, idf and avgdl taken over the
        documents in ``mask`` (all when None); documents outside the mask score 0."""
        out = np.zeros(self.n, dtype=np.float32)
        tokens = [q for q in query_ids if 0 <= q < self.vocab_size]
        if not tokens or self.n == 0:
            return out
        if mask is None:
            n, total = self.n, int(self.lengths.sum())
        else:
            n = int(np.count_nonzero(mask))
            if n == 0:
                return out
            total = int(self.lengths[mask].sum())
        return accumulate(self.n, (self._postings(q, mask) for q in tokens), self.lengths, n, total,
                          k1=self.k1, b=self.b)

    def postings(self, token: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(positions, tf) of the documents (in ``mask``) holding the token id ``token``."""
        if not 0 <= token < self.vocab_size:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        return self._postings(token, mask)

    def contains(self, token_ids: list[int], docs: np.ndarray) -> np.ndarray:
        """len(token_ids) × len(docs) booleans: does the document at position ``docs[j]`` hold
        token ``token_ids[i]``."""
        docs = np.asarray(docs, dtype=np.int64)
        out = np.zeros((len(token_ids), docs.size), dtype=bool)
        holds = np.zeros(self.n, dtype=bool)  # a lookup, set and cleared per token (np.isin sorts
        for r, t in enumerate(token_ids):     # every posting: 4.6 ms a query at 100k)
            held, _ = self._live(t)
            if held.size:
                holds[held] = True
                out[r] = holds[docs]
                holds[held] = False
        return out

    def document_frequency(self, token_id: int, mask: np.ndarray | None = None) -> int:
        """How many documents (in ``mask``, when given) contain the token."""
        if not 0 <= token_id < self.vocab_size:
            return 0
        pos, _ = self._live(token_id)
        return int(pos.size) if mask is None else int(np.count_nonzero(mask[pos]))


class BM25Matrix(SegmentedBM25):
    """BM25 over one segment built from all documents (document i is position i)."""

    def __init__(self, docs: list[np.ndarray], vocab_size: int, *, k1: float = K1, b: float = B):
        postings = Postings.build(docs, vocab_size)
        super().__init__([(postings, None)], postings.lengths, vocab_size, k1=k1, b=b)
