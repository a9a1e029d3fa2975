"""Check a bundle's records before anything of it is written: an import is a write like any other.

Each record (a fragment with its whole history, see export/bundle.py) must pass what a fragment
file passes (a safe id, the schema, declared scope, known owner, real timestamps, the secret
guard), its history must run v1, v2, ... with every content hash matching its content, and the
policy must allow the importer each version it would write. An existing fragment may only be
extended: its local history must be a prefix of the bundle's. Any problem anywhere refuses the
whole bundle, naming the fragment, and nothing is written. No store access: the caller passes
the local state in and writes the plan out.

Before any of that, every record is checked against ``schemas/bundle-record.schema.json`` and
the manifest against the records (its count, its pins: each of a fragment in the bundle).

A bundle also carries its set's definition and the pins in force for it. Neither can make the
whole bundle fail once it is valid: the set is restored only when no set of its name exists
here (owned by the importer; the source owner is kept as a claim), an existing set is never
changed (same definition: unchanged; another: a conflict, reported), and each pin is restored
only for an importer who leads its scope (the others are reported as skipped, never written).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Callable, Mapping

from .. import policy
from ..config import WorkspaceConfig
from ..errors import UserError, ValidationError, WorkbenchError
from ..models import PROPOSAL_STATUSES, Content, Fragment, IngestReport, Principal, Scope, Version
from ..schemas import validate
from .files import ParsedFragment, check_fragment_id, check_timestamp, front_matter_data
from .importer import check_semantics, guard_secrets

MAX_VERSIONS = 10_000
_FAR_FUTURE = datetime(9999, 12, 30)  # a pin's ``until`` may lie anywhere ahead


@dataclass(frozen=True)
class PlannedVersion:
    number: int
    content: Content
    at: datetime
    reason: str               # the bundle's reason, with its claimed author (a claim, not an author)


@dataclass
class PlannedFragment:
    id: str
    new: bool
    versions: list[PlannedVersion]          # only the versions to write
    created_at: datetime | None = None
    verified_at: datetime | None = None
    overrides: dict[int, list[dict[str, str]]] = field(default_factory=dict)


@dataclass
class BundlePlan:
    fragments: list[PlannedFragment]
    unchanged: list[str]
    problems: list[str]


def _version_content(raw: Any, *, where: str, fid: str) -> Content:
    if not isinstance(raw, dict):
        raise WorkbenchError(f"{where}: content is not a mapping")
    try:
        content = Content.from_dict(raw)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise WorkbenchError(f"{where}: malformed content ({type(e).__name__}: {e})") from None
    data = front_matter_data(fid, content)
    validate("fragment", data, file=where)
    if not content.body and content.kind != "anti-pattern":
        raise WorkbenchError(f"{where}: body is empty")
    return content


def check_record(record: Any, *, config: WorkspaceConfig, actor: Principal, current: Fragment | None,
                 local: list[Version], checksum: str, allow_secret: bool, now: datetime) -> PlannedFragment | None:
    """The versions to write for one record (None: the local fragment already has them all).
    Raises WorkbenchError with a message naming the fragment."""
    if not isinstance(record, dict):
        raise WorkbenchError("a record is not a JSON object")
    fid = check_fragment_id(record.get("id"), file="bundle")
    where = f"bundle: {fid}"
    versions = record.get("versions")
    if not isinstance(versions, list) or not versions or len(versions) > MAX_VERSIONS:
        raise WorkbenchError(f"{where}: needs a list of 1 to {MAX_VERSIONS} versions")
    planned: list[PlannedVersion] = []
    contents: list[Content] = []
    previous_at: datetime | None = None
    overrides: dict[int, list[dict[str, str]]] = {}
    for i, v in enumerate(versions, start=1):
        vwhere = f"{where}@v{i}"
        if not isinstance(v, dict) or v.get("version") != i:
            got = v.get("version") if isinstance(v, dict) else v
            raise WorkbenchError(f"{where}: history is not contiguous from v1 (entry {i} is version {got!r})")
        content = _version_content(v.get("content"), where=vwhere, fid=fid)
        if v.get("content_hash") != content.content_hash():
            raise WorkbenchError(f"{vwhere}: content hash does not match the content")
        check_semantics(ParsedFragment(fid, content, None, None, None, vwhere), config)
        at = check_timestamp("created_at", v.get("created_at"), file=vwhere, now=now)
        if at is None:
            raise WorkbenchError(f"{vwhere}: created_at is missing")
        if previous_at is not None and at < previous_at:
            raise WorkbenchError(f"{vwhere}: created_at is earlier than v{i - 1}'s")
        previous_at = at
        found: list[dict[str, str]] = []
        guard_secrets(content, file=vwhere, allow=allow_secret, overrides=found)
        if found:
            overrides[i] = found
        claimed = str(v.get("author") or "unknown")[:200]
        reason = str(v.get("reason") or "")[:2000]
        planned.append(PlannedVersion(i, content, at, f"import bundle {checksum[:12]}: {reason} (by {claimed} "
                                                     "in the source workspace)"))
        contents.append(content)
    last = versions[-1]
    if planned[-1].content.status in PROPOSAL_STATUSES:  # bundles carry knowledge; a proposal is not yet
        raise WorkbenchError(f"{where}: is a proposal ({planned[-1].content.status}): only active or archived "
                             "fragments are imported")
    if record.get("version") != len(versions) or record.get("content_hash") != last.get("content_hash"):
        raise WorkbenchError(f"{where}: the record's version or hash disagrees with its last version")
    created_at = check_timestamp("created_at", record.get("created_at"), file=where, now=now)
    verified_at = check_timestamp("verified_at", record.get("verified_at"), file=where, now=now)

    if current is None:
        for pv in planned:  # a new fragment: the importer creates every version, in its scope
            decision = policy.may(actor, "create", pv.content.scope, owner=config.principals.get(pv.content.owner))
            if not decision:
                raise WorkbenchError(f"{where}@v{pv.number}: {decision.message}")
        return PlannedFragment(fid, True, planned, created_at or planned[0].at, verified_at, overrides)

    if not policy.sees(actor, current):
        raise WorkbenchError(f"{where}: {policy.taken_message(fid)}")
    if len(local) > len(planned) or any(lv.content_hash != pv.content.content_hash()
                                        for lv, pv in zip(local, planned)):
        raise WorkbenchError(f"{where}: conflict: the local history (v1..v{len(local)}) is not a prefix of the "
                             "bundle's; nothing imported")
    extra = planned[len(local):]
    if not extra:
        return None
    state = current
    for pv in extra:  # each appended version is a change to a fragment that exists here
        decision = policy.may_write(actor, state, pv.content, principals=config.principals)
        if not decision:
            raise WorkbenchError(f"{where}@v{pv.number}: {decision.message}")
        state = replace(state, content=pv.content, version=pv.number, content_hash=pv.content.content_hash())
    if extra[0].at < local[-1].created_at:
        raise WorkbenchError(f"{where}@v{extra[0].number}: created_at is earlier than the local v{len(local)}")
    owner_verifies = verified_at if actor.name == extra[-1].content.owner else None
    return PlannedFragment(fid, False, extra, None, owner_verifies,
                           {n: o for n, o in overrides.items() if n > len(local)})


def plan_import(records: list[Any], *, config: WorkspaceConfig, actor: Principal,
                currents: Mapping[str, Fragment], histories: Mapping[str, list[Version]], checksum: str,
                allow_secret: bool, now: datetime) -> BundlePlan:
    """Check every record; collect every problem (the caller refuses the bundle if there is any)."""
    plan = BundlePlan([], [], [])
    seen: set[str] = set()
    for n, record in enumerate(records, start=1):
        fid = record.get("id") if isinstance(record, dict) else None
        try:
            if isinstance(fid, str) and fid in seen:
                raise WorkbenchError(f"bundle: {fid}: appears twice")
            item = check_record(record, config=config, actor=actor, current=currents.get(fid),
                                local=list(histories.get(fid, ())), checksum=checksum,
                                allow_secret=allow_secret, now=now)
        except WorkbenchError as e:
            plan.problems.append(e.message if "bundle" in e.message else f"bundle record {n}: {e.message}")
            continue
        seen.add(fid)
        if item is None:
            plan.unchanged.append(fid)
        else:
            plan.fragments.append(item)
    return plan


# -- the shape of a bundle: schemas first --------------------------------------------------


def _record_label(record: Any, n: int) -> str:
    fid = record.get("id") if isinstance(record, dict) else None
    try:
        return f"bundle: {check_fragment_id(fid)}"
    except ValidationError:
        return f"bundle record {n}"


def check_shapes(records: list[Any]) -> list[str]:
    """Every record against ``bundle-record.schema.json``: one problem per bad record, naming
    the fragment (or the record's line number when its id is unusable)."""
    problems = []
    for n, record in enumerate(records, start=1):
        label = _record_label(record, n)
        try:
            if isinstance(record, dict) and label.startswith("bundle record"):
                check_fragment_id(record.get("id"), file=label)  # the clearer message for a bad id
            validate("bundle-record", record, file=label)
        except ValidationError as e:
            problems.append(e.message)
    return problems


def check_manifest(manifest: Mapping[str, Any], records: list[Any], *, now: datetime) -> list[str]:
    """The manifest (already valid against its schema) against the records: the count, and each
    pin of a fragment in the bundle, once, with real times."""
    problems = []
    if manifest["fragments"] != len(records):
        problems.append(f"manifest.yaml: fragments is {manifest['fragments']} but fragments.jsonl holds "
                        f"{len(records)} records")
    ids = {r.get("id") for r in records if isinstance(r, dict)}
    seen: set[tuple[str, str]] = set()
    for i, pin in enumerate(manifest.get("pins") or []):
        where = f"manifest.yaml: pins[{i}]"
        if pin["id"] not in ids:
            problems.append(f"{where}: {pin['id']} is not a fragment of this bundle")
        key = (pin["id"], pin["scope"])
        if key in seen:
            problems.append(f"{where}: {pin['id']} is pinned in {pin['scope']} twice")
        seen.add(key)
        try:
            check_timestamp("pinned_at", pin["pinned_at"], file=where, now=now)
            check_timestamp("until", pin["until"], file=where, now=_FAR_FUTURE)
        except ValidationError as e:
            problems.append(e.message)
    return problems


# -- the set and the pins a bundle carries ---------------------------------------------------


@dataclass
class SetPlan:
    """What an import does with the bundle's set: ``restored`` (created, owned by the importer),
    ``unchanged`` (a set of that name here has the same definition), ``conflict`` (it has
    another: nothing written) or ``skipped`` (with the reason)."""

    name: str
    status: str
    message: str | None = None
    claimed_owner: str | None = None
    scope: str | None = None
    query: str | None = None
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    not_restored: list[str] = field(default_factory=list)  # hand-picked ids absent here (or not visible)
    picked: bool = False   # exactly the hand includes (absent from older bundles: false)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "message": self.message,
                "claimed_owner": self.claimed_owner, "scope": self.scope, "query": self.query,
                "picked": self.picked, "include": list(self.include), "exclude": list(self.exclude), "not_restored": list(self.not_restored)}


