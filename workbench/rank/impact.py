"""Edit impact as ranking maths: one golden query's ranking, for one caller, computed from state
cached per index generation, as it stands and as it would stand with one fragment edited.

The cache (service/impact.py keeps it) holds what is costly to get: the query's tokens and their
postings over the whole index, the raw cosine of every row with the query's vector, and per caller
the fragments they see, each position's BM25 length, their authority and what is superseded for
them. An edit changes one document: its term frequencies and length, its cosine, its freshness
(an edit makes it new) and maybe who sees it. That moves the BM25 statistics (N, df, avgdl), the
rare-identifier switch, the fusion's max normalisation and the priors' min-max normalisation for
every candidate, so those are recomputed here over arrays, with the functions search itself uses
(``bm25.accumulate``, ``stages.final_scores``, ``fusion.top_k``): nothing else is tokenized or
embedded. The "after" ranking equals a full re-rank of the saved edit (tests/test_impact.py).

Pure: arrays in, arrays out; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .bm25 import accumulate
from .fusion import top_k
from .priors import Priors
from .stages import final_scores

_NO_DOCS = np.zeros(0, dtype=np.int64)
_NO_TF = np.zeros(0, dtype=np.float64)


@dataclass(frozen=True)
class Stages:
    """The ranking settings the maths needs (from a search ``Settings``), and the pipeline's
    constants for the rare-identifier switch."""

    pipeline: str
    fusion: str
    depth: int
    k: int
    min_score: float | None
    priors: Priors | None          # None: no priors (only a hybrid pipeline uses them)
    dense_weight: float | None     # set by the caller; None: chosen per query
    normal_weight: float
    identifier_weight: float
    rare_docs: int
    rare_share: float


@dataclass(frozen=True)
class Caller:
    """What one caller's ranking rests on: the fragments they see (the candidates and the
    statistics' basis), each position's BM25 length, authority over their visible graph, and
    the positions superseded for them (ascending; ``retired``: those only an archived superseder
    they see supersedes, which an edit of an active fragment does not change)."""

    mask: np.ndarray
    lengths: np.ndarray
    authority: np.ndarray
    superseded: np.ndarray
    retired: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


@dataclass(frozen=True)
class Query:
    """One query's cached state: its BM25 tokens in order (repeats kept), the code identifiers it
    names, each of those tokens' (positions, tf) over the whole index, the raw float32 cosine of
    every position with its vector, and the positions whose id the query names."""

    tokens: tuple[str, ...]
    identifiers: tuple[str, ...]
    postings: dict[str, tuple[np.ndarray, np.ndarray]]
    cosines: np.ndarray
    named: frozenset[int]


@dataclass(frozen=True)
class Edited:
    """The edited fragment as the next index will hold it: its position, term frequencies and its
    cosine with each query (by query key); its length and visibility are in the after ``Caller``."""

    position: int
    tf: dict[str, int]
    cosine: dict[str, float]


def holders(query: Query, token: str, mask: np.ndarray | None, edited: Edited | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
    """(positions, tf) of the documents in ``mask`` (all when None) holding ``token``, with the
    edited document's old postings replaced by its new ones."""
    docs, tf = query.postings.get(token, (_NO_DOCS, _NO_TF))
    if edited is not None:
        e = edited.position
        keep = docs != e
        docs, tf = docs[keep], tf[keep]
        count = edited.tf.get(token, 0)
        if count:
            docs = np.append(docs, np.int64(e))
            tf = np.append(tf, float(count))
    if mask is not None and docs.size:
        inside = mask[docs]
        docs, tf = docs[inside], tf[inside]
    return docs, tf


def lexical_scores(query: Query, caller: Caller, edited: Edited | None = None) -> np.ndarray:
    """BM25 of every position (float32; 0 outside the caller's mask), statistics over the mask."""
    mask = caller.mask
    n = int(np.count_nonzero(mask))
    total = int(caller.lengths[mask].sum()) if n else 0
    return accumulate(mask.size, (holders(query, t, mask, edited) for t in query.tokens), caller.lengths, n, total)


def rare_identifier(query: Query, caller: Caller, stages: Stages, edited: Edited | None = None) -> bool:
    """Whether the query names an identifier that only a few of the caller's documents hold."""
    limit = max(stages.rare_docs, int(stages.rare_share * int(np.count_nonzero(caller.mask))))
    return any(0 < holders(query, t, caller.mask, edited)[0].size <= limit for t in query.identifiers)


def demoted(query: Query, caller: Caller, edited: Edited | None = None) -> np.ndarray:
    """The superseded positions to demote: all but those the query names, by id or by a code
    identifier only that fragment holds among the caller's."""
    superseded = caller.superseded.tolist()
    if not superseded:
        return _NO_DOCS
    named = {i for i in superseded if i in query.named}
    rest = [i for i in superseded if i not in named]
    if rest and query.identifiers:
        unique = [t for t in query.identifiers if holders(query, t, caller.mask, edited)[0].size == 1]
        held: set[int] = set()
        for t in unique:
            held.update(holders(query, t, None, edited)[0].tolist())
        named |= {i for i in rest if i in held}
    return np.array(sorted(set(superseded) - named), dtype=np.int64)


def final(query: Query, caller: Caller, stages: Stages, fresh: np.ndarray, edited: Edited | None = None,
          key: str = "") -> np.ndarray:
    """The final score of every position for this query and caller (``edited``: as it would be
    after the edit, ``key`` naming the query in ``edited.cosine``); -inf for non-candidates."""
    mask = caller.mask
    n = mask.size
    lexical = np.full(n, -np.inf)
    dense = np.full(n, -np.inf)
    exact = False
    if stages.pipeline in ("hybrid", "bm25"):
        raw = lexical_scores(query, caller, edited).astype(np.float64)
        lexical = np.where(mask & (raw > 0), raw, -np.inf)
        exact = rare_identifier(query, caller, stages, edited)
    if stages.pipeline in ("hybrid", "dense"):
        cosines = query.cosines
        if edited is not None:
            cosines = cosines.copy()
            cosines[edited.position] = edited.cosine[key]
        dense = np.where(mask, cosines.astype(np.float64), -np.inf)
    weight = stages.dense_weight if stages.dense_weight is not None else \
        stages.identifier_weight if exact else stages.normal_weight
    priors = stages.priors if n else None
    _, scores = final_scores(lexical, dense, pipeline=stages.pipeline, fusion_name=stages.fusion,
                             depth=stages.depth, dense_weight=weight, min_score=stages.min_score, fresh=fresh,
                             authority=caller.authority, priors=priors,
                             demoted=demoted(query, caller, edited) if n else _NO_DOCS)
    return scores


def order(scores: np.ndarray, stages: Stages) -> np.ndarray:
    """The ranked positions, best first, to the depth search ranks (ties by position)."""
    return top_k(scores, max(stages.depth, stages.k * 3))


def rank_of(ranked: np.ndarray, position: int, k: int) -> int | None:
    """1-based rank of ``position`` within the first ``k`` of ``ranked``, else None."""
    hits = np.flatnonzero(ranked[:k] == position)
    return int(hits[0]) + 1 if hits.size else None
