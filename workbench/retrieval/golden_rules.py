"""What a golden query may assert of its own answer: ``must_rank``, ``must_contain`` and ``expect``.

A baseline says what changed; these say what must hold whatever the baseline says, so a team
can write down why a query is golden:

- ``must_rank: N``: a relevant fragment ranks within the top N (1 to 100, the ranking depth);
- ``must_contain: PHRASE`` or a list of phrases: the context served for the query (as its
  principal, with ``context``'s defaults) holds each phrase, case and spacing aside;
- ``expect: abstain``: context serves nothing (a query the corpus does not answer, ``relevant: []``);
  ``expect: answer``: context serves at least one relevant fragment.

``validate`` checks one query as loaded and raises a ``UserError`` naming the file, the query and
the key; ``failures`` says which assertions of a query fail, given its ranking and what context
served. The failure texts name no fragment (the report names fragments only to readers who may
see them). Pure: ranks nothing, reads nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import UserError

KEYS = ("must_rank", "must_contain", "expect")
EXPECT = ("abstain", "answer")
MAX_RANK = 100          # rankings are kept 100 deep
MAX_PHRASES = 50
MAX_PHRASE_CHARS = 500


def validate(q: Mapping[str, Any], where: str) -> None:
    """Check a golden query's assertions (``where``: "FILE: queries.I", for the message)."""
    unknown = sorted(k for k in q if isinstance(k, str) and k.startswith(("must", "expect")) and k not in KEYS)
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r} (golden queries may state {', '.join(KEYS)})",
                        param="golden")
    negative = not q["relevant"]
    if "must_rank" in q:
        n = q["must_rank"]
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_RANK:
            raise UserError(f"{where}: must_rank must be a whole number from 1 to {MAX_RANK} (got {n!r})",
                            param="golden")
        if negative:
            raise UserError(f"{where}: must_rank needs relevant fragments (this query has relevant: [])",
                            param="golden")
    if "must_contain" in q:
        value = q["must_contain"]
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items or len(items) > MAX_PHRASES or not all(
                isinstance(p, str) and p.strip() and len(p) <= MAX_PHRASE_CHARS for p in items):
            raise UserError(f"{where}: must_contain must be a phrase or a list of 1 to {MAX_PHRASES} phrases "
                            f"(non-empty text of at most {MAX_PHRASE_CHARS} characters each)", param="golden")
        if negative:
            raise UserError(f"{where}: must_contain needs relevant fragments (this query has relevant: []; "
                            "use expect: abstain)", param="golden")
    if "expect" in q:
        expect = q["expect"]
        if expect not in EXPECT:
            raise UserError(f"{where}: expect must be one of {', '.join(EXPECT)} (got {expect!r})", param="golden")
        if expect == "abstain" and not negative:
            raise UserError(f"{where}: expect: abstain is for a query the corpus does not answer (relevant: [])",
                            param="golden")
        if expect == "answer" and negative:
            raise UserError(f"{where}: expect: answer needs relevant fragments (this query has relevant: [])",
                            param="golden")


def phrases(q: Mapping[str, Any]) -> list[str]:
    value = q.get("must_contain")
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def asserts(q: Mapping[str, Any]) -> bool:
    return any(k in q for k in KEYS)


def failures(q: Mapping[str, Any], ranked: Sequence[str], served: Sequence[str], text: str) -> list[str]:
    """The assertions of ``q`` that fail: ``ranked``, the query's ranking (ids, best first);
    ``served``, the ids context served (fragments and anti-patterns); ``text``, what it served."""
    out = []
    relevant = {str(r) for r in q["relevant"]}
    if "must_rank" in q:
        n = q["must_rank"]
        first = next((i for i, fid in enumerate(ranked, start=1) if fid in relevant), None)
        if first is None or first > n:
            where = f"first #{first}" if first is not None else f"none in the top {MAX_RANK}"
            out.append(f"must_rank {n}: no relevant fragment in the top {n} ({where})")
    held = normalise(text)
    missing = [p for p in phrases(q) if normalise(p) not in held]
    if missing:
        shown = ", ".join(f'"{_short(p)}"' for p in missing[:5]) + (f" and {len(missing) - 5} more"
                                                                    if len(missing) > 5 else "")
        out.append(f"must_contain: the served context lacks {shown}")
    expect = q.get("expect")
    if expect == "abstain" and served:
        out.append(f"expect: abstain, but context serves {len(served)} fragment{'s' if len(served) != 1 else ''}")
    if expect == "answer" and not relevant & set(served):
        out.append("expect: answer, but context serves " + ("nothing" if not served else "no relevant fragment"))
    return out


def _short(phrase: str, limit: int = 60) -> str:
    one = " ".join(phrase.split())
    return one if len(one) <= limit else one[:limit - 1] + "…"
