"""Calibrated relevance: a ``confidence`` in [0, 1] per hit that means the same across queries.

Ranking scores are relative (normalised per query), so they cannot tell a good answer from the
best of a bad lot. Confidence is built from absolute signals of one (query, fragment) pair:

- ``cosine``: the raw dense cosine of the query and fragment embeddings (all-MiniLM-L6-v2);
- ``coverage``: lexical coverage of the query, the share of the query's distinct content tokens
  (stemmed, stopwords removed, identifiers whole and in parts, as BM25 sees them) present in the
  fragment's indexed text, each token weighted by its BM25 idf over the fragments the caller
  sees (a word every fragment holds counts little; a word no visible fragment holds counts most
  and is never covered — "MongoDB" in a corpus without it). The plain share separated negative
  queries worse (at 85 % abstention, 66 % of positive queries kept an answer against 74 %);
- ``agreement``: ``max(cosine, 0) × coverage``, high only when both signals are.

Model: logistic regression, ``confidence = 1 / (1 + exp(-(b0 + b · x)))`` with
x = (cosine, coverage, agreement): the estimated probability that the fragment is one a
reviewer would list as an answer to the query. Fitted with ``fit`` (Newton's method,
L2 = ``L2``) by ``benchmarks/calibrate.py`` on the golden set (sample_corpus/golden.yaml): for
every query, the union of the bm25, dense and hybrid top 20 as its principal sees them; label 1
for a judged-relevant fragment, 0 otherwise (every candidate of a negative query is 0). Fixed
split: queries whose id ends in a number divisible by 4 are held back for checking (38 of 154
queries, 8 of them negative); the other 116 train (3,413 candidates, 125 relevant).

Fitted: b0 = -8.4040, cosine 10.5719, coverage 7.4136, agreement -3.2920 (the two signals add
up, with a small discount when both are high). Held back: log loss 0.0775, Brier 0.0187,
AUC 0.933. ``DEFAULT_FLOOR`` = 0.10 is the lowest floor (grid of 0.02) at which context
abstains on >= 85 % of the training negatives. More in BENCHMARKS.md ("Calibrated confidence").

``DEFAULT_FLOOR`` is the confidence below which ``context`` serves nothing (pins excepted);
workbench.yaml's ``confidence_floor`` and ``--min-confidence`` override it.
Pure: numbers in, numbers out; no I/O, no model.
"""

from __future__ import annotations

import numpy as np

FEATURES = ("cosine", "coverage", "agreement")
# fitted by benchmarks/calibrate.py (see the module docstring); refit there, paste here
INTERCEPT = -8.4040
COEFFICIENTS = (10.5719, 7.4136, -3.2920)
DEFAULT_FLOOR = 0.10
L2 = 1e-2


def features(cosine: np.ndarray, coverage: np.ndarray) -> np.ndarray:
    """The n × 3 feature matrix of ``FEATURES`` (a missing cosine counts as 0)."""
    cos = np.nan_to_num(np.asarray(cosine, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    cov = np.clip(np.asarray(coverage, dtype=np.float64), 0.0, 1.0)
    return np.column_stack([cos, cov, np.clip(cos, 0.0, None) * cov])


def confidence(cosine: np.ndarray, coverage: np.ndarray, *, intercept: float | None = None,
               coefficients: tuple[float, ...] | None = None) -> np.ndarray:
    """P(relevant) for each (cosine, coverage) pair, in [0, 1] (the module's constants unless
    others are given)."""
    b0 = INTERCEPT if intercept is None else intercept
    w = COEFFICIENTS if coefficients is None else coefficients
    z = b0 + features(cosine, coverage) @ np.asarray(w, dtype=np.float64)
    return 1.0 / (1.0 + np.exp(-z))


def fit(x: np.ndarray, y: np.ndarray, *, l2: float = L2, iterations: int = 100) -> tuple[float, tuple[float, ...]]:
    """Logistic regression by Newton's method with an L2 penalty on the weights (not the
    intercept): (intercept, coefficients) for features ``x`` (n × d) and 0/1 labels ``y``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    design = np.column_stack([np.ones(len(x)), x])
    w = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], l2)
    penalty[0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        grad = design.T @ (p - y) + penalty * w
        hessian = (design * (p * (1 - p))[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hessian + 1e-9 * np.eye(len(w)), grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(w[0]), tuple(float(v) for v in w[1:])


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
