"""Typed values that cross layers: scopes, principals, fragments, versions, reports.

Frozen dataclasses with no I/O. Visibility of a scope to a principal is decided
here (``Principal.can_see``) so that every path (list, show, search, context,
export, MCP, traces) uses the one rule.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from datetime import datetime, timezone
from typing import Any

from .errors import NotFound, PermissionDenied, UserError

KINDS = ("decision", "runbook", "code", "policy", "note", "session-summary", "anti-pattern", "observation")
STATUSES = ("active", "archived", "proposed", "rejected")
PROPOSAL_STATUSES = ("proposed", "rejected")   # an agent's proposal, before (or after a negative) review
PROPOSAL_FIELDS = ("proposed_by", "review")    # details of a proposal: its author, and the review record
PROPOSAL_KINDS = ("note", "session-summary", "anti-pattern", "observation")  # what an agent may propose
SCOPE_LEVELS = ("org", "repo", "persona", "session")
PRINCIPAL_KINDS = ("person", "agent", "service")  # workbench.yaml's kind: (default person)


def utcnow() -> datetime:
    """Now, in UTC, as the naive datetime every stored timestamp is."""
    return datetime.now(timezone.utc).replace(tzinfo=None)

ANTIPATTERN_LABELS = (("dont", "Don't"), ("why", "Why"), ("instead", "Instead"))


def antipattern_parts(details: Any, *, keep_empty: bool = False) -> list[tuple[str, Any]]:
    """An anti-pattern's (label, value) pairs in reading order (Don't, Why, Instead), from a
    mapping of its details; fields it does not set are left out unless ``keep_empty``. Every face
    renders anti-patterns from this, each in its own format."""
    get = details.get if hasattr(details, "get") else dict(details).get
    return [(label, get(key)) for key, label in ANTIPATTERN_LABELS if keep_empty or get(key)]


ANTIPATTERN_FIELDS = ("dont", "why", "instead", "evidence")
PATH_FIELDS = ("applies_to",)   # globs of the repository paths a fragment governs (rank/paths.py)
ARCHIVE_FIELDS = ("compressed_from",)   # a compressed archive's sources, id@vN (service/archives.py)
ARCHIVE_KINDS = ("session-summary", "observation")   # what `archive compress` compresses, per scope


@dataclass(frozen=True, order=True)
class Scope:
    """Where a fragment applies: an org, plus optional repo, persona and session."""

    org: str
    repo: str | None = None
    persona: str | None = None
    session: str | None = None

    @classmethod
    def parse(cls, text: str) -> "Scope":
        """Parse ``org=ORG[,repo=REPO][,persona=PERSONA][,session=SESSION]``."""
        values: dict[str, str] = {}
        for part in (p.strip() for p in text.split(",")):
            key, sep, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not value:
                raise UserError(f"bad scope {text!r}: expected org=ORG[,repo=REPO][,persona=P][,session=S]")
            if key not in SCOPE_LEVELS:
                raise UserError(f"bad scope {text!r}: unknown level {key!r} (valid: {', '.join(SCOPE_LEVELS)})")
            if key in values:
                raise UserError(f"bad scope {text!r}: {key} given twice")
            values[key] = value
        if "org" not in values:
            raise UserError(f"bad scope {text!r}: org is required")
        return cls(**values)

    @classmethod
    def coerce(cls, value: "Scope | str | None") -> "Scope | None":
        """A scope as callers pass it: text (parsed, with ``parse``'s errors), a ``Scope`` or None."""
        return cls.parse(value) if isinstance(value, str) else value

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Scope":
        return cls(**{k: data.get(k) for k in SCOPE_LEVELS})

    def to_dict(self) -> dict[str, str | None]:
        return {k: getattr(self, k) for k in SCOPE_LEVELS}

    def __str__(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.to_dict().items() if v is not None)

    def contains(self, other: "Scope") -> bool:
        """True when ``other`` lies within this scope: every level set here matches."""
        return all(getattr(self, k) is None or getattr(self, k) == getattr(other, k) for k in SCOPE_LEVELS)


@dataclass(frozen=True)
class Receipt:
    """How a principal receives a fragment another scope published (policy/receiving.py decides
    whether it still does): through the published context ``via`` (ORG/SET), which holds the
    fragment as published in ``published_scope``, for the subscription scope ``applies``."""

    fragment_id: str
    via: str
    published_scope: Scope
    applies: Scope
    version: int | None = None   # the fragment version a pinned subscription serves (None: the current one)
    pinned: bool = False         # the publisher's pin travels with the context


@dataclass(frozen=True)
class Principal:
    """A person, agent or service (``kind``), with memberships (orgs, ORG/REPO, ORG/PERSONA), led
    scopes and, for agents and services, the scopes workbench.yaml lets it write in (``writes``).
    What each kind may do is policy.py's to decide."""

    name: str
    orgs: tuple[str, ...]
    repos: tuple[str, ...] = ()
    personas: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    lead_of: tuple[Scope, ...] = ()
    full_name: str | None = None
    email: str | None = None
    kind: str = "person"  # person, agent or service (PRINCIPAL_KINDS)
    admin: bool = False   # may manage every principal's API tokens (and, on the team server, act as others)
    writes: tuple[Scope, ...] = ()  # an agent's or a service's write grants (workbench.yaml: writes)
    received: tuple[Receipt, ...] = field(default=(), compare=False, repr=False)  # Workspace.principal's

    @cached_property
    def _receipts(self) -> dict[str, tuple[Receipt, ...]]:
        out: dict[str, tuple[Receipt, ...]] = {}
        for r in self.received:
            out[r.fragment_id] = out.get(r.fragment_id, ()) + (r,)
        return out

    def receipts(self, fragment_id: str) -> tuple[Receipt, ...]:
        """The receipts of one fragment (policy/receiving.py says which still hold)."""
        return self._receipts.get(fragment_id, ())

    def _member(self, grants: tuple[str, ...], org: str, name: str) -> bool:
        return f"{org}/{name}" in grants or f"{org}/*" in grants

    def can_see(self, scope: Scope, owner: str | None = None) -> bool:
        """The visibility rule. Every level the scope sets must be one the principal belongs to.

        Session-scoped fragments are private to the sessions the principal is in, and to
        their owner.
        """
        if scope.org not in self.orgs:
            return False
        if scope.repo is not None and not self._member(self.repos, scope.org, scope.repo):
            return False
        if scope.persona is not None and not self._member(self.personas, scope.org, scope.persona):
            return False
        if scope.session is not None and scope.session not in self.sessions and owner != self.name:
            return False
        return True

    def leads(self, scope: Scope) -> bool:
        """True when the principal is tech lead of ``scope`` or of a scope containing it."""
        return any(led.contains(scope) for led in self.lead_of)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "full_name": self.full_name,
            "kind": self.kind,
            "orgs": list(self.orgs),
            "repos": list(self.repos),
            "personas": list(self.personas),
            "lead_of": [str(s) for s in self.lead_of],
            "writes": [str(s) for s in self.writes],
            "admin": self.admin,
        }


