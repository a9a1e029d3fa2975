"""The in-memory search index of one workspace generation.

Holds the active fragments in a fixed order with their scope columns, freshness ages,
links, text and (lazily) their embedding matrix and lexical backends. Rebuilt when
the store's generation changes; vectors of unchanged text are reused, never re-embedded.

Ranking statistics are per caller: ``authority_for(mask)`` is PageRank over the subgraph a
caller may see (cached per visibility signature: the visibility groups the mask covers),
and the lexical backends take the caller's mask. ``authority`` (whole-workspace PageRank,
normalised) remains for whole-workspace views only; ranking must not use it.

Supersession is per caller too: ``superseders(mask)`` names, for each fragment, the
superseder the caller sees (rank/supersession.py). ``filter_mask`` turns search filters
(kind, tag, owner, updated since) into a mask over the same positions.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from datetime import datetime
from typing import Callable

import numpy as np

from ..models import Fragment, Principal, Scope
from ..rank import supersession
from ..rank.authority import edge_arrays, visible_authority
from .lexical import Bm25, DuckdbFts, canonical_backend

CHUNKER_VERSION = "fragment-v1"
AUTHORITY_CACHE = 64  # visibility signatures whose authority is kept per index


def index_text(f: Fragment) -> str:
    """What retrieval sees of a fragment: title, anti-pattern fields, body, tags."""
    parts = [f.title]
    parts += [f"{label}: {value}" for label, value in f.content.antipattern()]
    parts.append(f.body)
    if f.tags:
        parts.append("Tags: " + ", ".join(f.tags))
    return "\n\n".join(p for p in parts if p)


def text_hash(text: str) -> str:
    return hashlib.sha256(f"{CHUNKER_VERSION}\n{text}".encode("utf-8")).hexdigest()


class SearchIndex:
    def __init__(self, fragments: list[Fragment], generation: int, derived,
                 authority: dict[str, tuple[float, int, int]], progress: Callable | None = None, *,
                 links: list[tuple[str, str]] = (), source_links: list[tuple[str, str]] = (),
                 previous: "SearchIndex | None" = None):
        self.generation = generation
        self.derived = derived            # the IndexManager: the only writer of derived data
        self.store = derived.store
        self.embedder = derived.embedder
        self.fragments = fragments
        self.ids = [f.id for f in fragments]
        self.pos = {fid: i for i, fid in enumerate(self.ids)}
        # a fragment object reused from the previous generation (unchanged) keeps its text and hash
        known = ({id(f): i for i, f in enumerate(previous.fragments)} if previous is not None else {})
        reuse = [known.get(id(f)) for f in fragments]
        self.texts = [index_text(f) if i is None else previous.texts[i] for f, i in zip(fragments, reuse)]
        self.hashes = [text_hash(t) if i is None else previous.hashes[i] for t, i in zip(self.texts, reuse)]
        self.kinds = np.array([f.kind for f in fragments], dtype=object)
        epoch = datetime(1970, 1, 1)
        self.fresh_s = np.array([(max(f.updated_at, f.verified_at or f.updated_at) - epoch).total_seconds()
                                 for f in fragments], dtype=np.float64)
        self.updated_s = np.array([(f.updated_at - epoch).total_seconds() for f in fragments], dtype=np.float64)
        self.owners = np.array([f.owner for f in fragments], dtype=object)
        self._tags: dict[str, np.ndarray] | None = None
        self._supersedes = supersession.edge_arrays(
            ((f.id, old) for f in fragments for old in f.content.supersedes), self.pos)
        kinds = sorted(set(self.kinds.tolist()))
        self._kind_keys = kinds
        self._kind_idx = np.array([kinds.index(k) for k in self.kinds], dtype=np.int64) if kinds else \
            np.zeros(0, dtype=np.int64)
        raw = np.array([authority.get(fid, (0.0, 0, 0))[0] for fid in self.ids], dtype=np.float64)
        self.authority = raw / raw.max() if raw.size and raw.max() > 0 else raw
        # fragments grouped by (scope, owner of session-scoped ones): visibility is decided per group
        groups: dict[tuple[Scope, str | None], int] = {}
        self._group = np.array([groups.setdefault((f.scope, f.owner if f.scope.session else None), len(groups))
                                for f in fragments], dtype=np.int64)
        self._group_keys = list(groups)
        self._vectors: np.ndarray | None = None
        self._lexical: dict[str, object] = {}
        self.graph_sig: int | None = None
        self._lock = threading.Lock()
        self.progress = progress
        self._links, self._sources, self.source_names = edge_arrays(self.ids, links, source_links, self.pos)
        self._authority: OrderedDict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = OrderedDict()
        self._authority_lock = threading.Lock()

    # -- visibility ---------------------------------------------------------------------

    def visible(self, principal: Principal, within: Scope | None = None) -> np.ndarray:
        """Boolean mask of fragments the principal may see (and that apply inside ``within``)."""
        verdict = np.array([principal.can_see(scope, owner=owner) and applies(scope, within)
                            for scope, owner in self._group_keys], dtype=bool)
        return verdict[self._group] if len(self.ids) else np.zeros(0, dtype=bool)

    def _signature(self, mask: np.ndarray) -> bytes:
        """The visibility groups ``mask`` covers (or, for a mask that splits a group, the mask)."""
        covered = np.zeros(len(self._group_keys), dtype=bool)
        covered[self._group[mask]] = True
        if np.array_equal(covered[self._group], mask):
            return b"g" + np.packbits(covered).tobytes()
        return b"m" + np.packbits(mask).tobytes()

    # -- authority ----------------------------------------------------------------------

    def _visible_graph(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(normalised authority, PageRank, in-degree, out-degree) over the subgraph of the
        fragments in ``mask``, computed once per visibility signature."""
        key = self._signature(mask)
        with self._authority_lock:
            hit = self._authority.get(key)
            if hit is not None:
                self._authority.move_to_end(key)
                return hit
        rank, in_degree, out_degree = visible_authority(mask, self._links, self._sources, self._supersedes)
        top = rank.max() if rank.size else 0.0
        entry = (rank / top if top > 0 else rank, rank, in_degree, out_degree)
        with self._authority_lock:
            self._authority[key] = entry
            while len(self._authority) > AUTHORITY_CACHE:
                self._authority.popitem(last=False)
        return entry

    def authority_for(self, mask: np.ndarray) -> np.ndarray:
        """Per-fragment authority in [0, 1] for a caller who sees ``mask``: PageRank over the
        fragments in the mask and the sources they cite, divided by its max there; 0 outside."""
        return self._visible_graph(mask)[0]

    def graph_authority(self, mask: np.ndarray) -> dict[str, tuple[float, int, int]]:
        """Fragment id → (PageRank, in-links, out-links) within the subgraph of the fragments in
        ``mask`` (and the sources they cite), for the fragments in the mask: what
        ``store.authority()`` holds for the whole workspace, as one caller may see it."""
        _, rank, in_degree, out_degree = self._visible_graph(mask)
        return {self.ids[i]: (float(rank[i]), int(in_degree[i]), int(out_degree[i])) for i in np.flatnonzero(mask)}

    # -- supersession and filters -----------------------------------------------------------

    def superseders(self, mask: np.ndarray) -> np.ndarray:
        """Per position, the position of the superseder a caller who sees ``mask`` is told
        about (-1: not superseded for this caller)."""
        return supersession.superseders(mask, *self._supersedes, self.updated_s)

    def filter_mask(self, kinds=(), tags=(), owners=(), updated_since: float | None = None) -> np.ndarray:
        """Fragments of one of ``kinds``, carrying one of ``tags``, owned by one of ``owners``
        and updated at or after ``updated_since`` (seconds since 1970); an empty criterion
        does not filter."""
        keep = np.ones(len(self.ids), dtype=bool)
        if kinds:
            keep &= np.isin(self.kinds, list(kinds))
        if owners:
            keep &= np.isin(self.owners, list(owners))
        if tags:
            if self._tags is None:
                by_tag: dict[str, list[int]] = {}
                for i, f in enumerate(self.fragments):
                    for tag in f.tags:
                        by_tag.setdefault(tag, []).append(i)
                self._tags = {t: np.array(v, dtype=np.int64) for t, v in by_tag.items()}
            tagged = np.zeros(len(self.ids), dtype=bool)
            for tag in tags:
                tagged[self._tags.get(tag, np.zeros(0, dtype=np.int64))] = True
            keep &= tagged
        if updated_since is not None:
            keep &= self.updated_s >= updated_since
        return keep

    def adopt_authority(self, previous: "SearchIndex | None") -> None:
        """Keep the previous generation's per-caller authority when links and visibility groups
        are unchanged (an edit of text only)."""
        if (previous is not None and previous.graph_sig is not None and previous.graph_sig == self.graph_sig
                and previous.ids == self.ids and previous._group_keys == self._group_keys
                and np.array_equal(previous._group, self._group)):
            with previous._authority_lock:
                self._authority = OrderedDict(previous._authority)

    # -- vectors ------------------------------------------------------------------------

    def vectors(self) -> np.ndarray:
        """N × 384 normalised embeddings; missing ones are embedded once and stored."""
        if self._vectors is None:
            with self._lock:
                if self._vectors is None:
                    self._vectors = self._load_vectors()
        return self._vectors

    def _load_vectors(self, previous: dict[str, np.ndarray] | None = None) -> np.ndarray:
        have = dict(previous or {})
        wanted = [h for h in dict.fromkeys(self.hashes) if h not in have]
        if wanted:
            have.update(self.derived.embeddings(wanted))
        missing = [h for h in dict.fromkeys(self.hashes) if h not in have]
        if missing:
            text_of = dict(zip(self.hashes, self.texts))
            batch = 256
            for start in range(0, len(missing), batch):
                chunk = missing[start:start + batch]
                matrix = self.derived.embed(chunk, [text_of[h] for h in chunk])
                have.update(zip(chunk, matrix))
                if self.progress:
                    self.progress("embed", min(start + batch, len(missing)), len(missing))
        if not self.hashes:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([have[h] for h in self.hashes]).astype(np.float32, copy=False)

    def adopt_vectors(self, previous: "SearchIndex | None") -> None:
        """Reuse the vectors of a previous generation for text that did not change."""
        if previous is not None and previous._vectors is not None:
            self._vectors = self._load_vectors(dict(zip(previous.hashes, previous._vectors)))

    def has_vectors(self) -> bool:
        return self._vectors is not None

    # -- lexical ------------------------------------------------------------------------

    def lexical(self, name: str):
        name = canonical_backend(name)
        backend = self._lexical.get(name)
        if backend is None:
            with self._lock:
                backend = self._lexical.get(name)
                if backend is None:
                    backend = (Bm25(self.texts, self.hashes, self.derived.vocabulary) if name == "bm25"
                               else DuckdbFts(self.texts, self.ids, self.store, self.generation,
                                              build=self.derived.build_fts))
                    self._lexical[name] = backend
        return backend

    def ages_days(self, now: datetime) -> np.ndarray:
        return ((now - datetime(1970, 1, 1)).total_seconds() - self.fresh_s) / 86400.0

    def half_lives(self, half_life: Callable[[str], float]) -> np.ndarray:
        """Per-fragment half-life in days, from a per-kind rule."""
        if not self._kind_keys:
            return np.zeros(0)
        return np.array([half_life(k) for k in self._kind_keys], dtype=np.float64)[self._kind_idx]


