"""Gaps: questions agents asked that got nothing useful, grouped by meaning.

A traced call is a gap when it abstained (a context call that served nothing but pins: recorded
as ``abstained`` in its settings since the gap report exists, inferred from what it served for
older traces; a search that served nothing) or when every fragment it served, pins aside, had a
calibrated confidence below the floor (the one the call recorded, else the workspace's).
A call given only the work's paths (context or search ``--paths``/``--diff``, no query) asks
"paths: a, b" (``question``). Near-identical questions are grouped (``rank.clusters``) and each
group is reported with its count, principals, scopes, first and last time asked and a few example
questions.

Pure: the caller passes light trace rows (``Store.gap_candidates``), already filtered by policy,
and the query vectors; no store and no model here. Who may see which call is policy.py's.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

import numpy as np

from ..rank.clusters import SAME_QUESTION, leader_clusters
from ..retrieval.results import _md, _table_md

ABSTAINED, LOW_CONFIDENCE = "abstained", "low confidence"
# The line a gap's draft ends with: a draft holding it is not written yet, and is never published
# (accepted) or created as a fragment while it does (service/proposals.py, service/curation.py).
PLACEHOLDER = "Write the answer here (and remove this note)."
EXAMPLES = 3
PATHS_SHOWN = 5     # of a paths-only call's paths, named in its question


@dataclass(frozen=True)
class Gap:
    """One traced call that got nothing useful."""

    trace_id: str
    at: datetime
    kind: str
    query: str
    principal: str
    scope: str | None         # the scope the call named
    scopes: tuple[str, ...]   # where it was asked: its scope, else its caller's orgs
    reason: str               # ABSTAINED or LOW_CONFIDENCE

    def call(self) -> dict[str, Any]:
        """The call as policy.py's read-gap rule reads it."""
        return {"id": self.trace_id, "principal": self.principal, "scope": self.scope}


def gap_reason(row: dict[str, Any], floor: float) -> str | None:
    """Why a traced call (a ``Store.gap_candidates`` row) is a gap, or None when it is not.
    ``floor`` is the workspace's confidence floor, for calls that recorded none."""
    if row["kind"] not in ("search", "context"):
        return None
    unpinned = [confidence for pinned, confidence in row["served"] if not pinned]
    if row["kind"] == "context" and row.get("abstained") is not None:   # recorded by the call itself
        if row["abstained"]:
            return ABSTAINED
    elif not unpinned:   # a search that found nothing; an older context trace that served only pins
        return ABSTAINED
    limit = row["min_confidence"] if row.get("min_confidence") is not None else floor
    if unpinned and all(c is not None and c < limit for c in unpinned):
        return LOW_CONFIDENCE
    return None


def question(row: dict[str, Any]) -> str:
    """What a traced call asked, as the gap report shows it: its query, and for context or search given
    only the work's paths (no query), "paths: a, b" (the paths are the question)."""
    if (row.get("query") or "").strip() or not row.get("paths"):
        return row.get("query") or ""
    shown = row["paths"][:PATHS_SHOWN]
    more = len(row["paths"]) - len(shown)
    return "paths: " + ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def still_placeholder(body: str) -> bool:
    """Whether a body still holds a gap draft's placeholder line (its answer is not written)."""
    return PLACEHOLDER in body


def same_text(query: str) -> str:
    """The key under which two askings are the same text: case and spacing ignored."""
    return re.sub(r"\s+", " ", query.strip().casefold())


def _iso(ts: datetime) -> str:
    return ts.replace(microsecond=0).isoformat() + "Z"


@dataclass(frozen=True)
class GapGroup:
    """Near-identical questions that got nothing useful."""

    count: int                                # calls
    principals: tuple[tuple[str, int], ...]   # (name, calls), most first
    scopes: tuple[tuple[str, int], ...]       # (scope, calls), most first
    first_seen: datetime
    last_seen: datetime
    examples: tuple[str, ...]                 # up to EXAMPLES distinct questions, most asked first
    reasons: tuple[tuple[str, int], ...]      # (ABSTAINED | LOW_CONFIDENCE, calls)
    kinds: tuple[tuple[str, int], ...]        # (search | context, calls)

    @property
    def question(self) -> str:
        """The group's most asked question."""
        return self.examples[0]

    @property
    def scope(self) -> str:
        """Where it was asked most (the scope a fragment answering it belongs in)."""
        return self.scopes[0][0] if self.scopes else ""

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "count": self.count,
                "principals": [{"name": n, "count": c} for n, c in self.principals],
                "scopes": [{"scope": s, "count": c} for s, c in self.scopes],
                "first_seen": _iso(self.first_seen), "last_seen": _iso(self.last_seen),
                "examples": list(self.examples), "reasons": dict(self.reasons), "kinds": dict(self.kinds)}


