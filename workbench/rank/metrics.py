"""Retrieval metrics over ranked id lists and relevance judgements (pure)."""

from __future__ import annotations

import math
from typing import Mapping, Sequence


def recall_at(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    rel = {d for d, g in relevant.items() if g > 0}
    return len(rel & set(ranked[:k])) / len(rel) if rel else 0.0


def mrr_at(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    for i, doc in enumerate(ranked[:k], start=1):
        if relevant.get(doc, 0) > 0:
            return 1.0 / i
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 1) for i, doc in enumerate(ranked[:k], start=1))
    ideal = sorted((g for g in relevant.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def summarise(runs: Sequence[tuple[Sequence[str], Mapping[str, float]]]) -> dict[str, float]:
    """Mean nDCG@10, recall@10, recall@100 and MRR@10 over (ranking, judgements) pairs."""
    n = len(runs)
    if n == 0:
        return {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0, "queries": 0}
    return {
        "ndcg@10": round(sum(ndcg_at(r, j, 10) for r, j in runs) / n, 4),
        "recall@10": round(sum(recall_at(r, j, 10) for r, j in runs) / n, 4),
        "recall@100": round(sum(recall_at(r, j, 100) for r, j in runs) / n, 4),
        "mrr@10": round(sum(mrr_at(r, j, 10) for r, j in runs) / n, 4),
        "queries": n,
    }
