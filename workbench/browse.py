"""Light listings for browsing (the TUI's tables): rows without bodies, with stale and
pin badges and scope-tree counts, filtered by what the principal may see."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .models import Principal, Scope

STALE_DAYS = 180


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

    @property
    def last_touched(self) -> datetime:
        return max(self.updated_at, self.verified_at or self.updated_at)


def summaries(rows: list[tuple], principal: Principal, *, pinned: set[str], now: datetime,
              include_archived: bool = False) -> list[Summary]:
    cutoff = now - timedelta(days=STALE_DAYS)
    out = []
    verdict: dict[tuple, bool] = {}
    for fid, kind, title, owner, org, repo, persona, session, status, updated, verified in rows:
        if status != "active" and not include_archived:
            continue
        scope = Scope(org, repo, persona, session)
        key = (scope, owner if session else None)
        if key not in verdict:
            verdict[key] = principal.can_see(scope, owner=owner)
        if not verdict[key]:
            continue
        touched = max(updated, verified or updated)
        out.append(Summary(fid, kind, title, owner, scope, status, updated, verified,
                           status == "active" and touched < cutoff, fid in pinned))
    return out


def scope_tree(items: list[Summary]) -> dict[str, Any]:
    """org → {"count", "repos": {repo → {"count", "personas": {persona → count}}}}; fragments
    without a repo are counted under the org (and "(org-wide)")."""
    tree: dict[str, Any] = {}
    for s in items:
        org = tree.setdefault(s.scope.org, {"count": 0, "repos": {}})
        org["count"] += 1
        repo = org["repos"].setdefault(s.scope.repo or "(org-wide)", {"count": 0, "personas": {}})
        repo["count"] += 1
        if s.scope.persona:
            repo["personas"][s.scope.persona] = repo["personas"].get(s.scope.persona, 0) + 1
    return tree


def age(ts: datetime | None, now: datetime) -> str:
    """A short, human age: today, 12d, 5mo, 2y."""
    if ts is None:
        return "-"
    days = (now - ts).days
    if days < 1:
        return "today"
    if days < 60:
        return f"{days}d"
    if days < 730:
        return f"{days // 30}mo"
    return f"{days // 365}y"