@dataclass(frozen=True)
class Source:
    """A pointer into code: repo, path, commit and line range."""

    path: str
    repo: str | None = None
    commit: str | None = None
    lines: tuple[int, int] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Source":
        lines = data.get("lines")
        return cls(path=data["path"], repo=data.get("repo"), commit=data.get("commit"),
                   lines=tuple(lines) if lines else None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"repo": self.repo, "path": self.path, "commit": self.commit,
                               "lines": list(self.lines) if self.lines else None}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class Content:
    """The versioned part of a fragment: any change here appends a version."""

    kind: str
    title: str
    body: str
    scope: Scope
    owner: str
    status: str = "active"
    tags: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    supersedes: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    details: tuple[tuple[str, Any], ...] = ()  # anti-pattern fields, applies_to, a proposal's proposed_by and review: sorted pairs

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": self.title,
            "body": self.body,
            "scope": self.scope.to_dict(),
            "owner": self.owner,
            "status": self.status,
            "tags": list(self.tags),
            "links": list(self.links),
            "supersedes": list(self.supersedes),
            "sources": [s.to_dict() for s in self.sources],
            "details": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.details},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Content":
        details = data.get("details") or {}
        return cls(
            kind=data["kind"], title=data["title"], body=data["body"],
            scope=Scope.from_dict(data["scope"]), owner=data["owner"],
            status=data.get("status", "active"),
            tags=tuple(data.get("tags") or ()), links=tuple(data.get("links") or ()),
            supersedes=tuple(data.get("supersedes") or ()),
            sources=tuple(Source.from_dict(s) for s in data.get("sources") or ()),
            details=tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in details.items())),
        )

    def content_hash(self) -> str:
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def detail(self, name: str) -> Any:
        return dict(self.details).get(name)

    def applies_to(self) -> tuple[str, ...]:
        """The path globs the fragment declares it governs (front matter ``applies_to``)."""
        return tuple(self.detail("applies_to") or ())

    def antipattern(self, *, keep_empty: bool = False) -> list[tuple[str, Any]]:
        """(label, value) of the Don't / Why / Instead fields (see ``antipattern_parts``)."""
        return antipattern_parts(dict(self.details), keep_empty=keep_empty)


