"""Shell completion's questions to the core: the fragment ids and the scopes a principal may name.

Scope is a correctness property here too: an id is offered only to a principal who may see it
(policy.py decides, on light rows: no body is read), so completion never names a fragment the
caller could not ``show``; proposals are offered only to their author and reviewers. Scopes are
the workspace's declared ones (each org, its repos and personas) that the principal may see.
Fast and read-only: no index, no model.
"""

from __future__ import annotations

from .. import policy
from ..models import Principal, Scope
from .workspace import Feature

LIMIT = 200   # candidates offered at most (a shell lists them all)


class Completion(Feature):
    def fragment_ids(self, prefix: str = "", *, principal: str | Principal | None = None,
                     proposals: bool = False) -> list[str]:
        """Ids starting with ``prefix`` of the fragments ``principal`` may see (active and archived),
        or with ``proposals`` of the proposals it may see (its own, those it reviews), in id order."""
        who = self.principal(principal)
        if proposals:
            found = [f.id for s in ("proposed",) for f in self.store.fragments(status=s)
                     if f.id.startswith(prefix) and policy.sees(who, f)]
            return sorted(found)[:LIMIT]
        out: list[str] = []
        cursor = prefix[:-1] if prefix else None   # ids after this sort before every id with the prefix
        while len(out) < LIMIT:
            rows = self.store.listing(after=cursor, limit=1000)
            for fid, org, repo, persona, session, owner, status in rows:
                if not fid.startswith(prefix):
                    if fid > prefix:
                        return out
                    continue
                if policy.sees_listed(who, Scope(org, repo, persona, session), owner, status):
                    out.append(fid)
                    if len(out) == LIMIT:
                        break
            if len(rows) < 1000:
                break
            cursor = rows[-1][0]
        return out

    def scopes(self, prefix: str = "", *, principal: str | Principal | None = None) -> list[str]:
        """The declared scopes (``org=O``, ``org=O,repo=R``, ``org=O,persona=P``) ``principal`` may
        see, starting with ``prefix``."""
        who = self.principal(principal)
        found = []
        for org in self.config.orgs.values():
            found += [Scope(org.name), *(Scope(org.name, repo=r) for r in org.repos),
                      *(Scope(org.name, persona=p) for p in org.personas)]
        return [str(s) for s in found if str(s).startswith(prefix) and policy.sees_scope(who, s)]