def applies(scope: Scope, within: Scope | None) -> bool:
    """A fragment applies inside a working scope when each level it sets matches it."""
    if within is None:
        return True
    for level in ("org", "repo", "persona", "session"):
        mine, theirs = getattr(scope, level), getattr(within, level)
        if mine is not None and theirs is not None and mine != theirs:
            return False
    return True


def build_index(store, derived, previous: SearchIndex | None = None, progress: Callable | None = None
                ) -> SearchIndex:
    """The index of the store's current generation (``derived``: the IndexManager that owns it).
    After an edit only what changed is reloaded: unchanged fragments, their vectors and tokens are
    reused, and PageRank is recomputed only when the link graph changed."""
    generation = store.generation()
    fragments = _fragments(store, previous)
    edges, source_edges = store.links(), store.source_edges()
    supersedes = sorted((f.id, old) for f in fragments for old in f.content.supersedes)
    graph_sig = hash((tuple(sorted(edges)), tuple(sorted(source_edges)), tuple(supersedes),
                      tuple(f.id for f in fragments)))
    same_graph = previous.generation if previous is not None and previous.graph_sig == graph_sig else None
    authority = derived.authority(fragments, edges, source_edges, supersedes, generation, same_graph)
    index = SearchIndex(fragments, generation, derived, authority, progress, links=edges,
                        source_links=source_edges, previous=previous)
    index.graph_sig = graph_sig
    index.adopt_authority(previous)
    index.adopt_vectors(previous)
    return index


def _fragments(store, previous: SearchIndex | None) -> list[Fragment]:
    """Active fragments in id order, reusing the previous index's objects for unchanged rows."""
    if previous is None or not previous.fragments:
        return store.fragments(status="active")
    known = {f.id: f for f in previous.fragments}
    stamps = store.stamps(status="active")
    changed = [fid for fid, version, verified in stamps
               if fid not in known or (known[fid].version, known[fid].verified_at) != (version, verified)]
    if len(changed) > len(stamps) // 2:
        return store.fragments(status="active")
    fresh = {f.id: f for f in store.fragments(status="active", ids=changed)} if changed else {}
    return [fresh.get(fid) or known[fid] for fid, _, _ in stamps]
