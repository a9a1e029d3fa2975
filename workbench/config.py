"""Workspace location and configuration (workbench.yaml).

A workspace is a folder holding ``workbench.yaml`` (orgs, principals, roles) and
``workbench.duckdb``. Its location comes from ``--workspace DIR``, else
``WORKBENCH_HOME``, else ``./.workbench/``. This module reads and validates the
config; it does no database work.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from dataclasses import replace as _replace
from pathlib import Path
from typing import Any

from .errors import NotFound, UserError, ValidationError
from .models import DEFAULT_WEIGHTS, MAX_WEIGHT, WEIGHT_KEYS, Principal, RankingWeights, Scope, Weights
from .schemas import plain_yaml, validate
from .userpath import expand_user

CONFIG_NAME = "workbench.yaml"
DB_NAME = "workbench.duckdb"
PROPOSALS_PER_HOUR = 20  # the default rate limit of agent proposals, per principal (workbench.yaml: proposals.per_hour)
GOLDEN_NAME = "golden.yaml"  # the workspace's golden set when workbench.yaml names none (and where init copies it)

DEFAULT_CONFIG = """\
# workbench workspace configuration (schema: schemas/workspace.schema.json)
name: my-workspace
default_principal: me
orgs:
  - name: my-org
    repos: []
    personas: []
