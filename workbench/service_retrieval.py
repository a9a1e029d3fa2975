"""The retrieval half of ``Workbench``: search, context, traces and the index.

Every call is scope-checked with the same visibility rule as ``get``; search and
context calls are stored as traces that can be replayed exactly, later edits
notwithstanding.
"""

from __future__ import annotations

import secrets
import threading
from datetime import datetime
from typing import Any, Callable

from . import policy
from .errors import NotFound, UserError
from .models import Principal, Scope
from .rank.priors import DEFAULT_HALF_LIFE, Priors
from .results import ContextResult, SearchResult
from .retrieval import index as search_index
from .retrieval.compose import compose
from .retrieval.embedder import MODEL_NAME, Embedder, count_tokens, count_tokens_many
from .retrieval.pipeline import Hit, Ranking, Settings, hits_from, rank, rerank
from .store.store import utcnow

_RERANKERS: dict[str, Any] = {}
MAX_QUERY_CHARS = 4000
TRACE_NOT_STORED = "trace not stored (read-only workspace)"
MAX_BUDGET = 1_000_000
_RERANK_LOCK = threading.Lock()


def load_reranker(path: str):
    """A sentence-transformers CrossEncoder from a local folder (never the hub), once per process."""
    from pathlib import Path

    if not Path(path).is_dir():
        raise UserError(f"reranker {path!r} is not a local folder holding a cross-encoder")
    with _RERANK_LOCK:
        if path not in _RERANKERS:
            from .retrieval.embedder import _offline

            _offline()
            try:
                from sentence_transformers import CrossEncoder

                _RERANKERS[path] = CrossEncoder(path, device="cpu", local_files_only=True)
            except Exception as e:  # noqa: BLE001
                raise UserError(f"cannot load the reranker at {path}: {e}") from e
    return _RERANKERS[path]


