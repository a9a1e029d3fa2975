"""The state machine of the write-policy property test: its state, checks and bookkeeping.

``MachineBase`` keeps a model of the workspace (fragments with their histories and authors, pins,
snoozes, verifications, sets, traces, events) in step with a real one, and checks every operation
against ``policy_oracle`` under both readings: allowed means exactly the expected versions, by
the actor; refused means the expected kind of ``UserError`` and a store the model still describes.
The operations themselves live in policy_write_ops.py and policy_exchange_ops.py.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from policy_oracle import DECIDED, LENIENT, STRICT, Oracle, State, Verdict, Where, both, member_of, sees
from policy_workspace import (
    GHOST,
    ID_POOL,
    UNKNOWN_OWNER,
    WORDS,
    C,
    all_scopes,
    c_of,
    configs,
    content_hash,
    fresh_workspace,
)

from workbench import Workbench
from workbench.errors import NotFound, UserError

OPERATIONS = (("ingest_file",) * 3 + ("add_antipattern",) * 2 + ("edit_body",) * 2 + ("edit_whole_file",) * 3
              + ("archive_or_restore",) * 2 + ("revert",) * 2 + ("verify_or_snooze",) * 2 + ("pin",) * 2
              + ("unpin",) * 2 + ("merge",) * 3 + ("import_bundle",) * 3 + ("read_fragment",) * 2
              + ("export_files", "create_set", "show_set", "export_set_bundle", "search_and_trace")
              + ("publish", "subscribe") * 2)   # policy_publish_ops.py

STATS: dict = {}


def reset_stats() -> None:
    STATS.clear()
    STATS.update({"examples": 0, "principals": 0, "operations": 0, "allowed": 0, "refused": 0, "ambiguous": 0,
                  "violations": 0, "by_op": defaultdict(Counter), "refusal_errors": defaultdict(Counter),
                  "ambiguous_outcomes": Counter(), "merge_links": Counter(), "by_kind": defaultdict(Counter),
                  "sets_named_like_an_invisible_one": 0})


reset_stats()


@dataclass
class Frag:
    versions: list[tuple[C, str]]          # (content, author)

    @property
    def cur(self) -> C:
        return self.versions[-1][0]


class Violation(AssertionError):
    pass


class MachineBase(RuleBasedStateMachine):
    base: Path = Path("/tmp")
    new_database = None  # a maker of fresh PostgreSQL databases (their URLs), or None: DuckDB files

    def __init__(self):
        super().__init__()
        self.wb = None
        self.frags: dict[str, Frag] = {}
        self.pins: dict[tuple[str, str], str] = {}
        self.snoozed: set[str] = set()
        self.verified: set[str] = set()
        self.sets: dict[tuple[str, str], tuple[str, Where, list[str]]] = {}  # (name, scope) → owner, scope, ids
        self.context: tuple[str, tuple[str, str]] | None = None   # the published context: (ORG/SET, set key)
        self.published: dict[str, Where] = {}    # its latest version: fragment id → the scope it was published with
        self.subscribed: list[Where] = []        # the scopes subscribing to it
        self.traces: list[tuple[str, str]] = []
        self.bundles: list[Path] = []
        self.events = 0
        self.n = 0
        self.log: list[str] = []

    # -- set-up and tear-down ------------------------------------------------------------

    @initialize(cfg=configs())
    def setup(self, cfg):
        sessions, people = cfg
        self.sessions = sessions
        self.people = {w.name: w for w in people}
        self.names = [w.name for w in people]
        self.oracle = Oracle(dict(self.people))
        self.scopes = all_scopes(sessions)
        self.root = fresh_workspace(self.base, people, STATS["examples"], type(self).new_database)
        self.work = self.root.parent
        self.wb = Workbench.open(self.root)
        STATS["examples"] += 1
        STATS["principals"] += len(people)
        self.log.append("config: " + "; ".join(
            f"{w.name} ({w.kind}) orgs={sorted(w.orgs)} repos={sorted(w.repos)} personas={sorted(w.personas)} "
            f"sessions={sorted(w.sessions)} lead_of={[s.text() for s in w.lead_of]} "
            f"writes={[s.text() for s in w.writes]}" for w in people))

    def teardown(self):
        if self.wb is None:
            return
        if os.environ.get("WORKBENCH_POLICY_LOG"):  # every operation and its outcome, for reading
            with open(os.environ["WORKBENCH_POLICY_LOG"], "a", encoding="utf-8") as out:
                out.write("\n".join(self.log) + "\n\n")
        try:
            self.full_check()
        finally:
            self.wb.close()
            shutil.rmtree(self.work, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------

    def fail(self, message: str):
        STATS["violations"] += 1
        raise Violation(message + "\n-- recent operations --\n" + "\n".join(self.log[:1] + self.log[-12:]))

    def check(self, ok: bool, message: str):
        if not ok:
            self.fail(message)

    def state_of(self, fid: str) -> State | None:
        """A fragment's state, with who receives it (the model of policy/receiving.py, see PublishOps)."""
        f = self.frags.get(fid)
        if f is None:
            return None
        state = f.cur.state()
        where = self.published.get(fid)
        if where is None or state.status != "active" or not where.inside(state.scope):
            return state
        receipts = frozenset((w.name, s) for s in self.subscribed for w in self.people.values() if member_of(w, s))
        STATS["received_states"] = STATS.get("received_states", 0) + bool(receipts)
        return replace(state, receipts=receipts)

    def visible(self, who: str, fid: str) -> bool:
        return self.oracle.visible(who, self.state_of(fid))

    def gone(self, who: str, *fids: str) -> list[str]:
        """The ids among ``fids`` that do not exist for ``who``."""
        return [f for f in fids if not self.visible(who, f)]

    def snapshot(self):
        """The store's substance: counts, each fragment's version, content hash and verified
        flag, pins, snoozes and set names."""
        s = self.wb.store
        return (s.counts(), {fid: (h[1], h[0], h[3] is not None) for fid, h in s.hashes().items()},
                {(p["fragment_id"], p["scope"]): p["pinned_by"] for p in s.pins()}, set(s.snoozes()),
                sorted(s.set_names()))  # (name, scope, owner): sets are named within their scope

    def expected_snapshot(self):
        """What ``snapshot`` must say, from the model alone."""
        return ({"fragments": len(self.frags), "versions": sum(len(f.versions) for f in self.frags.values()),
                 "events": self.events},
                {fid: (len(f.versions), content_hash(f.cur), fid in self.verified) for fid, f in self.frags.items()},
                dict(self.pins), set(self.snoozed),
                sorted((name, scope, owner) for (name, scope), (owner, _, _) in self.sets.items()))

    def unchanged(self, describe: str, what: str = "refused"):
        """A refused (or no-op) operation left the store exactly as the model has it."""
        got, want = self.snapshot(), self.expected_snapshot()
        if got != want:
            parts = ("counts", "fragments", "pins", "snoozes", "sets")
            diff = [f"{name}: store {g} != model {w}" for name, g, w in zip(parts, got, want) if g != w]
            self.fail(f"{describe}: {what}, but the store changed: " + "; ".join(diff))

    def next_path(self, suffix: str = "") -> Path:
        self.n += 1
        return self.work / "io" / f"{self.n}{suffix}"

    def word(self, data) -> str:
        return data.draw(st.sampled_from(WORDS))

    def draw_actor(self, data, prefer=None) -> str:
        if prefer and data.draw(st.booleans()):
            good = [n for n in self.names if prefer(n)]
            if good:
                return data.draw(st.sampled_from(good))
        return data.draw(st.sampled_from(self.names))

    def session_declared(self, actor: str, session: str | None) -> bool:
        """A pin's session is declared: a principal is in it, or a fragment ``actor`` sees is scoped to it."""
        return session is None or any(session in w.sessions for w in self.people.values()) or any(
            f.cur.scope.session == session and self.visible(actor, fid) for fid, f in self.frags.items())

    def draw_scope(self, data, for_who: str | None = None, also: str | None = None) -> Where:
        """Any scope; or (mostly) one ``for_who`` (and ``also``, if given) belongs to; or one they
        belong to but for its session (where the two readings of "can see S" part); or one they do
        not belong to but ``also`` (or anyone) does."""
        choice = data.draw(st.integers(0, 5)) if for_who is not None else 0
        if choice:
            who = self.people[for_who]
            other = self.people.get(also, who)
            if choice <= 3:
                mine = [w for w in self.scopes if member_of(who, w) and member_of(other, w)]
            elif choice == 4:
                mine = [w for w in self.scopes if w.session and not member_of(who, w) and sees(who, w, who.name)]
            else:
                mine = [w for w in self.scopes if not member_of(who, w) and
                        (member_of(other, w) if also else any(member_of(p, w) for p in self.people.values()))]
            if mine:
                return data.draw(st.sampled_from(mine))
        return data.draw(st.sampled_from(self.scopes))

    def draw_owner(self, data, scope: Where, actor: str, avoid: str | None = None) -> str:
        """Rarely an unknown name; often the actor; else mostly someone who belongs to ``scope``
        (other than ``avoid``, the current owner, when there is such a one)."""
        choice = data.draw(st.integers(0, 11))
        if choice == 0:
            return UNKNOWN_OWNER
        if choice <= 3 and actor != avoid:
            return actor
        good = [n for n in self.names if member_of(self.people[n], scope) and n != avoid]
        if good and choice <= 10:
            return data.draw(st.sampled_from(good))
        return data.draw(st.sampled_from([n for n in self.names if n != avoid] or self.names))

    def draw_target(self, data, prefer=None) -> str:
        existing = sorted(self.frags)
        if existing and data.draw(st.integers(0, 7)) > 0:
            if prefer and data.draw(st.booleans()):
                good = [f for f in existing if prefer(f)]
                if good:
                    return data.draw(st.sampled_from(good))
            return data.draw(st.sampled_from(existing))
        return data.draw(st.sampled_from((*ID_POOL, GHOST)))

    def draw_id(self, data, collide: int = 2) -> str:
        """An id of the shared pool (so ids collide: ``collide`` in 4 times), else a new one."""
        if data.draw(st.integers(0, 3)) < collide:
            return data.draw(st.sampled_from(ID_POOL))
        self.n += 1
        return f"n{self.n}"

    def draw_pair(self, data, ok) -> tuple[str, str]:
        """(actor, fragment id): mostly a pair for which ``ok(actor, fid)`` holds, else any."""
        if self.frags and data.draw(st.integers(0, 2)) > 0:
            pairs = [(a, f) for a in self.names for f in sorted(self.frags) if ok(a, f)]
            if pairs:
                return data.draw(st.sampled_from(pairs))
        return self.draw_actor(data), self.draw_target(data)

    def draw_links(self, data, fid: str) -> tuple[str, ...]:
        targets = sorted((set(ID_POOL) | set(self.frags)) - {fid})
        return tuple(data.draw(st.lists(st.sampled_from(targets), unique=True, max_size=2)))

    def fresh_content(self, data, fid: str, actor: str, kind: str | None = None) -> C:
        scope = self.draw_scope(data, actor)
        self.n += 1
        return C(kind or data.draw(st.sampled_from(("note", "runbook", "decision"))),
                 f"T{self.n} {self.word(data)}", f"{self.word(data)} {self.word(data)} body {self.n}",
                 scope, self.draw_owner(data, scope, actor), "active",
                 tuple(data.draw(st.lists(st.sampled_from(WORDS), unique=True, max_size=2))),
                 self.draw_links(data, fid))

    def mutate(self, data, fid: str, base: C, actor: str) -> C:
        """A change of some of: owner, scope, title/tags, body."""
        what = data.draw(st.sampled_from(("owner", "scope", "both", "title", "body", "owner+body", "nothing")))
        new = base
        self.n += 1
        if what in ("scope", "both"):
            new = replace(new, scope=self.draw_scope(data, actor, also=base.owner if what == "scope" else None))
        if what in ("owner", "both", "owner+body"):
            new = replace(new, owner=self.draw_owner(data, new.scope, actor, avoid=base.owner))
        if what == "title":
            new = replace(new, title=f"T{self.n} {self.word(data)}", tags=(self.word(data),),
                          links=self.draw_links(data, fid))
        if what in ("body", "owner+body"):
            new = replace(new, body=f"{self.word(data)} edited {self.n}")
        return new

    def change_verdicts(self, actor: str, fid: str, new: C) -> dict[str, Verdict]:
        cur = self.frags.get(fid)
        if cur is None:
            return both(lambda r: Verdict.no("unknown fragment", hidden=True))
        changed = not cur.cur.same_besides_owner_scope(new)
        return both(lambda r: self.oracle.change(actor, self.state_of(fid), new.state(), content_changed=changed,
                                                 reading=r))

    def count(self, op: str, verdicts: dict[str, Verdict], outcome: str, error: Exception | None = None):
        STATS["operations"] += 1
        STATS[outcome] += 1
        STATS["by_op"][op][outcome] += 1
        kind = next((w for w in self.people.values() if f" by {w.name}" in self.log[-1]), None)
        if kind is not None:
            STATS["by_kind"][f"{kind.kind}{' with grants' if kind.writes else ''}"][outcome] += 1
        if verdicts[STRICT].allowed != verdicts[LENIENT].allowed:
            STATS["ambiguous"] += 1
            followed = STRICT if (outcome == "allowed") == verdicts[STRICT].allowed else LENIENT
            STATS["ambiguous_outcomes"][f"{op}: {outcome} (the {followed} reading)"] += 1
            self.log[-1] += f"  [ambiguous: strict {verdicts[STRICT].why}; lenient {verdicts[LENIENT].why}]"
        if error is not None:
            STATS["refusal_errors"][op][type(error).__name__] += 1

    def attempt(self, op: str, verdicts: dict[str, Verdict], call, describe: str, on_refused=None,
                gone: list[str] = ()):
        """Run ``call``; check it against the verdicts (under both readings). Returns (True, result),
        or (False, None) when it was (rightly) refused; ``on_refused(error)`` checks a refusal further.
        ``gone``: the target ids, in the order they are looked up, that the actor may not see (or
        that do not exist): the first is the one the refusal must call unknown, in the very words
        used for an id that never existed."""
        allowed = {verdicts[DECIDED].allowed}
        try:
            result = call()
        except UserError as e:
            self.log.append(f"{describe} -> refused {type(e).__name__}: {e}")
            self.count(op, verdicts, "refused", e)
            self.check(allowed != {True}, f"{describe}: refused ({type(e).__name__}: {e}) but the oracle allows "
                                          f"({verdicts[DECIDED].why})")
            hidden = {verdicts[DECIDED].hidden} if not verdicts[DECIDED].allowed else set()
            if hidden == {True}:
                self.check(isinstance(e, NotFound), f"{describe}: the target is unknown or invisible to the actor, "
                                                    f"so NotFound was expected, got {type(e).__name__}: {e}")
                if gone:
                    self.check(str(e) == f"unknown fragment {gone[0]!r}",
                               f"{describe}: {str(e)!r} is not what an unknown id answers")
            elif hidden == {False}:
                self.check(not isinstance(e, NotFound), f"{describe}: the target is visible, yet NotFound: {e} "
                                                        f"(oracle: {verdicts[DECIDED].why})")
            self.unchanged(describe)
            if on_refused is not None:
                on_refused(e)
            return False, None
        except Exception as e:  # noqa: BLE001 - anything else is a violation
            self.log.append(f"{describe} -> crashed {type(e).__name__}: {e}")
            self.fail(f"{describe}: raised {type(e).__name__} (not a UserError): {e}")
        self.log.append(f"{describe} -> ok")
        self.count(op, verdicts, "allowed")
        self.check(allowed != {False}, f"{describe}: succeeded but the oracle refuses: {verdicts[DECIDED].why}")
        return True, result

    def expect_versions(self, fid: str, new: list[C], actor: str, describe: str):
        """The store appended exactly ``new`` to ``fid``'s history, each authored by ``actor``;
        the model follows."""
        model = self.frags.get(fid)
        old = list(model.versions) if model else []
        stored = [(c_of(v.content), v.author) for v in self.wb.store.versions(fid)]
        expected = old + [(c, actor) for c in new]
        self.check(stored == expected, f"{describe}: history of {fid} is\n  {stored}\nexpected\n  {expected}")
        current = self.wb.store.get(fid)
        self.check(current is not None and c_of(current.content) == expected[-1][0] and
                   current.version == len(expected), f"{describe}: current {fid} is not the last version")
        self.frags[fid] = Frag(expected)

    def expect_unchanged_message(self, message: str, hidden_fid: str, describe: str, given: str):
        """A refusal that involves a fragment the actor may not see names nothing about it
        (nothing the actor's own input, ``given``, did not already hold)."""
        f = self.frags[hidden_fid].cur
        for secret in (s for s in (f.title, f.body, f.owner) if s not in given):
            self.check(secret not in message, f"{describe}: the refusal {message!r} reveals {secret!r} of an "
                                              f"invisible fragment")

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def counts_match(self):
        if self.wb is None:
            return
        counts = self.wb.store.counts()
        expected = {"fragments": len(self.frags), "versions": sum(len(f.versions) for f in self.frags.values()),
                    "events": self.events}
        self.check(counts == expected, f"store counts {counts} != model {expected}")

    def full_check(self):
        store = self.wb.store
        self.check(sorted(store.ids()) == sorted(self.frags), f"ids {sorted(store.ids())} != {sorted(self.frags)}")
        for fid, f in self.frags.items():
            stored = [(c_of(v.content), v.author) for v in store.versions(fid)]
            self.check(stored == f.versions, f"teardown: history of {fid} differs from the model")
        pins = {(p["fragment_id"], p["scope"]): p["pinned_by"] for p in store.pins()}
        self.check(pins == self.pins, f"teardown: pins {pins} != {self.pins}")
        self.check(set(store.snoozes()) == self.snoozed, "teardown: snoozes differ")
        verified = {f.id for f in store.fragments() if f.verified_at is not None}
        self.check(verified == self.verified, f"teardown: verified {verified} != {self.verified}")

    # -- one step: an operation drawn by weight ---------------------------------------------------

    @rule(data=st.data())
    def step(self, data):
        """One operation, chosen with these weights (rules of their own would be chosen too unevenly)."""
        op = data.draw(st.sampled_from(OPERATIONS), label="operation")
        if op == "unpin" and not self.pins and data.draw(st.integers(0, 3)):
            op = "pin"
        if op in ("show_set", "export_set_bundle") and not self.sets:
            op = "create_set"
        getattr(self, op)(data)
