"""Knowledge CI: the golden queries' rankings kept as a baseline file, and what changed since.

A baseline holds, per golden query, its top-k ids, recall@10 and the rank of its first relevant
hit (and of every relevant fragment, up to the ranking depth of 100), plus the overall metrics
and the clock the queries were ranked at. ``compare`` reads two such snapshots and reports:

- a **regression**: a query whose recall@10 dropped, or whose first relevant hit was in the
  top 3 and no longer is; with the fragments that moved (relevant ones lost or demoted, others
  entering the top 3) and their owners;
- a **warning**: any other query whose top 3 changed;
- queries **new** since the baseline (added, or their text, principal or judgements changed:
  not compared) and queries **removed** from the golden set.

What a caller may see is decided by the service and given here as two predicates: a query not
shown is only counted, a fragment not shown is only counted (or a ``None`` in a top-3 list), so
nothing in a report names what its reader may not see. This module reads and writes the baseline
file (atomically) and ranks nothing.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..errors import UserError
from ..rank.metrics import recall_at
from .results import _md, _md_code, _table_md

FORMAT = "workbench-check-baseline"
VERSION = 1
TOP = 3  # a first relevant hit must stay within the top 3
UPDATE_HINT = "run `workbench check --update-baseline` first"
MAX_BYTES = 64 * 1024 ** 2  # a baseline of 100,000 queries is about 40 MB


# -- the per-query snapshot ------------------------------------------------------------------------

def query_id(q: Mapping[str, Any], i: int) -> str:
    return str(q.get("id", i))


def snapshot(queries: Sequence[Mapping[str, Any]], rankings: Mapping[Any, Sequence[str]], k: int
             ) -> list[dict[str, Any]]:
    """One entry per golden query from its full ranking (``run_golden``'s, keyed as it keys them)."""
    out = []
    for i, q in enumerate(queries):
        ranked = list(rankings[q.get("id", str(i))])
        relevant = [str(r) for r in q["relevant"]]
        position = {fid: n for n, fid in enumerate(ranked, start=1)}
        ranks = {fid: position.get(fid) for fid in relevant}
        found = [r for r in ranks.values() if r is not None]
        out.append({"id": query_id(q, i), "query": str(q["query"]), "principal": str(q["principal"]),
                    "relevant": relevant, "top": ranked[:k],
                    "recall@10": round(recall_at(ranked, dict.fromkeys(relevant, 1.0), 10), 4) if relevant else None,
                    "first_relevant": min(found) if found else None, "relevant_ranks": ranks})
    return out


def unique_ids(queries: Sequence[Mapping[str, Any]], golden: str) -> None:
    seen: set[str] = set()
    for i, q in enumerate(queries):
        qid = query_id(q, i)
        if qid in seen:
            raise UserError(f"{golden}: queries.{i}: duplicate query id {qid!r} (check needs one id per query)",
                            param="golden")
        seen.add(qid)


# -- the baseline file -------------------------------------------------------------------------------

def baseline_data(entries: list[dict[str, Any]], metrics: dict[str, Any], *, golden: str, k: int,
                  ranked_at: str, pipeline: str) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "golden": golden, "pipeline": pipeline, "k": k,
            "ranked_at": ranked_at, "metrics": metrics, "queries": entries}