@dataclass(frozen=True)
class GapReport:
    """``Workbench.gaps``: the groups of unanswered questions one principal may see, most asked first."""

    days: int
    since: datetime
    until: datetime
    principal: str | None        # whose view; None: the local administrator (every call)
    scope: str | None            # --scope: only calls made within it
    groups: tuple[GapGroup, ...] = field(default=())
    similarity: float = SAME_QUESTION

    @property
    def questions(self) -> int:
        return sum(g.count for g in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {"days": self.days, "since": _iso(self.since), "until": _iso(self.until),
                "principal": self.principal, "scope": self.scope, "similarity": self.similarity,
                "questions": self.questions, "groups": [g.to_dict() for g in self.groups]}

    def __repr__(self) -> str:
        return (f"<GapReport {self.days} days as {self.principal or 'administrator'}: {self.questions} "
                f"unanswered question(s) in {len(self.groups)} group(s)>")

    def rows(self) -> list[list[str]]:
        """One row per group: count, asked by, scopes, last seen, question (the text the faces show)."""
        return [[str(g.count), ", ".join(f"{n} ({c})" for n, c in g.principals),
                 ", ".join(s for s, _ in g.scopes), g.last_seen.strftime("%Y-%m-%d"), g.question]
                for g in self.groups]

    HEADERS = ("count", "asked by", "scopes", "last seen", "question")

    def _repr_markdown_(self) -> str:
        head = (f"**{self.questions}** unanswered question(s) in **{len(self.groups)}** group(s), "
                f"last {self.days} days, as {_md(self.principal or 'administrator')}")
        if self.scope:
            head += f", within {_md(self.scope)}"
        return head + "\n\n" + _table_md(list(self.HEADERS), self.rows())


def group_gaps(gaps: list[Gap], encode: Callable[[list[str]], np.ndarray],
               threshold: float = SAME_QUESTION) -> list[GapGroup]:
    """Group gaps whose questions mean the same (``encode`` gives L2-normalised vectors of texts),
    most asked first (then most recent, then the question)."""
    if not gaps:
        return []
    by_text: dict[str, list[Gap]] = {}
    for gap in sorted(gaps, key=lambda g: (g.at, g.trace_id)):
        by_text.setdefault(same_text(gap.query), []).append(gap)
    keys = list(by_text)
    vectors = encode([by_text[k][0].query for k in keys])
    clusters = leader_clusters(vectors, threshold, weights=[len(by_text[k]) for k in keys])
    groups = [_group([by_text[keys[i]] for i in members]) for members in clusters]
    return sorted(groups, key=lambda g: (-g.count, -g.last_seen.timestamp(), g.question))


def _most(counter: Counter) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def _group(askings: list[list[Gap]]) -> GapGroup:
    """A group from its texts' askings (the leader's first): examples are its most asked texts."""
    every = [g for texts in askings for g in texts]
    ranked = sorted(askings, key=lambda texts: -len(texts))   # stable: the leader first among equals
    return GapGroup(count=len(every), principals=_most(Counter(g.principal for g in every)),
                    scopes=_most(Counter(s for g in every for s in g.scopes)),
                    first_seen=min(g.at for g in every), last_seen=max(g.at for g in every),
                    examples=tuple(texts[0].query for texts in ranked[:EXAMPLES]),
                    reasons=_most(Counter(g.reason for g in every)), kinds=_most(Counter(g.kind for g in every)))


def digest_section(groups: list[GapGroup] | tuple[GapGroup, ...], *, days: int) -> list[str]:
    """The digest's "Questions we could not answer" section (markdown lines), for a scope lead."""
    if not groups:
        return []
    asked = sum(g.count for g in groups)
    lines = ["## Questions we could not answer", "",
             f"{asked} question(s) in the last {days} days in scopes you lead got nothing useful "
             f"({len(groups)} group(s), most asked first). A fragment that answers one closes the gap:",
             "write it (the TUI's Gaps screen drafts one) or `workbench gaps --as YOU` for the full report.", ""]
    for g in groups:
        who = ", ".join(f"{n} ({c})" for n, c in g.principals)
        where = ", ".join(scope for scope, _ in g.scopes) or "-"
        lines.append(f"- **{_md(g.question)}** — asked {g.count} time(s) by {_md(who)} in {_md(where)}, "
                     f"last {g.last_seen:%Y-%m-%d}")
        for other in g.examples[1:]:
            lines.append(f"  - also: {_md(other)}")
    lines.append("")
    return lines
