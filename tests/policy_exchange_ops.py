"""Operations of the write-policy property test that move knowledge in and out: bundle imports
(hand-made or exported earlier), reads, file and bundle exports, curated sets, search and traces.
Each draws its inputs, asks the oracle, runs the real call and checks the outcome (see
policy_machine.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hypothesis import strategies as st
from policy_machine import STATS
from policy_oracle import LENIENT, READINGS, STRICT, Verdict, Where, both, sees
from policy_workspace import SET_NAMES, C, bundle_record, c_of, iso, utcnow_naive, write_bundle

from workbench.errors import UserError
from workbench.models import Content


class ExchangeOps:
    # -- bundles in -----------------------------------------------------------------------------

    def draw_record(self, data, actor: str, taken: set[str]):
        """(id, contents, times) for one bundle record: a new fragment, an extension of a local
        one, a tampered history, or an exact copy."""
        kind = data.draw(st.sampled_from(("new", "new", "extend", "extend", "tamper", "same")))
        existing = sorted(set(self.frags) - taken)
        if kind != "new" and existing:
            fid = data.draw(st.sampled_from(existing))
            local = self.wb.store.versions(fid)
            contents = [c_of(v.content) for v in local]
            times = [iso(v.created_at) for v in local]
            if kind == "tamper":
                contents[0] = replace(contents[0], body=contents[0].body + " tampered")
            if kind in ("extend", "tamper"):
                for _ in range(data.draw(st.integers(1, 2))):
                    contents.append(self.mutate(data, fid, contents[-1], actor))
                    if contents[-1] == contents[-2]:
                        contents[-1] = replace(contents[-1], body=contents[-1].body + " more")
                    times.append(iso(utcnow_naive()))
            return fid, contents, times
        fid = self.draw_id(data)
        while fid in taken:
            fid = f"{fid}x"
        contents = [self.fresh_content(data, fid, actor)]
        if data.draw(st.booleans()):
            contents.append(self.mutate(data, fid, contents[0], actor))
            if contents[-1] == contents[-2]:
                contents[-1] = replace(contents[-1], body=contents[-1].body + " more")
        return fid, contents, [f"2025-0{i + 1}-01T00:00:00Z" for i in range(len(contents))]

    def import_verdicts(self, actor: str, records: list[tuple[str, list[C]]]):
        """Per reading: a verdict on the whole bundle, and the versions each fragment gains."""
        out, plans = {}, {}
        for r in READINGS:
            plan, problem = {}, None
            for fid, contents in records:
                valid = all(c.owner in self.people and sees(self.people[c.owner], c.scope, c.owner) and
                            (c.body or c.kind == "anti-pattern") for c in contents)
                cur = self.frags.get(fid)
                if not valid:
                    problem = f"{fid}: invalid content"
                elif cur is None:  # new here: the importer creates every version
                    bad = [v for v in (self.oracle.create(actor, c.scope, c.owner, r) for c in contents)
                           if not v.allowed]
                    problem = f"{fid}: {bad[0].why}" if bad else None
                    plan[fid] = contents
                elif not self.visible(actor, fid):
                    problem = f"{fid}: invisible"
                else:
                    local = [c for c, _ in cur.versions]
                    if len(local) > len(contents) or contents[:len(local)] != local:
                        problem = f"{fid}: the local history is not a prefix"
                    else:
                        state = cur.cur
                        for c in contents[len(local):]:  # each appended version is a change
                            v = self.oracle.change(actor, state.state(), c.state(),
                                                   content_changed=not state.same_besides_owner_scope(c), reading=r)
                            if not v.allowed:
                                problem = f"{fid}: {v.why}"
                                break
                            state = c
                        if contents[len(local):]:
                            plan[fid] = contents[len(local):]
                if problem:
                    break
            out[r] = Verdict.no(problem) if problem else Verdict.ok("import")
            plans[r] = plan
        return out, plans

    def import_bundle(self, data):
        actor = self.draw_actor(data)
        if self.bundles and data.draw(st.integers(0, 3)) == 0:
            folder = data.draw(st.sampled_from(self.bundles))
            records = []
            for line in (folder / "fragments.jsonl").read_text(encoding="utf-8").splitlines():
                r = json.loads(line)
                records.append((r["id"], [c_of(Content.from_dict(v["content"])) for v in r["versions"]]))
            kind = "exported"
        else:
            records, raw, taken = [], [], set()
            for _ in range(data.draw(st.integers(1, 2))):
                fid, contents, times = self.draw_record(data, actor, taken)
                taken.add(fid)
                records.append((fid, contents))
                raw.append(bundle_record(fid, contents, times))
            folder = self.next_path("-bundle")
            write_bundle(folder, raw)
            kind = "hand-made"
        verdicts, plans = self.import_verdicts(actor, records)
        describe = f"import {kind} bundle by {actor}: " + ", ".join(
            f"{fid} x{len(cs)} [{' -> '.join(c.scope.text() + ' owner=' + c.owner for c in cs)}]"
            + (f" (local v{len(self.frags[fid].versions)} {self.frags[fid].cur.scope.text()} "
               f"owner={self.frags[fid].cur.owner})" if fid in self.frags else "") for fid, cs in records)
        hidden = [fid for fid, _ in records if fid in self.frags and not self.visible(actor, fid)]
        ok, report = self.attempt("import", verdicts, lambda: self.wb.import_bundle(folder, actor=actor), describe,
                                  on_refused=lambda e: [self.expect_unchanged_message(
                                      e.message, f, describe, (folder / "fragments.jsonl").read_text("utf-8"))
                                      for f in hidden])
        if not ok:
            return
        plan = plans[LENIENT] if verdicts[LENIENT].allowed else plans[STRICT]
        self.check(sorted(report.added + report.updated) == sorted(plan), f"{describe}: report {report.to_dict()}")
        for fid, contents in plan.items():
            self.expect_versions(fid, contents, actor, describe)
        self.events += 1
        # An exported bundle carries the pins that applied to its set; each one restored must be a pin the
        # oracle lets this importer make, and then the model has it (with its pin event).
        for pin in report.to_dict().get("pins", []):
            if pin["status"] != "restored":
                continue
            where = Where(**dict(part.split("=", 1) for part in pin["scope"].split(",")))
            self.check(self.oracle.pin(actor, self.state_of(pin["id"]), where,
                                       self.session_declared(actor, where.session)).allowed,
                       f"{describe}: restored a pin {pin['id']} in {where.text()} the oracle refuses")
            self.pins[(pin["id"], where.text())] = actor
            self.events += 1

    # -- reads and exports ------------------------------------------------------------------------

    def read_fragment(self, data):
        actor, fid = self.draw_pair(data, self.visible)
        visible = self.visible(actor, fid)
        verdicts = both(lambda r: Verdict.ok("read") if visible else Verdict.no("unknown", hidden=True))
        what = data.draw(st.sampled_from(("get", "history")))
        call = (lambda: self.wb.get(fid, principal=actor)) if what == "get" else \
            (lambda: self.wb.history(fid, principal=actor))
        ok, result = self.attempt(what, verdicts, call, f"{what} {fid} as {actor}", gone=self.gone(actor, fid))
        if ok and what == "history" and not self.oracle.member_visible(actor, self.state_of(fid)):
            # received through a subscription (latest): the version served, and no other
            self.check([v.number for v in result] == [len(self.frags[fid].versions)],
                       f"history {fid} as {actor} (received): {[v.number for v in result]}")
        elif ok and what == "history":
            for v, (c, author) in zip(result, self.frags[fid].versions):
                self.check(v.author == author, f"history {fid}: author {v.author} != {author}")
                shown = not getattr(v, "hidden", False)
                self.check(shown == sees(self.people[actor], c.scope, c.owner),
                           f"history {fid} as {actor}: v{v.number} shown={shown} for {c.scope.text()} "
                           f"owner={c.owner}")

    def export_files(self, data):
        who = self.draw_actor(data)
        out = self.next_path("-files")
        ok, paths = self.attempt("export_files", both(lambda r: Verdict.ok("export")),
                                 lambda: self.wb.export_files(out, principal=who), f"export files as {who}")
        if not ok:
            return
        got = sorted(Path(p).stem for p in paths)
        want = sorted(f for f in self.frags if self.oracle.exports(who, self.frags[f].cur.state()))
        self.check(got == want, f"export files as {who}: {got}, expected exactly what {who} sees: {want}")

    def readable_sets(self, viewer: str, name: str) -> list[tuple[str, str]]:
        """The keys (name, scope) of the sets named ``name`` that ``viewer`` may read."""
        return [key for key, (owner, where, _) in sorted(self.sets.items())
                if key[0] == name and self.oracle.read_set(viewer, owner, where).allowed]

    def create_set(self, data):
        """Sets are named within their scope: a name taken by a set the actor may read is refused;
        one taken only where the actor cannot see answers exactly like a free name (a new set)."""
        actor = self.draw_actor(data)
        unseen = sorted({k[0] for k in self.sets} - {k[0] for k in self.sets if self.readable_sets(actor, k[0])})
        twin = bool(unseen) and data.draw(st.booleans())  # often: a name that exists only where it cannot see
        name = data.draw(st.sampled_from(unseen if twin else SET_NAMES))
        where = data.draw(st.sampled_from(self.scopes[:12])) if not twin and data.draw(st.booleans()) else \
            self.draw_scope(data, actor)
        verdicts = both(lambda r: self.oracle.define_set(actor, where))
        if verdicts[LENIENT].allowed and self.readable_sets(actor, name):
            verdicts = both(lambda r: Verdict.no("the name is taken by a set the actor reads"))
        describe = f"set create {name} in {where.text()} by {actor}"
        hidden_twin = [k for k in self.sets if k[0] == name and k not in self.readable_sets(actor, name)]
        ok, shown = self.attempt("set_create", verdicts,
                                 lambda: self.wb.set_create(name, scope=where.text(), actor=actor), describe)
        if not ok:
            return
        self.check(shown["name"] == name and shown["owner"] == actor, f"{describe}: answered {shown}")
        if hidden_twin:
            STATS["sets_named_like_an_invisible_one"] += 1
        self.events += 1
        includes = []
        mine = [f for f in self.frags if self.visible(actor, f)]
        if mine and data.draw(st.booleans()):
            fid = data.draw(st.sampled_from(mine))
            self.wb.set_change(f"{name}@{where.text()}", fid, include=True, actor=actor)
            self.events += 1
            includes.append(fid)
        self.sets[(name, where.text())] = (actor, where, includes)

    def set_members_bounds(self, key: tuple[str, str], viewer: str) -> tuple[set[str], set[str]]:
        """(must show, may show) of a set to a viewer."""
        owner, where, includes = self.sets[key]
        active = {f for f, m in self.frags.items() if m.cur.status == "active"}
        in_scope = {f for f in active if self.frags[f].cur.scope.org == where.org and
                    self.frags[f].cur.scope.meets(where)}
        seen = {f for f in active if self.visible(viewer, f)}
        owner_seen = {f for f in active if self.visible(owner, f)}
        return (in_scope | set(includes)) & seen & owner_seen, (in_scope | set(includes)) & seen

    def draw_set_ref(self, data, viewer: str) -> tuple[str, dict, tuple[str, str] | None]:
        """(a reference to a set: its name, or NAME@SCOPE; the verdicts of reading it as ``viewer``; the
        key of the set it names for ``viewer``, when readable)."""
        key = data.draw(st.sampled_from(sorted(self.sets)))
        owner, where, _ = self.sets[key]
        if data.draw(st.booleans()):
            verdicts = both(lambda r: self.oracle.read_set(viewer, owner, where))
            return f"{key[0]}@{key[1]}", verdicts, key if verdicts[LENIENT].allowed else None
        readable = self.readable_sets(viewer, key[0])
        if len(readable) == 1:
            return key[0], both(lambda r: Verdict.ok("the one set of that name the viewer reads")), readable[0]
        if readable:
            return key[0], both(lambda r: Verdict.no("the viewer reads several sets of that name")), None
        return key[0], both(lambda r: Verdict.no("no set of that name the viewer reads", hidden=True)), None

    def show_set(self, data):
        if not self.sets:
            return
        viewer = self.draw_actor(data)
        ref, verdicts, key = self.draw_set_ref(data, viewer)
        describe = f"set show {ref} as {viewer}"
        ok, shown = self.attempt("set_show", verdicts, lambda: self.wb.set_show(ref, principal=viewer), describe)
        if not ok:
            return
        ids = {f["id"] for f in shown["fragments"]}
        must, may = self.set_members_bounds(key, viewer)
        self.check(shown["owner"] == self.sets[key][0], f"{describe}: owner {shown['owner']}, not of {key}")
        self.check(must <= ids <= may, f"{describe}: {sorted(ids)}; must show {sorted(must)}, may show {sorted(may)}")

    def export_set_bundle(self, data):
        if not self.sets:
            return
        viewer = self.draw_actor(data)
        ref, verdicts, key = self.draw_set_ref(data, viewer)
        out = self.next_path("-export")
        describe = f"export bundle {ref} as {viewer}"
        if not self.attempt("export_bundle", verdicts,
                            lambda: self.wb.export_bundle(ref, out, principal=viewer), describe)[0]:
            return
        records = [json.loads(line) for line in (out / "fragments.jsonl").read_text(encoding="utf-8").splitlines()]
        _, may = self.set_members_bounds(key, viewer)
        for r in records:
            self.check(r["id"] in may, f"{describe}: holds {r['id']}, not in what {viewer} may get {sorted(may)}")
            for v in r["versions"]:
                c = c_of(Content.from_dict(v["content"]))
                self.check(sees(self.people[viewer], c.scope, c.owner),
                           f"{describe}: {r['id']}@v{v['version']} in {c.scope.text()} (owner {c.owner}) is "
                           f"not visible to {viewer}")
        self.bundles.append(out)

    def search_and_trace(self, data):
        maker = self.draw_actor(data)
        reader = self.draw_actor(data, prefer=lambda n: n == maker)
        try:
            result = self.wb.search(self.word(data), principal=maker, pipeline="bm25", k=20)
        except UserError as e:
            self.fail(f"search as {maker}: {e}")
        for hit in result.hits + result.avoid:
            self.check(self.visible(maker, hit.id), f"search as {maker} served {hit.id}, which {maker} cannot see")
            received = not self.oracle.member_visible(maker, self.state_of(hit.id))
            self.check(hit.via == (self.context[0] if received else None),
                       f"search as {maker}: {hit.id} via {hit.via}, received: {received}")
        self.traces.append((result.trace_id, maker))
        tid, owner = data.draw(st.sampled_from(self.traces))
        verdicts = both(lambda r: self.oracle.read_trace(reader, owner))
        ok, trace = self.attempt("trace", verdicts, lambda: self.wb.trace(tid, principal=reader),
                                 f"trace {tid} (by {owner}) as {reader}")
        if ok:
            for item in trace["served"]:
                c, _ = self.frags[item["id"]].versions[item["version"] - 1]
                now = self.state_of(item["id"])   # received: shown while received, at the version served now
                self.check(sees(self.people[reader], c.scope, c.owner) or (
                    now.receives(reader) and item["version"] == len(self.frags[item["id"]].versions)),
                           f"trace {tid} as {reader} shows {item['id']}@v{item['version']} in {c.scope.text()}")
