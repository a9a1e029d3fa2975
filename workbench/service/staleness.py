"""Staleness: stale, nudge, verify, snooze.

The nudge digest goes to every principal with something to answer: owners of stale fragments,
and scope leads with questions agents asked in their scopes that got nothing useful (the gap
report, ``Gaps.for_leads``). Its sections after the stale fragments come from ``_sections``: one
call per section, each answering recipient → markdown lines ("Questions we could not answer"),
then "Proposals to review" for every reviewer with proposals awaiting it (``Proposals.queues``).

A digest carries text others wrote (titles, questions agents asked): it is made inert
(workbench/inert.py) before it is written, as every face's output is, since a reader may ``cat`` it
or mail it. Digests are private to the workspace's user: files 0600 in folders made 0700.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import policy
from ..curate.drift import find_drift
from ..curate.gaps import digest_section as gaps_section
from ..curate.proposals import digest_section as proposals_section
from ..curate.staleness import StaleItem, digest, find_stale
from ..inert import inert
from ..models import Principal
from ..models import utcnow
from .days import MAX_DAYS, check_days  # noqa: F401 - MAX_DAYS: the TUI's day fields use it from here
from .fragments import Fragments
from .workspace import Feature, Workspace

if TYPE_CHECKING:
    from .gaps import Gaps
    from .proposals import Proposals
    from .usage import Usage

NUDGE_COOLDOWN_DAYS = 14
GAP_DAYS = 30   # the nudge digest's unanswered questions: those of the last month


@dataclass
class NudgeReport:
    nudged: dict[str, list[str]] = field(default_factory=dict)   # owner → fragment ids nudged now
    skipped: int = 0                                               # still cooling down
    digests: list[str] = field(default_factory=list)
    gaps: dict[str, int] = field(default_factory=dict)             # lead → unanswered questions in its digest
    proposals: dict[str, list[str]] = field(default_factory=dict)  # reviewer → proposal ids in its digest
    compressed: int = 0                                            # sources archived into summaries (archives.py)

    def to_dict(self) -> dict[str, Any]:
        return {"nudged": self.nudged, "nudges": sum(len(v) for v in self.nudged.values()),
                "owners": len(self.nudged), "skipped_cooldown": self.skipped, "digests": self.digests,
                "gaps": self.gaps, "proposals": self.proposals, "compressed": self.compressed}


class Staleness(Feature):
    """Fragments nobody edited or verified for months, nudges to their owners, verify and snooze."""

    def __init__(self, ws: Workspace, fragments: Fragments, usage: "Usage", gaps: "Gaps",
                 proposals: "Proposals | None" = None):
        super().__init__(ws)
        self.proposals = proposals
        self.fragments = fragments
        self.usage = usage
        self.gaps = gaps
        self.archives = None   # the Archives feature: nudge, the periodic scan, compresses old session notes too

    def stale(self, *, days: int = 180, now: datetime | None = None,
              principal: str | Principal | None = None) -> list[StaleItem]:
        """Fragments ``principal`` can see that were not edited or verified for ``days`` (or whose code
        drifted), most used first. Use is the calls that served each in the last ``days`` (counted as
        ``usage`` counts them, naming the principals ``principal`` may name); citations count only
        links from fragments the principal can see."""
        check_days(days)
        who = self.principal(principal)
        now = now or utcnow()
        fragments = [f for f in self.store.fragments(status="active") if policy.member_sees(who, f)]  # not received
        ids = {f.id for f in fragments}
        in_degree: dict[str, int] = {}
        for f in fragments:
            for target in dict.fromkeys((*f.links, *f.content.supersedes)):
                if target in ids and target != f.id:
                    in_degree[target] = in_degree.get(target, 0) + 1
        return find_stale(fragments, now=now, days=days,
                          served=self.usage.served(now - timedelta(days=days), now, who),
                          in_degree=in_degree, snoozed=self.store.snoozes(),
                          drift=find_drift(fragments, self.store.git_repos()))

    def nudge(self, *, days: int = 180, cooldown_days: int = NUDGE_COOLDOWN_DAYS,
              now: datetime | None = None, principal: str | Principal | None = None,
              gap_days: int = GAP_DAYS) -> NudgeReport:
        """Record one nudge per owner per stale fragment that ``principal`` can see (none again within
        the cooldown) and write one markdown digest per recipient into the workspace outbox: owners of
        stale fragments, and scope leads whose scopes had questions in the last ``gap_days`` that got
        nothing useful ("Questions we could not answer": the calls both ``principal`` and the lead may
        read; a group is told again only when it was asked again since the lead's last digest), and
        reviewers of proposals ``principal`` sees ("Proposals to review": one is named again after the
        cooldown, or once it changed). Safe under cron: run it once per org as that org's lead.
        A cooldown under ``policy.MIN_NUDGE_COOLDOWN_DAYS`` is refused unless ``principal`` is an
        admin, or is None: the local administrator, who runs it on the database file directly (and
        sees as the default principal)."""
        check_days(cooldown_days, "cooldown_days", allow_zero=True)
        check_days(gap_days, "gap_days")
        now = now or utcnow()
        who = self.principal(principal)
        policy.require(who, "nudge", cooldown_days, administrator=principal is None)
        items = self.stale(days=days, now=now, principal=who)
        last = self.store.last_nudges()
        report = NudgeReport()
        if self.archives is not None:   # the scopes ``who`` may write in: see archives.py
            report.compressed = self.archives.compress(actor=who).to_dict()["archived"]
        due: dict[str, list[StaleItem]] = {}
        for item in items:
            owner = item.fragment.owner
            previous = last.get((item.fragment.id, owner))
            if previous is not None and now - previous < timedelta(days=cooldown_days):
                report.skipped += 1
                continue
            due.setdefault(owner, []).append(item)
        gaps = self._new_gaps(who, now, gap_days)
        to_review = self._new_proposals(who, now, cooldown_days)
        sections = [*self._sections(gaps, gap_days),
                    {name: proposals_section(items, name) for name, items in to_review.items()}]
        recipients = sorted(set(due).union(*sections))
        if not recipients:
            return report
        outbox = _private_folder(Path(self.root) / "outbox") / now.strftime("%Y-%m-%d")
        _private_folder(outbox)
        with self.store.transaction():
            self.store.add_nudges([(i.fragment.id, owner, now, "; ".join(i.reasons))
                                   for owner, owned in due.items() for i in owned])
            for name in recipients:
                path = outbox / f"{name}.md"
                text = digest(name, due.get(name, []), now=now, workspace=self.config.name,
                              sections=[section[name] for section in sections if name in section])
                if path.exists():  # another lead's run today (another org): keep theirs, add ours
                    text = path.read_text(encoding="utf-8").rstrip() + "\n\n---\n\n" + text
                _write_private(path, inert(text))
                if name in due:
                    report.nudged[name] = [i.fragment.id for i in due[name]]
                report.digests.append(str(path))
            for lead, groups in gaps.items():
                report.gaps[lead] = sum(g.count for g in groups)
                self.store.add_event("nudge.gaps", actor=who.name, at=now,
                                     detail={"lead": lead, "groups": len(groups), "questions": report.gaps[lead]})
            for name, items in to_review.items():
                report.proposals[name] = [f.id for f in items]
                self.store.add_event("nudge.proposals", actor=who.name, at=now,
                                     detail={"reviewer": name, "ids": report.proposals[name]})
            self.store.add_event("nudge", detail={"owners": len(due), "nudges": sum(map(len, due.values())),
                                                  "leads_with_gaps": len(gaps)})
        return report

    def _sections(self, gaps: dict[str, list], gap_days: int) -> list[dict[str, list[str]]]:
        """The digest's sections after the stale fragments, in order, each recipient → its markdown
        lines (its ``##`` heading included). A recipient of any section gets a digest. ("Proposals
        to review" follows them: ``nudge`` adds it from ``_new_proposals``.)"""
        return [{lead: gaps_section(groups, days=gap_days) for lead, groups in gaps.items()}]

    def _new_proposals(self, who: Principal, now: datetime, cooldown_days: int) -> dict[str, list]:
        """Reviewer → the proposals awaiting its review that ``who`` sees (``Proposals.queues``), less
        those its digest named within the cooldown that have not changed since."""
        if self.proposals is None:
            return {}
        told: dict[tuple[str, str], datetime] = {}
        for event in self.store.events(action="nudge.proposals"):
            detail = event["detail"] or {}
            for fid in detail.get("ids") or ():
                key = (detail.get("reviewer"), fid)
                told[key] = max(told.get(key, event["at"]), event["at"])
        out = {}
        for name, items in self.proposals.queues(viewer=who).items():
            fresh = [f for f in items if (name, f.id) not in told or f.updated_at > told[(name, f.id)]
                     or now - told[(name, f.id)] >= timedelta(days=cooldown_days)]
            if fresh:
                out[name] = fresh
        return out

    def _new_gaps(self, who: Principal, now: datetime, gap_days: int) -> dict[str, list]:
        """Lead → the gap groups of the last ``gap_days`` it has not been told about: those asked
        again since its last digest with gaps (all of them, the first time)."""
        told: dict[str, datetime] = {}
        for event in self.store.events(action="nudge.gaps"):
            lead = (event["detail"] or {}).get("lead")
            if lead and (lead not in told or event["at"] > told[lead]):
                told[lead] = event["at"]
        out = {}
        for lead, groups in self.gaps.for_leads(now - timedelta(days=gap_days), now, who).items():
            fresh = [g for g in groups if lead not in told or g.last_seen > told[lead]]
            if fresh:
                out[lead] = fresh
        return out

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


def _private_folder(folder: Path) -> Path:
    """``folder``, made 0700 when it is new (an existing folder keeps the modes its owner gave it)."""
    try:
        folder.mkdir(mode=0o700)
        folder.chmod(0o700)   # (mkdir's mode is narrowed by the umask, never widened: this is exact)
    except FileExistsError:
        pass
    return folder


def _write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` at once (a reader sees the old digest or the new one), mode 0600."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), 0o600)   # (a leftover file of that name keeps no wider mode)
            out.write(text)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
