"""Fusion of a lexical and a dense score vector, chosen by name.

Both methods take full score vectors over the corpus (NaN or -inf where a document is
not a candidate) and return one fused vector. Registry: ``FUSIONS``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import UserError

RRF_K = 60
DENSE_WEIGHT = 0.7


def _ranks(scores: np.ndarray, depth: int) -> np.ndarray:
    """1-based rank of each document among the top ``depth`` positive-ranked, else inf."""
    ranks = np.full(scores.shape, np.inf)
    valid = np.isfinite(scores)
    if not valid.any():
        return ranks
    idx = np.flatnonzero(valid)
    take = min(depth, idx.size)
    top = idx[np.argpartition(-scores[idx], take - 1)[:take]] if take < idx.size else idx
    top = top[np.argsort(-scores[top], kind="stable")]
    ranks[top] = np.arange(1, top.size + 1)
    return ranks


def rrf(lexical: np.ndarray, dense: np.ndarray, *, k: int = RRF_K, depth: int = 100) -> np.ndarray:
    """Reciprocal rank fusion: sum of 1 / (k + rank) over the retrievers' top ``depth``."""
    fused = 1.0 / (k + _ranks(lexical, depth)) + 1.0 / (k + _ranks(dense, depth))
    fused[(fused == 0)] = -np.inf
    return fused


def weighted(lexical: np.ndarray, dense: np.ndarray, *, dense_weight: float = DENSE_WEIGHT,
             depth: int = 100) -> np.ndarray:
    """``dense_weight`` × cosine + (1 − dense_weight) × BM25 / max BM25 (over candidates)."""
    lex = np.where(np.isfinite(lexical), lexical, 0.0)
    top = lex.max() if lex.size else 0.0
    lex_norm = lex / top if top > 0 else lex
    fused = dense_weight * np.where(np.isfinite(dense), dense, 0.0) + (1 - dense_weight) * lex_norm
    return np.where(np.isfinite(dense) | np.isfinite(lexical), fused, -np.inf)


def _standard(scores: np.ndarray, depth: int) -> np.ndarray:
    """Scores standardised by the mean and deviation of the top ``depth`` finite ones; a document
    with no score (-inf, NaN: not matched) counts as a score of 0."""
    finite = np.isfinite(scores)
    values = np.where(finite, scores, 0.0)
    top = values[top_k(np.where(finite, scores, -np.inf), depth)]
    if top.size < 2:
        return np.zeros_like(values)
    sd = float(top.std())
    return (values - float(top.mean())) / sd if sd > 0 else np.zeros_like(values)


def zscore(lexical: np.ndarray, dense: np.ndarray, *, dense_weight: float = DENSE_WEIGHT,
           depth: int = 100) -> np.ndarray:
    """``dense_weight`` × z(cosine) + (1 − dense_weight) × z(BM25), each retriever's scores
    standardised over its own top ``depth`` candidates (so neither scale dominates by its spread)."""
    fused = dense_weight * _standard(dense, depth) + (1 - dense_weight) * _standard(lexical, depth)
    return np.where(np.isfinite(dense) | np.isfinite(lexical), fused, -np.inf)


FUSIONS: dict[str, Callable[..., np.ndarray]] = {"weighted": weighted, "rrf": rrf, "zscore": zscore}


def fusion(name: str) -> Callable[..., np.ndarray]:
    try:
        return FUSIONS[name]
    except KeyError:
        raise UserError(f"unknown fusion {name!r} (valid: {', '.join(FUSIONS)})") from None


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest finite scores, best first (ties by index)."""
    idx = np.flatnonzero(np.isfinite(scores))
    if idx.size == 0 or k <= 0:
        return idx[:0]
    if idx.size > k:
        idx = idx[np.argpartition(-scores[idx], k - 1)[:k]]
    return idx[np.lexsort((idx, -scores[idx]))]
