"""The stages of a ranking after retrieval, as one pure function: fusion of the lexical and
dense scores, the minimum score, the freshness and authority priors, and the demotion of
superseded fragments.

Search (retrieval/pipeline.py) and edit impact (rank/impact.py) both finish a ranking here, so
an edit's predicted ranking is computed by the very maths that ranks the saved edit.
Pure: arrays in, arrays out; no I/O.
"""

from __future__ import annotations

import numpy as np

from . import persona as rank_persona
from . import priors as rank_priors
from . import supersession
from .fusion import fusion


def final_scores(lexical: np.ndarray, dense: np.ndarray, *, pipeline: str, fusion_name: str, depth: int,
                 dense_weight: float, min_score: float | None, fresh: np.ndarray, authority: np.ndarray,
                 priors: rank_priors.Priors | None, demoted: np.ndarray,
                 weights: rank_persona.Weights | None = None, in_persona: np.ndarray | None = None,
                 pinned: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(fused, final) scores per position. ``pipeline`` is hybrid, bm25 or dense; ``dense_weight``
    applies to weighted and z-score fusion only; ``priors`` None leaves the priors out; ``demoted`` are the
    positions of superseded fragments (-inf stays -inf throughout). ``weights`` (rank/persona.py)
    scale the result and add the persona and pin bonuses (``in_persona``, ``pinned``: masks)."""
    if pipeline == "bm25":
        fused = lexical
    elif pipeline == "dense":
        fused = dense
    elif fusion_name in ("weighted", "zscore"):
        fused = fusion(fusion_name)(lexical, dense, depth=depth, dense_weight=float(dense_weight))
    else:
        fused = fusion(fusion_name)(lexical, dense, depth=depth)
    final = fused.copy()
    if min_score is not None:
        final[final < min_score] = -np.inf
    if priors is not None:
        final = rank_priors.apply(final, fresh, authority, priors, depth=depth)
    if weights is not None:
        final = rank_persona.adjust(final, in_persona, pinned, weights)
    if demoted.size:
        final = supersession.demote(final, demoted)
    return fused, final
