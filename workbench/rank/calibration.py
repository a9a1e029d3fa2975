"""Calibrated relevance: a ``confidence`` in [0, 1] per hit that means the same across queries
and across corpus sizes, and the floor below which ``context`` serves nothing.

Ranking scores are relative (normalised per query), so they cannot tell a good answer from the
best of a bad lot. Confidence is a logistic model, ``1 / (1 + exp(-(b0 + b · x)))``, of signals
of one (query, fragment) pair named in ``FEATURES``:

- ``cosine``: the raw dense cosine of the query and fragment embeddings (all-MiniLM-L6-v2);
- ``coverage``: the idf-weighted share of the query's distinct content tokens (as BM25 sees them)
  present in the fragment, idf over the fragments the caller sees (a word no visible fragment
  holds weighs most and is never covered);
- ``margin``: the cosine over the third-best cosine of the *other* fragments the caller sees —
  how far the fragment stands above the query's cosines over the visible corpus. Raw cosine and
  coverage shift with corpus size (a larger corpus holds near misses for any question); the
  margin carries what they lose in a small one: a ten-fragment workspace's right answer stands
  far above the rest. The third best, not the best, so two or three fragments that answer alike
  do not cancel each other out.
- ``agreement`` (the legacy model only): ``max(cosine, 0) × coverage``.

A ``Calibration`` is one fitted model and its floor, with where it came from: ``PRIOR`` (shipped;
fitted on SciFact workspaces of 20, 200, 2,000 and all documents, half of the queries, and checked
on the other half and on the sample golden set — not fitted to the sample; refitted by
benchmarks/calibrate_prior.py), ``LEGACY`` (the model fitted on the sample corpus before issue 28, kept
for comparison), or a fit on a workspace's own golden set (``fit_golden``). More in BENCHMARKS.md
("Calibration that fits the corpus").

The floor of a fit is the highest on a 0.01 grid at which the training queries' answered rate
(context keeps something for an answerable query) is at least ``TARGET_ANSWERED`` — answers first,
then as many abstentions as that leaves.

Pure: numbers in, numbers out; no I/O, no model.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

KNOWN_FEATURES = ("cosine", "coverage", "margin", "agreement")
FEATURES = ("cosine", "coverage", "margin")
L2 = 1e-2
TARGET_ANSWERED = 0.90
FLOOR_GRID = tuple(round(0.01 * i, 2) for i in range(1, 100))
MIN_POSITIVE, MIN_NEGATIVE = 8, 3     # golden queries a fit needs (answerable, unanswerable)


@dataclass(frozen=True)
class Calibration:
    """One confidence model and its floor, and where they came from."""

    features: tuple[str, ...]
    intercept: float
    coefficients: tuple[float, ...]
    floor: float
    source: str = "prior"                 # "prior", "legacy" or "golden"
    fitted_at: str | None = None          # ISO time of a golden fit
    fitted_from: str | None = None        # the golden file
    counts: dict[str, int] = field(default_factory=dict)
    held_out: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(self.features), "intercept": self.intercept,
                "coefficients": list(self.coefficients), "floor": self.floor, "source": self.source,
                "fitted_at": self.fitted_at, "fitted_from": self.fitted_from, "counts": dict(self.counts),
                "held_out": dict(self.held_out)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        features = tuple(str(f) for f in data["features"])
        coefficients = tuple(float(c) for c in data["coefficients"])
        if not set(features) <= set(KNOWN_FEATURES) or len(features) != len(coefficients):
            raise ValueError(f"unknown calibration features {features}")
        return cls(features, float(data["intercept"]), coefficients, float(data["floor"]),
                   str(data.get("source") or "golden"), data.get("fitted_at"), data.get("fitted_from"),
                   dict(data.get("counts") or {}), dict(data.get("held_out") or {}))

    def describe(self) -> str:
        """One line: how the workspace is calibrated."""
        if self.source == "golden":
            n = self.counts.get("queries", 0)
            return (f"golden set {self.fitted_from or ''} fitted {(self.fitted_at or '')[:16].replace('T', ' ')}, "
                    f"{n} queries, floor {self.floor:.2f}").replace("  ", " ")
        return f"{self.source} (no golden fit), floor {self.floor:.2f}"

    def confidence(self, signals: dict[str, np.ndarray]) -> np.ndarray:
        """P(relevant) for each candidate, from its signals (``cosine``, ``coverage``, ``margin``)."""
        x = design(signals, self.features)
        z = self.intercept + x @ np.asarray(self.coefficients, dtype=np.float64)
        return 1.0 / (1.0 + np.exp(-z))

    def with_floor(self, floor: float) -> Calibration:
        return replace(self, floor=float(floor))


def design(signals: dict[str, np.ndarray], names: tuple[str, ...]) -> np.ndarray:
    """The n × len(names) feature matrix (a missing cosine counts as 0)."""
    cos = np.nan_to_num(np.asarray(signals["cosine"], dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    cov = np.clip(np.asarray(signals["coverage"], dtype=np.float64), 0.0, 1.0)
    cols = {"cosine": cos, "coverage": cov, "agreement": np.clip(cos, 0.0, None) * cov}
    if "margin" in names:
        cols["margin"] = np.nan_to_num(np.asarray(signals["margin"], dtype=np.float64))
    return np.column_stack([cols[n] for n in names]) if len(cos) else np.zeros((0, len(names)))


# fitted on SciFact at several sizes (see the module docstring); benchmarks/calibrate_prior.py refits it
# (a reconstruction of the lost fitting script: close, not identical — its docstring has the figures)
PRIOR = Calibration(FEATURES, -6.5351, (1.5425, 6.3135, 11.8892), 0.04, "prior")
# the model fitted on the sample corpus alone before issue 28 (benchmarks/calibrate.py)
LEGACY = Calibration(("cosine", "coverage", "agreement"), -8.4040, (10.5719, 7.4136, -3.2920), 0.10, "legacy")
INTERCEPT, COEFFICIENTS, DEFAULT_FLOOR = LEGACY.intercept, LEGACY.coefficients, PRIOR.floor


def features(cosine: np.ndarray, coverage: np.ndarray) -> np.ndarray:
    """The legacy n × 3 feature matrix (cosine, coverage, agreement)."""
    return design({"cosine": cosine, "coverage": coverage}, LEGACY.features)


def confidence(cosine: np.ndarray, coverage: np.ndarray, *, intercept: float | None = None,
               coefficients: tuple[float, ...] | None = None) -> np.ndarray:
    """The legacy model's P(relevant) for (cosine, coverage) pairs (or other coefficients of its
    features); kept for benchmarks/calibrate.py and comparisons."""
    model = replace(LEGACY, intercept=LEGACY.intercept if intercept is None else intercept,
                    coefficients=LEGACY.coefficients if coefficients is None else tuple(coefficients))
    return model.confidence({"cosine": cosine, "coverage": coverage})


def fit(x: np.ndarray, y: np.ndarray, *, l2: float = L2, iterations: int = 100,
        weights: np.ndarray | None = None) -> tuple[float, tuple[float, ...]]:
    """Logistic regression by Newton's method with an L2 penalty on the weights (not the
    intercept): (intercept, coefficients) for features ``x`` (n × d) and 0/1 labels ``y``,
    each row weighted by ``weights`` (default 1)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    sw = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64) / np.mean(weights)
    d = np.column_stack([np.ones(len(x)), x])
    w = np.zeros(d.shape[1])
    penalty = np.full(d.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(d @ w, -500, 500)))
        grad = d.T @ (sw * (p - y)) + penalty * w
        hessian = (d * (sw * p * (1 - p))[:, None]).T @ d + np.diag(penalty)
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(w)), grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(w[0]), tuple(float(v) for v in w[1:])


