"""The search pipeline: scope filter (and search filters) → lexical and dense scores →
fusion → priors → supersession demotion → min_score → optional rerank → pins first (all in
context, the relevant ones in a search) → hits and a separate "avoid" list, each hit with a
calibrated confidence.

The scope mask and the filters are applied to every score vector before any ranking or top-k
cut, so k results come back whenever k matching fragments exist. No oracles: every statistic
behind a score is computed over what the caller can see — BM25's N, df, idf and average length
over the mask, the rare-identifier switch over visible document counts, authority as PageRank
over the caller's visible subgraph, supersession from the superseders the caller sees, and
fusion, prior and "avoid" normalisations over the (visible) candidates — so a caller's results
and scores do not change with fragments they cannot see (tests/test_no_oracles.py). Filters
narrow the candidates only, not those statistics (see filters.py).

A hit's ``score`` is its ranking score over the best candidate's, clipped to [0, 1]: it orders
hits within one query and means nothing across queries. ``confidence`` (rank/calibration.py)
is the one to compare across queries and to cut on.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from dataclasses import replace
from datetime import datetime

import numpy as np

from ..errors import UserError
from ..models import Principal, Scope
from ..rank import calibration
from ..rank import feedback as rank_feedback
from ..rank import priors as rank_priors
from ..rank.fusion import DENSE_WEIGHT, top_k
from ..rank.maxp import maxp
from ..rank.stages import final_scores
from .hits import Hit, source_of, superseded_dict  # noqa: F401 - re-exported for the faces
from .index import SearchIndex
from .lexical import identifiers, tokenize

from .settings import (AVOID_RATIO, DENSE_PATHS, IDENTIFIER_DENSE_WEIGHT, PIPELINES, RARE_DOCS,  # noqa: F401
                       RARE_SHARE, ROW_BLOCK, Ranking, Settings)


def rank(index: SearchIndex, query: str, principal: Principal, settings: Settings, *, now: datetime,
         within: Scope | None = None, pinned_ids: set[str] = frozenset(), query_vector: np.ndarray | None = None
         ) -> Ranking:
    if not query or not query.strip():
        raise UserError("the query is empty")
    stages: dict[str, float] = {}
    n = len(index.ids)
    mask = index.visible(principal, within)                 # the statistics' basis
    seen = index.visible(principal) if within is not None else mask
    authority = index.authority_for(seen) if n else np.zeros(0)
    candidates = mask & settings.filters.mask(index) if settings.filters and n else mask
    lexical = np.full(n, -np.inf, dtype=np.float64)
    dense = np.full(n, -np.inf, dtype=np.float64)
    exact = False
    qv = query_vector
    if settings.pipeline in ("hybrid", "bm25"):
        t = time.perf_counter()
        backend = index.lexical(settings.lexical)
        exact = _rare_identifier(backend, query, mask)
        raw = backend.scores(query, mask).astype(np.float64)
        lexical = np.where(candidates & (raw > 0), raw, -np.inf)
        stages["lexical"] = (time.perf_counter() - t) * 1000
    if settings.pipeline in ("hybrid", "dense"):
        t = time.perf_counter()
        qv = query_vector if query_vector is not None else index.embedder.encode_query(query)
        stages["embed"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        dense = _dense(index, qv, candidates, settings, lexical=lexical)
        if settings.passages:
            dense = with_passages(index, dense, qv, candidates)
        stages["dense"] = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    # A query naming a rare identifier (an error code, a config key) is a lexical question,
    # unless the caller set the weight.
    w = settings.weights
    balance = w.dense if w is not None and w.dense is not None else DENSE_WEIGHT
    weight = settings.dense_weight if settings.dense_weight is not None else \
        IDENTIFIER_DENSE_WEIGHT if exact else balance
    fresh = np.ones(n)
    with_priors = settings.use_priors and settings.pipeline == "hybrid" and n
    if with_priors:
        fresh = rank_priors.freshness(index.ages_days(now), index.half_lives(settings.priors.half_life))
    superseded, named = _supersession(index, query, seen, mask, principal) if n else ({}, set())
    demoted = np.array(sorted(set(superseded) - named), dtype=np.int64)
    pinned = {index.pos[i] for i in pinned_ids if i in index.pos and mask[index.pos[i]]}
    in_persona = index.in_persona(settings.persona) if settings.persona and n else np.zeros(n, dtype=bool)
    pin_mask = np.zeros(n, dtype=bool)
    pin_mask[list(pinned)] = True
    fused, final = final_scores(lexical, dense, pipeline=settings.pipeline, fusion_name=settings.fusion,
                                depth=settings.depth, dense_weight=weight, min_score=settings.min_score,
                                fresh=fresh, authority=authority, priors=settings.priors if with_priors else None,
                                demoted=demoted, weights=w if with_priors else None, in_persona=in_persona,
                                pinned=pin_mask)
    parts = {"lexical": lexical, "dense": dense}
    if settings.feedback and settings.pipeline in ("hybrid", "dense") and n:
        # dense PRF: the query moved towards the best-ranked candidate's vector, scored again; "dense"
        # keeps the query's own cosines (what a confidence reads), "feedback" holds the fused ones
        moved = rank_feedback.rocchio(qv, index.vectors()[top_k(final, rank_feedback.FEEDBACK_DOCS)])
        again = _dense(index, moved, candidates, settings, lexical=lexical)
        parts["feedback"] = with_passages(index, again, moved, candidates) if settings.passages else again
        fused, final = final_scores(lexical, parts["feedback"], pipeline=settings.pipeline,
                                    fusion_name=settings.fusion, depth=settings.depth, dense_weight=weight,
                                    min_score=settings.min_score, fresh=fresh, authority=authority,
                                    priors=settings.priors if with_priors else None, demoted=demoted,
                                    weights=w if with_priors else None, in_persona=in_persona, pinned=pin_mask)
    depth = max(settings.depth, settings.k * 3)
    order = [int(i) for i in top_k(final, depth)]   # by score: which pins go first is hits_from's call
    stages["fusion"] = (time.perf_counter() - t) * 1000
    return Ranking(order=order, final=final, pinned=pinned, stages_ms=stages,
                   parts={**parts, "fused": fused, "freshness": fresh,
                          "authority": authority, "in_persona": in_persona},
                   superseded=superseded, named=named, query=query, query_vector=qv, basis=mask,
                   demoted=demoted, exact=exact, passages=settings.passages)


def _supersession(index: SearchIndex, query: str, seen: np.ndarray, within: np.ndarray, principal: Principal
                  ) -> tuple[dict[int, int], set[int]]:
    """(position in ``within`` → position of its superseder the caller sees (``n + j`` for an
    archived one, see ``SearchIndex.superseder_ref``), the superseded ones the query names
    explicitly). Explicitly means by id, or by a code identifier that this fragment alone contains
    among the fragments the caller sees."""
    by = index.superseders(seen, principal)
    superseded = {int(i): int(by[i]) for i in np.flatnonzero((by >= 0) & within)}
    if not superseded:
        return {}, set()
    lowered = query.lower()
    named = {i for i in superseded
             if re.search(r"(?<![a-z0-9._-])" + re.escape(index.ids[i]) + r"(?![a-z0-9_-])", lowered)}
    rest = [i for i in superseded if i not in named]
    idents = identifiers(query) if rest else []
    if idents:
        backend = index.lexical("bm25")
        unique = [tid for t in idents if backend.document_frequency(t, seen) == 1 for tid in backend.token_ids([t])]
        if unique:
            held = backend.matrix.contains(unique, np.array(rest, dtype=np.int64)).any(axis=0)
            named |= {i for i, yes in zip(rest, held) if yes}
    return superseded, named


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


def with_passages(index: SearchIndex, dense: np.ndarray, qv: np.ndarray, mask: np.ndarray,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """``dense`` with each long fragment in ``mask`` lifted to its best passage's cosine (MaxP);
    with ``rows``, only the passages of the fragments at those positions are scored."""
    passages = index.passages()
    if not len(passages):
        return dense
    at = np.arange(len(passages)) if rows is None else passages.rows_of(rows)
    if not at.size:
        return dense
    scores = _dot_rows(passages.matrix[at], qv.astype(np.float32))
    return maxp(dense, scores, passages.owner[at], mask)


def dense_cosines(index: SearchIndex, qv: np.ndarray, rows: np.ndarray | None = None, *,
                  passages: bool = False) -> np.ndarray:
    """The dense stage's score of the fragments at ``rows`` (all when None): their cosine, or with
    ``passages`` MaxP over their passages too."""
    vectors = index.vectors()
    at = np.arange(len(vectors)) if rows is None else np.asarray(rows, dtype=np.int64)
    full = np.full(len(vectors), -np.inf)
    full[at] = _dot_rows(vectors[at], qv.astype(np.float32))
    if not passages:
        return full[at].astype(np.float32)
    mask = np.zeros(len(vectors), dtype=bool)
    mask[at] = True
    return with_passages(index, full, qv, mask, rows=at)[at]


def row_cosines(vectors: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """``vectors @ qv`` (float32) rounded as the dense stage rounds each row, wherever the row sits:
    what edit impact caches of every row, and computes for an edited fragment's new vector."""
    return _dot_rows(vectors, qv.astype(np.float32))


