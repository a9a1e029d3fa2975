"""Ranking weights per persona, and the persona as a ranking feature.

workbench.yaml may set the weights of the ranking rule for everyone (``ranking.default``) and per
persona (``ranking.personas.NAME``): relevance (the fused score's weight), freshness and authority
(the priors' weights), pins (a bonus for pinned candidates), dense (the lexical/dense balance of
weighted fusion; unset: the built-in rule) and persona (a bonus for fragments scoped to the persona
the caller acts in: a preference, never a filter). With the defaults the ranking is the one without
personas.

    final = relevance × priors(fused) + persona × [scoped to the persona] + pins × [pinned]

The weights themselves are models.py's (``Weights``, ``RankingWeights``); workbench.yaml's
``ranking:`` is parsed and validated by config.py. Pure: arrays; no I/O.
"""

from __future__ import annotations

import numpy as np

from ..models import DEFAULT_WEIGHTS as DEFAULT, RankingWeights as Ranking, Weights  # noqa: F401 - re-exported

def adjust(final: np.ndarray, in_persona: np.ndarray | None, pinned: np.ndarray | None, w: Weights) -> np.ndarray:
    """``final`` (after the priors) scaled by the relevance weight, plus the persona and pin bonuses
    for the candidates (finite scores) scoped to the persona and pinned. -inf stays -inf."""
    if w.relevance == 1.0 and (in_persona is None or w.persona == 0.0) and (pinned is None or w.pins == 0.0):
        return final
    finite = np.isfinite(final)
    out = np.where(finite, final * w.relevance, -np.inf)
    if in_persona is not None and w.persona:
        out = np.where(finite & in_persona, out + w.persona, out)
    if pinned is not None and w.pins:
        out = np.where(finite & pinned, out + w.pins, out)
    return out
