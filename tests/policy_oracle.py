"""An independent statement of workbench's read and write rules, for tests only.

Written from the team's policy table (see tests/test_write_policy.py), not from
``workbench/policy.py`` or ``Principal.can_see``: plain Python over this module's own
small model of principals (``Who``), scopes (``Where``) and fragment states (``State``).
It imports nothing from ``workbench``.

Principals have kinds (the team's table, README "What agents may do"): a person may do all of
the below; an agent reads, and writes only inside its write grants (``writes``), never pins or
unpins; a service writes (pins and unpins included) only inside its grants. A write needs every
scope it touches inside a grant: the fragment's scope, and the new one when it moves; for a merge,
both fragments'; for a pin, the pin's scope; for a set, the set's. A refusal for the actor's kind
never hides anything the visibility rules do not already hide.

Where the table can be read two ways, the oracle says so rather than pick one. The one
such place is the session level: "can see scope S" may mean *a member of every level S
sets, session included* (``STRICT``), or *would see a fragment in S with that owner*, the
read rule, under which a fragment's owner sees it even outside its session (``LENIENT``).
Every decision is taken under both readings. The team has since decided for ``LENIENT``
(README, "Who may do what": in a session scope, "see" means a member of the session or the
fragment's own owner), so the checks hold the product to ``DECIDED``; disagreements between the
two readings are still counted, to show how often the choice matters.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

STRICT, LENIENT = "strict", "lenient"
READINGS = (STRICT, LENIENT)
DECIDED = LENIENT
LEVELS = ("org", "repo", "persona", "session")


@dataclass(frozen=True)
class Where:
    """A scope: an org, plus optional repo, persona and session."""

    org: str
    repo: str | None = None
    persona: str | None = None
    session: str | None = None

    def text(self) -> str:
        return ",".join(f"{k}={getattr(self, k)}" for k in LEVELS if getattr(self, k) is not None)

    def inside(self, outer: Where) -> bool:
        """Every level ``outer`` sets, this scope sets to the same value."""
        return all(getattr(outer, k) is None or getattr(outer, k) == getattr(self, k) for k in LEVELS)

    def meets(self, working: Where) -> bool:
        """A fragment in this scope applies where someone works in ``working``: no level
        that both set differs."""
        return all(getattr(self, k) is None or getattr(working, k) is None or getattr(self, k) == getattr(working, k)
                   for k in LEVELS)


@dataclass(frozen=True)
class Who:
    """A principal: org memberships, ORG/REPO and ORG/PERSONA grants (ORG/* for all),
    session names, led scopes, its kind (person, agent or service) and its write grants."""

    name: str
    orgs: frozenset[str] = frozenset()
    repos: frozenset[str] = frozenset()
    personas: frozenset[str] = frozenset()
    sessions: frozenset[str] = frozenset()
    lead_of: tuple[Where, ...] = ()
    kind: str = "person"
    writes: tuple[Where, ...] = ()


@dataclass(frozen=True)
class State:
    """What the rules look at in a fragment: its scope, owner and status; and who receives it
    through a subscription (``receipts``: (principal, subscription scope) pairs, from the test's
    model of published contexts: the fragment is in the context's served version, active, and its
    scope still contains the one it was published with)."""

    scope: Where
    owner: str
    status: str = "active"
    receipts: frozenset[tuple[str, Where]] = frozenset()

    def receives(self, name: str) -> bool:
        return any(who == name for who, _ in self.receipts)


@dataclass(frozen=True)
class Verdict:
    """``allowed``; when refused, ``hidden`` says the refusal must look like an unknown id
    (True), must not (False), or may either way (None). ``why`` is for people."""

    allowed: bool
    hidden: bool | None = False
    why: str = ""

    @staticmethod
    def ok(why: str = "allowed") -> Verdict:
        return Verdict(True, False, why)

    @staticmethod
    def no(why: str, hidden: bool | None = False) -> Verdict:
        return Verdict(False, hidden, why)


def _granted(grants: frozenset[str], org: str, name: str) -> bool:
    return f"{org}/{name}" in grants or f"{org}/*" in grants


def _in_org_repo_persona(who: Who, where: Where) -> bool:
    return (where.org in who.orgs
            and (where.repo is None or _granted(who.repos, where.org, where.repo))
            and (where.persona is None or _granted(who.personas, where.org, where.persona)))


def member_of(who: Who, where: Where) -> bool:
    """Belongs to every level the scope sets, the session included."""
    return _in_org_repo_persona(who, where) and (where.session is None or where.session in who.sessions)


def sees(who: Who, where: Where, owner: str | None) -> bool:
    """The read rule for a fragment in ``where`` owned by ``owner``: its org, and its repo and
    persona when set; a session fragment only for the session's members and its owner."""
    return _in_org_repo_persona(who, where) and (
        where.session is None or where.session in who.sessions or owner == who.name)


def sees_scope(who: Who, where: Where, owner: str | None, reading: str) -> bool:
    """"Can see scope S" for a fragment that will be (or is) owned by ``owner``."""
    return member_of(who, where) if reading == STRICT else sees(who, where, owner)


def leads(who: Who, where: Where) -> bool:
    """A lead of a scope leads every scope inside it."""
    return any(where.inside(led) for led in who.lead_of)


def kind_refusal(who: Who, pinning: bool, *touched: Where) -> Verdict | None:
    """What the actor's kind says about a write touching these scopes (``pinning``: a pin or an
    unpin): None when it may, else the refusal (never one that looks like an unknown id)."""
    if who.kind == "person":
        return None
    if who.kind == "agent" and pinning:
        return Verdict.no(f"{who.name} is an agent: agents never pin or unpin")
    outside = [w for w in touched if not any(w.inside(g) for g in who.writes)]
    if outside:
        return Verdict.no(f"{who.name} is a {who.kind} without a write grant covering {outside[0].text()}")
    return None


@dataclass
class Oracle:
    """The policy table, over ``principals`` (name -> Who)."""

    principals: dict[str, Who] = field(default_factory=dict)

    def _who(self, name: str) -> Who | None:
        return self.principals.get(name)

    def visible(self, actor: str, state: State | None) -> bool:
        """Reads: a member of the fragment's scope, or a principal who receives it."""
        return self.member_visible(actor, state) or (state is not None and state.receives(actor))

    def member_visible(self, actor: str, state: State | None) -> bool:
        """What every write asks: a received fragment is read-only (refused, but not as unknown)."""
        who = self._who(actor)
        return state is not None and who is not None and sees(who, state.scope, state.owner)

    # -- writes ------------------------------------------------------------------------

    def create(self, actor: str, scope: Where, owner: str, reading: str) -> Verdict:
        """Create in S: the actor can see S, and the owner named can see S."""
        who, own = self._who(actor), self._who(owner)
        if own is None:
            return Verdict.no(f"owner {owner} is not a principal")
        if who is None or not sees_scope(who, scope, owner, reading):
            return Verdict.no(f"{actor} cannot see {scope.text()}")
        if not sees_scope(own, scope, owner, reading):
            return Verdict.no(f"owner {owner} cannot see {scope.text()}")
        return kind_refusal(who, False, scope) or Verdict.ok("create")

    def change(self, actor: str, current: State | None, new: State, *, content_changed: bool,
               reading: str) -> Verdict:
        """A new version of an existing fragment. ``content_changed``: anything besides owner
        and scope differs (body, title, tags, links, sources, status)."""
        who = self._who(actor)
        if current is None or who is None or not sees(who, current.scope, current.owner):
            if current is not None and current.receives(actor):
                return Verdict.no("received through a subscription: read-only")
            return Verdict.no("unknown or invisible fragment", hidden=True)
        if content_changed and not sees_scope(who, current.scope, current.owner, reading):
            return Verdict.no(f"{actor} cannot see the current scope {current.scope.text()}")
        if new.owner != current.owner or new.scope != current.scope:
            if actor != current.owner and not leads(who, current.scope):
                return Verdict.no(f"{actor} is neither the owner ({current.owner}) nor a lead of "
                                  f"{current.scope.text()}")
            own = self._who(new.owner)
            if own is None:
                return Verdict.no(f"new owner {new.owner} is not a principal")
            if not sees_scope(who, new.scope, new.owner, reading):
                return Verdict.no(f"{actor} cannot see the new scope {new.scope.text()}")
            if not sees_scope(own, new.scope, new.owner, reading):
                return Verdict.no(f"new owner {new.owner} cannot see {new.scope.text()}")
        return kind_refusal(who, False, current.scope, new.scope) or Verdict.ok("change")

    def owner_only(self, actor: str, current: State | None) -> Verdict:
        """verify / snooze."""
        if not self.member_visible(actor, current):
            return Verdict.no("unknown, invisible or received fragment", hidden=not self.visible(actor, current))
        if actor != current.owner:
            return Verdict.no(f"only the owner ({current.owner}) may")
        return kind_refusal(self._who(actor), False, current.scope) or Verdict.ok("owner")

    def pin(self, actor: str, current: State | None, where: Where, declared: bool = True) -> Verdict:
        """Pin: a lead of the pin's scope who can see the fragment (the pin must also make
        sense: an active fragment that applies in the pin's scope, same org, and a session
        someone ``declared``: a principal is in it, or a fragment the actor sees is scoped to it)."""
        who = self._who(actor)
        if not self.visible(actor, current):
            return Verdict.no("unknown or invisible fragment", hidden=True)
        received = not self.member_visible(actor, current)   # pinned only inside a scope it is received in
        if received and not any(name == actor and where.inside(s) for name, s in current.receipts):
            return Verdict.no(f"received: {actor} may pin it only where it is received")
        if not leads(who, where):
            return Verdict.no(f"{actor} does not lead {where.text()}")
        refused = kind_refusal(who, True, where)
        if refused:
            return refused
        if not declared:
            return Verdict.no(f"nobody declared the session {where.session}")
        if current.status != "active":
            return Verdict.no("not active")
        if not received and (current.scope.org != where.org or not current.scope.meets(where)):
            return Verdict.no(f"{current.scope.text()} does not apply in {where.text()}")
        return Verdict.ok("pin")

    def unpin(self, actor: str, current: State | None, where: Where, pinned: bool) -> Verdict:
        who = self._who(actor)
        if who is None or not leads(who, where):
            return Verdict.no(f"{actor} does not lead {where.text()}", hidden=None)
        refused = kind_refusal(who, True, where)
        if refused:
            return replace(refused, hidden=None)
        if not self.visible(actor, current):
            return Verdict.no("unknown or invisible fragment", hidden=True)
        if not pinned:
            return Verdict.no("not pinned there", hidden=True)
        return Verdict.ok("unpin")

    def merge(self, actor: str, keep_id: str, drop_id: str, keep: State | None, drop: State | None) -> Verdict:
        """The actor sees both, same org (and, to make sense, two distinct active fragments)."""
        if keep_id == drop_id:
            return Verdict.no("a fragment into itself", hidden=None)
        unseen = [s for s in (keep, drop) if not self.visible(actor, s)]
        for state in (keep, drop):   # in this order: a received one is refused as read-only
            if not self.member_visible(actor, state):
                # a received one beside an invisible one: "read-only" or "unknown <the invisible
                # one>" are both right (neither tells an unknown id from an invisible one)
                hidden = None if unseen and self.visible(actor, state) else not self.visible(actor, state)
                return Verdict.no("unknown, invisible or received fragment", hidden=hidden)
        if keep.scope.org != drop.scope.org:
            return Verdict.no("different orgs")
        if keep.status != "active" or drop.status != "active":
            return Verdict.no("only active fragments")
        return kind_refusal(self._who(actor), False, keep.scope, drop.scope) or Verdict.ok("merge")

    def relinks(self, actor: str, linking: State, reading: str) -> bool:
        """A merge rewrites a link to the dropped fragment only in fragments the actor may change."""
        who = self._who(actor)
        return who is not None and sees(who, linking.scope, linking.owner) and \
            sees_scope(who, linking.scope, linking.owner, reading) and kind_refusal(who, False, linking.scope) is None

    # -- reads -------------------------------------------------------------------------

    def read_trace(self, reader: str, maker: str) -> Verdict:
        return Verdict.ok("own trace") if reader == maker else Verdict.no("someone else's trace", hidden=True)

    def read_set(self, reader: str, set_owner: str, set_scope: Where) -> Verdict:
        """A set's owner, and principals who can see its scope."""
        who = self._who(reader)
        if reader == set_owner or (who is not None and member_of(who, set_scope)):
            return Verdict.ok("set reader")
        return Verdict.no("cannot see the set's scope", hidden=True)

    def define_set(self, actor: str, scope: Where) -> Verdict:
        who = self._who(actor)
        if who is None or not member_of(who, scope):
            return Verdict.no(f"{actor} cannot see {scope.text()}")
        return kind_refusal(who, False, scope) or Verdict.ok("set")

    def exports(self, principal: str, state: State) -> bool:
        """An export of fragment files holds only what its principal sees as a member of its scopes
        (the files are its own knowledge: never a fragment it receives)."""
        return self.member_visible(principal, state)

    def publish(self, actor: str, set_owner: str, set_scope: Where) -> Verdict:
        """Publish a set: a reader of the set who owns it or leads its scope; agents never."""
        who = self._who(actor)
        if who is None or not self.read_set(actor, set_owner, set_scope).allowed:
            return Verdict.no("cannot read the set", hidden=True)
        if actor != set_owner and not leads(who, set_scope):
            return Verdict.no(f"{actor} neither owns the set nor leads {set_scope.text()}")
        return kind_refusal(who, True, set_scope) or Verdict.ok("publish")

    def subscribe(self, actor: str, scope: Where) -> Verdict:
        """Subscribe a scope: a lead of it; agents never."""
        who = self._who(actor)
        if who is None or not leads(who, scope):
            return Verdict.no(f"{actor} does not lead {scope.text()}")
        return kind_refusal(who, True, scope) or Verdict.ok("subscribe")


def both(decide) -> dict[str, Verdict]:
    """A decision under each reading: ``both(lambda r: oracle.create(..., reading=r))``."""
    return {r: decide(r) for r in READINGS}