def rates(p: np.ndarray, y: np.ndarray, query: np.ndarray, answerable: dict[Any, bool], floor: float
          ) -> dict[str, float | None]:
    """Query-level figures at ``floor`` from candidate confidences ``p``, labels ``y`` and each
    candidate's ``query``: answered (an answerable query keeps a candidate), answered_relevant
    (it keeps a relevant one), abstained (an unanswerable query keeps none)."""
    kept, rel = {}, {}
    for pi, yi, q in zip(p, y, query):
        kept[q] = kept.get(q, False) or pi >= floor
        rel[q] = rel.get(q, False) or (pi >= floor and bool(yi))
    pos = [q for q, a in answerable.items() if a]
    neg = [q for q, a in answerable.items() if not a]
    share = (lambda hits, of: round(sum(hits) / len(of), 4) if of else None)
    return {"answered": share([kept.get(q, False) for q in pos], pos),
            "answered_relevant": share([rel.get(q, False) for q in pos], pos),
            "abstained": share([not kept.get(q, False) for q in neg], neg)}


def choose_floor(p: np.ndarray, y: np.ndarray, query: np.ndarray, answerable: dict[Any, bool],
                 target: float = TARGET_ANSWERED) -> float:
    """The highest floor on ``FLOOR_GRID`` at which the answered rate is at least ``target``."""
    best = FLOOR_GRID[0]
    for floor in FLOOR_GRID:
        if (rates(p, y, query, answerable, floor)["answered"] or 0.0) >= target:
            best = floor
    return best


