"""A ranked hit as every face receives it (``Hit``), and the small dict helpers its ``to_dict`` uses
(``source_of``, ``superseded_dict``). Kept apart from pipeline.py, which re-exports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..models import Fragment

@dataclass(frozen=True)
class Hit:
    """One ranked fragment with its score breakdown (``reason``: why context for the work at hand chose it)."""

    fragment: Fragment
    score: float
    scores: dict[str, Any]
    rank: int
    confidence: float | None = 0.0               # None: not calibrated (a lexical preview, see hits_from)
    superseded_by: tuple | None = None   # (id, version[, "archived"]) of the superseder the caller sees
    reason: str | None = None
    via: str | None = None               # ORG/CONTEXT: received through a subscription (service/receipts.py)

    @property
    def id(self) -> str:
        return self.fragment.id

    def to_dict(self) -> dict[str, Any]:
        f = self.fragment
        data = f.to_dict()
        return {"id": f.id, "version": f.version, "title": f.title, "kind": f.kind, "rank": self.rank,
                "score": round(self.score, 6),
                "confidence": None if self.confidence is None else round(self.confidence, 4),
                "scores": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.scores.items()},
                "scope": f.scope.to_dict(), "owner": f.owner, "source": source_of(f),
                "updated_at": data["updated_at"], "text": f.body,
                "superseded_by": superseded_dict(self.superseded_by),
                **({"reason": self.reason} if self.reason else {}), **({"via": self.via} if self.via else {}),
                **({"archived": True} if f.status == "archived" else {})}

    def superseded_label(self) -> str | None:
        """"superseded by ID@vN" ("... (archived)" when the superseder is archived), or None."""
        if not self.superseded_by:
            return None
        archived = " (archived)" if len(self.superseded_by) > 2 else ""
        return f"superseded by {self.superseded_by[0]}@v{self.superseded_by[1]}{archived}"

    def __repr__(self) -> str:
        return f"<Hit #{self.rank} {self.id} {self.score:.3f}>"


def source_of(f: Fragment) -> dict[str, Any] | None:
    return f.sources[0].to_dict() if f.sources else None


def superseded_dict(pair: tuple | None) -> dict[str, Any] | None:
    """{id, version} of a superseder (with ``archived: true`` for an archived one), or None."""
    if not pair:
        return None
    return {"id": pair[0], "version": pair[1], **({"archived": True} if len(pair) > 2 else {})}
