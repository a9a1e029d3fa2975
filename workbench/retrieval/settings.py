"""The search settings (what a trace records, so a search replays) and the ranked candidate
list the pipeline (pipeline.py) produces."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..errors import UserError
from ..rank import persona as rank_persona
from ..rank import priors as rank_priors
from ..rank.fusion import fusion
from .filters import Filters
from .index import CHUNKER_VERSION

PIPELINES = ("hybrid", "bm25", "dense")
DENSE_PATHS = ("numpy", "duckdb", "int8")
AVOID_RATIO = 0.5
IDENTIFIER_DENSE_WEIGHT = 0.3
RARE_DOCS, RARE_SHARE = 5, 0.005
ROW_BLOCK = 16  # dense dot products are taken in whole blocks of rows (see _dot_rows)


@dataclass(frozen=True)
class Settings:
    pipeline: str = "hybrid"
    fusion: str = "weighted"
    lexical: str = "bm25"
    dense: str = "numpy"
    k: int = 10
    depth: int = 100
    min_score: float | None = None
    priors: rank_priors.Priors = field(default_factory=rank_priors.Priors)
    use_priors: bool = True
    reranker: str | None = None
    rerank_top_n: int = 20
    dense_weight: float | None = None
    passages: bool = False       # MaxP: a long fragment's dense score is its best passage's (rank/maxp.py)
    feedback: bool = False       # dense PRF: re-score with the query moved towards the top fragment (rank/feedback.py)
    filters: Filters = field(default_factory=Filters)
    persona: str | None = None                    # the persona the caller acts in (a ranking feature only)
    weights: rank_persona.Weights | None = None   # workbench.yaml's ranking weights (None: the built-in rule)

    def check(self) -> "Settings":
        if self.pipeline not in PIPELINES:
            raise UserError(f"unknown pipeline {self.pipeline!r} (valid: {', '.join(PIPELINES)})")
        if self.dense not in DENSE_PATHS:
            raise UserError(f"unknown dense path {self.dense!r} (valid: {', '.join(DENSE_PATHS)})")
        fusion(self.fusion)
        from .lexical import canonical_backend

        if canonical_backend(self.lexical) != self.lexical:   # an old alias: traces keep the canonical name
            return replace(self, lexical=canonical_backend(self.lexical)).check()
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise UserError("k must be a whole number, at least 1")
        if self.dense_weight is not None:
            w = self.dense_weight
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.0 <= float(w) <= 1.0:
                raise UserError(f"the dense weight must be a number from 0 to 1, not {w!r}", param="dense_weight")
            if self.pipeline != "hybrid" or self.fusion not in ("weighted", "zscore"):
                raise UserError("the dense weight applies to the hybrid pipeline with weighted fusion (or zscore) only",
                                param="dense_weight")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "fusion": self.fusion, "lexical": self.lexical, "dense": self.dense,
                "k": self.k, "depth": self.depth, "min_score": self.min_score, "use_priors": self.use_priors,
                "freshness_weight": self.priors.freshness_weight, "authority_weight": self.priors.authority_weight,
                "half_life_days": self.priors.half_life_days, "reranker": self.reranker,
                "rerank_top_n": self.rerank_top_n, "chunker": CHUNKER_VERSION,
                "dense_weight": None if self.dense_weight is None else float(self.dense_weight),
                "passages": self.passages, **({"feedback": True} if self.feedback else {}),
                "filters": self.filters.to_dict(),
                **({"persona": self.persona, "weights": self.weights.to_dict()} if self.weights is not None else {})}

    def with_weights(self, persona: str | None, weights: rank_persona.Weights | None) -> "Settings":
        """These settings acting in ``persona`` with ``weights`` (the priors' weights follow them)."""
        if weights is None:
            return replace(self, persona=persona, weights=None)
        priors = replace(self.priors, freshness_weight=weights.freshness, authority_weight=weights.authority)
        return replace(self, persona=persona, weights=weights, priors=priors)


@dataclass
class Ranking:
    """The whole ranked candidate list (anti-patterns included) plus stage timings.

    ``superseded`` maps a candidate's position to the position of the superseder the caller
    sees; ``named`` holds the superseded positions the query names explicitly (by id, or by
    an identifier only that fragment contains among the visible ones): those are neither
    demoted nor left out of context."""

    order: list[int]
    final: np.ndarray
    parts: dict[str, np.ndarray]
    pinned: set[int]
    stages_ms: dict[str, float]
    superseded: dict[int, int] = field(default_factory=dict)
    named: set[int] = field(default_factory=set)
    query: str = ""
    query_vector: np.ndarray | None = None
    basis: np.ndarray | None = None          # the statistics' mask (what the caller sees in the working scope)
    query_idf: tuple[np.ndarray, np.ndarray] | None = None   # (token ids, idf) of the query, for coverage
    basis_cos: np.ndarray | None = None      # the query's cosine with every fragment of the basis
    demoted: np.ndarray | None = None        # the positions demoted as superseded (what tuning re-scores with)
    exact: bool = False                      # the query names a rare identifier (the lexical weight applies)
    passages: bool = False                   # dense scores are MaxP over passages (Settings.passages)