def plan_set(definition: Mapping[str, Any], *, config: WorkspaceConfig, actor: Principal,
             existing: Mapping[str, Any] | None, present: Callable[[str], bool],
             sees_local: Callable[[str], bool]) -> SetPlan:
    """Decide the set. ``existing``: the local set of that name the actor may read (store row: of the
    same scope if there is one), or None; ``present(id)``:
    the fragment will exist here after the import and the importer sees it; ``sees_local(id)``: the
    importer sees the local fragment (to compare an existing set as the importer sees it)."""
    name = definition["name"]
    if "scope" not in definition:
        return SetPlan(name, "skipped", "the bundle carries no set definition (only a name)")
    where = Scope.parse(definition["scope"])
    include = [i for i in definition["include"] if present(i)]
    exclude = [i for i in definition["exclude"] if present(i)]
    plan = SetPlan(name, "restored", None, definition["owner"], str(where), definition["query"], include, exclude,
                   [i for i in (*definition["include"], *definition["exclude"]) if not present(i)],
                   bool(definition.get("picked", False)))
    if plan.picked and plan.query is not None:
        plan.status, plan.message = "skipped", "a picked set takes no query: the bundle's set is not restored"
        return plan
    if existing is not None:
        local = (Scope.parse(existing["scope"]), existing["query"], bool(existing.get("picked")),
                 sorted(i for i in existing["include"] if sees_local(i)),
                 sorted(i for i in existing["exclude"] if sees_local(i)))
        differ = [what for what, mine, theirs in zip(("scope", "query", "picked", "include", "exclude"), local,
                                                     (where, plan.query, plan.picked, sorted(include), sorted(exclude)))
                  if mine != theirs]
        if differ:
            plan.status = "conflict"
            plan.message = (f"a set named {name!r} exists here (owner {existing['owner']}) with another "
                            f"{', '.join(differ)}; it is left as it is, nothing of the bundle's set written")
        else:
            plan.status, plan.message = "unchanged", f"a set named {name!r} with this definition exists here"
        return plan
    problem = config.check_scope(where)
    if problem is None:
        problem = policy.may(actor, "create-set", where).message or None
    if problem:
        plan.status, plan.message = "skipped", problem
    return plan


