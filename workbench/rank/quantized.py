"""An int8 quantised copy of the embedding matrix (plus one sign bit a dimension), for a dense
scan that ranks candidates cheaply and re-scores the best of them exactly against the float32 rows.

Why: the exact dense scan reads N × 384 float32 per query (1.5 GB at 1M rows). ``scan`` finds
the rows nearest the query by the Hamming distance of their sign bits (N × 48 bytes), ranks
``PREFILTER × depth`` of them by their int8 codes, and re-scores ``RESCORE × depth`` exactly;
below ``PREFILTER_SHARE × PREFILTER × depth`` visible rows it ranks every row by its codes.
The cosines it returns are the exact ones for the rows it keeps, and -inf elsewhere.

Measured (benchmarks/dense_scan.py, 2 shared cores): at 1M rows, top 100, the full int8 scan
is no faster than the exact float32 scan (numpy has no SIMD int8 product: casting the codes
to float32 costs as much as reading the floats), while the sign-bit pre-filter is 2-4x faster;
recall@100 against the exact scan was 1.0 for both on synthetic clustered vectors and on 1M
vectors mixed from real MiniLM ones. On SciFact's 5,183 real vectors sign bits alone rank
poorly (31% of the corpus needed for recall 0.995): hence a large pool ranked by the codes,
and no pre-filter on small corpora.

How the codes are made (chosen by measurement, see benchmarks/dense_scan.py):

- Centred: the corpus mean row ``m`` is subtracted before quantising. For one query,
  ``q·x = q·(x − m) + q·m`` and ``q·m`` is the same for every row, so the ranking by
  ``q·(x − m)`` is the ranking by cosine, and the centred values span a smaller range.
- Symmetric, one scale per row (max |x − m| over the row / 127), applied to the row's int8
  dot product. Measured recall@100 of the int8 order alone (before re-scoring) against the
  exact order, per-row vs per-dimension scale: 0.9959 vs 0.9960 on SciFact's 5,183 real
  MiniLM vectors and 300 real queries, 0.995 vs 0.992 on 1M vectors mixed from those, 0.996
  vs 0.992 on 200k synthetic clustered vectors (one global scale: 0.994 on SciFact). With
  2 × depth re-scored both reach 1.0 everywhere; per-row costs N floats and one multiply per row.
- The scan casts a block of codes to float32 in cache and takes a BLAS product with the
  query: numpy has no SIMD int8 × int8 product (int8 @ int8 is 3x, int8 @ int32 8x slower).
  Call it under one BLAS thread (pipeline.py does): threaded BLAS on these small blocks was
  10x slower on a busy machine.
- Sign bits are those of the codes (``x − m > 0``), stored word-major (words × N) so that the
  Hamming distance is a few contiguous xor + popcount passes.

``scan`` re-scores ``max(depth, rescore × depth)`` candidates; the re-scoring function is the
caller's (pipeline.py passes the same row-dot it uses for the exact path, so both paths give
bitwise the same cosine for a row). No I/O here: arrays in, arrays out.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

RESCORE = 4          # candidates re-scored exactly: RESCORE × depth
PREFILTER = 500      # sign-bit candidates ranked by the int8 codes: PREFILTER × depth ...
PREFILTER_SHARE = 4  # ... when they are at most a quarter of the visible rows (else: scan all codes)
BLOCK = 4096         # rows cast to float32 at a time (6 MB of float32: stays in cache)
LEVELS = 127         # symmetric int8 codes in [-127, 127]


def _exact(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    return rows @ query


def _sign_words(signs: np.ndarray, words: int) -> np.ndarray:
    """Rows of booleans → ``words`` uint64 per row (bits packed, zero padded)."""
    packed = np.zeros((len(signs), words * 8), dtype=np.uint8)
    packed[:, :(signs.shape[1] + 7) // 8] = np.packbits(signs, axis=1)
    return packed.view(np.uint64)


def _smallest(values: np.ndarray, count: int, top: int) -> np.ndarray:
    """Positions of ``count`` smallest of ``values`` (small ints in [0, top]): every one below
    the threshold value, then the first at it. A counting selection, cheaper than argpartition."""
    at = int(np.searchsorted(np.cumsum(np.bincount(values, minlength=top + 1)), count))
    below = np.flatnonzero(values < at)
    return np.concatenate([below, np.flatnonzero(values == at)[:count - below.size]])


class Int8Vectors:
    """Int8 codes of an N × D float32 matrix (rows L2-normalised), plus what a scan needs.

    Keeps a reference to the float32 matrix (not a copy) for the exact re-scoring; the codes
    are N × D bytes, the sign bits N × D/8 bytes, the row scales N floats, the centre D floats."""

    def __init__(self, vectors: np.ndarray, *, block: int = BLOCK):
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2:
            raise ValueError("vectors must be an N × D matrix")
        self.vectors = vectors
        self.block = block
        n, dim = vectors.shape
        self.center = (vectors.mean(axis=0, dtype=np.float64) if n else np.zeros(dim)).astype(np.float32)
        self.scale = np.empty(n, dtype=np.float32)
        self.codes = np.empty((n, dim), dtype=np.int8)
        words = (dim + 63) // 64
        bits = np.empty((n, words), dtype=np.uint64)
        for start in range(0, n, block):   # in blocks: no N × D float temporary
            part = vectors[start:start + block] - self.center
            spread = np.abs(part).max(axis=1)
            # a row equal to the centre gets codes 0 whatever its scale: keep the scale finite
            scale = np.where(spread > 0, spread, 1.0) / LEVELS
            part /= scale[:, None]
            np.clip(np.rint(part, out=part), -LEVELS, LEVELS, out=part)
            self.codes[start:start + block] = part
            self.scale[start:start + block] = scale
            bits[start:start + block] = _sign_words(part > 0, words)
        self.bits = np.ascontiguousarray(bits.T)   # words × N: each word a contiguous pass

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.bits.nbytes + self.center.nbytes + self.scale.nbytes

    def approximate(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``q·(x − m)`` from the codes, for every row (or for ``rows``, positions ascending):
        the cosine ranking, shifted by the constant ``q·m``, within quantisation error."""
        q = np.asarray(query, dtype=np.float32)
        count = len(self.codes) if rows is None else len(rows)
        out = np.empty(count, dtype=np.float32)
        shape = (min(self.block, max(count, 1)), self.codes.shape[1])
        buf = np.empty(shape, dtype=np.float32)
        gathered = np.empty(shape, dtype=np.int8) if rows is not None else None
        for start in range(0, count, self.block):
            stop = min(count, start + self.block)
            part = buf[:stop - start]
            if rows is None:
                codes = self.codes[start:stop]
            else:
                codes = np.take(self.codes, rows[start:stop], axis=0, out=gathered[:stop - start])
            np.copyto(part, codes, casting="unsafe")
            np.matmul(part, q, out=out[start:stop])
        out *= self.scale if rows is None else self.scale[rows]
        return out

    def hamming(self, query: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Bits where the signs of ``x − m`` and ``q − m`` differ, for every row (or ``rows``)."""
        centred = np.asarray(query, dtype=np.float32) - self.center
        q = _sign_words(centred[None, :] > 0, len(self.bits))[0]
        count = self.bits.shape[1] if rows is None else len(rows)
        out = np.zeros(count, dtype=np.uint16)
        differ = np.empty(count, dtype=np.uint64)
        ones = np.empty(count, dtype=np.uint8)
        for word, bits in zip(q, self.bits):
            np.bitwise_xor(bits if rows is None else bits[rows], word, out=differ)
            np.add(out, np.bitwise_count(differ, out=ones), out=out)
        return out

    def scan(self, query: np.ndarray, mask: np.ndarray, depth: int, *, rescore: int = RESCORE,
             prefilter: int = PREFILTER, also: np.ndarray | None = None,
             exact: Callable[[np.ndarray, np.ndarray], np.ndarray] = _exact) -> np.ndarray:
        """Scores over all N positions: the exact cosine (``exact(rows, query)``, float32 rows)
        of the ``max(depth, rescore × depth)`` rows in ``mask`` the int8 codes rank highest
        (every row in ``mask`` when there are no more) and of the positions in ``also`` that
        are in ``mask``, -inf everywhere else (float64).

        With ``prefilter`` (0: off), when ``prefilter × depth`` is at most a quarter of the rows
        in ``mask``, the codes rank only the ``prefilter × depth`` rows nearest by sign bits."""
        n = len(self.codes)
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (n,):
            raise ValueError(f"mask has shape {mask.shape}, expected ({n},)")
        out = np.full(n, -np.inf, dtype=np.float64)
        if not n or depth < 1:
            return out
        take = max(depth, rescore * depth)
        visible = np.flatnonzero(mask)
        rows = visible if visible.size * 2 < n else None     # a narrow scope: read its rows only
        pool = prefilter * depth
        if visible.size <= take:
            candidates = visible
        elif prefilter and pool * PREFILTER_SHARE <= visible.size:
            distance = self.hamming(query, rows)
            if rows is None:
                distance[~mask] = self.bits.shape[0] * 64 + 1
            near = _smallest(distance, pool, self.bits.shape[0] * 64 + 1)
            near = np.sort(near if rows is None else rows[near])
            approx = self.approximate(query, near)
            candidates = near[np.argpartition(-approx, take - 1)[:take]]
        else:
            approx = self.approximate(query, rows)
            if rows is None:
                approx[~mask] = -np.inf
                candidates = np.argpartition(-approx, take - 1)[:take]
            else:
                candidates = rows[np.argpartition(-approx, take - 1)[:take]]
        if also is not None and len(also):
            also = np.asarray(also, dtype=np.int64)
            candidates = np.union1d(candidates, also[mask[also]])
        candidates = np.sort(candidates)
        q = np.asarray(query, dtype=np.float32)
        out[candidates] = np.asarray(exact(self.vectors[candidates], q), dtype=np.float64)
        return out
