"""The search pipeline: scope filter → lexical and dense scores → fusion → priors →
pins first → min_score → optional rerank → hits and a separate "avoid" list.

The scope mask is applied to every score vector before any ranking or top-k cut, so k
results come back whenever k visible fragments match. No oracles: every statistic behind a
score is computed over what the caller can see — BM25's N, df, idf and average length over
the mask, the rare-identifier switch over visible document counts, authority as PageRank
over the caller's visible subgraph, and fusion, prior and "avoid" normalisations over the
(visible) candidates — so a caller's results and scores do not change with fragments they
cannot see (tests/test_no_oracles.py).
"""

from __future__ import annotations

import time
from functools import lru_cache
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from ..errors import UserError
from ..models import Fragment, Principal, Scope
from ..rank import priors as rank_priors
from ..rank.fusion import DENSE_WEIGHT, fusion, top_k
from .index import CHUNKER_VERSION, SearchIndex
from .lexical import identifiers

PIPELINES = ("hybrid", "bm25", "dense")
DENSE_PATHS = ("numpy", "duckdb")
AVOID_RATIO = 0.5
IDENTIFIER_DENSE_WEIGHT = 0.3
RARE_DOCS, RARE_SHARE = 5, 0.005
ROW_BLOCK = 16  # dense dot products are taken in whole blocks of rows (see _dot_rows)


@dataclass(frozen=True)
class Settings:
    pipeline: str = "hybrid"
    fusion: str = "weighted"
    lexical: str = "bm25s"
    dense: str = "numpy"
    k: int = 10
    depth: int = 100
    min_score: float | None = None
    priors: rank_priors.Priors = field(default_factory=rank_priors.Priors)
    use_priors: bool = True
    reranker: str | None = None
    rerank_top_n: int = 20

    def check(self) -> "Settings":
        if self.pipeline not in PIPELINES:
            raise UserError(f"unknown pipeline {self.pipeline!r} (valid: {', '.join(PIPELINES)})")
        if self.dense not in DENSE_PATHS:
            raise UserError(f"unknown dense path {self.dense!r} (valid: {', '.join(DENSE_PATHS)})")
        fusion(self.fusion)
        from .lexical import check_backend

        check_backend(self.lexical)
        if self.k < 1:
            raise UserError("k must be at least 1")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "fusion": self.fusion, "lexical": self.lexical, "dense": self.dense,
                "k": self.k, "depth": self.depth, "min_score": self.min_score, "use_priors": self.use_priors,
                "freshness_weight": self.priors.freshness_weight, "authority_weight": self.priors.authority_weight,
                "half_life_days": self.priors.half_life_days, "reranker": self.reranker,
                "rerank_top_n": self.rerank_top_n, "chunker": CHUNKER_VERSION}


@dataclass(frozen=True)
class Hit:
    """One ranked fragment with its score breakdown."""

    fragment: Fragment
    score: float
    scores: dict[str, Any]
    rank: int

    @property
    def id(self) -> str:
        return self.fragment.id

    def to_dict(self) -> dict[str, Any]:
        f = self.fragment
        data = f.to_dict()
        return {"id": f.id, "version": f.version, "title": f.title, "kind": f.kind, "score": round(self.score, 6),
                "scores": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.scores.items()},
                "scope": f.scope.to_dict(), "owner": f.owner, "source": source_of(f),
                "updated_at": data["updated_at"], "text": f.body}

    def __repr__(self) -> str:
        return f"<Hit #{self.rank} {self.id} {self.score:.3f}>"


def source_of(f: Fragment) -> dict[str, Any] | None:
    return f.sources[0].to_dict() if f.sources else None


@dataclass
class Ranking:
    """The whole ranked candidate list (anti-patterns included) plus stage timings."""

    order: list[int]
    final: np.ndarray
    parts: dict[str, np.ndarray]
    pinned: set[int]
    stages_ms: dict[str, float]