@dataclass(frozen=True)
class Fragment:
    """A fragment as stored now (or as of one version, for ``show --version``)."""

    id: str
    version: int
    content: Content
    content_hash: str
    created_at: datetime
    updated_at: datetime
    verified_at: datetime | None = None

    # Convenience accessors, so callers rarely reach into ``content``.
    kind = property(lambda self: self.content.kind)
    title = property(lambda self: self.content.title)
    body = property(lambda self: self.content.body)
    scope = property(lambda self: self.content.scope)
    owner = property(lambda self: self.content.owner)
    status = property(lambda self: self.content.status)
    tags = property(lambda self: self.content.tags)
    links = property(lambda self: self.content.links)
    sources = property(lambda self: self.content.sources)

    def to_dict(self) -> dict[str, Any]:
        data = {"id": self.id, "version": self.version}
        data.update(self.content.to_dict())
        data.update({
            "content_hash": self.content_hash,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "verified_at": _iso(self.verified_at),
        })
        return data

    def __repr__(self) -> str:
        return f"<Fragment {self.id} v{self.version} {self.kind} {str(self.scope)!r} {self.title!r}>"


@dataclass(frozen=True)
class Version:
    """One entry of a fragment's history."""

    fragment_id: str
    number: int
    author: str
    created_at: datetime
    reason: str
    content_hash: str
    content: Content
    hidden: bool = False  # written in a scope the viewer cannot see: only number, author and time are shown

    def withheld(self) -> "Version":
        """This version as shown to a viewer who may not see its content."""
        blank = Content(kind=self.content.kind, title="", body="", scope=self.content.scope, owner="",
                        status=self.content.status)
        return Version(self.fragment_id, self.number, self.author, self.created_at, "", "", blank, hidden=True)

    def to_dict(self) -> dict[str, Any]:
        if self.hidden:
            return {"id": self.fragment_id, "version": self.number, "author": self.author,
                    "created_at": _iso(self.created_at), "reason": None, "content_hash": None, "status": None,
                    "title": None, "hidden": True}
        return {"id": self.fragment_id, "version": self.number, "author": self.author,
                "created_at": _iso(self.created_at), "reason": self.reason,
                "content_hash": self.content_hash, "status": self.content.status,
                "title": self.content.title}


