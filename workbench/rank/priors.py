"""Priors applied on top of fusion: freshness half-life decay and citation authority.

final = norm(fused) × (1 − wf + wf × 0.5^(age / half_life)) × (1 + wa × authority)

where authority is PageRank normalised to [0, 1]. Pins are not a score: ``pins_first`` says which
pinned fragments the caller orders first (every one in context; in a search, the relevant ones).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

DEFAULT_HALF_LIFE = {"default": 90.0, "policy": 365.0}


@dataclass(frozen=True)
class Priors:
    freshness_weight: float = 0.1
    authority_weight: float = 0.1
    half_life_days: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_HALF_LIFE))

    def half_life(self, kind: str) -> float:
        return float(self.half_life_days.get(kind, self.half_life_days.get("default", 90.0)))


def freshness(age_days: np.ndarray, half_life_days: np.ndarray) -> np.ndarray:
    """0.5 ** (age / half-life), in (0, 1]; negative ages count as fresh."""
    return np.power(0.5, np.clip(age_days, 0, None) / half_life_days)


def apply(fused: np.ndarray, fresh: np.ndarray, authority: np.ndarray, priors: Priors, *,
          depth: int = 100) -> np.ndarray:
    """Scale fused scores by the freshness and authority factors.

    Fused scores are first min-max normalised over the top ``depth`` candidates, so the
    priors weigh the same whatever the fusion's score scale (RRF scores differ by a few
    percent, weighted scores by tens of percent). Non-candidates stay at -inf.
    """
    out = np.full(fused.shape, -np.inf)
    finite = np.flatnonzero(np.isfinite(fused))
    if finite.size == 0:
        return out
    if finite.size > depth:
        finite = finite[np.argpartition(-fused[finite], depth - 1)[:depth]]
    scores = fused[finite]
    low, high = scores.min(), scores.max()
    norm = (scores - low) / (high - low) if high > low else np.ones_like(scores)
    factor = (1 - priors.freshness_weight + priors.freshness_weight * fresh[finite]) * \
        (1 + priors.authority_weight * authority[finite])
    out[finite] = norm * factor
    return out


def pins_first(order: Sequence[int], pinned: set[int], *, for_context: bool, floor: float,
               confidence: Mapping[int, float | None], lexical: np.ndarray) -> set[int]:
    """The pinned positions of ``order`` that go first. In context every one: a pin always reaches
    agents in its scope. In a search only those relevant to the query, so an unrelated pin is not
    shown at rank 1: a confidence at least ``floor``, or, uncalibrated (None: no model), a lexical match."""
    here = [i for i in order if i in pinned]
    if for_context:
        return set(here)
    return {i for i in here if (np.isfinite(lexical[i]) if confidence.get(i) is None else confidence[i] >= floor)}