def _dense(index: SearchIndex, qv: np.ndarray, mask: np.ndarray, settings: Settings,
           lexical: np.ndarray | None = None) -> np.ndarray:
    """Cosines over ``mask`` (-inf elsewhere). "int8" re-scores exactly only its top candidates and,
    given ``lexical``, the best lexical candidates too: weighted fusion adds the cosine of every
    lexical candidate, and one left at -inf counts as 0 there."""
    n = len(index.ids)
    index.check_model(index.embedder.name)  # the query vector's model is the one whose vectors are scored
    if settings.dense == "numpy":
        sims = _dot_rows(index.vectors(), qv.astype(np.float32))
        return np.where(mask, sims.astype(np.float64), -np.inf)
    if settings.dense == "int8":   # an int8 scan; its top candidates re-scored exactly, by _dot_rows
        from ..rank.quantized import RESCORE

        also = top_k(lexical, RESCORE * settings.depth) if lexical is not None else None
        with _blas().limit(limits=1, user_api="blas"):
            return index.quantized().scan(qv.astype(np.float32), mask, settings.depth, also=also, exact=_dot_rows)
    out = np.full(n, -np.inf)
    visible_hashes = [index.hashes[i] for i in np.flatnonzero(mask)]
    index.vectors()  # make sure every text is embedded and stored
    by_hash: dict[str, list[int]] = {}
    for i in np.flatnonzero(mask):
        by_hash.setdefault(index.hashes[i], []).append(int(i))
    for h, sim in index.store.dense_scan(index.model, qv, visible_hashes, settings.depth):
        for i in by_hash.get(h, ()):
            out[i] = sim
    return out


