"""What a search or context call records of each hit it served (the trace's items), and the
small checks and shapes search.py shares with the faces."""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from ..retrieval import index as search_index
from ..retrieval.pipeline import Hit, Ranking, superseded_dict
from .archives import provenance

def _confidence(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise UserError(f"the minimum confidence must be a number from 0 to 1, not {value!r}", param="min_confidence")
    return float(value)


def _served(hit: Hit, section: str, text: str | None = None, tokens: int | None = None,
            query: str | None = None) -> dict[str, Any]:
    item = {"id": hit.id, "version": hit.fragment.version, "title": hit.fragment.title, "section": section,
            "rank": hit.rank, "score": round(hit.score, 6),
            "confidence": None if hit.confidence is None else round(hit.confidence, 4),
            "scores": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in hit.scores.items()}}
    if hit.superseded_by:
        item["superseded_by"] = superseded_dict(hit.superseded_by)
    if hit.reason:
        item["reason"] = hit.reason
    if hit.via:
        item["via"] = hit.via
    if text is not None:
        item.update({"text": text, "tokens": tokens})
    item.update(provenance(hit.fragment, query, text))
    return item


def _pin_hit(index: search_index.SearchIndex, ranking: Ranking, i: int, confidence: float | None,
             calibrate: bool) -> Hit:
    from ..retrieval.pipeline import _hit

    from dataclasses import replace

    hit = _hit(index, ranking, i, 0, confidence=confidence, calibrate=calibrate)
    return replace(hit, scores={**hit.scores, "pinned": True}, rank=0)
