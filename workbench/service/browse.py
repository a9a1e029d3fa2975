"""The read model for browsing (the TUI tables): rows without bodies, with stale and
pin badges and scope-tree counts, filtered by what the principal may see.

The read model behind the Browse screen, kept free of Textual so it can be tested alone:
the scope tree and what each of its nodes shows (``Branch``: a node's count is exactly the
rows it shows), the filtered rows (``rows``), the forgiving owner/kind match (``matching``) and the scopes a
lead may pin a fragment in (``pin_scopes``). Fragments received through a subscription (issue 30)
are rows too, marked ``received`` (read-only until received.py's ``refine`` asks the policy what
the principal may do on them); they sit under the tree's "subscribed" branch, one node per
context (``context_tree``), not under their publisher's org. No I/O here; how a cell looks (ages,
clipped ids, scope labels) is the faces' (tui/format.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..models import Principal, Scope
from ..policy import receiving
from .received import Received

STALE_DAYS = 180
ORG_WIDE = "(org-wide)"     # the tree branch of an org's fragments that name no repo
SUBSCRIBED = "subscribed"   # the tree branch of the fragments received through subscriptions


@dataclass(frozen=True)
class Summary:
    id: str
    kind: str
    title: str
    owner: str
    scope: Scope
    status: str
    updated_at: datetime
    verified_at: datetime | None
    stale: bool
    pinned: bool
    received: Received | None = None   # received through a subscription: how, and what the principal may do

    @property
    def via(self) -> str | None:
        """The published context (ORG/CONTEXT) the row is received through; None: one of its scopes'."""
        return self.received.via if self.received is not None else None

    @property
    def last_touched(self) -> datetime:
        return max(self.updated_at, self.verified_at or self.updated_at)


def summaries(rows: list[tuple], principal: Principal, *, pinned: set[str], now: datetime,
              include_archived: bool = False) -> list[Summary]:
    cutoff = now - timedelta(days=STALE_DAYS)
    out = []
    verdict: dict[tuple, bool] = {}
    for fid, kind, title, owner, org, repo, persona, session, status, updated, verified in rows:
        if status != "active" and (not include_archived or status != "archived"):  # proposals: the inbox's
            continue
        scope = Scope(org, repo, persona, session)
        key = (scope, owner if session else None)
        if key not in verdict:
            verdict[key] = principal.can_see(scope, owner=owner)
        got = None
        if not verdict[key]:   # received through a subscription (read-only until refined), or not seen
            got = next((Received(r.via, r.version) for r in sorted(principal.receipts(fid), key=lambda r: r.via)
                        if receiving.holds_at(r, scope, status) and principal.can_see(r.applies)), None)
            if got is None:
                continue
        touched = max(updated, verified or updated)
        out.append(Summary(fid, kind, title, owner, scope, status, updated, verified,
                           status == "active" and touched < cutoff, fid in pinned, got))
    return out


def scope_tree(items: list[Summary]) -> dict[str, Any]:
    """org → {"count", "repos": {repo → {"count", "personas": {persona → count}}}}; fragments
    without a repo are counted under the org and under its ``ORG_WIDE`` branch; received ones are
    not (``context_tree`` counts them). Each count is the number of rows ``Branch.holds`` lets
    through for that node."""
    tree: dict[str, Any] = {}
    for s in items:
        if s.received is not None:
            continue
        org = tree.setdefault(s.scope.org, {"count": 0, "repos": {}})
        org["count"] += 1
        repo = org["repos"].setdefault(s.scope.repo or ORG_WIDE, {"count": 0, "personas": {}})
        repo["count"] += 1
        if s.scope.persona:
            repo["personas"][s.scope.persona] = repo["personas"].get(s.scope.persona, 0) + 1
    return tree


def context_tree(items: list[Summary]) -> dict[str, int]:
    """Published context (ORG/CONTEXT) → the number of rows received through it."""
    out: dict[str, int] = {}
    for s in items:
        if s.via is not None:
            out[s.via] = out.get(s.via, 0) + 1
    return out


