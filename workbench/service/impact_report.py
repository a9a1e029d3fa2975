"""The result of ``Workbench.edit_impact``: which golden queries an edit would change.

Typed values with the documented JSON (``to_dict``) and notebook renderings. They name only what
their reader may see: a golden query whose asker the reader may not see is only counted
(``hidden_queries``), and a fragment the reader may not see is ``None`` in a top-3 list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..retrieval.results import _md, _md_code, _table_md

TOP = 3  # the ranks whose change a report flags; a first relevant hit must stay within them


@dataclass(frozen=True)
class QueryImpact:
    """One golden query that touches the edited fragment (it is in the query's top k before the
    edit, or would be after). Ranks are 1-based within the top k, None outside it."""

    query_id: str
    query: str
    principal: str
    rank_before: int | None
    rank_after: int | None
    top_before: tuple[str | None, ...]      # top 3 ids (None: a fragment the reader may not see)
    top_after: tuple[str | None, ...]
    top3_changed: bool
    first_relevant_before: int | None       # rank of the query's first relevant fragment in the top k
    first_relevant_after: int | None
    recall_before: float | None             # recall@k of the query's relevant fragments (None: a negative query)
    recall_after: float | None

    @property
    def breaks(self) -> bool:
        """The edit loses this query's answer: recall@k drops, or its first relevant hit leaves the top 3."""
        before, after = self.first_relevant_before, self.first_relevant_after
        lost_top = before is not None and before <= TOP and (after is None or after > TOP)
        return lost_top or (self.recall_before or 0.0) > (self.recall_after or 0.0)

    @property
    def changed(self) -> bool:
        """Its top 3 changes, or its answer is lost."""
        return self.top3_changed or self.breaks

    def move(self, k: int | None = None) -> str:
        """The edited fragment's rank before → after ("#1 → out of top 10")."""
        def at(rank: int | None) -> str:
            return f"#{rank}" if rank is not None else f"out of top {k}" if k else "—"
        return f"{at(self.rank_before)} → {at(self.rank_after)}"

    def to_dict(self) -> dict[str, Any]:
        return {"query_id": self.query_id, "query": self.query, "principal": self.principal,
                "rank_before": self.rank_before, "rank_after": self.rank_after,
                "top_before": list(self.top_before), "top_after": list(self.top_after),
                "top3_changed": self.top3_changed, "first_relevant_before": self.first_relevant_before,
                "first_relevant_after": self.first_relevant_after, "recall_before": self.recall_before,
                "recall_after": self.recall_after, "breaks": self.breaks, "changed": self.changed}


@dataclass(frozen=True)
class ImpactReport:
    """What an edit of ``fragment_id`` does to the golden queries that touch it."""

    fragment_id: str
    golden: str | None                       # the golden file used (None: none found)
    k: int
    considered: int = 0                      # golden queries whose asker sees the fragment (before or after)
    queries: tuple[QueryImpact, ...] = ()    # the touching queries the reader may see
    hidden_queries: int = 0                  # touching queries the reader may not see (counted only)
    hidden_changed: int = 0                  # of those, the ones that change
    note: str | None = None
    generation: int | None = None            # the index generation ranked against
    timings_ms: dict[str, float] = field(default_factory=dict)

    @property
    def changed(self) -> list[QueryImpact]:
        return [q for q in self.queries if q.changed]

    @property
    def breaks(self) -> list[QueryImpact]:
        return [q for q in self.queries if q.breaks]

    def to_dict(self) -> dict[str, Any]:
        return {"fragment_id": self.fragment_id, "golden": self.golden, "k": self.k, "considered": self.considered,
                "touched": [q.to_dict() for q in self.queries], "hidden_queries": self.hidden_queries,
                "changed": len(self.changed) + self.hidden_changed, "breaks": len(self.breaks),
                "note": self.note, "generation": self.generation,
                "ms": {key: round(value, 2) for key, value in self.timings_ms.items()}}

    def summary(self) -> str:
        """One line: how many golden queries the edit touches and changes."""
        if self.note and not self.queries and not self.hidden_queries:
            return f"impact: {self.note}"
        touched = len(self.queries) + self.hidden_queries
        changed = len(self.changed) + self.hidden_changed
        line = (f"impact: {touched} of {self.considered} golden queries touch {self.fragment_id}; "
                f"{changed} would change" + (f", {len(self.breaks)} would lose their answer" if self.breaks else ""))
        return line + (f" ({self.hidden_queries} not shown to you)" if self.hidden_queries else "")

    def lines(self) -> list[str]:
        """The summary, then one line per changed query (what the CLI prints)."""
        out = [self.summary()]
        for q in self.changed:
            flag = "LOSES ITS ANSWER" if q.breaks else "top 3 changes"
            out.append(f"  {q.query_id} ({q.principal}): {self.fragment_id} {q.move(self.k)}; {flag}: {q.query}")
        return out

    def __repr__(self) -> str:
        return (f"<ImpactReport {self.fragment_id}: {len(self.queries) + self.hidden_queries} touched, "
                f"{len(self.changed) + self.hidden_changed} changed>")

    def _repr_markdown_(self) -> str:
        out = f"edit impact on **{_md(self.fragment_id)}** — {_md(self.summary())}"
        if self.queries:
            shown = lambda ids: ", ".join("(hidden)" if i is None else i for i in ids)  # noqa: E731
            out += "\n\n" + _table_md(
                ["query", "principal", "rank before → after", "top 3 before", "top 3 after", "changes"],
                [[f"{q.query_id}: {q.query}", q.principal, q.move(self.k), shown(q.top_before), shown(q.top_after),
                  "loses its answer" if q.breaks else "top 3" if q.top3_changed else ""] for q in self.queries])
        if self.golden:
            out += f"\n\ngolden set {_md_code(self.golden)}"
        return out


@dataclass(frozen=True)
class SavedEdit:
    """An edit saved with its impact, computed just before the save (``edit_with_impact``)."""

    fragment: Any           # the Fragment as saved
    impact: ImpactReport

    def to_dict(self) -> dict[str, Any]:
        """The fragment's JSON (as ``edit`` prints it) with the impact under ``"impact"``."""
        return {**self.fragment.to_dict(), "impact": self.impact.to_dict()}

    def __repr__(self) -> str:
        return f"<SavedEdit {self.fragment.id} v{self.fragment.version}: {self.impact!r}>"