@dataclass
class PinPlan:
    """One pin of the bundle: ``restored`` (written, pinned by the importer), ``unchanged`` (pinned
    here already) or ``skipped`` (the importer may not pin there, or it expired; never written)."""

    id: str
    scope: str
    claimed_by: str
    pinned_at: datetime
    reason: str | None
    until: datetime | None
    status: str
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        ts = lambda v: None if v is None else v.isoformat() + "Z"  # noqa: E731
        return {"id": self.id, "scope": self.scope, "status": self.status, "message": self.message,
                "claimed_by": self.claimed_by, "pinned_at": ts(self.pinned_at), "reason": self.reason,
                "until": ts(self.until)}


def plan_pins(pins: list[Mapping[str, Any]], *, config: WorkspaceConfig, actor: Principal,
              fragments: Mapping[str, Fragment], local: set[tuple[str, str]], now: datetime,
              declared: Callable[[str], bool] = lambda session: False) -> list[PinPlan]:
    """Decide each pin (``check_manifest`` has passed). ``fragments``: every fragment of the bundle
    as it will be after the import; ``local``: the (fragment id, scope) pins here; ``declared(s)``:
    session ``s`` is declared here (or by a fragment of the bundle the importer sees)."""
    from ..curate.pins import check_pin

    out = []
    for pin in pins:
        where = Scope.parse(pin["scope"])
        plan = PinPlan(pin["id"], str(where), pin["pinned_by"],
                       check_timestamp("pinned_at", pin["pinned_at"], now=now), pin["reason"],
                       check_timestamp("until", pin["until"], now=_FAR_FUTURE), "restored")
        fragment = fragments[pin["id"]]
        problem = config.check_scope(where)
        if problem is None and where.session is not None and not declared(where.session) and not any(
                f.scope.session == where.session and policy.sees(actor, f) for f in fragments.values()):
            problem = f"unknown session {where.session!r}: no principal or fragment here declares it"
        if problem is None and plan.until is not None and plan.until <= now:
            problem = f"expired on {plan.until.isoformat()}Z"
        if problem is None:
            decision = policy.may(actor, "pin", fragment, scope=where)
            problem = None if decision else decision.message
        if problem is None:
            try:
                check_pin(fragment.scope, where, fragment.id, fragment.status)
            except UserError as e:
                problem = e.message
        if problem:
            plan.status, plan.message = "skipped", problem
        elif (plan.id, plan.scope) in local:
            plan.status, plan.message = "unchanged", f"already pinned in {plan.scope} here"
        out.append(plan)
    return out


@dataclass
class BundleReport(IngestReport):
    """An ``IngestReport`` of the fragments, plus what became of the bundle's set and pins."""

    set_plan: SetPlan | None = None
    pin_plans: list[PinPlan] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["set"] = self.set_plan.to_dict() if self.set_plan else None
        data["pins"] = [p.to_dict() for p in self.pin_plans]
        return data

