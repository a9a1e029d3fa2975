"""Workspaces, fragment content and files for the write-policy property test (test_write_policy.py).

A small world: 2 orgs x 2 repos x 2 personas, 1-2 sessions, 2-5 persons drawn by hypothesis plus
three principals of the other kinds (an agent without a write grant, an agent with one, a service
with grants), written as a real workbench.yaml; fragment content as the test models it (``C``); fragment files
and bundles written here, independently of the product's renderers. No policy decisions here.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import yaml
from hypothesis import strategies as st
from policy_oracle import State, Where, Who, member_of

from workbench import Workbench
from workbench.models import Content

ORGS = {"oa": (("api", "web"), ("dev", "ops")), "ob": (("api", "web"), ("dev", "ops"))}
SESSION_NAMES = ("s1", "s2")
NAMES = ("alice.k", "bruno.k", "chen.k", "dana.k", "emil.k")
UNKNOWN_OWNER = "nobody.k"
ID_POOL = ("f1", "f2", "f3", "f4", "f5", "f6")
GHOST = "ghost-9"
SET_NAMES = ("set-a", "set-b")
WORDS = ("alpha", "deploy", "retry", "ledger", "rollback", "cache")
CLAIMED_AUTHOR = "mallory.k"  # a bundle's claimed author: never a principal, never an author here


# -- the model of fragment content --------------------------------------------------------

@dataclass(frozen=True)
class C:
    """Fragment content as this test models it (no sources or supersedes are ever written)."""

    kind: str
    title: str
    body: str
    scope: Where
    owner: str
    status: str = "active"
    tags: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    details: tuple[tuple[str, str], ...] = ()

    def state(self) -> State:
        return State(self.scope, self.owner, self.status)

    def same_besides_owner_scope(self, other: C) -> bool:
        return replace(self, owner="", scope=Where("")) == replace(other, owner="", scope=Where(""))


def c_of(content) -> C:
    s = content.scope
    return C(content.kind, content.title, content.body, Where(s.org, s.repo, s.persona, s.session), content.owner,
             content.status, tuple(content.tags), tuple(content.links),
             tuple(sorted((k, v) for k, v in content.details)))


def content_dict(c: C) -> dict:
    return {"kind": c.kind, "title": c.title, "body": c.body,
            "scope": {"org": c.scope.org, "repo": c.scope.repo, "persona": c.scope.persona,
                      "session": c.scope.session},
            "owner": c.owner, "status": c.status, "tags": list(c.tags), "links": list(c.links), "supersedes": [],
            "sources": [], "details": dict(c.details)}


def render_file(fid: str, c: C) -> str:
    """A fragment file for ``c`` (written here, not by the product's renderer)."""
    data = {"id": fid, "kind": c.kind, "title": c.title,
            "scope": {k: getattr(c.scope, k) for k in ("org", "repo", "persona", "session")
                      if getattr(c.scope, k) is not None},
            "owner": c.owner, "status": c.status}
    if c.tags:
        data["tags"] = list(c.tags)
    if c.links:
        data["links"] = list(c.links)
    data.update(dict(c.details))
    return "---\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True) + "---\n\n" + c.body + "\n"


def bundle_record(fid: str, contents: list[C], times: list[str]) -> dict:
    versions = []
    for i, (c, at) in enumerate(zip(contents, times), start=1):
        d = content_dict(c)
        versions.append({"version": i, "author": CLAIMED_AUTHOR, "created_at": at, "reason": f"claimed v{i}",
                         "content_hash": Content.from_dict(d).content_hash(), "content": d})
    last = contents[-1]
    return {"id": fid, "version": len(versions), "content_hash": versions[-1]["content_hash"], "owner": last.owner,
            "scope": content_dict(last)["scope"], "kind": last.kind, "title": last.title, "status": last.status,
            "sources": [], "text": last.body, "created_at": times[0], "updated_at": times[-1], "verified_at": None,
            "versions": versions}


def write_bundle(folder: Path, records: list[dict]) -> None:
    """fragments.jsonl and a manifest.yaml with its sha256, as export/bundle.py lays them out."""
    folder.mkdir(parents=True)
    data = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records)
    (folder / "fragments.jsonl").write_text(data, encoding="utf-8")
    manifest = {"format": 1, "set": {"name": "hand-made"}, "fragments": len(records), "model": "none",
                "chunker": "none", "created_at": None,
                "checksum": {"algorithm": "sha256", "file": "fragments.jsonl",
                             "value": hashlib.sha256(data.encode("utf-8")).hexdigest()}}
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")


@lru_cache(maxsize=4096)
def content_hash(c: C) -> str:
    return Content.from_dict(content_dict(c)).content_hash()


def iso(value: datetime) -> str:
    return value.isoformat() + "Z"


def utcnow_naive() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


# -- workspaces -----------------------------------------------------------------------------

def all_scopes(sessions) -> list[Where]:
    out = []
    for org, (repos, personas) in ORGS.items():
        for session in (None, *sessions):
            for repo in (None, *repos):
                for persona in (None, *personas):
                    out.append(Where(org, repo, persona, session))
    return sorted(out, key=lambda w: (sum(getattr(w, k) is not None for k in ("repo", "persona", "session")), w.text()))


