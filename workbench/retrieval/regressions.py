"""Knowledge CI: what changed in the golden queries' answers since the baseline.

``snapshot`` turns one run of the golden set into per-query entries (the baseline file holds the
same entries: retrieval/baseline.py); ``compare`` reads two of them and reports:

- a **regression**: a query whose answer got worse. By rank: fewer relevant fragments in the top
  1, 3 or 10 than at the baseline (recall@10 dropped, or the first relevant hit fell from #1 to
  #3, or out of the top 3); by content (retrieval/answers.py): a relevant fragment deleted,
  archived, out of the asker's scope, rewritten into something else or no longer served, or the
  query starting or stopping to abstain. Each names the fragments involved and their owners;
- a **broken assertion**: a query whose own ``must_rank``, ``must_contain`` or ``expect`` fails
  (retrieval/golden_rules.py), compared or not: it is a regression too, and it still fails a run
  that writes the baseline;
- a **warning**: any other query whose top 3 changed;
- queries **new** since the baseline (added, or their text, principal or judgements changed:
  not compared) and queries **removed** from the golden set.

What a caller may see is decided by the service and given here as predicates: a query not
shown is only counted, a fragment not shown is only counted (or a ``None`` in a top-3 list), so
nothing in a report names what its reader may not see. This module ranks nothing and reads no file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError
from ..rank.metrics import recall_at
from . import answers
from .results import _md, _md_code, _table_md

TOP = 3               # a first relevant hit must stay within the top 3
TIERS = (1, 3, 10)    # the relevant fragments within each of these tops may not become fewer


# -- the per-query snapshot ------------------------------------------------------------------------

def query_id(q: Mapping[str, Any], i: int) -> str:
    return str(q.get("id", i))


def snapshot(queries: Sequence[Mapping[str, Any]], rankings: Mapping[Any, Sequence[str]], k: int,
             served: Mapping[Any, Sequence[str]]) -> list[dict[str, Any]]:
    """One entry per golden query from its full ranking and the ids context served for it (both
    keyed as ``run_golden`` keys them). ``abstained``: context served nothing."""
    out = []
    for i, q in enumerate(queries):
        key = q.get("id", str(i))
        ranked = list(rankings[key])
        relevant = [str(r) for r in q["relevant"]]
        position = {fid: n for n, fid in enumerate(ranked, start=1)}
        ranks = {fid: position.get(fid) for fid in relevant}
        found = [r for r in ranks.values() if r is not None]
        out.append({"id": query_id(q, i), "query": str(q["query"]), "principal": str(q["principal"]),
                    "relevant": relevant, "top": ranked[:k],
                    "recall@10": round(recall_at(ranked, dict.fromkeys(relevant, 1.0), 10), 4) if relevant else None,
                    "first_relevant": min(found) if found else None, "relevant_ranks": ranks,
                    "abstained": not served[key], "served": list(served[key])})
    return out


def unique_ids(queries: Sequence[Mapping[str, Any]], golden: str) -> None:
    seen: set[str] = set()
    for i, q in enumerate(queries):
        qid = query_id(q, i)
        if qid in seen:
            raise UserError(f"{golden}: queries.{i}: duplicate query id {qid!r} (check needs one id per query)",
                            param="golden")
        seen.add(qid)


# -- the report ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Move:
    """A fragment involved in a regression. By rank: a relevant one ``lost`` (out of the top 10) or
    ``demoted``, or another one that ``entered`` the top 3. By content (retrieval/answers.py): a
    relevant one ``deleted``, ``archived``, ``out of scope`` for the asker, ``rewritten`` (``detail``
    says how much is left) or ``not served``, or one ``served`` by a query that stopped abstaining.
    ``relevant``: a relevant fragment of a query whose assertion fails. Ranks are 1-based; None: not
    in the top 100 (``before`` of one that entered: not in the baseline's top k)."""

    id: str
    owner: str | None
    change: str
    before: int | None
    after: int | None
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "owner": self.owner, "change": self.change, "before": self.before,
                "after": self.after, "detail": self.detail}