def hits_from(index: SearchIndex, ranking: Ranking, settings: Settings, *, for_context: bool = False,
              min_confidence: float | None = None, calibrate: bool = True,
              model: calibration.Calibration | None = None, pin_floor: float | None = None
              ) -> tuple[list[Hit], list[Hit]]:
    """Split the ranking into hits (top k, anti-patterns excluded) and "avoid": the
    anti-patterns that ranked within the top k with at least ``AVOID_RATIO`` of the best
    score (or are pinned and go first). Hits and avoid are numbered 1..n each.

    Pins go first (``priors.pins_first``): all for context; in a search those at ``pin_floor`` or above.
    ``for_context`` leaves superseded fragments out (unless the query names them), and
    ``min_confidence`` leaves out candidates below that confidence; pins that go first are exempt
    from both. Both act before the k cut, so k come back whenever k candidates pass.

    ``calibrate=False`` leaves every confidence None: no query embedding, so a bm25 ranking
    needs no model (the TUI's lexical preview while the model loads); ``min_confidence``
    cannot apply then. ``model`` is the workspace's calibration (default: the prior)."""
    if not calibrate and min_confidence is not None:
        raise UserError("a confidence floor needs calibrated confidences")
    hits: list[Hit] = []
    avoid: list[Hit] = []
    best = max((ranking.final[i] for i in ranking.order[:1]), default=0.0)
    top = _top_score(ranking)
    pins = [i for i in ranking.order if i in ranking.pinned]
    conf: dict[int, float | None] = confidences(index, ranking, pins, model) if calibrate else dict.fromkeys(pins)
    floor = pin_floor if pin_floor is not None else (model or calibration.PRIOR).floor
    first = rank_priors.pins_first(ranking.order, ranking.pinned, for_context=for_context, floor=floor,
                                   confidence=conf, lexical=ranking.parts["lexical"])
    order = [i for i in ranking.order if i in first] + [i for i in ranking.order if i not in first]
    block = max(settings.k, 16)
    for position, i in enumerate(order):
        if len(hits) >= settings.k:
            break
        if i not in conf:  # confidences in blocks, for what is looked at only
            block_of = [j for j in order[position:position + block] if j not in conf]
            conf.update(confidences(index, ranking, block_of, model) if calibrate else dict.fromkeys(block_of))
            index.fragments_at(block_of)  # read the block's fragments from the store in one query
        pinned = i in first
        if not pinned and for_context and i in ranking.superseded and i not in ranking.named:
            continue
        if not pinned and min_confidence is not None and conf[i] < min_confidence:
            continue
        if index.kinds[i] == "anti-pattern":
            strong = position < settings.k and (best <= 0 or ranking.final[i] >= AVOID_RATIO * best)
            if strong or pinned:
                avoid.append(_hit(index, ranking, i, len(avoid) + 1, top=top, confidence=conf[i],
                                  calibrate=calibrate, model=model))
        else:
            hits.append(_hit(index, ranking, i, len(hits) + 1, top=top, confidence=conf[i], calibrate=calibrate,
                             model=model))
    return hits, avoid


