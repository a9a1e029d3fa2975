"""Compressed archives: per scope, the session summaries and agent observations beyond the newest
``archives.compress_after`` (workbench.yaml; default 15) are compressed into one extractive summary
(curate/compress.py) that cites each source ``id@vN``, and the sources are archived: history kept,
still found by ``search --include-archived``.

Groups never widen what anyone sees: a group is one exact scope (and, for a session scope, one
owner: a session fragment is also visible to its owner), and its summary is written in that scope.
Its owner is the scope's lead (the person leading the narrowest scope that contains it, who sees
it), else the newest source's owner. One summary per group: a later run folds newly compressed sources into a new
version of it. Only groups the actor sees are counted, and only those the policy lets it write
(the summary, each archive) are compressed; the others are reported as skipped, with the reason.
Everything one run writes is one transaction; a run with nothing beyond the threshold writes nothing.
A fragment stored with a secret-guard override is never compressed (its text would reach agents
through the summary), and the summary passes the secret guard like any write.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .. import policy
from ..curate import compress
from ..curate.ids import new_id
from ..errors import UserError, WorkbenchError
from ..ingest.files import normalise_body
from ..ingest.importer import guard_secrets
from ..models import ARCHIVE_KINDS, Content, Fragment, Principal, Scope, utcnow
from .fragments import Fragments
from .workspace import Feature

DEFAULT_COMPRESS_AFTER = 15
DEFAULT_SUMMARY_TOKENS = 400
SUMMARY_KIND = "session-summary"
SUMMARY_TAG = "archive-summary"


def is_summary(f: Fragment | Content) -> bool:
    content = f.content if isinstance(f, Fragment) else f
    return content.detail("compressed_from") is not None


@dataclass
class Compressed:
    """One group's compression: the summary (id, version it has or would have), what it archives."""
    scope: str
    summary: str
    version: int
    archived: list[str]                       # id@vN of the sources archived now
    sources: int                              # every source the summary cites
    sentences: int
    words: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class CompressReport:
    dry_run: bool
    threshold: int
    groups: list[Compressed] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "compress_after": self.threshold,
                "compressed": [g.to_dict() for g in self.groups],
                "archived": sum(len(g.archived) for g in self.groups), "skipped": self.skipped}