class RetrievalMixin:
    # provided by Workbench: store, config, principal(), get()
    _index: search_index.SearchIndex | None = None
    embedder: Embedder = Embedder()

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

    def search_index(self, progress: Callable | None = None) -> search_index.SearchIndex:
        """The index of the current generation (rebuilt, reusing vectors, after any change)."""
        generation = self.store.generation()
        if self._index is None or self._index.generation != generation:
            self._index = search_index.build(self.store, self.embedder, previous=self._index, progress=progress)
        elif progress is not None:
            self._index.progress = progress
        return self._index

    def warm(self, *, progress: Callable | None = None, lexical: str = "bm25s") -> dict[str, int]:
        """Build everything search needs now: authority, lexical index, embeddings (only missing ones)."""
        before = self.store.embedding_count(self.embedder.name)
        index = self.search_index(progress)
        index.lexical(lexical)
        index.vectors()
        return {"fragments": len(index.ids), "embedded": self.store.embedding_count(self.embedder.name) - before,
                "generation": index.generation}

    # -- pins as retrieval sees them --------------------------------------------------

    def applicable_pins(self, principal: Principal, within: Scope | None, now: datetime) -> list[str]:
        """Ids pinned in a scope that applies to the caller, visible to the caller, oldest pin first."""
        out: list[str] = []
        for pin in self.store.pins(now=now):
            scope = Scope.parse(pin["scope"])
            if not policy.sees_scope(principal, scope) or not search_index.applies(scope, within):
                continue
            if pin["fragment_id"] not in out:
                out.append(pin["fragment_id"])
        return out

    # -- search and context ---------------------------------------------------------

    def _rank(self, query: str, principal: Principal, settings: Settings, within: Scope | None,
              now: datetime, allow_secret: bool = False) -> tuple[search_index.SearchIndex, Ranking, list[str]]:
        if not isinstance(query, str) or not query.strip():
            raise UserError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise UserError(f"the query is too long ({len(query)} characters; at most {MAX_QUERY_CHARS})")
        index = self.search_index()
        withheld = set() if allow_secret else self.store.secret_flagged()
        pins = [p for p in self.applicable_pins(principal, within, now) if p not in withheld]
        ranking = rank(index, query, principal, settings, now=now, within=within, pinned_ids=set(pins))
        if withheld:  # stored with a secret-guard override: never served unless the call says so
            ranking.order = [i for i in ranking.order if index.ids[i] not in withheld]
            ranking.pinned = {i for i in ranking.pinned if index.ids[i] not in withheld}
        if settings.reranker:
            ranking = rerank(index, ranking, query, load_reranker(settings.reranker), settings.rerank_top_n)
        return index, ranking, pins

    def search(self, query: str, *, principal: str | Principal | None = None, k: int = 10,
               pipeline: str = "hybrid", lexical: str = "bm25s", fusion: str = "weighted", dense: str = "numpy",
               scope: Scope | str | None = None, min_score: float | None = None, reranker: str | None = None,
               trace: bool = True, now: datetime | None = None, allow_secret: bool = False) -> SearchResult:
        who = self.principal(principal)
        within = Scope.parse(scope) if isinstance(scope, str) else scope
        settings = self.settings(pipeline=pipeline, lexical=lexical, fusion=fusion, dense=dense, k=k,
                                 min_score=min_score, reranker=reranker)
        now = now or utcnow()
        index, ranking, _ = self._rank(query, who, settings, within, now, allow_secret)
        hits, avoid = hits_from(index, ranking, settings)
        trace_id = None
        if trace:
            served = [_served(h, "hits") for h in hits] + [_served(h, "avoid") for h in avoid]
            trace_id = self._trace("search", query, who, within, settings, served, now)
        info = settings.to_dict()
        if trace and trace_id is None:
            info["trace_note"] = TRACE_NOT_STORED
        return SearchResult(trace_id, query, hits, avoid, ranking.stages_ms, info)

    def context(self, query: str, *, principal: str | Principal | None = None, budget: int = 3200,
                scope: Scope | str | None = None, pipeline: str = "hybrid", k: int = 20,
                min_score: float | None = None, reranker: str | None = None, now: datetime | None = None,
                allow_secret: bool = False) -> ContextResult:
        if isinstance(budget, bool) or not isinstance(budget, int) or not 0 <= budget <= MAX_BUDGET:
            raise UserError(f"the budget must be a whole number of tokens from 0 to {MAX_BUDGET}")
        who = self.principal(principal)
        within = Scope.parse(scope) if isinstance(scope, str) else scope
        settings = self.settings(pipeline=pipeline, k=k, min_score=min_score, reranker=reranker)
        now = now or utcnow()
        index, ranking, pins = self._rank(query, who, settings, within, now, allow_secret)
        hits, avoid = hits_from(index, ranking, settings)
        visible = index.visible(who, within)
        pin_hits = [_pin_hit(index, ranking, fid) for fid in pins if fid in index.pos and visible[index.pos[fid]]]
        composed = compose(pin_hits, hits, avoid, budget=budget, query=query, count=count_tokens,
                           count_many=count_tokens_many)
        served = ([_served(i.hit, "fragments", i.text, i.tokens) for i in composed.fragments]
                  + [_served(i.hit, "avoid", i.text, i.tokens) for i in composed.avoid])
        trace_id = self._trace("context", query, who, within, settings, served, now,
                               extra={"budget_tokens": budget, "used_tokens": composed.used,
                                      "omitted": composed.omitted})
        note = composed.note if trace_id else "; ".join(filter(None, [composed.note, TRACE_NOT_STORED]))
        return ContextResult(trace_id, query, budget, composed.used, composed.fragments, composed.avoid,
                             composed.omitted, note)

    # -- traces ---------------------------------------------------------------------

    def _trace(self, kind: str, query: str, who: Principal, within: Scope | None, settings: Settings | None,
               served: list[dict[str, Any]], now: datetime, extra: dict[str, Any] | None = None) -> str | None:
        """Store a trace and return its id; None when it cannot be stored (a read-only workspace)."""
        trace_id = "tr_" + now.strftime("%Y%m%d%H%M%S") + "_" + secrets.token_hex(4)
        stored = self.store.put_trace({"id": trace_id, "created_at": now, "kind": kind, "query": query,
                                       "principal": who.name, "scope": str(within) if within else None,
                                       "settings": {**(settings.to_dict() if settings else {}), "model": MODEL_NAME,
                                                    **(extra or {})},
                                       "served": served})
        return trace_id if stored else None

    def fetch(self, fragment_id: str, *, principal: str | Principal | None = None, allow_secret: bool = False,
              now: datetime | None = None):
        """One fragment served to an agent by id (the MCP `get` tool): scope-checked like ``get``,
        refused when stored with a secret-guard override (unless ``allow_secret``), and traced."""
        who = self.principal(principal)
        fragment = self.get(fragment_id, principal=who)
        if not allow_secret and fragment.id in self.store.secret_flagged():
            raise UserError(f"{fragment.id} was stored with a secret-guard override and is not served to agents")
        return fragment, self.record_get(fragment, principal=who, now=now)

    def record_get(self, fragment, *, principal: str | Principal | None = None, now: datetime | None = None) -> str:
        """Trace a fetch of one fragment by id (the MCP `get` tool), like any retrieval."""
        served = [{"id": fragment.id, "version": fragment.version, "title": fragment.title, "section": "get",
                   "rank": 1, "score": 1.0, "scores": {}}]
        return self._trace("get", fragment.id, self.principal(principal), None, None, served, now or utcnow())

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
            if version is None or not policy.sees(who, version.content):
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