def _top_score(ranking: Ranking) -> float:
    values = ranking.final[np.asarray(ranking.order, dtype=np.int64)] if ranking.order else np.zeros(0)
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else 0.0


def _query_idf(index: SearchIndex, ranking: Ranking) -> tuple[np.ndarray, np.ndarray]:
    """(token id or -1, BM25 idf) of each distinct content token of the query, the idf over the
    caller's statistics basis: a token no visible fragment holds gets the largest idf."""
    if ranking.query_idf is None:
        tokens = list(dict.fromkeys(tokenize(ranking.query)))
        basis = ranking.basis if ranking.basis is not None else np.ones(len(index.ids), dtype=bool)
        n = int(np.count_nonzero(basis))
        backend = index.lexical("bm25")
        df = np.array([backend.document_frequency(t, basis) for t in tokens], dtype=np.float64)
        ids = np.array([(backend.token_ids([t]) or [-1])[0] for t in tokens], dtype=np.int64)
        ranking.query_idf = (ids, np.log(1.0 + (n - df + 0.5) / (df + 0.5)))
    return ranking.query_idf


def coverage(index: SearchIndex, ranking: Ranking, positions) -> np.ndarray:
    """Lexical coverage of the query by each fragment: the idf-weighted share of the query's
    distinct content tokens (as BM25 tokenizes them) present in the fragment's indexed text.
    idf is over the fragments the caller sees, so a common word counts little and a word no
    visible fragment holds counts most (and is never covered)."""
    ids, idf = _query_idf(index, ranking)
    total = float(idf.sum())
    if total <= 0 or not len(positions):
        return np.zeros(len(positions), dtype=np.float64)
    held = index.lexical("bm25").matrix.contains(ids.tolist(), np.asarray(positions, dtype=np.int64))
    return (idf @ held) / total


def cosines(index: SearchIndex, ranking: Ranking, positions) -> np.ndarray:
    """The raw dense cosine of each position's fragment with the query (taken from the ranking
    when the dense retriever scored it, else computed for these rows alone)."""
    dense = ranking.parts.get("dense")
    out = np.array([dense[i] if dense is not None and np.isfinite(dense[i]) else np.nan for i in positions],
                   dtype=np.float64)
    missing = [j for j in range(len(positions)) if np.isnan(out[j])]
    if missing:
        if ranking.query_vector is None:
            ranking.query_vector = index.embedder.encode_query(ranking.query)
        rows = np.array([positions[j] for j in missing], dtype=np.int64)
        out[missing] = dense_cosines(index, ranking.query_vector, rows, passages=ranking.passages)
    return out


def basis_cosines(index: SearchIndex, ranking: Ranking) -> np.ndarray:
    """The query's cosine with every fragment of the statistics' basis (what the caller sees in
    the working scope), taken from the dense stage when it scored them all."""
    if ranking.basis_cos is None:
        basis = ranking.basis if ranking.basis is not None else np.ones(len(index.ids), dtype=bool)
        dense = ranking.parts.get("dense")
        at = np.flatnonzero(basis)
        if dense is not None and at.size and np.isfinite(dense[at]).all():
            ranking.basis_cos = dense[at].astype(np.float64)
        elif at.size:
            if ranking.query_vector is None:
                ranking.query_vector = index.embedder.encode_query(ranking.query)
            ranking.basis_cos = dense_cosines(index, ranking.query_vector, at, passages=ranking.passages
                                              ).astype(np.float64)
        else:
            ranking.basis_cos = np.zeros(0)
    return ranking.basis_cos