def write_baseline(path: Path, data: dict[str, Any]) -> None:
    """Write the baseline atomically: a temporary file in the same folder, then a rename over the old one."""
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         suffix=".tmp", delete=False) as f:
            tmp = Path(f.name)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise UserError(f"cannot write the baseline {path}: {e.strerror or e}") from e
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def read_baseline(path: Path) -> dict[str, Any]:
    """The baseline at ``path``, checked: a clear error for a missing, unreadable, corrupt or foreign file."""
    again = "run `workbench check --update-baseline` to write a new one"
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"no baseline at {path}: {UPDATE_HINT}") from None
    except OSError as e:
        raise UserError(f"cannot read the baseline {path}: {e.strerror or e}") from e
    if len(raw) > MAX_BYTES:
        raise UserError(f"{path}: not a check baseline (over {MAX_BYTES // 1024 ** 2} MB); {again}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise UserError(f"{path}: not a check baseline (not JSON: {_first_line(e)}); {again}") from e
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UserError(f"{path}: not a check baseline (JSON of another kind); {again}")
    if data.get("version") != VERSION:
        raise UserError(f"{path}: a check baseline of format version {data.get('version')!r} (this workbench "
                        f"reads version {VERSION}); {again}")
    problem = _problem(data)
    if problem:
        raise UserError(f"{path}: a corrupt check baseline ({problem}); {again}")
    return data


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0][:200] if str(e) else type(e).__name__


def _is_rank(v: Any) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1)