principals:
  - name: me
    orgs: [my-org]
    repos: [my-org/*]
    personas: [my-org/*]
    lead_of: ["org=my-org"]
    admin: true           # may create, list and revoke every principal's API tokens
"""


def resolve_workspace(path: str | os.PathLike | None = None) -> Path:
    """--workspace DIR, else WORKBENCH_HOME, else ./.workbench/."""
    if path:
        return expand_user(path).resolve()
    env = os.environ.get("WORKBENCH_HOME")
    if env:
        return expand_user(env).resolve()
    return (Path.cwd() / ".workbench").resolve()


@dataclass(frozen=True)
class OrgConfig:
    name: str
    title: str | None = None
    repos: tuple[str, ...] = ()
    personas: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkspaceConfig:
    """The parsed workbench.yaml."""

    name: str
    orgs: dict[str, OrgConfig]
    principals: dict[str, Principal]
    default_principal: str | None = None
    half_life_days: dict[str, float] = field(default_factory=dict)
    reranker: dict[str, Any] | None = None
    confidence_floor: float | None = None   # context drops candidates below it (None: the calibrated default)
    embedder: str | None = None             # the embedding backend, onnx or torch (None: the default, onnx)
    proposals_per_hour: int = PROPOSALS_PER_HOUR  # agent proposals a principal may make in any hour
    golden: str | None = None               # the golden set, as written (relative: to the workspace folder)
    allowed_hosts: tuple[str, ...] = ()     # the team server's Host allow-list beyond loopback (server.allowed_hosts)
    allowed_origins: tuple[str, ...] = ()   # ... and its Origin allow-list (server.allowed_origins)
    store: str | None = None                # a PostgreSQL URL (no password); None: the folder's DuckDB file
    traces_retain_days: int | None = None   # traces older than this are removed (traces.retain_days); None: kept
    ranking: RankingWeights = field(default_factory=RankingWeights)  # weights, default and per persona
    models_rollback_days: int = 14          # a replaced model's vectors are kept this long (models.rollback_days)
    archives: dict[str, int] = field(default_factory=dict)  # archives.compress_after / summary_tokens (service/archives.py)

    @classmethod
    def load(cls, path: Path) -> "WorkspaceConfig":
        """Read and validate ``path`` with the safe loader (no aliases, no duplicate keys, size-capped)."""
        from . import safeyaml

        try:
            with open(path, "rb") as f:
                data = f.read(safeyaml.MAX_BYTES + 1)
        except FileNotFoundError as e:
            raise UserError(f"{path}: workspace config not found") from e
        except OSError as e:
            raise UserError(f"{path}: cannot read workspace config ({e.strerror or e})") from e
        if len(data) > safeyaml.MAX_BYTES:
            raise ValidationError(f"too large (more than {safeyaml.MAX_BYTES} bytes)", file=str(path))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValidationError(f"not UTF-8 text ({_yaml_where(e)})", file=str(path)) from e
        raw = safeyaml.load(text, file=str(path))
        return cls.from_data(raw, file=str(path))

    @classmethod
    def from_data(cls, raw: Any, *, file: str = CONFIG_NAME) -> "WorkspaceConfig":
        raw = plain_yaml(raw)
        if not isinstance(raw, dict):
            raise ValidationError("expected a mapping at the top level", file=file)
        validate("workspace", raw, file=file)
        orgs = {o["name"]: OrgConfig(o["name"], o.get("title"), tuple(o.get("repos", ())),
                                     tuple(o.get("personas", ()))) for o in raw["orgs"]}
        principals: dict[str, Principal] = {}
        for i, p in enumerate(raw["principals"]):
            where = f"principals.{i}"
            if p["name"] in principals:
                raise ValidationError(f"duplicate principal {p['name']!r}", file=file, field=where)
            for org in p["orgs"]:
                if org not in orgs:
                    raise ValidationError(f"unknown org {org!r}", file=file, field=f"{where}.orgs")
            for key in ("repos", "personas"):
                for grant in p.get(key, ()):
                    org, _, name = grant.partition("/")
                    known = getattr(orgs.get(org), key, None)
                    if known is None or (name != "*" and name not in known):
                        raise ValidationError(f"unknown {key[:-1]} {grant!r}", file=file, field=f"{where}.{key}")
            lead_of = tuple(Scope.parse(s) for s in p.get("lead_of", ()))
            for led in lead_of:  # a lead of a scope outside one's own orgs could pin into it unseen
                if led.org not in p["orgs"]:
                    raise ValidationError(f"lead_of {str(led)!r} is outside the principal's orgs "
                                          f"({', '.join(p['orgs'])})", file=file, field=f"{where}.lead_of")
                problem = _scope_problem(orgs, led)
                if problem:
                    raise ValidationError(problem, file=file, field=f"{where}.lead_of")
            principal = Principal(
                name=p["name"], orgs=tuple(p["orgs"]), repos=tuple(p.get("repos", ())),
                personas=tuple(p.get("personas", ())), sessions=tuple(p.get("sessions", ())),
                lead_of=lead_of, full_name=p.get("full_name"), email=p.get("email"),
                kind=p.get("kind", "person"), admin=bool(p.get("admin", False)))
            principals[p["name"]] = _with_grants(principal, p, orgs, file=file, where=where)
        default = raw.get("default_principal")
        if default is not None and default not in principals:
            raise ValidationError(f"unknown principal {default!r}", file=file, field="default_principal")
        return cls(name=raw.get("name", "workspace"), orgs=orgs, principals=principals,
                   default_principal=default, half_life_days=dict(raw.get("freshness_half_life_days", {})),
                   reranker=raw.get("reranker"),
                   confidence_floor=float(raw["confidence_floor"]) if "confidence_floor" in raw else None,
                   proposals_per_hour=int((raw.get("proposals") or {}).get("per_hour", PROPOSALS_PER_HOUR)),
                   embedder=raw.get("embedder"), golden=raw.get("golden"),
                   allowed_hosts=tuple((raw.get("server") or {}).get("allowed_hosts", ())),
                   allowed_origins=tuple((raw.get("server") or {}).get("allowed_origins", ())),
                   store=check_store(raw["store"], file=file) if raw.get("store") else None,
                   traces_retain_days=(raw.get("traces") or {}).get("retain_days"),
                   ranking=parse_ranking(raw.get("ranking"), file=file,
                                             personas={p for o in orgs.values() for p in o.personas}),
                   models_rollback_days=int((raw.get("models") or {}).get("rollback_days", 14)),
                   archives=dict(raw.get("archives") or {}))

    def principal(self, name: str | None) -> Principal:
        """Look a principal up by name; None means the default principal."""
        name = name or os.environ.get("WORKBENCH_PRINCIPAL") or self.default_principal
        if not name:
            raise UserError("no principal given: pass --as NAME (or set default_principal in workbench.yaml)")
        try:
            return self.principals[name]
        except KeyError:
            raise NotFound(f"unknown principal {name!r} (known: {', '.join(sorted(self.principals))})") from None

    def principal_origin(self, name: str | None) -> str | None:
        """Where the principal of a call comes from when ``name`` is not given: "$WORKBENCH_PRINCIPAL"
        or "default_principal in workbench.yaml" (None: it was given, or there is none), so a report
        that falls back on it can say whose view it shows."""
        if name:
            return None
        if os.environ.get("WORKBENCH_PRINCIPAL"):
            return "$WORKBENCH_PRINCIPAL"
        return "default_principal in workbench.yaml" if self.default_principal else None

    def check_scope(self, scope: Scope) -> str | None:
        """Return a problem with ``scope`` (an undeclared org, repo or persona), or None."""
        return _scope_problem(self.orgs, scope)


def _with_grants(principal: Principal, raw: dict[str, Any], orgs: dict[str, OrgConfig], *, file: str,
                 where: str) -> Principal:
    """``principal`` with its write grants (``writes:``), checked: only agents and services have
    them, each names a declared scope the principal belongs to. An agent leads nothing and is no
    admin: pins, reviews and acting as others are people's (or services') acts."""
    from dataclasses import replace

    if principal.kind == "agent":
        for key, why in (("lead_of", "pins and reviews are people's acts"),
                         ("admin", "an admin token may act as any principal")):
            if raw.get(key):
                raise ValidationError(f"{principal.name} is an agent: it cannot have {key} ({why})",
                                      file=file, field=f"{where}.{key}")
    if "writes" not in raw:
        return principal
    if principal.kind == "person":
        raise ValidationError(f"{principal.name} is a person: writes (write grants) are for agents and services; "
                              "a person writes wherever it is a member", file=file, field=f"{where}.writes")
    grants = tuple(Scope.parse(s) for s in raw["writes"])
    for grant in grants:
        problem = _scope_problem(orgs, grant)
        if problem is None and not principal.can_see(grant):
            problem = (f"writes {str(grant)!r} is outside {principal.name}'s own memberships (a grant never "
                       "reaches further than what the principal may see)")
        if problem:
            raise ValidationError(problem, file=file, field=f"{where}.writes")
    return replace(principal, writes=grants)


def _scope_problem(orgs: dict[str, OrgConfig], scope: Scope) -> str | None:
    org = orgs.get(scope.org)
    if org is None:
        return f"unknown org {scope.org!r} (known: {', '.join(sorted(orgs))})"
    if scope.repo is not None and scope.repo not in org.repos:
        return f"unknown repo {scope.repo!r} in org {scope.org!r} (known: {', '.join(org.repos) or 'none'})"
    if scope.persona is not None and scope.persona not in org.personas:
        return f"unknown persona {scope.persona!r} in org {scope.org!r} (known: {', '.join(org.personas) or 'none'})"
    return None


def _yaml_where(e: Exception) -> str:
    """Where a read of the config failed: a yaml mark's line, or a decode error's byte offset."""
    if isinstance(e, UnicodeDecodeError):
        return f"byte {e.start}: {e.reason}"
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or "parse error"
    return f"line {mark.line + 1}: {problem}" if mark is not None else str(problem)


STORE_SCHEMES = ("postgresql", "postgres")


def check_store(value: str, *, file: str = CONFIG_NAME) -> str:
    """A ``store:`` URL as given, when it names a PostgreSQL database without a password (the
    file is shared and copied: libpq reads the password from PGPASSWORD or ~/.pgpass)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - parses the port: "host:x" raises here
    except ValueError as e:
        raise ValidationError(f"not a PostgreSQL URL ({e})", file=file, field="store") from e
    if parts.scheme.lower() not in STORE_SCHEMES:
        raise ValidationError("expected postgresql://USER@HOST[:PORT]/DATABASE", file=file, field="store")
    if parts.password or "password=" in parts.query.lower():
        raise ValidationError("the URL must not carry a password (this file is shared): set PGPASSWORD or use "
                              "~/.pgpass", file=file, field="store")
    return value


def parse_ranking(raw: Any, *, file: str, personas: set[str] | None = None) -> RankingWeights:
    """``ranking:`` as read from workbench.yaml, validated: unknown keys, non-numbers, negative or
    huge values and undeclared personas raise a ``ValidationError`` naming the file and the key."""
    if raw is None:
        return RankingWeights()
    if not isinstance(raw, Mapping):
        raise ValidationError("expected a mapping (default:, personas:)", file=file, field="ranking")
    for key in raw:
        if key not in ("default", "personas"):
            raise ValidationError(f"unknown key {key!r} (valid: default, personas)", file=file,
                                  field=f"ranking.{key}")
    default = parse_weights(raw.get("default"), DEFAULT_WEIGHTS, file=file, where="ranking.default")
    people = raw.get("personas") or {}
    if not isinstance(people, Mapping):
        raise ValidationError("expected a mapping of persona name to weights", file=file, field="ranking.personas")
    out = {}
    for name, value in people.items():
        where = f"ranking.personas.{name}"
        if not isinstance(name, str) or (personas is not None and name not in personas):
            known = ", ".join(sorted(personas or ())) or "none"
            raise ValidationError(f"unknown persona {name!r} (declared by the orgs: {known})", file=file, field=where)
        out[name] = parse_weights(value, default, file=file, where=where)
    return RankingWeights(default, out)


def parse_weights(raw: Any, base: Weights, *, file: str, where: str) -> Weights:
    """A mapping of weights over ``base``, validated (see ``parse``)."""
    if raw is None:
        return base
    if not isinstance(raw, Mapping):
        raise ValidationError(f"expected a mapping of weights ({', '.join(WEIGHT_KEYS)})", file=file, field=where)
    values: dict[str, float] = {}
    for key, value in raw.items():
        if key not in WEIGHT_KEYS:
            raise ValidationError(f"unknown weight {key!r} (valid: {', '.join(WEIGHT_KEYS)})", file=file,
                                  field=f"{where}.{key}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValidationError(f"expected a number, not {value!r}", file=file, field=f"{where}.{key}")
        top = 1.0 if key == "dense" else MAX_WEIGHT
        if not 0.0 <= float(value) <= top:
            raise ValidationError(f"must be from 0 to {top:g} (got {value!r})", file=file, field=f"{where}.{key}")
        values[key] = float(value)
    return _replace(base, **values)