def rank(index: SearchIndex, query: str, principal: Principal, settings: Settings, *, now: datetime,
         within: Scope | None = None, pinned_ids: set[str] = frozenset(), query_vector: np.ndarray | None = None
         ) -> Ranking:
    if not query or not query.strip():
        raise UserError("the query is empty")
    stages: dict[str, float] = {}
    n = len(index.ids)
    mask = index.visible(principal, within)
    authority = index.authority_for(index.visible(principal)) if n else np.zeros(0)
    lexical = np.full(n, -np.inf, dtype=np.float64)
    dense = np.full(n, -np.inf, dtype=np.float64)
    exact = False
    if settings.pipeline in ("hybrid", "bm25"):
        t = time.perf_counter()
        backend = index.lexical(settings.lexical)
        exact = _rare_identifier(backend, query, mask)
        raw = backend.scores(query, mask).astype(np.float64)
        lexical = np.where(mask & (raw > 0), raw, -np.inf)
        stages["lexical"] = (time.perf_counter() - t) * 1000
    if settings.pipeline in ("hybrid", "dense"):
        t = time.perf_counter()
        qv = query_vector if query_vector is not None else index.embedder.encode_query(query)
        stages["embed"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        dense = _dense(index, qv, mask, settings)
        stages["dense"] = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    if settings.pipeline == "bm25":
        fused = lexical
    elif settings.pipeline == "dense":
        fused = dense
    elif settings.fusion == "weighted":
        # A query naming a rare identifier (an error code, a config key) is a lexical question.
        weight = IDENTIFIER_DENSE_WEIGHT if exact else DENSE_WEIGHT
        fused = fusion(settings.fusion)(lexical, dense, depth=settings.depth, dense_weight=weight)
    else:
        fused = fusion(settings.fusion)(lexical, dense, depth=settings.depth)
    final = fused.copy()
    if settings.min_score is not None:
        final[final < settings.min_score] = -np.inf
    fresh = np.ones(n)
    if settings.use_priors and settings.pipeline == "hybrid" and n:
        fresh = rank_priors.freshness(index.ages_days(now), index.half_lives(settings.priors.half_life))
        final = rank_priors.apply(final, fresh, authority, settings.priors, depth=settings.depth)
    pinned = {index.pos[i] for i in pinned_ids if i in index.pos and mask[index.pos[i]]}
    depth = max(settings.depth, settings.k * 3)
    order = [int(i) for i in top_k(final, depth)]
    order = [i for i in order if i in pinned] + [i for i in order if i not in pinned]
    stages["fusion"] = (time.perf_counter() - t) * 1000
    return Ranking(order=order, final=final, pinned=pinned, stages_ms=stages,
                   parts={"lexical": lexical, "dense": dense, "fused": fused, "freshness": fresh,
                          "authority": authority})


@lru_cache(maxsize=1)
def _blas():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _rare_identifier(backend, query: str, mask: np.ndarray) -> bool:
    """True when the query names an identifier that only a few of the caller's visible
    documents contain (counts and the corpus size are over ``mask`` only)."""
    df = getattr(backend, "document_frequency", None)
    if df is None:
        return False
    limit = max(RARE_DOCS, int(RARE_SHARE * int(np.count_nonzero(mask))))
    return any(0 < df(token, mask) <= limit for token in identifiers(query))


def _dot_rows(vectors: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """``vectors @ qv`` with each row's dot product rounded the same wherever the row sits.

    OpenBLAS's sgemv takes rows 4 at a time and the last ``n % 4`` rows through another
    kernel whose float32 rounding differs, so a row's score would depend on how many rows
    (of any org) precede it. Whole blocks go through BLAS; the tail is padded with zero
    rows to a whole block. One BLAS thread: the thread split point moves rounding too, and
    OpenBLAS threads left spinning after a multi-threaded product slow the next query
    embedding in torch by 2-10x on 2 cores (measured in bench)."""
    n = len(vectors)
    head = n - n % ROW_BLOCK
    out = np.empty(n, dtype=np.float32)
    with _blas().limit(limits=1, user_api="blas"):
        out[:head] = vectors[:head] @ qv
        if head < n:
            tail = np.zeros((ROW_BLOCK, vectors.shape[1]), dtype=np.float32)
            tail[:n - head] = vectors[head:]
            out[head:] = (tail @ qv)[:n - head]
    return out


def _dense(index: SearchIndex, qv: np.ndarray, mask: np.ndarray, settings: Settings) -> np.ndarray:
    n = len(index.ids)
    if settings.dense == "numpy":
        sims = _dot_rows(index.vectors(), qv.astype(np.float32))
        return np.where(mask, sims.astype(np.float64), -np.inf)
    out = np.full(n, -np.inf)
    visible_hashes = [index.hashes[i] for i in np.flatnonzero(mask)]
    index.vectors()  # make sure every text is embedded and stored
    by_hash: dict[str, list[int]] = {}
    for i in np.flatnonzero(mask):
        by_hash.setdefault(index.hashes[i], []).append(int(i))
    for h, sim in index.store.dense_scan(index.embedder.name, qv, visible_hashes, settings.depth):
        for i in by_hash.get(h, ()):
            out[i] = sim
    return out


def hits_from(index: SearchIndex, ranking: Ranking, settings: Settings) -> tuple[list[Hit], list[Hit]]:
    """Split the ranking into hits (top k, anti-patterns excluded) and "avoid": the
    anti-patterns that ranked within the top k with at least ``AVOID_RATIO`` of the best
    score (or are pinned)."""
    hits: list[Hit] = []
    avoid: list[Hit] = []
    best = max((ranking.final[i] for i in ranking.order[:1]), default=0.0)
    for position, i in enumerate(ranking.order):
        if len(hits) >= settings.k:
            break
        hit = _hit(index, ranking, i, position + 1)
        if index.kinds[i] == "anti-pattern":
            strong = position < settings.k and (best <= 0 or ranking.final[i] >= AVOID_RATIO * best)
            if strong or i in ranking.pinned:
                avoid.append(hit)
        else:
            hits.append(hit)
    return hits, avoid


def _hit(index: SearchIndex, ranking: Ranking, i: int, position: int) -> Hit:
    p = ranking.parts

    def val(arr: np.ndarray) -> float | None:
        return float(arr[i]) if np.isfinite(arr[i]) else None

    authority = p.get("authority")
    scores = {"lexical": val(p["lexical"]), "dense": val(p["dense"]), "fused": val(p["fused"]),
              "freshness": float(p["freshness"][i]),
              "authority": float(authority[i]) if authority is not None and len(authority) else 0.0,
              "pinned": i in ranking.pinned}
    if "rerank" in p:
        scores["rerank"] = val(p["rerank"])
    return Hit(fragment=index.fragments[i], score=float(ranking.final[i]) if np.isfinite(ranking.final[i]) else 0.0,
               scores=scores, rank=position)


def rerank(index: SearchIndex, ranking: Ranking, query: str, model, top_n: int) -> Ranking:
    """Reorder the first ``top_n`` ranked fragments by a cross-encoder's score; pins stay first.
    The cross-encoder score is recorded as the "rerank" part of each breakdown."""
    head, tail = ranking.order[:top_n], ranking.order[top_n:]
    movable = [i for i in head if i not in ranking.pinned]
    if not movable:
        return ranking
    scores = np.asarray(model.predict([(query, index.texts[i]) for i in movable]), dtype=np.float64).reshape(-1)
    rerank_scores = np.full(len(index.ids), -np.inf)
    rerank_scores[movable] = scores
    moved = [movable[j] for j in np.argsort(-scores, kind="stable")]
    order = [i for i in head if i in ranking.pinned] + moved + tail
    return Ranking(order=order, final=ranking.final, pinned=ranking.pinned, stages_ms=ranking.stages_ms,
                   parts={**ranking.parts, "rerank": rerank_scores})