def lead_scopes(orgs, sessions) -> list[Where]:
    out = []
    for org in orgs:
        repos, personas = ORGS[org]
        out.append(Where(org))
        out += [Where(org, repo=r) for r in repos] + [Where(org, persona=p) for p in personas]
        out += [Where(org, repos[0], personas[1]), Where(org, session=sessions[0])]
    return out


ORG_CHOICES = (("oa",), ("ob",), ("oa", "ob"), ("oa", "ob"), ("oa",), ())
REPO_GRANTS = tuple(f"{o}/{r}" for o in ORGS for r in (*ORGS[o][0], "*"))
PERSONA_GRANTS = tuple(f"{o}/{p}" for o in ORGS for p in (*ORGS[o][1], "*"))


@st.composite
def configs(draw):
    sessions = tuple(draw(st.lists(st.sampled_from(SESSION_NAMES), min_size=1, max_size=2, unique=True)))
    people = []
    for name in NAMES[:draw(st.integers(2, len(NAMES)))]:
        orgs = draw(st.sampled_from(ORG_CHOICES))
        leadable = lead_scopes(orgs, sessions)
        people.append(Who(
            name, frozenset(orgs),
            frozenset(draw(st.lists(st.sampled_from(REPO_GRANTS), unique=True, max_size=3))),
            frozenset(draw(st.lists(st.sampled_from(PERSONA_GRANTS), unique=True, max_size=3))),
            frozenset(draw(st.lists(st.sampled_from(sessions), unique=True))),
            tuple(draw(st.lists(st.sampled_from(leadable), unique=True, max_size=2))) if leadable else ()))
    if not any(w.lead_of for w in people):  # someone leads something, so pins and owner moves by leads happen
        first = next((w for w in people if w.orgs), None)
        if first is not None:
            people[people.index(first)] = replace(first, lead_of=(Where(min(first.orgs)),))
    for name, kind, granted in OTHER_KINDS:
        orgs = draw(st.sampled_from([o for o in ORG_CHOICES if o] if granted else ORG_CHOICES))
        who = Who(name, frozenset(orgs),
                  frozenset(draw(st.lists(st.sampled_from(REPO_GRANTS), unique=True, max_size=3))),
                  frozenset(draw(st.lists(st.sampled_from(PERSONA_GRANTS), unique=True, max_size=3))),
                  frozenset(draw(st.lists(st.sampled_from(sessions), unique=True))), kind=kind)
        if kind == "service":  # a service may lead (and so pin, within its grants); an agent never leads
            who = replace(who, lead_of=tuple(draw(st.lists(st.sampled_from(lead_scopes(orgs, sessions)), unique=True,
                                                           max_size=1))) if orgs else ())
        if granted:  # grants within its own memberships (anything else is a config error)
            mine = [w for w in all_scopes(sessions) if member_of(who, w)]
            who = replace(who, writes=tuple(draw(st.lists(st.sampled_from(mine), min_size=1, max_size=2, unique=True))))
        people.append(who)
    return sessions, people


# principals of the other kinds in every example: (name, kind, with write grants)
OTHER_KINDS = (("agent.k", "agent", False), ("agent.w", "agent", True), ("sync.s", "service", True))


def config_yaml(people: list[Who]) -> str:
    return yaml.safe_dump({
        "name": "policy-property", "default_principal": people[0].name,
        "orgs": [{"name": o, "repos": list(r), "personas": list(p)} for o, (r, p) in ORGS.items()],
        "principals": [{"name": w.name, "orgs": sorted(w.orgs), "repos": sorted(w.repos),
                        "personas": sorted(w.personas), "sessions": sorted(w.sessions),
                        "lead_of": [s.text() for s in w.lead_of], "kind": w.kind,
                        **({"writes": [s.text() for s in w.writes]} if w.writes else {})} for w in people],
    }, sort_keys=False)


_TEMPLATE: dict[str, Path] = {}


def fresh_workspace(base: Path, people: list[Who], n: int, new_database=None) -> Path:
    """A workspace with this example's workbench.yaml: a copy of one empty, initialised
    database (so migrations run once per test run), opened with the new config. With
    ``new_database`` (a maker of fresh, migrated PostgreSQL databases: their URLs) the yaml
    names a new one instead."""
    root = base / f"ex{n}" / "ws"
    if new_database is not None:
        root.mkdir(parents=True)
        (root / "workbench.yaml").write_text(config_yaml(people) + f"store: \"{new_database()}\"\n",
                                             encoding="utf-8")
        return root
    if "db" not in _TEMPLATE:
        template = base / "template"
        (base / "template.yaml").write_text(config_yaml(people), encoding="utf-8")
        Workbench.init(template, config=base / "template.yaml").close()
        _TEMPLATE["db"] = template / "workbench.duckdb"
    root.mkdir(parents=True)
    shutil.copyfile(_TEMPLATE["db"], root / "workbench.duckdb")
    (root / "workbench.yaml").write_text(config_yaml(people), encoding="utf-8")
    return root
