"""Operations of the write-policy property test that create and change fragments: ingest,
anti-patterns, edits (body and whole file), archive and restore, revert, verify and snooze, pins,
merges. Each draws its inputs, asks the oracle, runs the real call and checks the outcome
(see policy_machine.py)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st
from policy_machine import STATS
from policy_oracle import DECIDED, LENIENT, READINGS, STRICT, Verdict, both, sees
from policy_workspace import C, render_file


class WriteOps:
    # -- creating and changing fragments -------------------------------------------------------

    def ingest_file(self, data):
        """A fragment file: a new fragment, or a whole new state of an existing one."""
        actor = self.draw_actor(data)
        fid = self.draw_id(data)
        cur = self.frags.get(fid)
        if cur is not None and data.draw(st.integers(0, 3)) > 0:
            new = self.mutate(data, fid, cur.cur, actor)
        else:
            new = self.fresh_content(data, fid, actor)
            if cur is not None:
                new = replace(new, kind=cur.cur.kind, details=cur.cur.details)
        if cur is None:
            verdicts = both(lambda r: self.oracle.create(actor, new.scope, new.owner, r))
        else:
            verdicts = self.change_verdicts(actor, fid, new)
        path = self.next_path(".md")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_file(fid, new), encoding="utf-8")
        describe = f"ingest {fid} by {actor}: {new.scope.text()} owner={new.owner}" + \
                   ("" if cur is None else f" (was {cur.cur.scope.text()} owner={cur.cur.owner})")
        allowed = {verdicts[DECIDED].allowed}
        try:
            # the file's state is the write under test: it wins over edits made since the last ingest
            # (--theirs), as every ingest did before sync bases (tests/test_sync.py covers those)
            report = self.wb.ingest([path], actor=actor, resolve="theirs")
        except Exception as e:  # noqa: BLE001 - a refused file is a per-file error, never an exception
            self.fail(f"{describe}: raised {type(e).__name__}: {e}")
        if report.errors:
            message = report.errors[0]["message"]
            self.log.append(f"{describe} -> refused: {message}")
            self.count("ingest", verdicts, "refused")
            self.check(allowed != {True}, f"{describe}: refused ({message}) but the oracle allows")
            self.unchanged(describe)
            if cur is not None and not self.visible(actor, fid):
                self.expect_unchanged_message(message, fid, describe, path.read_text(encoding="utf-8"))
            return
        self.log.append(f"{describe} -> {report.to_dict()}")
        self.count("ingest", verdicts, "allowed")
        self.check(allowed != {False}, f"{describe}: accepted but the oracle refuses: {verdicts[DECIDED].why}")
        if cur is not None and new == cur.cur:
            self.check(report.unchanged == [fid], f"{describe}: not reported unchanged: {report.to_dict()}")
            self.unchanged(describe, "unchanged")
            return
        self.check((report.added if cur is None else report.updated) == [fid], f"{describe}: report {report}")
        self.expect_versions(fid, [new], actor, describe)
        self.events += 1

    def add_antipattern(self, data):
        actor = self.draw_actor(data)
        fid = self.draw_id(data)
        scope = self.draw_scope(data, actor)
        owner = self.draw_owner(data, scope, actor) if data.draw(st.booleans()) else None
        self.n += 1
        new = C("anti-pattern", f"AP{self.n} {self.word(data)}", "", scope, owner or actor,
                details=(("dont", f"do not {self.word(data)} {self.n}"), ("instead", "do the right thing"),
                         ("why", "it broke before")))
        existing = self.frags.get(fid)
        if existing is not None:  # taken: said plainly when the actor sees it, else without a word about it
            verdicts = both(lambda r: Verdict.no("the id is taken", hidden=None if not self.visible(actor, fid)
                                                 else False))
        else:
            verdicts = both(lambda r: self.oracle.create(actor, scope, new.owner, r))
        describe = f"add_antipattern {fid} by {actor}: {scope.text()} owner={new.owner}"
        hidden = existing is not None and not self.visible(actor, fid)
        ok, _ = self.attempt(
            "add_antipattern", verdicts,
            lambda: self.wb.add_antipattern(title=new.title, dont=dict(new.details)["dont"], why="it broke before",
                                            instead="do the right thing", scope=scope.text(), actor=actor,
                                            owner=owner, fragment_id=fid), describe,
            on_refused=lambda e: hidden and self.expect_unchanged_message(e.message, fid, describe,
                                                                          f"{new} {actor}"))
        if ok:
            self.expect_versions(fid, [new], actor, describe)

    def edit_body(self, data):
        actor, fid = self.draw_pair(data, self.visible)
        cur = self.frags.get(fid)
        self.n += 1
        body = cur.cur.body if cur is not None and data.draw(st.integers(0, 9)) == 0 \
            else f"{self.word(data)} body edit {self.n}"
        new = replace(cur.cur, body=body) if cur else None
        verdicts = self.change_verdicts(actor, fid, new) if cur else \
            both(lambda r: Verdict.no("unknown", hidden=True))
        if cur and new == cur.cur:
            verdicts = {r: v if not v.allowed else Verdict.no("no change") for r, v in verdicts.items()}
        describe = f"edit body {fid} by {actor}"
        if self.attempt("edit_body", verdicts, lambda: self.wb.edit(fid, body, reason="prop", actor=actor),
                        describe, gone=self.gone(actor, fid))[0]:
            self.expect_versions(fid, [new], actor, describe)

    def edit_whole_file(self, data):
        """A whole fragment file through ``edit``: owner and/or scope changes."""
        def owns(a, f):
            return self.visible(a, f) and a == self.frags[f].cur.owner

        def leads_not_owns(a, f):
            c = self.frags[f].cur
            return self.visible(a, f) and a != c.owner and any(c.scope.inside(led) for led in self.people[a].lead_of)
        actor, fid = self.draw_pair(data, data.draw(st.sampled_from((self.visible, owns, leads_not_owns))))
        cur = self.frags.get(fid)
        if cur is None:
            new = self.fresh_content(data, fid, actor)
            verdicts = both(lambda r: Verdict.no("unknown", hidden=True))
        else:
            new = self.mutate(data, fid, cur.cur, actor)
            verdicts = self.change_verdicts(actor, fid, new)
            if new == cur.cur:
                verdicts = {r: v if not v.allowed else Verdict.no("no change") for r, v in verdicts.items()}
        describe = (f"edit file {fid} by {actor}: {new.scope.text()} owner={new.owner}" +
                    ("" if cur is None else f" (was {cur.cur.scope.text()} owner={cur.cur.owner})"))
        if self.attempt("edit_file", verdicts, lambda: self.wb.edit(fid, render_file(fid, new), reason="prop",
                                                                     actor=actor), describe,
                        gone=self.gone(actor, fid))[0]:
            self.expect_versions(fid, [new], actor, describe)

    def archive_or_restore(self, data):
        actor, fid = self.draw_pair(data, self.visible)
        status = data.draw(st.sampled_from(("archived", "active")))
        cur = self.frags.get(fid)
        if cur is None:
            verdicts = both(lambda r: Verdict.no("unknown", hidden=True))
            new = None
        else:
            new = replace(cur.cur, status=status)
            verdicts = self.change_verdicts(actor, fid, new)
            if cur.cur.status == status:
                verdicts = {r: v if not v.allowed else Verdict.no(f"already {status}") for r, v in verdicts.items()}
        call = self.wb.archive if status == "archived" else self.wb.restore
        describe = f"{'archive' if status == 'archived' else 'restore'} {fid} by {actor}"
        if self.attempt("archive_restore", verdicts, lambda: call(fid, actor=actor, reason="prop"),
                        describe, gone=self.gone(actor, fid))[0]:
            self.expect_versions(fid, [new], actor, describe)

    def revert(self, data):
        actor, fid = self.draw_pair(data, lambda a, f: self.visible(a, f) and len(self.frags[f].versions) > 1)
        cur = self.frags.get(fid)
        to = data.draw(st.integers(1, len(cur.versions) + 1 if cur else 2))
        new = None
        if cur is None or not self.visible(actor, fid):
            verdicts = both(lambda r: Verdict.no("unknown", hidden=True))
        elif to > len(cur.versions):
            verdicts = both(lambda r: Verdict.no("no such version", hidden=True))
        else:
            new = cur.versions[to - 1][0]
            if not sees(self.people[actor], new.scope, new.owner):
                verdicts = both(lambda r: Verdict.no("a version the actor may not see", hidden=True))
            elif new == cur.cur:
                verdicts = {r: v if not v.allowed else Verdict.no("no change")
                            for r, v in self.change_verdicts(actor, fid, new).items()}
            else:
                verdicts = self.change_verdicts(actor, fid, new)
        describe = (f"revert {fid} to v{to} by {actor}" + (f": {new.scope.text()} owner={new.owner}" if new else "") +
                    (f" (now {cur.cur.scope.text()} owner={cur.cur.owner})" if cur else ""))
        if self.attempt("revert", verdicts, lambda: self.wb.revert(fid, to=to, actor=actor, reason="prop"),
                        describe, gone=self.gone(actor, fid))[0]:
            self.expect_versions(fid, [new], actor, describe)

    # -- owner-only, lead-only ------------------------------------------------------------------

    def verify_or_snooze(self, data):
        actor, fid = self.draw_pair(data, lambda a, f: a == self.frags[f].cur.owner)
        cur = self.frags.get(fid)
        what = data.draw(st.sampled_from(("verify", "snooze")))
        verdicts = both(lambda r: self.oracle.owner_only(actor, self.state_of(fid)))
        describe = f"{what} {fid} by {actor}" + (f" (owner {cur.cur.owner})" if cur else "")
        if what == "verify":
            call = lambda: self.wb.verify(fid, actor=actor)
        else:
            call = lambda: self.wb.snooze(fid, days=30, actor=actor)
        if not self.attempt(what, verdicts, call, describe, gone=self.gone(actor, fid))[0]:
            return
        self.events += 1
        if what == "verify":
            self.verified.add(fid)
            self.snoozed.discard(fid)
        else:
            self.snoozed.add(fid)
        self.check(self.wb.store.versions(fid) and len(self.wb.store.versions(fid)) == len(cur.versions),
                   f"{describe}: wrote a version")

    def pin(self, data):
        actor, fid = self.draw_pair(data, lambda a, f: bool(self.people[a].lead_of) and self.visible(a, f))
        cur = self.frags.get(fid)
        led = list(self.people[actor].lead_of)
        choice = data.draw(st.integers(0, 2))
        if choice == 0 and led:
            where = data.draw(st.sampled_from(led))
        elif choice == 1 and cur is not None:
            where = cur.cur.scope
        else:
            where = data.draw(st.sampled_from(self.scopes))
        declared = self.session_declared(actor, where.session)
        verdicts = both(lambda r: self.oracle.pin(actor, self.state_of(fid), where, declared))
        describe = f"pin {fid} in {where.text()} by {actor}" + (f" (fragment {cur.cur.scope.text()})" if cur else "")
        if self.attempt("pin", verdicts, lambda: self.wb.pin(fid, scope=where.text(), actor=actor, reason="prop"),
                        describe, gone=self.gone(actor, fid))[0]:
            self.pins[(fid, where.text())] = actor
            self.events += 1
            pins = {(p["fragment_id"], p["scope"]): p["pinned_by"] for p in self.wb.store.pins()}
            self.check(pins == self.pins, f"{describe}: pins {pins} != {self.pins}")

    def unpin(self, data):
        if self.pins and data.draw(st.integers(0, 3)) > 0:
            fid, text = data.draw(st.sampled_from(sorted(self.pins)))
            where = next(w for w in self.scopes if w.text() == text)
        else:
            fid = self.draw_target(data)
            where = data.draw(st.sampled_from(self.scopes))
        actor = self.draw_actor(data, prefer=lambda n: any(where.inside(led) for led in self.people[n].lead_of))
        pinned = (fid, where.text()) in self.pins
        verdicts = both(lambda r: self.oracle.unpin(actor, self.state_of(fid), where, pinned))
        describe = f"unpin {fid} in {where.text()} by {actor}"
        if self.attempt("unpin", verdicts, lambda: self.wb.unpin(fid, scope=where.text(), actor=actor),
                        describe)[0]:
            del self.pins[(fid, where.text())]
            self.events += 1
            pins = {(p["fragment_id"], p["scope"]): p["pinned_by"] for p in self.wb.store.pins()}
            self.check(pins == self.pins, f"{describe}: pins {pins} != {self.pins}")

    def merge(self, data):
        triples = []
        if data.draw(st.integers(0, 2)):  # mostly a merge that can go through, preferably of a linked-to fragment
            linked = {t for m in self.frags.values() for t in m.cur.links} if data.draw(st.booleans()) else None
            active = [f for f, m in sorted(self.frags.items()) if m.cur.status == "active"]
            triples = [(a, k, d) for a in self.names for k in active for d in active
                       if k != d and self.frags[k].cur.scope.org == self.frags[d].cur.scope.org
                       and (linked is None or d in linked) and self.visible(a, k) and self.visible(a, d)]
        if triples:
            actor, keep, drop = data.draw(st.sampled_from(triples))
        else:
            actor, keep = self.draw_pair(data, self.visible)
            drop = self.draw_target(data)
        k, d = self.frags.get(keep), self.frags.get(drop)
        verdicts = both(lambda r: self.oracle.merge(actor, keep, drop, self.state_of(keep), self.state_of(drop)))
        describe = f"merge {drop} into {keep} by {actor}"
        ok, result = self.attempt("merge", verdicts, lambda: self.wb.merge(keep, drop, actor=actor), describe,
                                  gone=self.gone(actor, keep, drop) if keep != drop else [])
        if not ok:
            return
        links = tuple(dict.fromkeys(t for t in (*k.cur.links, *d.cur.links) if t not in (keep, drop)))
        if links != k.cur.links:
            self.expect_versions(keep, [replace(k.cur, links=links)], actor, describe)
        linking = sorted(f for f, m in self.frags.items() if f != keep and drop in m.cur.links)
        may = {r: [f for f in linking if self.oracle.relinks(actor, self.frags[f].cur.state(), r)] for r in READINGS}
        relinked = result["relinked"]
        self.check(set(relinked) == set(may[DECIDED]) and relinked == sorted(relinked),
                   f"{describe}: relinked {relinked}, expected {may[STRICT]} (strict) .. {may[LENIENT]} (lenient) "
                   f"of the linking {linking}")
        STATS["merge_links"]["rewritten"] += len(relinked)
        STATS["merge_links"]["left alone (invisible to the actor)"] += len(linking) - len(relinked)
        for f in relinked:
            c = self.frags[f].cur
            new_links = tuple(dict.fromkeys(keep if t == drop else t for t in c.links if t != f))
            self.expect_versions(f, [replace(c, links=new_links)], actor, describe)
        self.expect_versions(drop, [replace(d.cur, status="archived")], actor, describe)
        self.events += 1