@dataclass(frozen=True)
class Regression:
    id: str
    query: str
    principal: str
    reasons: tuple[str, ...]
    recall_before: float | None
    recall_after: float | None
    first_before: int | None
    first_after: int | None
    moved: tuple[Move, ...]
    hidden_moves: int = 0     # moves of fragments the reader may not see: counted, never named
    failed: tuple[str, ...] = ()   # the query's own assertions that fail (golden_rules.failures)
    compared: bool = True     # False: new since the baseline, failing its assertions only

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "query": self.query, "principal": self.principal, "reasons": list(self.reasons),
                "failed": list(self.failed), "compared": self.compared,
                "recall@10": {"before": self.recall_before, "after": self.recall_after},
                "first_relevant": {"before": self.first_before, "after": self.first_after},
                "moved": [m.to_dict() for m in self.moved], "hidden_moves": self.hidden_moves}


@dataclass(frozen=True)
class Top3Change:
    """A query whose top 3 changed without a regression (a warning). ``None``: a fragment the reader may not see."""

    id: str
    query: str
    before: tuple[str | None, ...]
    after: tuple[str | None, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "query": self.query, "before": list(self.before), "after": list(self.after)}


@dataclass
class CheckReport:
    """What ``Workbench.check`` found. ``passed``: no regression (hidden ones count too); the CLI exits
    0 when it passed or the baseline was just written (unless a query fails its own assertions), else 1."""

    golden: str
    baseline: str
    updated: bool                      # the baseline was (re)written by this run
    queries: int                       # queries in the golden set
    compared: int                      # queries in both the golden set and the baseline
    regressions: list[Regression] = field(default_factory=list)
    warnings: list[Top3Change] = field(default_factory=list)
    new: list[str] = field(default_factory=list)       # ids of queries added or changed since the baseline
    removed: list[str] = field(default_factory=list)   # ids of baseline queries no longer in the golden set
    hidden: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("regressions", "failed", "warnings",
                                                                          "new", "removed"), 0))
    metrics_before: dict[str, Any] | None = None
    metrics_after: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)     # checks this run could not make, and why

    @property
    def passed(self) -> bool:
        return not self.regressions and not self.hidden["regressions"]

    @property
    def failed(self) -> int:
        """Queries (shown or hidden) whose own assertions fail: no baseline accepts those."""
        return sum(1 for r in self.regressions if r.failed) + self.hidden["failed"]

    @property
    def exit_code(self) -> int:
        return 0 if self.passed or (self.updated and not self.failed) else 1

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "updated": self.updated, "golden": self.golden, "baseline": self.baseline,
                "queries": self.queries, "compared": self.compared, "failed": self.failed,
                "regressions": [r.to_dict() for r in self.regressions],
                "warnings": [w.to_dict() for w in self.warnings], "new": self.new, "removed": self.removed,
                "hidden": dict(self.hidden), "notes": list(self.notes),
                "metrics": {"before": self.metrics_before, "after": self.metrics_after}}

    def __repr__(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        hidden = self.hidden["regressions"]
        return (f"<CheckReport {verdict}: {len(self.regressions) + hidden} regressions"
                + (f" ({hidden} hidden)" if hidden else "")
                + f", {len(self.warnings)} top-3 changes, {len(self.new)} new, {len(self.removed)} removed, "
                  f"{self.compared} compared{', baseline updated' if self.updated else ''}>")

    def _repr_markdown_(self) -> str:
        verdict = "**passed**" if self.passed else "**FAILED**"
        out = [f"check {verdict}: {self.compared} queries compared with {_md_code(self.baseline)}"
               + (" (baseline updated)" if self.updated else "")]
        if self.regressions:
            rows = [[r.id, r.query, "; ".join((*r.failed, *r.reasons)),
                     ", ".join(f"{m.id} ({m.change}, owner {m.owner})" for m in r.moved)
                     + (f" +{r.hidden_moves} hidden" if r.hidden_moves else "")] for r in self.regressions]
            out.append(_table_md(["query", "text", "why", "moved"], rows))
        if self.warnings:
            rows = [[w.id, w.query, ", ".join(x or "(hidden)" for x in w.before),
                     ", ".join(x or "(hidden)" for x in w.after)] for w in self.warnings]
            out.append("top 3 changed (warnings)\n\n" + _table_md(["query", "text", "before", "after"], rows))
        notes = [f"{n} {what}" for what, n in (("new", len(self.new)), ("removed", len(self.removed))) if n]
        notes += [f"{n} {what} hidden" for what, n in self.hidden.items() if n]
        if notes:
            out.append(_md(", ".join(notes)))
        out += [_md(note) for note in self.notes]
        return "\n\n".join(out)


def _worse(before: int | None, after: int | None) -> bool:
    return (after or math.inf) > (before or math.inf)


@dataclass(frozen=True)
class Readers:
    """What the report's reader may see (``shows_query(principal)``, ``shows_fragment(id)``) and who
    owns a fragment (``owner_of(id)``, None when unknown)."""

    shows_query: Callable[[str], bool]
    shows_fragment: Callable[[str], bool]
    owner_of: Callable[[str], str | None]


def compare(baseline: dict[str, Any] | None, current: list[dict[str, Any]], metrics: dict[str, Any], *,
            golden: str, baseline_path: str, updated: bool, readers: Readers, now: answers.Now,
            failed: Mapping[str, Sequence[str]] | None = None) -> CheckReport:
    """Compare the current snapshot with a baseline (None: there was none, so nothing is new or
    compared: the run only writes the first one). ``now``: what the store holds of the fragments
    named; ``failed``: query id → its assertions that fail (golden_rules.failures)."""
    report = CheckReport(golden=golden, baseline=baseline_path, updated=updated, queries=len(current), compared=0,
                         metrics_before=baseline["metrics"] if baseline else None, metrics_after=metrics)
    before = {q["id"]: q for q in baseline["queries"]} if baseline else {}
    records = baseline.get("fragments", {}) if baseline else {}
    failed = failed or {}
    ids = {q["id"] for q in current}
    if baseline is not None and baseline["version"] < 2:
        report.notes.append(f"the baseline is of format {baseline['version']}: deleted, archived and rewritten "
                            "answers and abstention are checked from the next `check --update-baseline` on")

    def count_or(name: str, shown: bool, item: Any, target: list) -> None:
        if shown:
            target.append(item)
        else:
            report.hidden[name] += 1
            if name == "regressions" and item.failed:
                report.hidden["failed"] += 1

    for q in current:
        old = before.get(q["id"])
        shown = readers.shows_query(q["principal"])
        fails = tuple(failed.get(q["id"], ()))
        if old is None or any(old[key] != q[key] for key in ("query", "principal", "relevant")):
            if baseline is not None:  # a first baseline has nothing to be new against
                count_or("new", shown, q["id"], report.new)
            if fails:
                count_or("regressions", shown, _failing(q, fails, readers), report.regressions)
            continue
        report.compared += 1
        regression = _regression(old, q, records, now, readers, fails)
        if regression is not None:
            count_or("regressions", shown, regression, report.regressions)
        elif old["top"][:TOP] != q["top"][:TOP]:
            change = Top3Change(q["id"], q["query"], *(tuple(x if readers.shows_fragment(x) else None
                                                             for x in top[:TOP]) for top in (old["top"], q["top"])))
            count_or("warnings", shown, change, report.warnings)
    for qid, old in before.items():
        if qid not in ids:
            count_or("removed", readers.shows_query(old["principal"]), qid, report.removed)
    return report


def _in_top(q: dict[str, Any], n: int) -> int:
    return sum(1 for r in q["relevant_ranks"].values() if r is not None and r <= n)


def _rank_reasons(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    reasons = []
    if old["recall@10"] is not None and new["recall@10"] is not None and new["recall@10"] < old["recall@10"]:
        reasons.append(f"recall@10 {old['recall@10']:.2f} → {new['recall@10']:.2f}")
    first_before, first_after = old["first_relevant"], new["first_relevant"]
    fell = [n for n in TIERS[:-1] if first_before is not None and first_before <= n
            and (first_after is None or first_after > n)]
    if fell:
        reasons.append(f"first relevant hit #{first_before} → {_rank(first_after)}")
    else:
        fewer = [n for n in TIERS[:-1] if _in_top(new, n) < _in_top(old, n)]
        if fewer:
            n = fewer[0]
            reasons.append(f"relevant fragments in the top {n}: {_in_top(old, n)} → {_in_top(new, n)}")
    return reasons


def _regression(old: dict[str, Any], new: dict[str, Any], records: Mapping[str, Any], now: answers.Now,
                readers: Readers, failed: tuple[str, ...]) -> Regression | None:
    reasons = _rank_reasons(old, new)
    content, changes = answers.changes(old, new, records, now)
    reasons += content
    if not reasons and not failed:
        return None
    moves = [Move(c.id, None, c.change, c.before, c.after, c.detail) for c in changes]
    for fid in new["relevant"]:
        b, a = old["relevant_ranks"].get(fid), new["relevant_ranks"].get(fid)
        if _worse(b, a):
            lost = (b is not None and b <= 10) and (a is None or a > 10)
            moves.append(Move(fid, None, "lost" if lost else "demoted", b, a))
    relevant = set(new["relevant"])
    for n, fid in enumerate(new["top"][:TOP], start=1):
        if fid not in relevant and fid not in old["top"][:TOP]:
            b = old["top"].index(fid) + 1 if fid in old["top"] else None
            moves.append(Move(fid, None, "entered", b, n))
    if failed:
        moves += _involved(new, old)
    shown, hidden = _named(_merged(moves), readers)
    return Regression(new["id"], new["query"], new["principal"], tuple(reasons), old["recall@10"],
                      new["recall@10"], old["first_relevant"], new["first_relevant"], shown, hidden, failed)


def _failing(q: dict[str, Any], failed: tuple[str, ...], readers: Readers) -> Regression:
    """A query new since the baseline (or with none) whose own assertions fail: its relevant
    fragments are named, with their ranks now."""
    shown, hidden = _named(_involved(q), readers)
    return Regression(q["id"], q["query"], q["principal"], (), None, q["recall@10"], None, q["first_relevant"],
                      shown, hidden, failed, compared=False)


def _involved(q: dict[str, Any], old: dict[str, Any] | None = None) -> list[Move]:
    """The fragments a failing assertion involves: the relevant ones (their ranks), or for a query
    with none (expect: abstain), what context served."""
    if q["relevant"]:
        return [Move(fid, None, "relevant", old["relevant_ranks"].get(fid) if old else None,
                     q["relevant_ranks"].get(fid)) for fid in q["relevant"]]
    position = {fid: n for n, fid in enumerate(q["top"], start=1)}
    return [Move(fid, None, "served", None, position.get(fid)) for fid in q["served"]]


def _merged(moves: list[Move]) -> list[Move]:
    """One move per fragment: its first (most telling) change, with a later content change added
    to its detail (rank changes show in its ranks already)."""
    out: dict[str, Move] = {}
    for m in moves:
        first = out.get(m.id)
        if first is None:
            out[m.id] = m
        elif m.change == "not served":
            detail = "; ".join(filter(None, (first.detail, "no longer served")))
            out[m.id] = Move(first.id, first.owner, first.change, first.before, first.after, detail)
    return list(out.values())


def _named(moves: list[Move], readers: Readers) -> tuple[tuple[Move, ...], int]:
    shown = tuple(Move(m.id, readers.owner_of(m.id), m.change, m.before, m.after, m.detail)
                  for m in moves if readers.shows_fragment(m.id))
    return shown, len(moves) - len(shown)


def _rank(rank: int | None) -> str:
    return "none in the top 100" if rank is None else f"#{rank}"