def _is_ratio(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _problem(data: dict[str, Any]) -> str | None:
    if not isinstance(data.get("metrics"), dict):
        return "metrics: expected an object"
    if not isinstance(data.get("ranked_at"), str):
        return "ranked_at: expected a time"
    queries = data.get("queries")
    if not isinstance(queries, list):
        return "queries: expected a list"
    seen = set()
    for i, q in enumerate(queries):
        where = f"queries.{i}"
        if not isinstance(q, dict):
            return f"{where}: expected an object"
        for key in ("id", "query", "principal"):
            if not isinstance(q.get(key), str):
                return f"{where}.{key}: expected a string"
        for key in ("relevant", "top"):
            if not _strings(q.get(key)):
                return f"{where}.{key}: expected a list of ids"
        if not _is_ratio(q.get("recall@10", "missing")):
            return f"{where}.recall@10: expected a number from 0 to 1, or null"
        if not _is_rank(q.get("first_relevant", "missing")):
            return f"{where}.first_relevant: expected a rank, or null"
        ranks = q.get("relevant_ranks")
        if not isinstance(ranks, dict) or set(ranks) != set(q["relevant"]) or not all(map(_is_rank, ranks.values())):
            return f"{where}.relevant_ranks: expected a rank (or null) for each relevant id"
        if q["id"] in seen:
            return f"{where}.id: duplicate query id {q['id']!r}"
        seen.add(q["id"])
    return None


def ranked_at(data: dict[str, Any]):
    """The clock a baseline's queries were ranked at (a naive UTC datetime, as the store keeps them)."""
    from datetime import datetime, timezone

    try:
        at = datetime.fromisoformat(data["ranked_at"])
    except ValueError as e:
        raise UserError(f"a corrupt check baseline (ranked_at: {e}); run `workbench check --update-baseline` "
                        "to write a new one") from e
    return at.astimezone(timezone.utc).replace(tzinfo=None) if at.tzinfo else at


# -- the report ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Move:
    """A fragment that moved in one query's ranking: a relevant one ``lost`` (out of the top 10) or
    ``demoted``, or another one that ``entered`` the top 3. Ranks are 1-based; None: not in the top 100
    (``before`` of one that entered: not in the baseline's top k)."""

    id: str
    owner: str | None
    change: str
    before: int | None
    after: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "owner": self.owner, "change": self.change, "before": self.before,
                "after": self.after}


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

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "query": self.query, "principal": self.principal, "reasons": list(self.reasons),
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
    0 when it passed or the baseline was just written, else 1."""

    golden: str
    baseline: str
    updated: bool                      # the baseline was (re)written by this run
    queries: int                       # queries in the golden set
    compared: int                      # queries in both the golden set and the baseline
    regressions: list[Regression] = field(default_factory=list)
    warnings: list[Top3Change] = field(default_factory=list)
    new: list[str] = field(default_factory=list)       # ids of queries added or changed since the baseline
    removed: list[str] = field(default_factory=list)   # ids of baseline queries no longer in the golden set
    hidden: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("regressions", "warnings", "new",
                                                                          "removed"), 0))
    metrics_before: dict[str, Any] | None = None
    metrics_after: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.regressions and not self.hidden["regressions"]

    @property
    def exit_code(self) -> int:
        return 0 if self.passed or self.updated else 1

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "updated": self.updated, "golden": self.golden, "baseline": self.baseline,
                "queries": self.queries, "compared": self.compared,
                "regressions": [r.to_dict() for r in self.regressions],
                "warnings": [w.to_dict() for w in self.warnings], "new": self.new, "removed": self.removed,
                "hidden": dict(self.hidden),
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
            rows = [[r.id, r.query, "; ".join(r.reasons),
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
        return "\n\n".join(out)


def _worse(before: int | None, after: int | None) -> bool:
    return (after or math.inf) > (before or math.inf)


def compare(baseline: dict[str, Any], current: list[dict[str, Any]], metrics: dict[str, Any], *, golden: str,
            baseline_path: str, updated: bool, shows_query: Callable[[str], bool],
            shows_fragment: Callable[[str], bool], owner_of: Callable[[str], str | None]) -> CheckReport:
    """Compare the current snapshot with a baseline (None: there was none, so nothing is new or
    compared: the run only writes the first one). ``shows_query(principal)``
    and ``shows_fragment(id)`` say what the report's reader may see; ``owner_of(id)`` names owners."""
    report = CheckReport(golden=golden, baseline=baseline_path, updated=updated, queries=len(current), compared=0,
                         metrics_before=baseline["metrics"] if baseline else None, metrics_after=metrics)
    before = {q["id"]: q for q in baseline["queries"]} if baseline else {}
    ids = {q["id"] for q in current}

    def count_or(name: str, shown: bool, item: Any, target: list) -> None:
        if shown:
            target.append(item)
        else:
            report.hidden[name] += 1

    for q in current:
        old = before.get(q["id"])
        shown = shows_query(q["principal"])
        if old is None or any(old[key] != q[key] for key in ("query", "principal", "relevant")):
            if baseline is not None:  # a first baseline has nothing to be new against
                count_or("new", shown, q["id"], report.new)
            continue
        report.compared += 1
        regression = _regression(old, q, shows_fragment, owner_of)
        if regression is not None:
            count_or("regressions", shown, regression, report.regressions)
        elif old["top"][:TOP] != q["top"][:TOP]:
            change = Top3Change(q["id"], q["query"], *(tuple(x if shows_fragment(x) else None for x in top[:TOP])
                                                       for top in (old["top"], q["top"])))
            count_or("warnings", shown, change, report.warnings)
    for qid, old in before.items():
        if qid not in ids:
            count_or("removed", shows_query(old["principal"]), qid, report.removed)
    return report


def _regression(old: dict[str, Any], new: dict[str, Any], shows_fragment: Callable[[str], bool],
                owner_of: Callable[[str], str | None]) -> Regression | None:
    reasons = []
    if old["recall@10"] is not None and new["recall@10"] is not None and new["recall@10"] < old["recall@10"]:
        reasons.append(f"recall@10 {old['recall@10']:.2f} → {new['recall@10']:.2f}")
    first_before, first_after = old["first_relevant"], new["first_relevant"]
    if first_before is not None and first_before <= TOP and (first_after is None or first_after > TOP):
        reasons.append(f"first relevant hit #{first_before} → {_rank(first_after)}")
    if not reasons:
        return None
    moves = []
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
    shown = [Move(m.id, owner_of(m.id), m.change, m.before, m.after) for m in moves if shows_fragment(m.id)]
    return Regression(new["id"], new["query"], new["principal"], tuple(reasons), old["recall@10"],
                      new["recall@10"], first_before, first_after, tuple(shown), len(moves) - len(shown))


def _rank(rank: int | None) -> str:
    return "none in the top 100" if rank is None else f"#{rank}"