class Archives(Feature):
    def __init__(self, ws, fragments: Fragments):
        super().__init__(ws)
        self.fragments = fragments

    def threshold(self) -> int:
        return int(self.config.archives.get("compress_after", DEFAULT_COMPRESS_AFTER))

    def compress(self, *, scope: Scope | str | None = None, dry_run: bool = False,
                 actor: str | Principal | None = None) -> CompressReport:
        """Compress, in every scope the actor sees (within ``scope``), the session summaries and
        observations beyond the newest ``compress_after``. ``dry_run``: report, write nothing."""
        who = self.principal(actor)
        within = Scope.coerce(scope)
        problem = self.config.check_scope(within) if within is not None else None
        if problem:
            raise UserError(f"bad scope {str(within)!r}: {problem}", param="scope")
        keep = self.threshold()
        budget = int(self.config.archives.get("summary_tokens", DEFAULT_SUMMARY_TOKENS))
        report = CompressReport(dry_run, keep)
        with self.store.transaction():
            groups: dict[tuple, list[Fragment]] = {}
            summaries: dict[tuple, Fragment] = {}
            flagged = self.store.secret_flagged()   # stored with a secret-guard override: never copied
            for f in self.store.fragments(status="active", within=within):
                if f.kind not in ARCHIVE_KINDS or f.id in flagged or not policy.sees(who, f):
                    continue
                key = (f.scope, f.owner if f.scope.session else None)
                if is_summary(f):
                    summaries.setdefault(key, f)
                else:
                    groups.setdefault(key, []).append(f)
            now = utcnow()
            for key in sorted(groups, key=lambda k: (str(k[0]), k[1] or "")):
                members = sorted(groups[key], key=lambda f: (f.created_at, f.updated_at, f.id))
                if len(members) <= keep:
                    continue
                done = self._group(who, key, members[:len(members) - keep], summaries.get(key), budget,
                                   dry_run, now, report)
                if done is not None:
                    report.groups.append(done)
            if report.groups and not dry_run:
                self.store.add_event("archive.compress", actor=who.name,
                                     detail={"groups": len(report.groups),
                                             "archived": sum(len(g.archived) for g in report.groups)})
        return report

    def _group(self, who: Principal, key: tuple, oldest: list[Fragment], summary: Fragment | None,
               budget: int, dry_run: bool, now, report: CompressReport) -> Compressed | None:
        scope, owner_key = key
        earlier = list(summary.content.detail("compressed_from") or ()) if summary else []
        sources = [self._source(ref) for ref in earlier] + [
            compress.Source(f"{f.id}@v{f.version}", f.title, f.body) for f in oldest]
        sources = [s for s in sources if s is not None]
        refs = list(dict.fromkeys(s.ref for s in sources))
        chosen = compress.summarise(sources, compress.budget_for(len(sources), budget))
        owner = owner_key or self._owner(scope, oldest[-1].owner)
        title = f"Archive: {len(refs)} session summaries and observations in {scope}"
        intro = (f"Extractive summary of {len(refs)} older session summaries and agent observations in {scope} "
                 "(the sentences that carry the most distinct information). The sources are archived and stay "
                 "searchable with `workbench search --include-archived`.")
        content = Content(kind=SUMMARY_KIND, title=title[:200], body=normalise_body(compress.render(intro, chosen, refs)),
                          scope=scope, owner=owner, tags=(SUMMARY_TAG,),
                          details=(("compressed_from", tuple(refs)),))
        fid = summary.id if summary else self._new_id(title, scope)
        refusal = policy.may_write(who, summary, content, principals=self.config.principals)
        for f in oldest:
            if refusal:
                refusal = policy.may_write(who, f, replace(f.content, status="archived"),
                                           principals=self.config.principals)
        if not refusal:
            report.skipped.append({"scope": str(scope), "reason": refusal.message or "not allowed"})
            return None
        try:   # the sources passed the secret guard once; what the summary copies of them must too
            guard_secrets(content, file=f"<archive of {scope}>", allow=False, overrides=[])
        except WorkbenchError as e:
            report.skipped.append({"scope": str(scope), "reason": e.message})
            return None
        version = (summary.version + 1) if summary else 1
        if not dry_run:
            why = f"compressed {len(oldest)} into {fid}"
            saved = self.fragments.write(fid, content, actor=who, reason=why)
            version = saved.version
            for f in oldest:
                self.fragments.write(f.id, replace(f.content, status="archived"), actor=who,
                                     reason=f"compressed into {fid}@v{version}")
        return Compressed(str(scope), fid, version, [f"{f.id}@v{f.version}" for f in oldest], len(refs),
                          len(chosen), sum(s.words for s in chosen))

    def _source(self, ref: str) -> compress.Source | None:
        fid, _, number = ref.rpartition("@v")
        v = self.store.version(fid, int(number)) if number.isdigit() else None
        return None if v is None else compress.Source(ref, v.content.title, v.content.body)

    def _owner(self, scope: Scope, fallback: str) -> str:
        """The person who leads the narrowest scope containing ``scope`` (and sees it), first by name."""
        best: tuple[int, str] | None = None
        for name, p in self.config.principals.items():
            if p.kind != "person" or not p.can_see(scope):
                continue
            for led in p.lead_of:
                if led.contains(scope):
                    depth = sum(v is not None for v in led.to_dict().values())
                    if best is None or (-depth, name) < best:
                        best = (-depth, name)
        return best[1] if best else fallback

    def _new_id(self, title: str, scope: Scope) -> str:
        rows = self.store.summaries()
        return new_id(f"archive {scope}", org=scope.org, org_ids=[(r[0], r[1]) for r in rows if r[4] == scope.org],
                      taken={r[0] for r in rows} | self.store.alias_ids(), kind=SUMMARY_KIND, abbreviation="ss")


def check_flag(include_archived: Any) -> bool:
    if not isinstance(include_archived, bool):
        raise UserError(f"include_archived must be true or false, not {include_archived!r}", param="include_archived")
    return include_archived


def provenance(f: Fragment, query: str | None, served: str | None = None) -> dict[str, Any]:
    """What a trace item adds about where its text came from: ``archived: true`` for an archived
    fragment; for a compressed summary, ``from``: the source versions (id@vN) of the sentences
    the answer to ``query`` most likely came from (of the text ``served``, when context trimmed it)."""
    out: dict[str, Any] = {"archived": True} if f.status == "archived" else {}
    refs = f.content.detail("compressed_from")
    if refs:
        picked = compress.attribute(query or "", served if served is not None else f.body, refs)
        out["from"] = [{"source": ref, "sentence": text} for text, ref in picked]
    return out
