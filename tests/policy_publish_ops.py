"""Operations of the write-policy property test for published contexts (issue 30): publish a set,
subscribe a scope. The model (policy_machine.py: ``context``, ``published``, ``subscribed``) then
says who receives what (``state_of``): every later read and write is checked with it, so a received
fragment must be readable exactly by the members of a subscribing scope and writable by nobody
more than before (a pin by a lead, inside the scope it is received in, is the one exception)."""

from __future__ import annotations

from hypothesis import strategies as st
from policy_machine import STATS
from policy_oracle import both, leads, sees


class PublishOps:
    def publish(self, data):
        """Publish the model's one context (its set chosen once), or publish it again."""
        if not self.sets:
            return self.create_set(data)
        key = self.context[1] if self.context else data.draw(st.sampled_from(sorted(self.sets)))
        owner, where, includes = self.sets[key]
        actor = self.draw_actor(data, prefer=lambda n: n == owner or leads(self.people[n], where))
        name = f"{where.org}/{key[0]}"
        verdicts = both(lambda r: self.oracle.publish(actor, owner, where))
        describe = f"publish {key[0]}@{key[1]} by {actor}"
        ok, shown = self.attempt("publish", verdicts, lambda: self.wb.publish(f"{key[0]}@{key[1]}", actor=actor),
                                 describe)
        if not ok:
            return
        self.events += 1
        self.context = (name, key)
        # what a version holds, stated from the model: the set's members as its owner sees them as a
        # member (its org's fragments that apply in its scope, and its includes), active, none in a session
        want = {f for f, m in self.frags.items() if m.cur.status == "active" and m.cur.scope.org == where.org
                and m.cur.scope.session is None and (m.cur.scope.meets(where) or f in includes)
                and sees(self.people[owner], m.cur.scope, m.cur.owner)}
        got = {m["id"]: m["scope"] for m in shown.get("fragments", [])}
        self.check(set(got) == want, f"{describe}: version holds {sorted(got)}, the model says {sorted(want)}")
        self.published = {f: self.frags[f].cur.scope for f in want}
        STATS["published"] = STATS.get("published", 0) + len(want)

    def subscribe(self, data):
        """A scope (no session) subscribes to the model's context."""
        if self.context is None:
            return self.publish(data)
        where = data.draw(st.sampled_from([s for s in self.scopes if s.session is None]))
        actor = self.draw_actor(data, prefer=lambda n: leads(self.people[n], where))
        verdicts = both(lambda r: self.oracle.subscribe(actor, where))
        describe = f"subscribe {self.context[0]} for {where.text()} by {actor}"
        ok, _ = self.attempt("subscribe", verdicts,
                             lambda: self.wb.subscribe(self.context[0], scope=where.text(), actor=actor), describe)
        if ok:
            self.events += 1
            if where not in self.subscribed:
                self.subscribed.append(where)
