"""What happened to a golden query's answer since the baseline, beyond its ranks.

Ranks alone miss a gutted answer: a runbook cut to "Ask in #platform", or a policy rewritten
about something else, can keep its title, its tags and its rank. So a check also compares, for
each fragment that answers a golden query (a relevant one the baseline knew):

- **deleted**: the fragment is gone (a fragment file removed from the repository);
- **archived**: it is still stored, no longer served;
- **out of scope**: the query's principal saw it at the baseline (it ranked) and no longer does
  (its scope or owner changed);
- **rewritten**: less than ``RETAINED_MIN`` of its body at the baseline remains, or it shrank to
  less than ``SHRINK_MIN`` of its length in words (rank/retention.py estimates the share);
- **not served**: context served it for the query at the baseline and no longer does;

and whether the query **started or stopped abstaining** (context serving nothing at all).

Each finding is a reason (text that names no fragment: a reader may see the query and not the
fragment) and a change per fragment, which the report names only to readers who may see it.
Pure: the caller says what the store holds now (``Now``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..rank.retention import retained, words

RETAINED_MIN = 0.5
SHRINK_MIN = 0.5


@dataclass(frozen=True)
class Now:
    """What the store holds now of the fragments a check names: ``records`` (id → owner, scope,
    status, words, body; a missing id is deleted) and ``visible_to(principal, id)``."""

    records: Mapping[str, Mapping[str, Any]]
    visible_to: Callable[[str, str], bool]


@dataclass(frozen=True)
class Change:
    """One fragment's part in a finding; ``before``/``after``: its ranks (None: not in the top 100)."""

    id: str
    change: str
    before: int | None
    after: int | None
    detail: str | None = None


def _count(n: int, what: str) -> str:
    return f"{'a' if n == 1 else n} {what}{'' if n == 1 else 's'}"


def changes(old: Mapping[str, Any], new: Mapping[str, Any], before: Mapping[str, Mapping[str, Any]],
            now: Now) -> tuple[list[str], list[Change]]:
    """(reasons, changes) for one compared query: ``old`` and ``new`` are its baseline and current
    entries; ``before``, the baseline's fragment records (empty for a format-1 baseline)."""
    found: dict[str, list[Change]] = {}
    for fid in new["relevant"]:
        b, a = old["relevant_ranks"].get(fid), new["relevant_ranks"].get(fid)
        record, was = now.records.get(fid), before.get(fid)
        if was is None:
            continue  # the baseline did not know this fragment: nothing to compare with
        if record is None:
            found.setdefault("deleted", []).append(Change(fid, "deleted", b, None))
        elif record["status"] != "active" and was["status"] == "active":
            found.setdefault("archived", []).append(Change(fid, "archived", b, a))
        elif record["status"] == "active" and b is not None and not now.visible_to(new["principal"], fid):
            # (ranked at the baseline, so the asker saw it then)
            found.setdefault("out of scope", []).append(Change(fid, "out of scope", b, a))
        elif was.get("sketch") is not None and record.get("body") is not None:
            share = retained(was["sketch"], record["body"])
            w0, w1 = was.get("words") or 0, len(words(record["body"]))
            if share < RETAINED_MIN or w1 < SHRINK_MIN * w0:
                detail = f"about {round(100 * share)}% of its text at the baseline remains, {w0} → {w1} words"
                found.setdefault("rewritten", []).append(Change(fid, "rewritten", b, a, detail))
    lost = {c.id for kind in ("deleted", "archived", "out of scope") for c in found.get(kind, ())}
    if "abstained" in old:
        served_before, served_now = set(old["served"]), set(new["served"])
        gone = [Change(fid, "not served", old["relevant_ranks"].get(fid), new["relevant_ranks"].get(fid))
                for fid in new["relevant"] if fid in served_before and fid not in served_now and fid not in lost]
        if gone:
            found["not served"] = gone
    reasons = []
    for kind, label in (("deleted", "deleted"), ("archived", "archived"),
                        ("rewritten", "rewritten (its text at the baseline mostly gone)"),
                        ("not served", "no longer served by context")):
        if found.get(kind):
            reasons.append(f"{_count(len(found[kind]), 'relevant fragment')} {label}")
    if found.get("out of scope"):
        reasons.append(f"{_count(len(found['out of scope']), 'relevant fragment')} no longer visible to "
                       f"{new['principal']}")
    out = [c for kind in ("deleted", "archived", "out of scope", "rewritten", "not served") for c in found.get(kind, ())]
    if "abstained" in old and old["abstained"] != new["abstained"]:
        if new["abstained"]:
            reasons.append("started abstaining: context serves nothing (it served "
                           f"{_count(len(old['served']), 'fragment')} at the baseline)")
        else:
            reasons.append(f"stopped abstaining: context serves {_count(len(new['served']), 'fragment')}")
            position = {fid: n for n, fid in enumerate(new["top"], start=1)}
            out += [Change(fid, "served", None, position.get(fid)) for fid in new["served"]]
    return reasons, out
