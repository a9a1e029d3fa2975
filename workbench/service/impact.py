"""Edit impact: the golden queries an edit would change, known before the edit is saved.

``edit_impact`` checks the edit as ``edit`` would (service/fragments.py ``preview``), then ranks
every golden query whose asker sees the fragment (before or after) twice, as the index stands
and as it would stand with the edit saved, with the hybrid pipeline ``eval`` and ``check`` use.
A query *touches* the fragment when it is in its top k either way.

Incremental, not a full eval: per index generation this module caches each golden query's
ranking state (tokens and postings, its vector, the cosine of every row; per asker the mask,
lengths, authority and supersession), carried over from the previous generation where the
rows did not change. An edit then costs one embedding of the edited text (kept as derived data,
so the save reuses it), one tokenization, and array maths per query (rank/impact.py). The CLI's
``edit`` and ``edit --dry-run`` and the TUI's editor call this same method.

A report names what its reader (the editor) may see only: queries by askers of other orgs are
counted (policy.sees_query), fragments the reader may not see are ``None``. An editor who may
not see the fragment is told it is unknown, as ``get`` would. Problems with the workspace's golden
set (none, a file that does not load, an unknown asker) are the report's note, never an error: an
edit is never blocked by them. This module renders nothing.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from .. import policy
from ..errors import UserError, WorkbenchError
from ..models import Content, Fragment, Principal
from ..rank import authority as rank_authority
from ..rank import impact as maths
from ..rank import priors as rank_priors
from ..rank import supersession
from ..rank.fusion import DENSE_WEIGHT
from ..retrieval import pipeline
from ..retrieval.index import SearchIndex, index_text, text_hash
from ..retrieval.lexical import identifiers
from ..retrieval.windows import windows
from ..models import utcnow
from .evaluation import Evaluation
from .fragments import Fragments
from .impact_report import TOP, ImpactReport, QueryImpact, SavedEdit
from .search import Retrieval
from .workspace import Feature, Workspace

PIPELINE = "hybrid"   # what eval reports first, check compares and search serves
MAX_K = 100           # rankings go 100 deep


@dataclass(frozen=True)
class _Golden:
    path: Path
    stamp: tuple[int, int]          # (mtime ns, size) of the file when read
    queries: list[dict[str, Any]]


@dataclass
class _State:
    """The cached ranking state of the golden queries for one index generation."""

    index: SearchIndex
    golden: _Golden
    stages: maths.Stages
    principals: dict[str, Principal]
    callers: dict[str, maths.Caller]
    queries: list[tuple[str, dict[str, Any], maths.Query]]   # (key, golden entry, state)
    vectors: dict[str, np.ndarray]                            # key → query vector


class Impact(Feature):
    """``edit_impact``: which golden queries an edit changes."""

    def __init__(self, ws: Workspace, fragments: Fragments, retrieval: Retrieval, evaluation: Evaluation):
        super().__init__(ws)
        self.fragments, self.retrieval, self.evaluation = fragments, retrieval, evaluation
        self._lock = threading.Lock()
        self._golden: _Golden | None = None
        self._state: _State | None = None

    def edit_impact(self, fragment_id: str, text: str | None = None, *, actor: str | Principal | None = None,
                    golden: str | Path | None = None, k: int = 10, file: str = "<edit>",
                    allow_secret: bool = False, base: int | None = None, now: datetime | None = None,
                    fields: dict[str, Any] | None = None) -> ImpactReport:
        """What saving ``text`` as the new version of ``fragment_id`` (as ``edit`` takes it: a body
        or a whole fragment file) would do to the golden queries that touch it: per query, the
        fragment's rank before and after (within the top ``k``), the top 3 before and after, and
        whether the query's answer is lost. Nothing is written (but the edited text's embedding,
        derived data the save then reuses). The edit is checked as ``edit`` checks it; ``base``, as
        for ``edit``: when the fragment moved on since that version, ``Conflict``. ``golden``: a
        golden file (an error when it cannot be run); default the workspace's
        (``Evaluation.golden_path``), whose problems are only the report's ``note``. ``fields``: a
        structured edit, as ``edit`` takes it (an anti-pattern's don't / why / instead / evidence)."""
        started = time.perf_counter()
        who, current, content = self.fragments.preview(fragment_id, text, actor=actor, file=file,
                                                       allow_secret=allow_secret, base=base, fields=fields)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise UserError(f"k must be a whole number from 1 to {MAX_K} (got {k!r})", param="k")
        checked = time.perf_counter()
        path = self.evaluation.golden_path(golden)
        if path is None:
            return ImpactReport(current.id, None, k, note="no golden set (name one as `golden:` in workbench.yaml, "
                                "or put golden.yaml in the workspace folder)")
        try:
            loaded = self._load(path)
            return self._impact(who, current, content, loaded, k, now or utcnow(), started, checked)
        except WorkbenchError as e:
            if golden:   # the golden set asked for cannot be run: an error
                raise
            # the workspace's cannot: said, and the edit goes on
            return ImpactReport(current.id, str(path), k, note=f"impact not computed: {e.message}")

    def edit_with_impact(self, fragment_id: str, text: str | None = None, *, reason: str,
                         actor: str | Principal | None = None, file: str = "<edit>", allow_secret: bool = False,
                         base: int | None = None, golden: str | Path | None = None, k: int = 10,
                         fields: dict[str, Any] | None = None) -> SavedEdit:
        """``edit``, with its ``edit_impact`` computed just before the save (against the index the
        edit changes). Nothing is saved when the edit is refused; the impact never refuses it."""
        self.fragments.get(fragment_id, principal=actor)   # an unknown fragment is said first, as edit says it
        if not reason or not reason.strip():
            raise UserError("a reason is required for every change", param="reason")
        self.store.require_writable()   # a read-only workspace refuses before any ranking is done
        impact = self.edit_impact(fragment_id, text, actor=actor, golden=golden, k=k, file=file,
                                  allow_secret=allow_secret, base=base, fields=fields)
        saved = self.fragments.edit(fragment_id, text, reason=reason, actor=actor, file=file,
                                    allow_secret=allow_secret, base=base, fields=fields)
        return SavedEdit(saved, impact)

    def warm(self, golden: str | Path | None = None) -> int:
        """Build the golden queries' ranking state now (their vectors are kept as derived data), so
        the first impact is quick; the number of golden queries (0: no golden set)."""
        path = self.evaluation.golden_path(golden)
        return len(self.state(self._load(path)).queries) if path is not None else 0

    # -- the cache ------------------------------------------------------------------------

    def _load(self, path: Path) -> _Golden:
        from ..retrieval import evaluate

        try:
            st = path.stat()
        except OSError as e:
            raise UserError(f"cannot read the golden set {path}: {e.strerror or e}") from e
        stamp = (st.st_mtime_ns, st.st_size)
        with self._lock:
            held = self._golden
        if held is not None and held.path == path and held.stamp == stamp:
            return held
        queries = evaluate.load_golden(path)
        for q in queries:
            self.principal(q["principal"])   # an unknown asker is the note, as eval refuses it
        loaded = _Golden(path, stamp, queries)
        with self._lock:
            self._golden = loaded
        return loaded

    def state(self, golden: _Golden) -> _State:
        """The ranking state of ``golden`` over the current index generation (built once per
        generation, reusing the previous generation's cosines for rows whose text is unchanged)."""
        index = self.retrieval.search_index()
        with self._lock:
            previous = self._state
            if previous is not None and previous.index is index and previous.golden is golden:
                return previous
            state = self._build(index, golden, previous)
            self._state = state
            return state

    def _build(self, index: SearchIndex, golden: _Golden, previous: _State | None) -> _State:
        from ..retrieval.evaluate import preset

        settings = preset(self.retrieval.settings(), PIPELINE)
        if settings.lexical != "bm25" or settings.dense != "numpy":
            raise UserError("edit impact ranks with the bm25 lexical backend and the numpy dense path only")
        self._passages = settings.passages
        stages = maths.Stages(
            pipeline=settings.pipeline, fusion=settings.fusion, depth=settings.depth, k=settings.k,
            min_score=settings.min_score, dense_weight=settings.dense_weight,
            priors=settings.priors if settings.use_priors and settings.pipeline == "hybrid" else None,
            normal_weight=DENSE_WEIGHT, identifier_weight=pipeline.IDENTIFIER_DENSE_WEIGHT,
            rare_docs=pipeline.RARE_DOCS, rare_share=pipeline.RARE_SHARE)
        backend = index.lexical("bm25")
        principals = {name: self.principal(name) for name in dict.fromkeys(q["principal"] for q in golden.queries)}
        callers = {}
        for name, who in principals.items():
            mask = index.visible(who)
            by = index.superseders(mask, who)
            callers[name] = maths.Caller(mask=mask, lengths=backend.matrix.lengths, authority=index.authority_for(mask),
                                         superseded=np.flatnonzero((by >= 0) & mask),
                                         retired=np.flatnonzero((by >= len(index.ids)) & mask))
        texts = [q["query"] for q in golden.queries]
        vectors = self._vectors(texts)   # encoded as eval encodes them (one batch), kept as derived data
        carried = _carry(previous, index, self._passages)
        queries, by_key = [], {}
        for i, q in enumerate(golden.queries):
            key = str(i)
            tokens = tuple(backend.vocabulary.tokenize(q["query"]))
            idents = tuple(identifiers(q["query"]))
            postings = {}
            for token in dict.fromkeys(tokens + idents):
                tid = backend.vocabulary.ids.get(token)
                if tid is not None:
                    postings[token] = backend.matrix.postings(tid)
            cosines = carried(q["query"], vectors[i]) if carried else None
            if cosines is None:
                cosines = pipeline.dense_cosines(index, vectors[i], passages=self._passages).astype(np.float32)
            cosines.flags.writeable = False
            queries.append((key, q, maths.Query(tokens=tokens, identifiers=idents, postings=postings,
                                                cosines=cosines, named=frozenset())))
            by_key[key] = vectors[i]
        return _State(index, golden, stages, principals, callers, queries, by_key)

    def _vectors(self, texts: list[str]) -> np.ndarray:
        """Vectors of ``texts``: stored ones by text hash, the rest encoded in one batch and stored."""
        hashes = [text_hash(t) for t in texts]
        stored = self.ws.index.embeddings(list(dict.fromkeys(hashes)))
        todo = list(dict.fromkeys(h for h in hashes if h not in stored))
        if todo:
            first = {h: t for h, t in zip(hashes, texts)}
            stored.update(zip(todo, self.ws.index.embed(todo, [first[h] for h in todo])))
        return np.stack([stored[h] for h in hashes]) if texts else np.zeros((0, self.ws.index.embedder.dim),
                                                                              dtype=np.float32)

    # -- one edit -------------------------------------------------------------------------

    def rankings(self, fragment_id: str, text: str, *, actor: str | Principal | None = None,
                 golden: str | Path | None = None, now: datetime | None = None
                 ) -> dict[str, tuple[list[str], list[str]]]:
        """Query id → (ranked ids before, ranked ids after) the edit, 300 deep, for every golden query
        whose asker sees the fragment: what the report is made of, whoever may read it (for tests
        and diagnosis; not on the facade)."""
        _, current, content = self.fragments.preview(fragment_id, text, actor=actor)
        path = self.evaluation.golden_path(golden)
        if path is None:
            return {}
        state = self.state(self._load(path))
        ids = state.index.ids
        return {str(q.get("id", key)): ([ids[i] for i in before], [ids[i] for i in after])
                for key, q, before, after in self._ranked(state, current, content, now or utcnow())}

    def _ranked(self, state: _State, current: Fragment, content: Content, now: datetime,
                timings: dict[str, float] | None = None):
        """(key, golden entry, ranked positions before, after) of each golden query whose asker sees
        the fragment before or after the edit (nothing when the fragment is not in the index);
        ``timings`` gets the milliseconds spent embedding the edited text ("embed")."""
        index, stages = state.index, state.stages
        e = index.pos.get(current.id)
        if e is None:
            return
        after = Fragment(id=current.id, version=current.version + 1, content=content,
                         content_hash=content.content_hash(), created_at=current.created_at, updated_at=now)
        text = index_text(after)
        tokens = index.lexical("bm25").vocabulary.document_tokens(text)
        started = time.perf_counter()
        vector = self._vectors([text])[0]
        passages = self._vectors(windows(text) if getattr(self, '_passages', False) else [])   # MaxP, as the dense stage scores it
        if timings is not None:
            timings["embed"] = (time.perf_counter() - started) * 1000
        edited = maths.Edited(position=e, tf=dict(Counter(tokens)),
                              cosine={key: _maxp_cosine(vector, passages, qv) for key, qv in state.vectors.items()})
        active = content.status == "active"
        graph = _graph_after(self.store, index, current, content) if active else None
        now_s = (now - datetime(1970, 1, 1)).total_seconds()
        after_callers: dict[str, maths.Caller] = {}
        for name, asker in state.principals.items():
            before = state.callers[name]
            sees = active and policy.sees(asker, content)
            if before.mask[e] or sees:
                after_callers[name] = _caller_after(index, before, e, sees, len(tokens), graph, now_s)
        fresh = np.ones(len(index.ids))
        if stages.priors is not None and len(index.ids):
            fresh = rank_priors.freshness(index.ages_days(now), index.half_lives(stages.priors.half_life))
        fresh_after = fresh.copy()
        fresh_after[e] = 1.0   # saved now: age 0
        for key, q, query in state.queries:
            caller_after = after_callers.get(q["principal"])
            if caller_after is None:
                continue
            caller_before = state.callers[q["principal"]]
            query = replace(query, named=_named(index, q["query"], caller_before, caller_after))
            yield (key, q, maths.order(maths.final(query, caller_before, stages, fresh), stages),
                   maths.order(maths.final(query, caller_after, stages, fresh_after, edited, key), stages))

    def _impact(self, who: Principal, current: Fragment, content: Content, golden: _Golden, k: int,
                now: datetime, started: float, checked: float) -> ImpactReport:
        state = self.state(golden)
        ready = time.perf_counter()
        index = state.index
        e = index.pos.get(current.id)
        base = dict(fragment_id=current.id, golden=str(golden.path), k=k, generation=index.generation)
        if e is None:   # not in the index (archived): no golden query ranks it now
            note = (f"{current.id} is {current.status}: it is not searched, so no golden query ranks it"
                    if content.status != "active" else
                    f"{current.id} is {current.status}: the impact of making it active again is not computed")
            return ImpactReport(**base, note=note)
        reader = index.visible(who)

        def name(position: int) -> str | None:
            return index.ids[position] if reader[position] or position == e else None

        shown: list[QueryImpact] = []
        considered = hidden = hidden_changed = 0
        timings: dict[str, float] = {}
        for key, q, ranked_before, ranked_after in self._ranked(state, current, content, now, timings):
            considered += 1
            rank_before, rank_after = maths.rank_of(ranked_before, e, k), maths.rank_of(ranked_after, e, k)
            if rank_before is None and rank_after is None:
                continue
            relevant = [index.pos[r] for r in q["relevant"] if r in index.pos]
            first_before, recall_before = _relevant(ranked_before, relevant, len(q["relevant"]), k)
            first_after, recall_after = _relevant(ranked_after, relevant, len(q["relevant"]), k)
            impact = QueryImpact(
                query_id=str(q.get("id", key)), query=str(q["query"]), principal=str(q["principal"]),
                rank_before=rank_before, rank_after=rank_after,
                top_before=tuple(name(int(i)) for i in ranked_before[:TOP]),
                top_after=tuple(name(int(i)) for i in ranked_after[:TOP]),
                top3_changed=ranked_before[:TOP].tolist() != ranked_after[:TOP].tolist(),
                first_relevant_before=first_before, first_relevant_after=first_after,
                recall_before=recall_before, recall_after=recall_after)
            if policy.sees_query(who, state.principals[q["principal"]]):
                shown.append(impact)
            else:
                hidden += 1
                hidden_changed += impact.changed
        done = time.perf_counter()
        return ImpactReport(**base, considered=considered, queries=tuple(shown), hidden_queries=hidden,
                            hidden_changed=hidden_changed,
                            timings_ms={"check": (checked - started) * 1000, "state": (ready - checked) * 1000,
                                        **timings,
                                        "rescore": (done - ready) * 1000 - timings.get("embed", 0.0),
                                        "total": (done - started) * 1000})


def _carry(previous: _State | None, index: SearchIndex, passages: bool = False):
    """A function (query text, vector) → the cosines of every row of ``index`` taken from the
    previous generation's cache, with only rows whose text changed computed again; None when
    the previous generation holds other fragments."""
    if previous is None or not (previous.index.ids is index.ids or previous.index.ids == index.ids):
        return None
    old = previous.index.hashes
    changed = np.array([i for i, (a, b) in enumerate(zip(old, index.hashes)) if a != b], dtype=np.int64)
    held = {q["query"]: query.cosines for _, q, query in previous.queries}

    def cosines(text: str, qv: np.ndarray) -> np.ndarray | None:
        found = held.get(text)
        if found is None:
            return None
        out = np.array(found)
        if changed.size:
            out[changed] = pipeline.dense_cosines(index, qv, changed, passages=passages)
        return out
    return cosines


def _graph_after(store, index: SearchIndex, current: Fragment, content: Content):
    """(links, sources, supersedes) edge arrays as the index after the edit holds them, when the
    edit changes the fragment's links, source pointers or supersedes; else None."""
    old = current.content
    if (old.links, old.supersedes, _sources(old)) == (content.links, content.supersedes, _sources(content)):
        return None
    fid = current.id
    edges = [(a, b) for a, b in store.links() if a != fid] + [(fid, b) for b in content.links]
    refs = [(a, s) for a, s in store.source_edges() if a != fid] + [(fid, s) for s in _sources(content)]
    links, sources, _ = rank_authority.edge_arrays(index.ids, edges, refs, index.pos)
    pairs = [(f, o) for f, olds in zip(index.ids, index.rows["supersedes"]) if f != fid for o in olds]
    return links, sources, supersession.edge_arrays(pairs + [(fid, o) for o in content.supersedes], index.pos)


def _sources(content: Content) -> list[str]:
    """The source nodes a fragment cites, named as the store names them."""
    return [f"source:{s.repo or '-'}/{s.path}" for s in content.sources]


def _caller_after(index: SearchIndex, before: maths.Caller, e: int, sees: bool, length: int, graph,
                  now_s: float) -> maths.Caller:
    """A caller's view once the edit is saved: the fragment at ``e`` seen or not, with its new
    length; authority and supersession recomputed when what they rest on changed."""
    mask = before.mask
    if bool(mask[e]) != sees:
        mask = mask.copy()
        mask[e] = sees
    lengths = before.lengths.copy()
    lengths[e] = length
    authority, superseded = before.authority, before.superseded
    if graph is not None:
        links, sources, sup = graph
        rank = rank_authority.visible_authority(mask, links, sources, sup)[0]
        top = rank.max() if rank.size else 0.0
        authority = rank / top if top > 0 else rank
        updated = index.updated_s.copy()
        updated[e] = now_s
        by = supersession.superseders(mask, *sup, updated)
        superseded = np.union1d(np.flatnonzero((by >= 0) & mask), before.retired[mask[before.retired]])
    elif mask is not before.mask:
        authority = index.authority_for(mask)
        by = supersession.superseders(mask, *index._supersedes, index.updated_s)
        superseded = np.union1d(np.flatnonzero((by >= 0) & mask), before.retired[mask[before.retired]])
    return maths.Caller(mask=mask, lengths=lengths, authority=authority, superseded=superseded,
                        retired=before.retired)


def _named(index: SearchIndex, query: str, *callers: maths.Caller) -> frozenset[int]:
    """The superseded positions (for any of ``callers``) whose id the query names."""
    lowered = query.lower()
    candidates = {int(i) for c in callers for i in c.superseded}
    return frozenset(i for i in candidates
                     if re.search(r"(?<![a-z0-9._-])" + re.escape(index.ids[i]) + r"(?![a-z0-9_-])", lowered))


def _relevant(ranked: np.ndarray, relevant: list[int], judged: int, k: int) -> tuple[int | None, float | None]:
    """(rank of the first relevant fragment in the top k, recall@k); recall None for a negative query."""
    top = ranked[:k].tolist()
    ranks = [top.index(p) + 1 for p in relevant if p in top]
    return (min(ranks) if ranks else None), (round(len(ranks) / judged, 4) if judged else None)


def _maxp_cosine(vector: np.ndarray, passages: np.ndarray, qv: np.ndarray) -> float:
    """An edited fragment's dense score as the dense stage computes it: MaxP over its own vector
    and its passages' (rows rounded as ``pipeline.row_cosines`` rounds them)."""
    best = float(pipeline.row_cosines(vector[None, :], qv)[0])
    if len(passages):
        best = max(best, float(pipeline.row_cosines(passages, qv).max()))
    return best