def signals(index: SearchIndex, ranking: Ranking, positions) -> dict[str, np.ndarray]:
    """The signals the confidence model reads (rank/calibration.py), for ``positions``:
    cosine, coverage and margin (over the query's cosines with every fragment of the basis)."""
    positions = list(positions)
    cov = coverage(index, ranking, positions)
    cos = cosines(index, ranking, positions)
    ranking.parts.setdefault("coverage", np.full(len(index.ids), np.nan))
    ranking.parts["coverage"][positions] = cov
    margin = calibration.margin(np.nan_to_num(cos), basis_cosines(index, ranking))
    ranking.parts.setdefault("margin", np.full(len(index.ids), np.nan))
    ranking.parts["margin"][positions] = margin
    return {"cosine": cos, "coverage": cov, "margin": margin}


def confidences(index: SearchIndex, ranking: Ranking, positions,
                model: calibration.Calibration | None = None) -> dict[int, float]:
    """Position → calibrated confidence (``model``, by default the prior) for ``positions``."""
    positions = list(positions)
    if not positions:
        return {}
    model = model or calibration.PRIOR
    return dict(zip(positions, model.confidence(signals(index, ranking, positions)).tolist()))


def _hit(index: SearchIndex, ranking: Ranking, i: int, position: int, *, top: float | None = None,
         confidence: float | None = None, calibrate: bool = True,
         model: calibration.Calibration | None = None) -> Hit:
    p = ranking.parts

    def val(arr: np.ndarray) -> float | None:
        return float(arr[i]) if np.isfinite(arr[i]) else None

    authority = p.get("authority")
    scores = {"lexical": val(p["lexical"]), "dense": val(p["dense"]), "fused": val(p["fused"]),
              "freshness": float(p["freshness"][i]),
              "authority": float(authority[i]) if authority is not None and len(authority) else 0.0,
              "pinned": i in ranking.pinned}
    for signal in ("coverage", "margin"):
        if signal in p and np.isfinite(p[signal][i]):
            scores[signal] = float(p[signal][i])
    if "rerank" in p:
        scores["rerank"] = val(p["rerank"])
    if "feedback" in p:   # dense PRF: the cosine with the moved query, what the fusion used
        scores["feedback"] = val(p["feedback"])
    if "in_persona" in p and p["in_persona"].any():   # acting in a persona: was this one scoped to it?
        scores["persona"] = bool(p["in_persona"][i])
    top = _top_score(ranking) if top is None else top
    raw = float(ranking.final[i]) if np.isfinite(ranking.final[i]) else 0.0
    score = min(1.0, max(0.0, raw) / top) if top > 0 else 0.0
    if confidence is None and calibrate:
        confidence = confidences(index, ranking, [i], model)[i]
    new = ranking.superseded.get(i)
    superseded_by = index.superseder_ref(new) if new is not None else None
    return Hit(fragment=index.fragment(i), score=score, scores=scores, rank=position,
               confidence=None if confidence is None else float(confidence),
               superseded_by=superseded_by)


def rerank(index: SearchIndex, ranking: Ranking, query: str, model, top_n: int) -> Ranking:
    """Reorder the first ``top_n`` ranked fragments by a cross-encoder's score (pins too: hits_from puts
    pins first). The cross-encoder score is recorded as the "rerank" part of each breakdown."""
    movable, tail = ranking.order[:top_n], ranking.order[top_n:]
    if not movable:
        return ranking
    scores = np.asarray(model.predict([(query, text) for text in index.texts_of([int(i) for i in movable])]), dtype=np.float64).reshape(-1)
    rerank_scores = np.full(len(index.ids), -np.inf)
    rerank_scores[movable] = scores
    moved = [movable[j] for j in np.argsort(-scores, kind="stable")]
    order = moved + tail
    return replace(ranking, order=order, parts={**ranking.parts, "rerank": rerank_scores})