@dataclass(frozen=True)
class Branch:
    """A node of the scope tree and what selecting it shows. The root (no org): everything.
    An org: every fragment of the org. A repo: the org's fragments of that repo, any persona.
    ``ORG_WIDE``: the org's fragments that name no repo. A persona under either: those of the
    persona there. ``via`` ``SUBSCRIBED``: every received fragment; ``via`` ORG/CONTEXT: those
    received through that context (never under an org's node). The tree's counts
    (``scope_tree``, ``context_tree``) count exactly these."""

    org: str | None = None
    repo: str | None = None          # a repo name, or ORG_WIDE
    persona: str | None = None
    via: str | None = None           # SUBSCRIBED, or a published context's name

    def holds(self, scope: Scope, via: str | None = None) -> bool:
        if self.via is not None:
            return via is not None and self.via in (SUBSCRIBED, via)
        if self.org is None:
            return True
        if via is not None or scope.org != self.org:
            return False
        if self.repo is None:
            return True
        in_repo = scope.repo is None if self.repo == ORG_WIDE else scope.repo == self.repo
        if not in_repo:
            return False
        return self.persona is None or scope.persona == self.persona

    def __str__(self) -> str:
        if self.via is not None:
            return "subscribed" if self.via == SUBSCRIBED else f"via {self.via}"
        if self.org is None:
            return "all scopes"
        where = self.org + ("" if self.repo is None else " (org-wide)" if self.repo == ORG_WIDE else "/" + self.repo)
        return where + (f", persona {self.persona}" if self.persona else "")


def branches(tree: dict[str, Any], contexts: dict[str, int] | None = None) -> list[tuple[Branch, int]]:
    """Every node of ``scope_tree``'s tree (then of ``context_tree``'s, under "subscribed") as
    (branch, count), depth first; the root first."""
    contexts = contexts or {}
    out = [(Branch(), sum(o["count"] for o in tree.values()) + sum(contexts.values()))]
    for org, o in sorted(tree.items()):
        out.append((Branch(org), o["count"]))
        for repo, r in sorted(o["repos"].items()):
            out.append((Branch(org, repo), r["count"]))
            out += [(Branch(org, repo, persona), n) for persona, n in sorted(r["personas"].items())]
    if contexts:
        out.append((Branch(via=SUBSCRIBED), sum(contexts.values())))
        out += [(Branch(via=name), n) for name, n in sorted(contexts.items())]
    return out


# -- forgiving filters ------------------------------------------------------------------------

_WORDS = re.compile(r"[^a-z0-9]+")


def match_rank(query: str, value: str) -> int | None:
    """How ``value`` answers a typed ``query`` (case-insensitive): 0 the value starts with it,
    1 one of its words does (words split at . - _ space), 2 its letters appear in order
    (``mbianchi`` in marco.bianchi, ``ap`` in anti-pattern); None no match. An empty query
    matches everything (0)."""
    q, v = query.strip().lower(), value.lower()
    if not q or v.startswith(q):
        return 0
    if any(w.startswith(q) for w in _WORDS.split(v) if w):
        return 1
    rest = iter(v)
    return 2 if all(ch in rest for ch in q) else None


def matching(query: str, values) -> set[str]:
    """The values a typed filter means: those it is a prefix of (of the value or of a word of
    it) when there are any, else those holding its letters in order."""
    ranked = {v: match_rank(query, v) for v in values}
    found = [r for r in ranked.values() if r is not None]
    if not found:
        return set()
    limit = 1 if min(found) <= 1 else 2
    return {v for v, r in ranked.items() if r is not None and r <= limit}


def rows(items: list[Summary], *, branch: Branch | None = None, owner: str = "", kind: str = "",
         stale: bool = False) -> list[Summary]:
    """The rows a table shows: in ``branch`` of the tree, owned by whom ``owner`` means, of the
    kind ``kind`` means (both as ``matching`` reads them; empty: any), stale ones only if asked."""
    owners = matching(owner, {s.owner for s in items}) if owner.strip() else None
    kinds = matching(kind, {s.kind for s in items}) if kind.strip() else None
    return [s for s in items if (branch is None or branch.holds(s.scope, s.via)) and (owners is None or s.owner in owners)
            and (kinds is None or s.kind in kinds) and (not stale or s.stale)]


def pin_scopes(principal: Principal, fragment_scope: Scope) -> list[Scope]:
    """The scopes the principal leads in which this fragment can be pinned (it applies there)."""
    from ..retrieval.index import applies

    return [s for s in principal.lead_of if s.org == fragment_scope.org and applies(fragment_scope, s)]