class TooSmall(ValueError):
    """A golden set too small to fit a calibration."""


def fit_golden(signals: dict[str, np.ndarray], y: np.ndarray, query: np.ndarray, answerable: dict[Any, bool],
               held: set, *, target: float = TARGET_ANSWERED, l2: float = 0.1) -> Calibration:
    """Fit ``FEATURES`` on a golden set's candidates (``signals`` per candidate, label ``y``, the
    candidate's ``query``; ``answerable`` per query; ``held`` the queries held back). The floor
    is chosen on the training queries; the held-back figures are measured at it. Raises
    ``TooSmall`` (with the reason) when there is too little to fit."""
    pos = [q for q, a in answerable.items() if a]
    neg = [q for q, a in answerable.items() if not a]
    if len(pos) < MIN_POSITIVE or len(neg) < MIN_NEGATIVE:
        raise TooSmall(f"{len(pos)} answerable and {len(neg)} unanswerable golden queries; a fit needs at least "
                       f"{MIN_POSITIVE} and {MIN_NEGATIVE}")
    y = np.asarray(y, dtype=np.float64)
    if not y.any():
        raise TooSmall("no judged-relevant fragment among the candidates of the golden queries")
    x = design(signals, FEATURES)
    train = np.array([q not in held for q in query], dtype=bool)
    if not y[train].any() or not (y[train] == 0).any():
        train = np.ones(len(y), dtype=bool)
    b0, w = fit(x[train], y[train], l2=l2)
    model = Calibration(FEATURES, b0, w, PRIOR.floor, "golden")
    p = model.confidence(signals)
    tq = {q: a for q, a in answerable.items() if q not in held}
    floor = choose_floor(p[train], y[train], query[train], tq, target)
    hq = {q: a for q, a in answerable.items() if q in held}
    ho = query_mask = np.array([q in held for q in query], dtype=bool)
    held_out: dict[str, Any] = {"queries": len(hq)}
    if query_mask.any():
        held_out.update(rates(p[ho], y[ho], query[ho], hq, floor))
        held_out.update(auc=_round(auc(p[ho], y[ho])), log_loss=_round(log_loss(p[ho], y[ho])),
                        brier=_round(brier(p[ho], y[ho])))
    counts = {"queries": len(answerable), "answerable": len(pos), "unanswerable": len(neg),
              "candidates": len(y), "relevant": int(y.sum()), "held_out": len(hq)}
    return replace(model, floor=floor, counts=counts, held_out=held_out)


def _round(v: float) -> float | None:
    return None if np.isnan(v) else round(float(v), 4)


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1 - 1e-12)
    y = np.asarray(y, dtype=np.float64)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def brier(p: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((np.asarray(p, dtype=np.float64) - np.asarray(y, dtype=np.float64)) ** 2))


def auc(p: np.ndarray, y: np.ndarray) -> float:
    """Area under the ROC curve (the probability a positive outranks a negative; ties half)."""
    p, y = np.asarray(p, dtype=np.float64), np.asarray(y, dtype=bool)
    pos, neg = p[y], p[~y]
    if pos.size == 0 or neg.size == 0:
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (pos.size * neg.size))


def margin(cosine: np.ndarray, every: np.ndarray, k: int = 3) -> np.ndarray:
    """Each candidate's cosine over the ``k``-th best cosine of the other fragments in ``every``
    (the query's cosines over the visible corpus; a candidate is one of them). With ``k`` or
    fewer others, the margin is the cosine itself."""
    cos = np.asarray(cosine, dtype=np.float64)
    every = np.asarray(every, dtype=np.float64)
    n = every.size
    if n == 0:
        return np.zeros(cos.size)
    desc = -np.sort(-every)[:k + 1]
    kth = desc[min(k, n) - 1]
    beyond = desc[k] if n > k else 0.0
    return cos - np.where(cos >= kth, beyond, kth)
