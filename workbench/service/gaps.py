"""Gaps: questions agents asked, in the traces of search and context calls, that got nothing
useful (an abstention, or only fragments below the confidence floor), grouped by meaning.

Who sees which call is policy.py's (read-gap): its caller, the leads of a scope it was made in,
and the local administrator. The questions are grouped with the workspace's embedder (the model
is loaded only when there is something to group). The nudge digest's "Questions we could not
answer" section is ``for_leads``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Callable

import numpy as np

from .. import policy
from ..curate.gaps import PLACEHOLDER, Gap, GapGroup, GapReport, gap_reason, group_gaps, question, same_text
from ..errors import NotFound, UserError
from ..models import Principal, Scope
from ..models import utcnow
from .search import Retrieval
from .days import check_days
from .usage import scope_filter, viewer
from .workspace import Feature, Workspace


class Gaps(Feature):
    """The gap report: what agents asked and did not get."""

    def __init__(self, ws: Workspace, retrieval: Retrieval, proposing=None):
        super().__init__(ws)
        self.retrieval = retrieval
        self.proposing = proposing   # Proposals: a drafted gap is a proposal

    def gaps(self, *, days: int = 30, scope: Scope | str | None = None, principal: str | Principal | None = None,
             now: datetime | None = None) -> GapReport:
        """Groups of near-identical questions from the last ``days`` that got nothing useful, most
        asked first: the calls the viewer may read (its own; as a lead, those made in scopes it leads;
        the administrator: all), only those made within ``scope`` when given."""
        check_days(days)
        who = viewer(self.ws, principal)
        within = scope_filter(self.ws, scope)
        now = now or utcnow()
        since = now - timedelta(days=days)
        found = self.find(since, now, who, within)
        return GapReport(days, since, now, who.name if who else None, str(within) if within else None,
                         tuple(self._open(group_gaps(found, self._encoder()), who)))

    # -- drafts -------------------------------------------------------------------------

    def drafts(self) -> dict[str, list[tuple[object, datetime | None]]]:
        """Question key (``same_text``) → the drafts answering it, each with when it was published (None:
        a pending proposal): from the ``draft-gap`` events, which follow a draft's id when accepted."""
        out: dict[str, list[tuple[object, datetime | None]]] = {}
        for event in self.store.events(action="draft-gap"):
            f = self.store.get(event["fragment_id"]) if event["fragment_id"] else None
            if f is None or f.status not in ("proposed", "active"):
                continue   # rejected or archived: the question is open again
            published = None if f.status == "proposed" else next(
                (v.created_at for v in self.store.versions(f.id) if v.content.status == "active"), f.updated_at)
            for key in (event["detail"] or {}).get("questions", ()):
                out.setdefault(key, []).append((f, published))
        return out

    @staticmethod
    def answering(drafts, keys, last_asked: datetime, who: Principal | None):
        """The draft that answers questions ``keys`` last asked at ``last_asked`` for ``who`` (None: the
        administrator), if any: one it may see, awaiting review, or published since they were last asked
        (asked again after it was published and still nothing useful: the gap is open again)."""
        for key in keys:
            for f, published in drafts.get(key, ()):
                if (who is None or policy.sees(who, f)) and (published is None or last_asked <= published):
                    return f
        return None

    def _open(self, groups: list[GapGroup], who: Principal | None) -> list[GapGroup]:
        """The groups not answered by a draft ``who`` may see (None: the administrator sees every draft)."""
        drafts = self.drafts()
        if not drafts:
            return groups
        return [g for g in groups if self.answering(drafts, map(same_text, g.examples), g.last_seen, who) is None]

    def draft_gap(self, question: str, *, principal: str | Principal | None = None, title: str | None = None,
                  body: str | None = None, scope: Scope | str | None = None, kind: str = "note",
                  owner: str | None = None, days: int = 30, now: datetime | None = None,
                  tags: list[str] | str | None = None):
        """Draft an answer to the open gap asking ``question`` (one of its group's questions) as a
        proposal awaiting an owner's review: never an active fragment at once, never served or exported
        until accepted (with its placeholder replaced). ``title``/``body``/``scope`` default to ``draft``'s.
        Refused (nothing stored) when the question is already drafted (pending, or published and not asked
        again since), naming the draft."""
        who = self.principal(principal)
        now = now or utcnow()
        key = same_text(question or "")
        group = next((g for g in self.gaps(days=days, principal=who, now=now).groups
                      if key in {same_text(e) for e in g.examples}), None)
        if group is None:
            existing = self.answering(self.drafts(), [key], datetime.min, who)   # not open: any draft answers it
            if existing is not None:
                state = "awaiting review" if existing.status == "proposed" else "published"
                raise UserError(f"this question is already drafted as {existing.id} ({state}): edit that draft "
                                "instead of making a second one", param="question")
            raise NotFound(f"no open gap asks {question!r} in your view of the last {days} days", param="question")
        fields = draft(group, who)
        made = self.proposing.draft(title or fields["title"], fields["body"] if body is None else body, kind=kind,
                                    scope=scope or fields["scope"], principal=who, owner=owner, now=now,
                                    reason=f"drafted from a gap: {group.question[:80]}", tags=tags)
        self.store.add_event("draft-gap", actor=who.name, fragment_id=made.id,
                             detail={"questions": sorted({same_text(e) for e in group.examples})})
        return made

    def find(self, since: datetime, until: datetime, who: Principal | None, within: Scope | None = None) -> list[Gap]:
        """The gaps among the calls from ``since`` to ``until`` that ``who`` may read (None: all)."""
        floor = self.retrieval.confidence_floor()
        principals = self.config.principals
        out = []
        for row in self.store.gap_candidates(since, until):
            reason = gap_reason(row, floor)
            if reason is None:
                continue
            caller = principals.get(row["principal"])
            if not policy.may(who, "read-gap", row, caller=caller):
                continue
            scopes = policy.call_scopes(row, caller)
            if within is not None and not any(within.contains(s) for s in scopes):
                continue
            out.append(Gap(row["id"], row["created_at"], row["kind"], question(row), row["principal"], row["scope"],
                           tuple(str(s) for s in scopes), reason))
        return out

    def for_leads(self, since: datetime, until: datetime, who: Principal | None) -> dict[str, list[GapGroup]]:
        """Lead name → the gap groups of the calls it may read as the principal ``who`` may read them
        too (the nudge's runner; None: the administrator), for every principal that leads a scope."""
        found = self.find(since, until, who)
        if not found:
            return {}
        drafts = self.drafts()   # a drafted question is being answered (unless asked again once published)
        found = [g for g in found if self.answering(drafts, [same_text(g.query)], g.at, None) is None]
        encode = self._encoder()
        principals = self.config.principals
        out = {}
        for lead in sorted((p for p in principals.values() if p.lead_of), key=lambda p: p.name):
            theirs = [g for g in found if policy.may(lead, "read-gap", g.call(), caller=principals.get(g.principal))]
            if theirs:
                out[lead.name] = group_gaps(theirs, encode)
        return out

    def _encoder(self) -> Callable[[list[str]], np.ndarray]:
        """The workspace embedder's ``encode``, remembering each text's vector for this report."""
        embedder = self.ws.index.embedder
        seen: dict[str, np.ndarray] = {}

        def encode(texts: list[str]) -> np.ndarray:
            new = [t for t in dict.fromkeys(texts) if t not in seen]
            if new:
                seen.update(zip(new, embedder.encode(new)))
            return np.stack([seen[t] for t in texts]) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
        return encode


def draft(group, me=None) -> dict[str, str]:
    """The new-fragment form's fields for a gap group: its question as the title, the questions
    asked (and by whom, when) in the body, and its scope: the most asked in that ``me`` may write
    in, else the most asked."""
    scope = next((s for s, _ in group.scopes if me is not None and policy.sees_scope(me, Scope.parse(s))), group.scope)
    question = " ".join(group.question.split())
    title = (question[:1].upper() + question[1:]).rstrip("?").strip()
    who = ", ".join(name for name, _ in group.principals)
    when = (f"on {group.first_seen:%Y-%m-%d}" if group.first_seen.date() == group.last_seen.date()
            else f"between {group.first_seen:%Y-%m-%d} and {group.last_seen:%Y-%m-%d}")
    times = "once" if group.count == 1 else f"{group.count} times"
    lines = [f"Agents asked this {times} {when} ({who}) and got nothing useful:", ""]
    lines += [f"- {example}" for example in group.examples]
    lines += ["", PLACEHOLDER]
    return {"title": title[:200], "body": "\n".join(lines) + "\n", "scope": scope}
