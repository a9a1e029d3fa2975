"""Check a bundle's records before anything of it is written: an import is a write like any other.

Each record (a fragment with its whole history, see export/bundle.py) must pass what a fragment
file passes (a safe id, the schema, declared scope, known owner, real timestamps, the secret
guard), its history must run v1, v2, ... with every content hash matching its content, and the
policy must allow the importer each version it would write. An existing fragment may only be
extended: its local history must be a prefix of the bundle's. Any problem anywhere refuses the
whole bundle, naming the fragment, and nothing is written. No store access: the caller passes
the local state in and writes the plan out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Mapping

from .. import policy
from ..config import WorkspaceConfig
from ..errors import WorkbenchError
from ..models import Content, Fragment, Principal, Version
from ..schemas import validate
from .files import ParsedFragment, check_fragment_id, check_timestamp, front_matter_data
from .importer import check_semantics, guard_secrets

MAX_VERSIONS = 10_000


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
