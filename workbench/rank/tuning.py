"""Fitting the ranking weights (rank/persona.py) on golden queries, by K-fold cross-validation.

Each golden query is retrieved once (``Candidates``: its score vectors and masks); a weight setting
is then scored in memory by the same maths that ranks a search (``stages.final_scores``). The fit
is a coordinate search over a small grid per weight, maximising mean nDCG@10 on the training folds.
What is reported is held out: per fold, the held-out nDCG@10 of the fitted weights minus that of
the current ones; the mean over folds, its spread (std over folds) and the paired standard error
over the held-out queries. ``within_noise`` says when that gain is no evidence of anything.

Pure: arrays in, numbers out; no I/O.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from .fusion import top_k
from .persona import Weights
from .priors import Priors
from .stages import final_scores

GRID: dict[str, tuple[float, ...]] = {
    "dense": (0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    "freshness": (0.0, 0.05, 0.1, 0.2, 0.3, 0.5),
    "authority": (0.0, 0.05, 0.1, 0.2, 0.3, 0.5),
    "persona": (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0),
}
TUNED = tuple(GRID)   # relevance is the scale (fixed at 1); pins are left to curation (evaluation ranks without pins)
PASSES = 3
NOISE_SE = 2.0        # a held-out gain under NOISE_SE paired standard errors is within noise
DENSE_WEIGHT, IDENTIFIER_DENSE_WEIGHT = 0.7, 0.3


@dataclass(frozen=True)
class Candidates:
    """One golden query, retrieved once: what re-scoring needs, and its relevant positions."""

    lexical: np.ndarray
    dense: np.ndarray
    fresh: np.ndarray
    authority: np.ndarray
    in_persona: np.ndarray
    demoted: np.ndarray
    relevant: frozenset[int]
    exact: bool = False      # the query names a rare identifier: the lexical balance applies, whatever the weights
    fusion: str = "weighted"
    depth: int = 100


def score(c: Candidates, w: Weights) -> np.ndarray:
    """The final scores of ``c``'s positions under ``w``, as a search computes them (pins aside)."""
    balance = IDENTIFIER_DENSE_WEIGHT if c.exact else (w.dense if w.dense is not None else DENSE_WEIGHT)
    priors = Priors(freshness_weight=w.freshness, authority_weight=w.authority)
    _, final = final_scores(c.lexical, c.dense, pipeline="hybrid", fusion_name=c.fusion, depth=c.depth,
                            dense_weight=balance, min_score=None, fresh=c.fresh, authority=c.authority,
                            priors=priors, demoted=c.demoted, weights=w, in_persona=c.in_persona)
    return final


def ndcg10(c: Candidates, w: Weights) -> float:
    """nDCG@10 (binary relevance) of ``c`` ranked under ``w``."""
    if not c.relevant:
        return 0.0
    order = top_k(score(c, w), 10)
    dcg = sum(1.0 / math.log2(r + 2) for r, i in enumerate(order) if int(i) in c.relevant)
    idcg = sum(1.0 / math.log2(r + 2) for r in range(min(10, len(c.relevant))))
    return dcg / idcg


def mean_ndcg(cands: Sequence[Candidates], w: Weights) -> float:
    return float(np.mean([ndcg10(c, w) for c in cands])) if cands else 0.0


def fit(cands: Sequence[Candidates], start: Weights, grid: dict[str, tuple[float, ...]] = GRID,
        passes: int = PASSES) -> Weights:
    """Coordinate search from ``start``: each weight in turn takes the grid value with the best mean
    nDCG@10 (ties keep the current value, then the smaller value), for ``passes`` rounds or until
    nothing changes."""
    best = start if start.dense is not None else replace(start, dense=DENSE_WEIGHT)
    best_value = mean_ndcg(cands, best)
    for _ in range(passes):
        moved = False
        for key, values in grid.items():
            for v in values:
                trial = replace(best, **{key: v})
                value = mean_ndcg(cands, trial)
                if value > best_value + 1e-12:
                    best, best_value, moved = trial, value, True
        if not moved:
            break
    return best


def folds(n: int, k: int, seed: int = 31) -> list[list[int]]:
    """``k`` folds of ``range(n)`` (shuffled with ``seed``, sizes differing by at most one)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [sorted(order[i::k]) for i in range(k)]


@dataclass
class CrossValidation:
    """Held-out figures of a K-fold fit (see the module docstring)."""

    folds: int
    queries: int
    baseline: float                 # held-out mean nDCG@10 with the current weights (all queries)
    tuned: float                    # held-out mean nDCG@10 with each fold's fitted weights
    gain: float                     # mean over folds of (tuned − current) held-out nDCG@10
    fold_gains: list[float] = field(default_factory=list)
    std: float = 0.0                # std of the fold gains
    se: float = 0.0                 # paired standard error over the held-out queries
    wins: int = 0
    losses: int = 0

    @property
    def within_noise(self) -> bool:
        return within_noise(self.gain, self.se)

    def to_dict(self) -> dict:
        return {"folds": self.folds, "queries": self.queries, "heldout_current": round(self.baseline, 4),
                "heldout_tuned": round(self.tuned, 4), "heldout_gain": round(self.gain, 4),
                "fold_gains": [round(g, 4) for g in self.fold_gains], "std": round(self.std, 4),
                "paired_se": round(self.se, 4), "wins": self.wins, "losses": self.losses,
                "within_noise": self.within_noise}


def within_noise(gain: float, se: float) -> bool:
    """A gain that is not positive, or under ``NOISE_SE`` standard errors, is within noise."""
    return gain <= 0 or gain < NOISE_SE * se


def cross_validate(cands: Sequence[Candidates], current: Weights, k: int, seed: int = 31,
                   grid: dict[str, tuple[float, ...]] = GRID) -> CrossValidation:
    """K-fold cross-validation of ``fit`` against ``current`` (never an in-sample figure)."""
    n = len(cands)
    k = max(2, min(k, n))
    diffs: list[float] = []
    base_all: list[float] = []
    tuned_all: list[float] = []
    gains: list[float] = []
    for test in folds(n, k, seed):
        held = set(test)
        train = [c for i, c in enumerate(cands) if i not in held]
        fitted = fit(train, current, grid)
        base = [ndcg10(cands[i], current) for i in test]
        tuned = [ndcg10(cands[i], fitted) for i in test]
        gains.append(float(np.mean(tuned) - np.mean(base)))
        diffs.extend(t - b for t, b in zip(tuned, base))
        base_all.extend(base)
        tuned_all.extend(tuned)
    d = np.array(diffs)
    se = float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else float("inf")
    return CrossValidation(folds=k, queries=n, baseline=float(np.mean(base_all)), tuned=float(np.mean(tuned_all)),
                           gain=float(np.mean(gains)), fold_gains=gains,
                           std=float(np.std(gains, ddof=1)) if len(gains) > 1 else 0.0, se=se,
                           wins=int((d > 1e-12).sum()), losses=int((d < -1e-12).sum()))
