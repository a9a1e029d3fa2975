"""Staleness: stale, nudge, verify, snooze."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .. import policy
from ..curate.drift import find_drift
from ..curate.staleness import StaleItem, digest, find_stale
from ..errors import UserError
from ..models import Principal
from ..store.store import utcnow
from .fragments import Fragments
from .workspace import Feature, Workspace

NUDGE_COOLDOWN_DAYS = 14
MAX_DAYS = 36_500  # a hundred years: anything larger is a typo, and overflows date arithmetic


def check_days(value, param: str = "days", *, allow_zero: bool = False) -> int:
    """A day count from a user: a whole number in range, or a clear error (never an overflow)."""
    what = "the cooldown" if param == "cooldown_days" else "the number of days"
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{what} must be a whole number of days, not {value!r}", param=param)
    low = 0 if allow_zero else 1
    if not low <= value <= MAX_DAYS:
        raise UserError(f"{what} must be between {low} and {MAX_DAYS} days (got {value})", param=param)
    return value


@dataclass
class NudgeReport:
    nudged: dict[str, list[str]] = field(default_factory=dict)   # owner → fragment ids nudged now
    skipped: int = 0                                               # still cooling down
    digests: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"nudged": self.nudged, "nudges": sum(len(v) for v in self.nudged.values()),
                "owners": len(self.nudged), "skipped_cooldown": self.skipped, "digests": self.digests}


class Staleness(Feature):
    """Fragments nobody edited or verified for months, nudges to their owners, verify and snooze."""

    def __init__(self, ws: Workspace, fragments: Fragments):
        super().__init__(ws)
        self.fragments = fragments

    def stale(self, *, days: int = 180, now: datetime | None = None,
              principal: str | Principal | None = None) -> list[StaleItem]:
        """Fragments ``principal`` can see that were not edited or verified for ``days`` (or whose code
        drifted), most used first. Citations count only links from fragments the principal can see."""
        check_days(days)
        who = self.principal(principal)
        now = now or utcnow()
        fragments = [f for f in self.store.fragments(status="active") if policy.sees(who, f)]
        ids = {f.id for f in fragments}
        in_degree: dict[str, int] = {}
        for f in fragments:
            for target in dict.fromkeys((*f.links, *f.content.supersedes)):
                if target in ids and target != f.id:
                    in_degree[target] = in_degree.get(target, 0) + 1
        return find_stale(fragments, now=now, days=days,
                          traces=self.store.trace_counts(now - timedelta(days=days)),
                          in_degree=in_degree, snoozed=self.store.snoozes(),
                          drift=find_drift(fragments, self.store.git_repos()))

    def nudge(self, *, days: int = 180, cooldown_days: int = NUDGE_COOLDOWN_DAYS,
              now: datetime | None = None, principal: str | Principal | None = None) -> NudgeReport:
        """Record one nudge per owner per stale fragment that ``principal`` can see (none again within
        the cooldown) and write one markdown digest per nudged owner into the workspace outbox.
        Safe under cron: run it once per org as that org's lead."""
        check_days(cooldown_days, "cooldown_days", allow_zero=True)
        now = now or utcnow()
        items = self.stale(days=days, now=now, principal=principal)
        last = self.store.last_nudges()
        report = NudgeReport()
        due: dict[str, list[StaleItem]] = {}
        for item in items:
            owner = item.fragment.owner
            previous = last.get((item.fragment.id, owner))
            if previous is not None and now - previous < timedelta(days=cooldown_days):
                report.skipped += 1
                continue
            due.setdefault(owner, []).append(item)
        if not due:
            return report
        outbox = Path(self.root) / "outbox" / now.strftime("%Y-%m-%d")
        outbox.mkdir(parents=True, exist_ok=True)
        with self.store.transaction():
            self.store.add_nudges([(i.fragment.id, owner, now, "; ".join(i.reasons))
                                   for owner, owned in due.items() for i in owned])
            for owner, owned in sorted(due.items()):
                path = outbox / f"{owner}.md"
                tmp = path.with_suffix(".md.tmp")
                text = digest(owner, owned, now=now, workspace=self.config.name)
                if path.exists():  # another lead's run today (another org): keep theirs, add ours
                    text = path.read_text(encoding="utf-8").rstrip() + "\n\n---\n\n" + text
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(path)
                report.nudged[owner] = [i.fragment.id for i in owned]
                report.digests.append(str(path))
            self.store.add_event("nudge", detail={"owners": len(due), "nudges": sum(map(len, due.values()))})
        return report

    def verify(self, fragment_id: str, *, actor: str | Principal | None = None, note: str | None = None,
               now: datetime | None = None):
        """The owner says the fragment is still true: resets its staleness clock (recorded)."""
        who = self.principal(actor)
        fragment = self.fragments.get(fragment_id, principal=who)
        policy.require(who, "verify", fragment)
        now = now or utcnow()
        with self.store.transaction():
            self.store.set_verified(fragment_id, now)
            self.store.clear_snooze(fragment_id)
            self.store.add_event("verify", actor=who.name, fragment_id=fragment_id, detail={"note": note}, at=now)
        return self.store.get(fragment_id)

    def snooze(self, fragment_id: str, *, days: int, actor: str | Principal | None = None,
               now: datetime | None = None) -> datetime:
        """Hide a fragment from the stale list for ``days`` (owner only, recorded)."""
        who = self.principal(actor)
        check_days(days)
        fragment = self.fragments.get(fragment_id, principal=who)
        policy.require(who, "snooze", fragment)
        now = now or utcnow()
        until = now + timedelta(days=days)
        with self.store.transaction():
            self.store.put_snooze(fragment_id, until, who.name, now)
            self.store.add_event("snooze", actor=who.name, fragment_id=fragment_id, detail={"days": days}, at=now)
        return until