def _served(hit: Hit, section: str, text: str | None = None, tokens: int | None = None) -> dict[str, Any]:
    item = {"id": hit.id, "version": hit.fragment.version, "title": hit.fragment.title, "section": section,
            "rank": hit.rank, "score": round(hit.score, 6),
            "scores": {k: (round(v, 6) if isinstance(v, float) else v) for k, v in hit.scores.items()}}
    if text is not None:
        item.update({"text": text, "tokens": tokens})
    return item


def _pin_hit(index: search_index.SearchIndex, ranking: Ranking, fragment_id: str) -> Hit:
    from .retrieval.pipeline import _hit

    i = index.pos[fragment_id]
    hit = _hit(index, ranking, i, 0)
    return Hit(hit.fragment, hit.score, {**hit.scores, "pinned": True}, 0)


class EvalMixin:
    """Evaluation over the golden set (in the workspace) or a BEIR directory."""

    def eval_golden(self, path: str, *, pipelines: list[str] | None = None, compare: tuple[str, str] | None = None,
                    now: datetime | None = None) -> dict[str, Any]:
        from .retrieval import evaluate

        queries = evaluate.load_golden(path)
        for q in queries:
            self.principal(q["principal"])
        names = _pipelines(pipelines, compare)
        now = now or utcnow()
        index = self.search_index()
        # Pins are a curation overlay that always comes first; evaluation measures ranking alone.
        out = evaluate.run_golden(index, queries, self.principal, self.settings(), names, now)
        return _finish(out, compare, {q.get("id", str(i)): q["query"] for i, q in enumerate(queries)})

    @staticmethod
    def eval_beir(folder: str, *, split: str = "test", pipelines: list[str] | None = None,
                  compare: tuple[str, str] | None = None, cache: str | None = None,
                  progress: Callable | None = None) -> dict[str, Any]:
        """Evaluate on a BEIR directory. Embeddings are cached (by text hash) in ``cache``
        (default: $WORKBENCH_CACHE, else ~/.cache/workbench/eval.duckdb)."""
        import os
        from pathlib import Path

        from .retrieval import evaluate
        from .store import Store

        names = _pipelines(pipelines, compare)
        for name in names:
            evaluate.preset(Settings(), name)
        corpus, queries, qrels = evaluate.load_beir(folder, split)
        cache_path = Path(cache or os.environ.get("WORKBENCH_CACHE") or Path.home() / ".cache" / "workbench"
                          / "eval.duckdb")
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        store = Store(cache_path)
        try:
            index = evaluate.beir_index(corpus, store, RetrievalMixin.embedder)
            index.progress = progress
            if any(evaluate.PRESETS[n]["pipeline"] != "bm25" for n in names):
                index.vectors()
            out = evaluate.run_beir(index, queries, qrels, Settings(), names)
        finally:
            store.close()
        return _finish(out, compare, queries)


def _pipelines(pipelines: list[str] | None, compare: tuple[str, str] | None) -> list[str]:
    from .retrieval.evaluate import DEFAULT_PIPELINES

    names = list(dict.fromkeys(pipelines or DEFAULT_PIPELINES))
    for name in compare or ():
        if name not in names:
            names.append(name)
    return names


def _finish(out: dict[str, Any], compare: tuple[str, str] | None, queries: dict[str, str]) -> dict[str, Any]:
    from .results import EvalReport
    from .retrieval import evaluate

    result = EvalReport(out["metrics"])
    if compare:
        result["compare"] = evaluate.compare(out["rankings"], compare[0], compare[1], queries)
    return result
