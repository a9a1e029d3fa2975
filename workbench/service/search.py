"""Search and context: ranked, scope-checked, traced retrieval over the IndexManager's index.

Every call is scope-checked with the same visibility rule as ``get``; search and
context calls are stored as traces that can be replayed exactly, later edits
notwithstanding. ``context`` serves what is current and confident: superseded fragments
are left out (unless their superseder is invisible to the caller, or the query names them),
and so is anything below the confidence floor (pins excepted: they always come, first). A
``search`` puts a pinned fragment first only when it is relevant to the query.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Callable

import numpy as np

from .. import policy
from ..errors import NotFound, PermissionDenied, UserError
from ..models import Principal, Scope
from ..rank import calibration
from ..rank.priors import DEFAULT_HALF_LIFE, Priors
from ..retrieval.results import ContextResult, SearchResult
from ..retrieval import index as search_index
from ..retrieval.compose import NO_KNOWLEDGE, compose
from ..retrieval.filters import make_filters
from ..retrieval.pipeline import Hit, Ranking, Settings, confidences, hits_from, rank, rerank
from ..models import utcnow
from . import traces, workpaths
from .fragments import Fragments
from .archives import check_flag
from .receipts import as_served, received_hits, received_via
from ..retrieval.archived import LEXICAL
from .served import _confidence, _pin_hit, _served
from .workspace import Feature, Workspace

MAX_QUERY_CHARS = 4000
TRACE_NOT_STORED = "trace not stored (read-only workspace)"
MAX_BUDGET = 1_000_000
CALIBRATION_TTL_S = 2.0


@dataclass
class Retrieved:
    """What one retrieval round trip found for one principal."""
    index: search_index.SearchIndex
    ranking: Ranking
    hits: list[Hit]
    avoid: list[Hit]
    pins: list[Hit]      # pinned fragments that apply and that the principal sees, oldest pin first


class Retrieval(Feature):
    """Search, context, fetch and traces over the workspace's ``IndexManager``."""

    def __init__(self, ws: Workspace, fragments: Fragments):
        super().__init__(ws)
        self.fragments = fragments

    # -- the index ------------------------------------------------------------------

    def settings(self, **overrides: Any) -> Settings:
        half = {**DEFAULT_HALF_LIFE, **{k: float(v) for k, v in self.config.half_life_days.items()}}
        base = Settings(priors=Priors(half_life_days=half))
        fields = {k: v for k, v in overrides.items() if v is not None}
        if self.config.reranker and "reranker" not in fields:
            fields["reranker"] = self.config.reranker.get("path")
            fields.setdefault("rerank_top_n", self.config.reranker.get("top_n", 20))
        from dataclasses import replace

        return replace(base, **fields).check()

    def declared_personas(self) -> dict[str, tuple[str, ...]]:
        return {name: org.personas for name, org in self.config.orgs.items()}

    def acting(self, who: Principal, settings: Settings, persona: str | None) -> Settings:
        """``settings`` for a call by ``who`` in ``persona`` (policy decides which persona applies:
        the one given, if the caller is a member; else an agent's own), with workbench.yaml's weights
        for it. A persona changes ranking only, never visibility."""
        from ..rank.persona import DEFAULT

        acting = policy.personas.acting_persona(who, persona, self.declared_personas())
        weights = self.config.ranking.weights(acting)
        if acting is None and weights == DEFAULT:
            return settings
        return settings.with_weights(acting, weights)

    def search_index(self, progress: Callable | None = None) -> search_index.SearchIndex:
        """The index of the current generation (the IndexManager's)."""
        return self.ws.index.current(progress)

    def archive_index(self) -> search_index.SearchIndex:
        """The index ``include_archived`` ranks in: active and archived fragments (retrieval/archived.py),
        built on first use and kept while the store's generation stays the same."""
        from ..retrieval.archived import wide_index

        generation = self.store.generation()
        kept = getattr(self, "_wide", None)
        if kept is None or kept[0] != generation:
            kept = self._wide = (generation, wide_index(self.store, self.ws.index))
        return kept[1]

    def warm(self, *, progress: Callable | None = None, lexical: str = "bm25") -> dict[str, int]:
        """Build everything search needs now (see ``IndexManager.warm``)."""
        return self.ws.index.warm(progress=progress, lexical=lexical)

    def quick_lexical(self) -> str:
        """The lexical backend that answers a first query in a fresh process fastest."""
        return self.ws.index.quick_lexical()

    # -- pins as retrieval sees them --------------------------------------------------

    def applicable_pins(self, principal: Principal, within: Scope | None, now: datetime) -> list[str]:
        """Ids pinned in a scope that applies to the caller, visible to the caller, oldest pin first."""
        out: list[str] = []
        for pin in self.ws.index.pins(now):
            scope = Scope.parse(pin["scope"])
            if not policy.sees_scope(principal, scope) or not search_index.applies(scope, within):
                continue
            if pin["fragment_id"] not in out:
                out.append(pin["fragment_id"])
        for r in principal.received:   # the publisher's pins travel with a context published --with-pins
            if r.pinned and principal.can_see(r.applies) and policy.receiving.received_within(r, within) \
                    and r.fragment_id not in out:
                out.append(r.fragment_id)
        return out

    # -- search and context ---------------------------------------------------------

    def retrieve(self, query: str, principal: Principal, settings: Settings, *, within: Scope | None,
                 now: datetime, allow_secret: bool = False, for_context: bool = False,
                 min_confidence: float | None = None, calibrate: bool = True,
                 include_archived: bool = False) -> Retrieved:
        """One round trip through the index: the ranked hits, the anti-patterns to avoid and the
        pins that apply, for one principal. ``search`` and ``context`` are each one call of this.
        Pins go first in context; in a search only those above the confidence floor (see pipeline.py)."""
        if not isinstance(query, str) or not query.strip():
            raise UserError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise UserError(f"the query is too long ({len(query)} characters; at most {MAX_QUERY_CHARS})")
        try:
            query.encode("utf-8")
        except UnicodeEncodeError:
            raise UserError("the query is not valid Unicode text (it holds a lone surrogate)") from None
        index = self.archive_index() if include_archived else self.search_index()
        withheld = set() if allow_secret else self.store.secret_flagged()
        pins = [p for p in self.applicable_pins(principal, within, now) if p not in withheld]
        ranking = rank(index, query, principal, settings, now=now, within=within, pinned_ids=set(pins))
        if withheld:  # stored with a secret-guard override: never served unless the call says so
            ranking.order = [i for i in ranking.order if index.ids[i] not in withheld]
            ranking.pinned = {i for i in ranking.pinned if index.ids[i] not in withheld}
        if settings.reranker:
            ranking = rerank(index, ranking, query, self.ws.index.reranker(settings.reranker), settings.rerank_top_n)
        model = self.calibration() if calibrate else None
        hits, avoid = hits_from(index, ranking, settings, for_context=for_context, min_confidence=min_confidence,
                                calibrate=calibrate, model=model,
                                pin_floor=None if for_context or not calibrate else self.confidence_floor())
        visible = index.visible(principal, within)
        shown = [index.pos[fid] for fid in pins if fid in index.pos and visible[index.pos[fid]]]
        conf = confidences(index, ranking, shown, model) if calibrate else dict.fromkeys(shown)  # one pass for all
        pin_hits = [_pin_hit(index, ranking, i, conf[i], calibrate) for i in shown]
        if not include_archived:
            self.ws.index.keep(index)  # a new base (first build, or a merge) is persisted for the next process
        hits, avoid, pin_hits = (received_hits(self.store, principal, h) for h in (hits, avoid, pin_hits))
        return Retrieved(index, ranking, hits, avoid, pin_hits)

    def search(self, query: str | None = None, *, principal: str | Principal | None = None, k: int = 10,
               pipeline: str = "hybrid", lexical: str = "bm25", fusion: str = "weighted", dense: str = "numpy",
               scope: Scope | str | None = None, min_score: float | None = None, reranker: str | None = None,
               trace: bool = True, now: datetime | None = None, allow_secret: bool = False,
               kind: str | list[str] | None = None, tag: str | list[str] | None = None,
               owner: str | list[str] | None = None, updated_since: date | str | None = None,
               dense_weight: float | None = None, min_confidence: float | None = None,
               calibrate: bool = True, persona: str | None = None,
               include_archived: bool = False, paths: list[str] | None = None, diff: str | None = None,
               diff_range: str | None = None, repo: str | None = None,
               path_weight: float | None = None) -> SearchResult:
        """Ranked hits and matching anti-patterns ("avoid"), each numbered 1..n, with a per-query
        ``score`` in [0, 1] and a calibrated ``confidence``. Superseded fragments are demoted and
        labelled. Filters (kind, tag, owner, updated_since) narrow the candidates before the k cut;
        ``min_confidence`` (none by default) drops hits below it. A pin that applies puts its fragment
        first (and exempt from ``min_confidence``) only when it is relevant to the query (confidence at
        least the workspace's floor): an unrelated pin ranks by its own score.
        ``calibrate=False`` leaves confidences None, so ``pipeline="bm25"`` needs no model.
        ``persona``: act in that persona (its weights, and its fragments preferred; see ``acting``).
        ``include_archived`` ranks archived fragments too (each hit says so; scope rules unchanged),
        with the bm25 lexical backend (retrieval/archived.py).
        ``paths``, ``diff``, ``diff_range`` (``repo``), ``path_weight``: as for ``context``, the fragments
        linked to the work's files ranked with the query (now optional) by rank/paths.py's rule, each hit
        with its ``reason`` (service/workpaths.py)."""
        work = workpaths.work_paths(paths, diff, diff_range, repo)
        who = self.principal(principal)
        within = Scope.coerce(scope)
        floor = _confidence(min_confidence)
        settings = self.settings(pipeline=pipeline, lexical=lexical, fusion=fusion, dense=dense, k=k,
                                 min_score=min_score, reranker=reranker, dense_weight=dense_weight,
                                 filters=self._filters(kind, tag, owner, updated_since))
        settings = self.acting(who, settings, persona)
        now = now or utcnow()
        if check_flag(include_archived) and settings.lexical not in (LEXICAL, "bm25s"):
            raise UserError(f"searching archived fragments uses the {LEXICAL} lexical backend, not "
                            f"{settings.lexical!r}", param="lexical")
        if work is not None:
            return workpaths.search_for_work(self, query, work, who, settings, within=within, now=now,
                                             allow_secret=allow_secret, floor=floor, calibrate=calibrate,
                                             include_archived=include_archived, repo=repo,
                                             path_weight=path_weight, trace=trace, not_stored=TRACE_NOT_STORED)
        got = self.retrieve(query, who, settings, within=within, now=now, allow_secret=allow_secret,
                            min_confidence=floor, calibrate=calibrate, include_archived=include_archived)
        hits, avoid = got.hits, got.avoid
        trace_id = None
        info = settings.to_dict()
        extra = {**({"min_confidence": floor} if floor is not None else {}),
                 **({"include_archived": True} if include_archived else {})}
        info.update(extra)
        if trace:
            served = [_served(h, "hits", query=query) for h in hits] + [_served(h, "avoid", query=query) for h in avoid]
            trace_id = self._trace("search", query, who, within, settings, served, now, extra=extra or None)
        if trace and trace_id is None:
            info["trace_note"] = TRACE_NOT_STORED
        return SearchResult(trace_id, query, hits, avoid, got.ranking.stages_ms, info)

    def context(self, query: str | None = None, *, principal: str | Principal | None = None, budget: int = 3200,
                scope: Scope | str | None = None, pipeline: str = "hybrid", k: int = 20,
                min_score: float | None = None, reranker: str | None = None, now: datetime | None = None,
                allow_secret: bool = False, kind: str | list[str] | None = None,
                tag: str | list[str] | None = None, owner: str | list[str] | None = None,
                updated_since: date | str | None = None, dense_weight: float | None = None,
                min_confidence: float | None = None, paths: list[str] | None = None, diff: str | None = None,
                diff_range: str | None = None, repo: str | None = None,
                path_weight: float | None = None, persona: str | None = None) -> ContextResult:
        """Budgeted, cited context: pins, then ranked fragments, then anti-patterns to avoid.
        Superseded fragments are left out (unless the caller cannot see their superseder, or
        the query names them), and so is every candidate below the confidence floor
        (``min_confidence``, else workbench.yaml's ``confidence_floor``, else the floor of the
        workspace's calibration: its golden fit, or the prior); pins always come. When nothing passes, the note
        is "no relevant knowledge in scope" and only pins (if any) are served.

        Context for the work at hand: ``paths`` (repository paths), ``diff`` (a unified diff's text) and
        ``diff_range`` (a git range, read with ``git diff`` in ``repo``, default the working folder)
        add the fragments linked to those files, ranked with the query (now optional) by the weighted
        rule of rank/paths.py (``path_weight``), each with its ``reason`` (service/workpaths.py)."""
        if isinstance(budget, bool) or not isinstance(budget, int) or not 0 <= budget <= MAX_BUDGET:
            raise UserError(f"the budget must be a whole number of tokens from 0 to {MAX_BUDGET}")
        work = workpaths.work_paths(paths, diff, diff_range, repo)
        if work is not None:
            return self._work_context(query, work, principal=principal, budget=budget, scope=scope,
                                      pipeline=pipeline, k=k, min_score=min_score, reranker=reranker, now=now,
                                      allow_secret=allow_secret, kind=kind, tag=tag, owner=owner,
                                      updated_since=updated_since, dense_weight=dense_weight,
                                      min_confidence=min_confidence, repo=repo, path_weight=path_weight,
                                      persona=persona)
        who = self.principal(principal)
        within = Scope.coerce(scope)
        floor = self.confidence_floor(min_confidence)
        settings = self.settings(pipeline=pipeline, k=k, min_score=min_score, reranker=reranker,
                                 dense_weight=dense_weight, filters=self._filters(kind, tag, owner, updated_since))
        settings = self.acting(who, settings, persona)
        now = now or utcnow()
        got = self.retrieve(query, who, settings, within=within, now=now, allow_secret=allow_secret,
                            for_context=True, min_confidence=floor)
        composed = compose(got.pins, got.hits, got.avoid, budget=budget, query=query,
                           count=self.ws.index.tokens.count, count_many=self.ws.index.tokens.count_many)
        served = ([_served(i.hit, "fragments", i.text, i.tokens, query=query) for i in composed.fragments]
                  + [_served(i.hit, "avoid", i.text, i.tokens, query=query) for i in composed.avoid])
        abstained = composed.note == NO_KNOWLEDGE   # the gap report reads it from the trace
        trace_id = self._trace("context", query, who, within, settings, served, now,
                               extra={"budget_tokens": budget, "used_tokens": composed.used,
                                      "omitted": composed.omitted, "min_confidence": floor, "abstained": abstained})
        note = composed.note if trace_id else "; ".join(filter(None, [composed.note, TRACE_NOT_STORED]))
        return ContextResult(trace_id, query, budget, composed.used, composed.fragments, composed.avoid,
                             composed.omitted, note, min_confidence=floor, abstained=abstained,
                             notice=composed.notice)

    @staticmethod
    def path_weight() -> float:
        from ..rank.paths import PATH_WEIGHT

        return PATH_WEIGHT

    def work_select(self, query: str | None, work: list[str], who: Principal, settings: Settings, *,
                    within: Scope | None, now: datetime, allow_secret: bool = False, floor: float | None = None,
                    repo: str | None = None, path_weight: float | None = None, with_pins: bool = True,
                    for_context: bool = True, calibrate: bool = True, include_archived: bool = False):
        """(pins, hits, avoid, links, weight): what context for the work at hand selects before the
        budget (evaluation ranks golden ``paths:`` entries with it, pins aside); ``for_context=False``:
        what ``search`` with paths ranks (its confidence floor, ``calibrate`` and ``include_archived``)."""
        from ..rank.paths import PATH_WEIGHT, check_weight

        weight = PATH_WEIGHT if path_weight is None else check_weight(path_weight)
        withheld = set() if allow_secret else self.store.secret_flagged()
        owners = workpaths.code_owners(work, repo, self.config)
        if query:
            got = self.retrieve(query, who, settings, within=within, now=now, allow_secret=allow_secret,
                                for_context=for_context, min_confidence=floor, calibrate=calibrate,
                                include_archived=include_archived)
            index, ranking, pins = got.index, got.ranking, got.pins
            model = self.calibration() if calibrate else None
            hits, avoid, links = workpaths.ranked_for_work(
                self, got.index, work, who, within, settings, ranking, got.hits, got.avoid, withheld, owners,
                weight, (lambda i: confidences(index, ranking, [i], model)[i]) if calibrate else (lambda i: None))
        else:
            index = self.archive_index() if include_archived else self.search_index()
            pinned = [p for p in self.applicable_pins(who, within, now) if p not in withheld] if with_pins else []
            pins = workpaths.pin_hits(index, pinned, who, within)
            hits, avoid, links = workpaths.ranked_for_work(self, index, work, who, within, settings, None, [], [],
                                                           withheld, owners, weight, lambda i: None)
        return pins, hits, avoid, links, weight

    def _work_context(self, query: str | None, work: list[str], *, principal, budget: int, scope, pipeline: str,
                      k: int, min_score, reranker, now, allow_secret: bool, kind, tag, owner, updated_since,
                      dense_weight, min_confidence, repo: str | None, path_weight: float | None,
                      persona: str | None = None) -> ContextResult:
        """``context`` for the work at hand (see there): the query's selection, if any, merged with
        the fragments linked to ``work``, composed within the budget and traced with the paths."""
        if query is not None and not (isinstance(query, str) and query.strip()):
            query = None     # paths alone are the question
        who = self.principal(principal)
        within = Scope.coerce(scope)
        floor = self.confidence_floor(min_confidence) if query else None
        settings = self.settings(pipeline=pipeline, k=k, min_score=min_score, reranker=reranker,
                                 dense_weight=dense_weight, filters=self._filters(kind, tag, owner, updated_since))
        settings = self.acting(who, settings, persona)
        now = now or utcnow()
        pins, hits, avoid, links, weight = self.work_select(query, work, who, settings, within=within, now=now,
                                                           allow_secret=allow_secret, floor=floor, repo=repo,
                                                           path_weight=path_weight)
        composed = compose(pins, hits, avoid, budget=budget, query=query or " ".join(work),
                           count=self.ws.index.tokens.count, count_many=self.ws.index.tokens.count_many)
        served = ([_served(i.hit, "fragments", i.text, i.tokens) for i in composed.fragments]
                  + [_served(i.hit, "avoid", i.text, i.tokens) for i in composed.avoid])
        abstained = composed.note == NO_KNOWLEDGE   # paths alone that find nothing abstain too (gaps)
        trace_id = self._trace("context", query or "", who, within, settings, served, now,
                               extra={"budget_tokens": budget, "used_tokens": composed.used,
                                      "omitted": composed.omitted, "min_confidence": floor, "abstained": abstained,
                                      "paths": work, "path_weight": weight, "path_links": len(links)})
        note = composed.note if trace_id else "; ".join(filter(None, [composed.note, TRACE_NOT_STORED]))
        return ContextResult(trace_id, query or "", budget, composed.used, composed.fragments, composed.avoid,
                             composed.omitted, note, min_confidence=floor, abstained=abstained,
                             notice=composed.notice, paths=work)

    def confidence_floor(self, min_confidence: float | None = None) -> float:
        """The confidence floor a ``context`` call applies: ``min_confidence`` when given, else
        workbench.yaml's ``confidence_floor``, else the floor of the workspace's calibration."""
        given = _confidence(min_confidence)
        if given is not None:
            return given
        configured = getattr(self.config, "confidence_floor", None)
        return float(configured) if configured is not None else self.calibration().floor

    def calibration(self) -> calibration.Calibration:
        """The confidence model in use: the workspace's golden-set fit when one is stored (``calibrate``),
        else the prior. Read from the store at most every ``CALIBRATION_TTL_S`` (another process may refit)."""
        import time

        cached = getattr(self, "_calibration", None)
        if cached is not None and time.monotonic() - cached[0] < CALIBRATION_TTL_S:
            return cached[1]
        model = calibration.PRIOR
        stored = self.store.calibration()
        if stored:
            import json

            try:
                model = calibration.Calibration.from_dict(json.loads(stored))
            except (ValueError, KeyError, TypeError):
                model = calibration.PRIOR   # written by a newer workbench: the prior, until refitted
        self._calibration = (time.monotonic(), model)
        return model

    def forget_calibration(self) -> None:
        self._calibration = None

    def _filters(self, kind, tag, owner, updated_since):
        return make_filters(kind=kind, tag=tag, owner=owner, updated_since=updated_since,
                            principals=self.config.principals)

    # -- supersession -----------------------------------------------------------------

    def supersessions(self, principal: str | Principal | None = None) -> dict[str, tuple[str, int]]:
        """{superseded id: (superseding id, its version)} over the active fragments the principal
        sees, counting only superseders the principal may see; when several supersede one
        fragment, the most recently updated is named (then the smallest id)."""
        who = self.principal(principal)
        index = self.search_index()
        seen = index.visible(who)
        by = index.superseders(seen, who)
        return {index.ids[i]: index.superseder_ref(int(by[i])) for i in np.flatnonzero((by >= 0) & seen)}

    def replaced_by(self, fragment_id: str, *, principal: str | Principal | None = None) -> list[str]:
        """Ids of the fragments the principal sees as superseded by ``fragment_id`` (what archiving
        it leaves superseded: an archived superseder still supersedes)."""
        return sorted(old for old, new in self.supersessions(principal).items() if new[0] == fragment_id)

    def superseded_by(self, fragment_id: str, *, principal: str | Principal | None = None
                      ) -> tuple | None:
        """(superseding id, its version) when the principal sees an active fragment that supersedes
        this one; else (id, version, "archived") when it sees an archived one that does (what an
        archived fragment replaced stays replaced); else None. Scope-checked like ``get``."""
        who = self.principal(principal)
        fragment_id = self.fragments.get(fragment_id, principal=who).id
        found = [f for f in self.store.fragments(ids=self.store.superseders(fragment_id))
                 if f.id != fragment_id and f.status in ("active", "archived") and policy.sees(who, f)]
        for status in ("active", "archived"):   # an archived superseder counts when no active one does
            newer = [f for f in found if f.status == status]
            if newer:
                best = min(newer, key=lambda f: (-f.updated_at.timestamp(), f.id))   # as the index names it
                return (best.id, best.version) if status == "active" else (best.id, best.version, "archived")
        return None

    # -- traces ---------------------------------------------------------------------

    def _trace(self, kind: str, query: str, who: Principal, within: Scope | None, settings: Settings | None,
               served: list[dict[str, Any]], now: datetime, extra: dict[str, Any] | None = None) -> str | None:
        """Store a trace and return its id; None when it cannot be stored (a read-only workspace)."""
        trace_id = "tr_" + now.strftime("%Y%m%d%H%M%S") + "_" + secrets.token_hex(4)
        stored = self.store.put_trace({"id": trace_id, "created_at": now, "kind": kind, "query": query,
                                       "principal": who.name, "scope": str(within) if within else None,
                                       "settings": {**(settings.to_dict() if settings else {}), "model": self.ws.index.embedder.name,
                                                    "embedder": self.ws.index.embedder.backend, **(extra or {})},
                                       "served": served})
        if stored:
            traces.expire(self.ws)  # traces.retain_days, at most once an hour
        return trace_id if stored else None

    def fetch(self, fragment_id: str, *, principal: str | Principal | None = None, allow_secret: bool = False,
              now: datetime | None = None):
        """One fragment served to an agent by id (the MCP `get` tool): scope-checked like ``get``,
        refused when stored with a secret-guard override (unless ``allow_secret``), and traced."""
        who = self.principal(principal)
        fragment = self.fragments.get(fragment_id, principal=who)
        if not allow_secret and fragment.id in self.store.secret_flagged():
            raise UserError(f"{fragment.id} was stored with a secret-guard override and is not served to agents")
        return fragment, self.record_get(fragment, principal=who, now=now)

    def record_get(self, fragment, *, principal: str | Principal | None = None, now: datetime | None = None) -> str:
        """Trace a fetch of one fragment by id (the MCP `get` tool), like any retrieval."""
        who = self.principal(principal)
        via = received_via(who, self.store.get(fragment.id) or fragment)
        served = [{"id": fragment.id, "version": fragment.version, "title": fragment.title, "section": "get",
                   "rank": 1, "score": 1.0, "scores": {}, **({"via": via} if via else {})}]
        return self._trace("get", fragment.id, who, None, None, served, now or utcnow())

    def health(self, *, principal: str | Principal | None = None) -> dict[str, int]:
        """Figures a long-running server reports (its /metrics): the index generation, the
        fragments and the traces stored. Counts only: nothing about what any fragment says. They
        are the whole workspace's: only for the local administrator (no principal) and admins."""
        if principal is not None and not policy.sees_workspace_totals(self.principal(principal)):
            raise PermissionDenied("workspace-wide figures (/metrics) are for admin tokens")
        return {"index_generation": self.store.generation(), "fragments": self.store.counts()["fragments"],
                "traces": self.store.trace_total()}

    def trace(self, trace_id: str, *, principal: str | Principal | None = None) -> dict[str, Any]:
        """What a call served, exactly. Only the principal who made the call may read its trace
        (anyone else is told it does not exist); items since moved out of their scope are hidden."""
        who = self.principal(principal)
        trace = self.store.trace(trace_id) if isinstance(trace_id, str) else None
        if trace is None or not policy.may(who, "read-trace", trace):
            raise NotFound(f"unknown trace {trace_id!r}")
        items, hidden = [], 0
        for item in trace["served"]:
            version = self.store.version(item["id"], item["version"])
            if version is None or not (policy.sees(who, version.content) or self._received(who, item)):
                hidden += 1
                continue
            full = dict(item)
            full.setdefault("title", version.content.title)
            if "text" not in full:
                full["text"] = version.content.body
            items.append(full)
        created = trace["created_at"].replace(microsecond=0).isoformat() + "Z"
        return {"trace_id": trace["id"], "created_at": created, "kind": trace["kind"], "query": trace["query"],
                "principal": trace["principal"], "scope": trace["scope"], "settings": trace["settings"],
                "served": items, "hidden": hidden}


    def _received(self, who: Principal, item: dict[str, Any]) -> bool:
        """Does ``who`` still receive the version a trace item served (a received fragment's other
        versions, and one it no longer receives, stay hidden)?"""
        current = self.store.get(item["id"])
        return (current is not None and received_via(who, current) is not None
                and as_served(self.store, who, current).version == item["version"])
