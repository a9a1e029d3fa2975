"""Exporting a published context (issue 30): agent files or a bundle of the context's current
version, as one principal is served it.

Who may export a context is who may read its members (the rule of ``Publishing.describe``): its
publishing side (the publisher, members of the set's scope), which exports the latest version's
members as it sees them, and the principals who receive it, which export exactly what they
receive, as served (a pinned subscription's recorded version, with ``via``). Anyone else is told
the context's members are not theirs to read; an unknown or ended context answers like an unknown
name. Agent files go through ``Exports.agent_selection`` (``context=``); this module writes the
bundle: each fragment with the versions the principal may see (a receiver: the served one only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import policy
from ..errors import NotFound, PermissionDenied
from ..models import Fragment, Principal, Scope, utcnow
from ..policy import receiving
from .receipts import as_served
from .workspace import Feature


def context_members(ws: Any, name: str, who: Principal) -> tuple[Scope, list[Fragment]]:
    """(the scope the context applies in for ``who``, its fragments as ``who`` may read them now,
    current — ``as_served`` gives a receiver's served version). Refused as the module says."""
    ctx = ws.store.published_context(name) if isinstance(name, str) else None
    if ctx is None or ctx["ended_at"] is not None:
        live = [c["name"] for c in ws.store.published_contexts() if c["ended_at"] is None]
        raise NotFound(f"unknown published context {name!r} (published: {', '.join(live) or 'none yet'})")
    if who.name == ctx["owner"] or who.can_see(Scope.parse(ctx["set_scope"])):   # the publishing side
        ids = [m["id"] for m in ws.store.published_members(name, ctx["latest"])]
        found = ws.store.fragments(ids=ids) if ids else []
        return Scope.parse(ctx["set_scope"]), [f for f in found if f.status == "active" and policy.sees(who, f)]
    mine = sorted({str(r.applies): r.applies for r in who.received if r.via == name}.items())
    if not mine:
        raise PermissionDenied(f"{who.name} neither publishes nor receives {name}: its fragments are shown to its "
                               "publishing side and to the principals of the scopes that subscribe to it")
    ids = sorted({r.fragment_id for r in who.received if r.via == name})
    kept = [f for f in ws.store.fragments(ids=ids)
            if any(r.via == name and receiving.holds(r, f) and who.can_see(r.applies) for r in who.receipts(f.id))]
    return mine[0][1], kept


class ContextExports(Feature):
    """A published context as ``principal`` reads it: its fragments, or a bundle of them (agent files:
    ``Exports``, ``context=``)."""

    def context_fragments(self, name: str, *, principal: str | Principal | None = None) -> list[Fragment]:
        """The context's fragments as ``principal`` is served them (a receiver: with the version its
        subscription serves), by id; refused as the module says."""
        who = self.principal(principal)
        _, members = context_members(self.ws, name, who)
        return sorted((f if policy.member_sees(who, f) else as_served(self.store, who, f) for f in members),
                      key=lambda f: f.id)

    def export_context_bundle(self, name: str, out: str | Path, *, principal: str | Principal | None = None,
                              force: bool = False, allow_secret: bool = False) -> dict[str, Any]:
        """Write the context's current version as ``principal`` reads it: fragments.jsonl (each fragment
        with the versions it may see: a receiver, only the version it is served) and manifest.yaml (the
        set it was published from, the publisher its owner; the pins the principal sees in force in
        the scope the context applies in). Withheld (secret-guard overrides, unless ``allow_secret``)
        and partly unseen histories are left out: ``omitted`` counts them."""
        from ..export import bundle
        from ..ingest.chunking import CHUNKER_VERSION as GIT_CHUNKER
        from ..retrieval.embedder import MODEL_NAME
        from ..retrieval.index import CHUNKER_VERSION, applies

        who = self.principal(principal)
        where, members = context_members(self.ws, name, who)
        ctx = self.store.published_context(name)
        withheld = set() if allow_secret else self.store.secret_flagged()
        records, omitted = [], 0
        for f in members:
            if policy.member_sees(who, f):
                versions = self.store.versions(f.id)
                hidden = not all(policy.sees(who, v.content) for v in versions)
            else:   # received: the version served, and no other
                f = as_served(self.store, who, f)
                versions = [v for v in self.store.versions(f.id) if v.number == f.version]
                hidden = not versions
            if f.id in withheld or hidden:
                omitted += 1
                continue
            records.append(bundle.record(f, versions))
        written = {r["id"] for r in records}
        definition = {"name": ctx["set_name"], "owner": ctx["owner"], "scope": ctx["set_scope"], "query": None,
                      "picked": True, "include": sorted(written), "exclude": []}   # exactly what it holds
        pins = [bundle.pin_record(p) for p in self.ws.index.pins(utcnow()) if p["fragment_id"] in written
                and policy.sees_scope(who, Scope.parse(p["scope"])) and applies(Scope.parse(p["scope"]), where)]
        manifest = bundle.write(Path(out), records, definition, model=MODEL_NAME,
                                chunker=f"{CHUNKER_VERSION}; git: {GIT_CHUNKER}", force=force, pins=pins)
        return {**manifest, "context": name, "omitted": omitted}