@dataclass
class IngestReport:
    """What an ingest did: counts of fragments and the files it skipped, with why."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    dry_run: bool = False
    # sync with a base (ingest/sync.py), each {"id", "file"}: fragments the workbench changed since
    # their file was last in step (nothing written), conflicts (+ "message"; nothing written) and
    # conflicts resolved by --theirs / --ours (+ "winner": "file" or "database")
    ahead: list[dict[str, str]] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    resolved: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = {"added": len(self.added), "updated": len(self.updated), "unchanged": len(self.unchanged),
                "errors": list(self.errors), "warnings": list(self.warnings)}
        if self.archived:
            data["archived"] = len(self.archived)
        for key in ("ahead", "conflicts", "resolved"):
            if getattr(self, key):
                data[key] = [dict(item) for item in getattr(self, key)]
        if self.dry_run:
            data["dry_run"] = True
            data["plan"] = {"add": [{"id": i} for i in self.added], "update": [{"id": i} for i in self.updated],
                            "archive": [{"id": i} for i in self.archived]}
        return data


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.replace(microsecond=0).isoformat() + "Z"


def as_plain(value: Any) -> Any:
    """Dataclass → dict, for JSON output of values without a ``to_dict``."""
    return value.to_dict() if hasattr(value, "to_dict") else asdict(value)


def call_scopes(trace: Mapping[str, Any], caller: Principal | None) -> tuple[Scope, ...]:
    """The scopes a traced call was made in: the scope it named, else each org of its caller
    (none when the caller is no longer a principal of workbench.yaml)."""
    named = trace.get("scope")
    if named:
        try:
            return (Scope.parse(named),)
        except UserError:
            return ()
    return tuple(Scope(org) for org in caller.orgs) if caller is not None else ()


@dataclass(frozen=True)
class Decision:
    """policy.py's answer to "may ACTOR do ACTION to TARGET?"; falsy when refused."""

    allowed: bool
    message: str = ""
    hidden: bool = False   # refuse as "unknown": the target is not visible to the actor
    action: str = ""

    def __bool__(self) -> bool:
        return self.allowed

    def error(self) -> UserError:
        return NotFound(self.message) if self.hidden else PermissionDenied(self.message)

    def check(self) -> None:
        if not self.allowed:
            raise self.error()


@dataclass(frozen=True)
class TextFile:
    """A fragment file handed over as text instead of a path (``workbench ingest -``: standard
    input). Reports name it ``name``; it is not recorded as an ingested file (there is no file to
    compare with next time), so its front matter must name the fragment's ``id``."""

    name: str
    text: str


# -- ranking weights (workbench.yaml's ranking:; rank/persona.py applies them, config.py parses them) --

WEIGHT_KEYS = ("relevance", "freshness", "authority", "pins", "dense", "persona")
MAX_WEIGHT = 10.0  # the largest ranking weight workbench.yaml may set


@dataclass(frozen=True)
class Weights:
    """The ranking rule's weights (see the module docstring); ``dense`` None keeps the built-in balance."""

    relevance: float = 1.0
    freshness: float = 0.1
    authority: float = 0.1
    pins: float = 0.0
    dense: float | None = None
    persona: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    def changed(self, base: "Weights") -> dict[str, Any]:
        """The weights that differ from ``base`` (what workbench.yaml needs to say)."""
        mine, theirs = asdict(self), asdict(base)
        return {k: mine[k] for k in WEIGHT_KEYS if mine[k] != theirs[k] and mine[k] is not None}


DEFAULT_WEIGHTS = Weights()


@dataclass(frozen=True)
class RankingWeights:
    """``ranking:`` of workbench.yaml: the weights for calls in no persona, and per persona."""

    default: Weights = DEFAULT_WEIGHTS
    personas: Mapping[str, Weights] = None  # type: ignore[assignment]

    def __post_init__(self):
        if self.personas is None:
            object.__setattr__(self, "personas", {})

    def weights(self, persona: str | None) -> Weights:
        """The weights of a call made in ``persona`` (None: in none): the persona's, else the default."""
        if persona is not None and persona in self.personas:
            return self.personas[persona]
        return self.default

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.default != DEFAULT_WEIGHTS:
            out["default"] = self.default.changed(DEFAULT_WEIGHTS)
        if self.personas:
            out["personas"] = {name: w.changed(self.default) for name, w in sorted(self.personas.items())}
        return out
