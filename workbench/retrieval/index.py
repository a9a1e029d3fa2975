"""The in-memory search index of one workspace generation.

Holds, for the active fragments in id order, only what ranking needs, as arrays: ids,
versions, kinds, owners, scope groups, freshness times, supersession and link edges, the text
hashes that key the stored vectors, the embedding matrix and the lexical backends. Fragment
bodies stay in the store: ``fragment(i)`` loads one (a small cache keeps recent ones), and a full
lexical build reads the texts a page at a time. At 100k fragments this is what keeps the index
to arrays instead of 100k fragment objects and their texts.

Rebuilt when the store's generation changes, from the previous index (or, in a fresh process,
from the persisted base snapshot, snapshot.py): only the fragments whose stamp (version,
verified) changed are read again; unchanged text keeps its hash, vector and lexical postings
(the bm25 backend adds the changed ones to a small delta segment, lexical.py).

Ranking statistics are per caller: ``authority_for(mask)`` is PageRank over the subgraph a
caller may see (cached per visibility signature: the visibility groups the mask covers),
and the lexical backends take the caller's mask. ``authority`` (whole-workspace PageRank,
normalised) remains for whole-workspace views only; ranking must not use it.

Supersession is per caller too: ``superseders(mask)`` names, for each fragment, the
superseder the caller sees (rank/supersession.py); given the caller, an archived superseder it
sees counts too (``Retired``: archiving ADR-0007 leaves ADR-0003, which it superseded, superseded). ``filter_mask`` turns search filters
(kind, tag, owner, updated since) into a mask over the same positions.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime
from typing import Callable, Iterable, Iterator

import numpy as np

from ..models import Fragment, Principal, Scope
from ..policy import receiving
from ..rank import supersession
from ..rank.authority import edge_arrays, visible_authority
from .columns import EPOCH, CHUNKER_VERSION, Rows, Source, index_text, text_hash
from .lexical import Bm25, DuckdbFts, canonical_backend
from .index_vectors import IndexVectors
from .passages import Passages
from .retired import Retired

__all__ = ["CHUNKER_VERSION", "SearchIndex", "applies", "index_text", "text_hash"]
AUTHORITY_CACHE = 64   # visibility signatures whose authority is kept per index
FRAGMENT_CACHE = 2048  # fragments loaded for hits, kept per index


class SearchIndex(IndexVectors):
    def __init__(self, rows: Rows, generation: int, derived, authority: dict[str, tuple[float, int, int]],
                 source: Source, progress: Callable | None = None, *, links: list[tuple[str, str]] = (),
                 source_links: list[tuple[str, str]] = (), texts: dict[str, str] | None = None,
                 previous: "SearchIndex | None" = None):
        self.generation = generation
        self.derived = derived            # the IndexManager: the only writer of derived data
        self.store = derived.store
        self.embedder = derived.embedder
        self.model = self.embedder.name   # the model whose vectors this index holds (check_model)
        self.rows = rows
        self.source = source
        self.ids: list[str] = rows["id"].tolist()
        self.pos = {fid: i for i, fid in enumerate(self.ids)}
        self.hashes: list[str] = rows["text_hash"].tolist()
        self.versions = rows["version"]
        self.kinds = rows["kind"]
        self.owners = rows["owner"]
        self.fresh_s = np.maximum(rows["updated"], rows["verified"]).astype(np.float64) / 1e6
        self.updated_s = rows["updated"].astype(np.float64) / 1e6
        self._texts = dict(texts or {})     # id → text, for fragments read while building (dropped when built)
        self._cache: OrderedDict[str, Fragment] = OrderedDict()
        self._tags: dict[str, np.ndarray] | None = None
        self._supersedes = supersession.edge_arrays(
            ((fid, old) for fid, olds in zip(self.ids, rows["supersedes"]) for old in olds), self.pos)
        kinds = sorted(set(self.kinds.tolist()))
        self._kind_keys = kinds
        self._kind_idx = (np.searchsorted(np.array(kinds, dtype=object), self.kinds).astype(np.int64) if kinds
                          else np.zeros(0, dtype=np.int64))
        raw = np.array([authority.get(fid, (0.0, 0, 0))[0] for fid in self.ids], dtype=np.float64)
        self.authority = raw / raw.max() if raw.size and raw.max() > 0 else raw
        self._group, self._group_keys = _groups(rows)
        self._vectors: np.ndarray | None = None
        self._passages: Passages | None = None     # passage vectors of long fragments (passages.py)
        self._passage_seed: dict[str, np.ndarray] | None = None  # a previous generation's, by text hash
        self._quantized = None            # rank.quantized.Int8Vectors of the vectors, built on first use
        self._lexical: dict[str, object] = {}
        self.graph_sig: int | None = None
        self._lock = threading.RLock()
        self._fetch_lock = threading.Lock()
        self.progress = progress
        self._links, self._sources, self.source_names = edge_arrays(self.ids, links, source_links, self.pos)
        self._authority: OrderedDict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = OrderedDict()
        self._authority_lock = threading.Lock()
        self.retired = Retired.empty()    # archived superseders (build_index reads them each generation)

    @classmethod
    def of_fragments(cls, fragments: list[Fragment], generation: int, derived,
                     authority: dict[str, tuple[float, int, int]]) -> "SearchIndex":
        """An index over fragments held in memory (a BEIR corpus; tests)."""
        fragments = sorted(fragments, key=lambda f: f.id)
        texts = {f.id: index_text(f) for f in fragments}
        rows = Rows.of(fragments, [text_hash(texts[f.id]) for f in fragments])
        return cls(rows, generation, derived, authority, Source(fragments=fragments), texts=texts)

    def patched(self, rows: Rows, generation: int, changed: np.ndarray, texts: dict[str, str]) -> "SearchIndex":
        """The next generation when the same fragments stay active and those at ``changed`` were
        edited without touching a link, a source pointer or a supersedes edge (build_index checks):
        this index's arrays are shared or copied and patched at ``changed``, its vectors copied
        with only changed text re-read or embedded, its bm25 carried by a delta, its fragment
        cache kept for the fragments that did not change. What a full build would hold, in
        O(changed) work plus a few vectorised copies."""
        new = SearchIndex.__new__(SearchIndex)
        new.generation = generation
        new.derived, new.store, new.embedder, new.model = self.derived, self.store, self.embedder, self.model
        new.rows, new.source, new.progress = rows, self.source, self.progress
        new.ids, new.pos = self.ids, self.pos            # never written in place
        at = changed.tolist()
        hashes = list(self.hashes)
        for i in at:
            hashes[i] = rows["text_hash"][i]
        new.hashes = hashes
        new.versions, new.kinds, new.owners = rows["version"], rows["kind"], rows["owner"]
        new.fresh_s = np.maximum(rows["updated"], rows["verified"]).astype(np.float64) / 1e6
        new.updated_s = rows["updated"].astype(np.float64) / 1e6
        new._texts = dict(texts)
        gone = {self.ids[i] for i in at}
        with self._fetch_lock:
            new._cache = OrderedDict((fid, f) for fid, f in self._cache.items() if fid not in gone)
        same_tags = all(rows["tags"][i] == self.rows["tags"][i] for i in at)
        new._tags = self._tags if same_tags else None
        new._supersedes = self._supersedes
        if set(rows["kind"][changed].tolist()) <= set(self._kind_keys):
            new._kind_keys = self._kind_keys
            new._kind_idx = self._kind_idx.copy()
            if at:
                new._kind_idx[changed] = np.searchsorted(np.array(self._kind_keys, dtype=object), rows["kind"][changed])
        else:
            new._kind_keys = sorted(set(new.kinds.tolist()))
            new._kind_idx = np.searchsorted(np.array(new._kind_keys, dtype=object), new.kinds).astype(np.int64)
        new.authority = self.authority
        same_groups = all(rows[c][i] == self.rows[c][i] for i in at for c in ("org", "repo", "persona", "session", "owner"))
        new._group, new._group_keys = (self._group, self._group_keys) if same_groups else _groups(rows)
        new._quantized = None
        new._lexical = {}
        new.graph_sig = self.graph_sig
        new._lock = threading.RLock()
        new._fetch_lock = threading.Lock()
        new._links, new._sources, new.source_names = self._links, self._sources, self.source_names
        new._authority = OrderedDict()
        new._authority_lock = threading.Lock()
        if same_groups:
            new.adopt_authority(self)
        new._vectors = None
        new._passages = None
        new._passage_seed = self._passages.by_hash if self._passages is not None else self._passage_seed
        if self._vectors is not None:
            have = np.ones(len(hashes), dtype=bool)
            have[[i for i in at if hashes[i] != self.hashes[i]]] = False
            new._vectors = new._fill_vectors(np.array(self._vectors), have)
        old = self._lexical.get("bm25")
        if old is not None:
            new.lexical("bm25", seed=old)
        return new

    # -- fragments and texts, read from the store when asked -------------------------------

    def fragment(self, i: int) -> Fragment:
        return self.fragments_at([i])[0]

    def fragments_at(self, positions: Iterable[int]) -> list[Fragment]:
        """The fragments at these positions (loaded from the store once, then cached)."""
        positions = [int(i) for i in positions]
        wanted = [self.ids[i] for i in positions]
        with self._fetch_lock:
            found = {fid: self._cache[fid] for fid in dict.fromkeys(wanted) if fid in self._cache}
            for fid in found:
                self._cache.move_to_end(fid)
        missing = [fid for fid in dict.fromkeys(wanted) if fid not in found]
        if missing:
            loaded = self.source.load(missing)
            for fid in missing:  # a fragment gone since this generation (a rolled-back add) gets a placeholder
                found[fid] = loaded.get(fid) or _gone(fid)
            with self._fetch_lock:
                self._cache.update((fid, found[fid]) for fid in missing)
                while len(self._cache) > FRAGMENT_CACHE:  # evicting never loses what this call returns
                    self._cache.popitem(last=False)
        return [found[fid] for fid in wanted]

    def text(self, i: int) -> str:
        fid = self.ids[i]
        held = self._texts.get(fid)
        return held if held is not None else index_text(self.fragment(i))

    def texts_of(self, positions: list[int]) -> list[str]:
        """Indexed texts of many positions (held ones first; the others loaded in one batch)."""
        out: dict[int, str] = {i: self._texts[self.ids[i]] for i in positions if self.ids[i] in self._texts}
        rest = [i for i in positions if i not in out]
        if rest:
            loaded = self.source.load([self.ids[i] for i in rest])
            for i in rest:
                f = loaded.get(self.ids[i])
                out[i] = index_text(f) if f is not None else ""
        return [out[i] for i in positions]

    def all_texts(self) -> Iterator[tuple[int, str]]:
        """(position, text) of every fragment, held texts first, the rest a page at a time."""
        todo = set(range(len(self.ids)))
        for fid, text in list(self._texts.items()):
            i = self.pos.get(fid)
            if i is not None:
                todo.discard(i)
                yield i, text
        if todo:
            for page in self.source.pages():
                for f in page:
                    i = self.pos.get(f.id)
                    if i in todo:
                        todo.discard(i)
                        yield i, index_text(f)
        for i in sorted(todo):  # changed by another process since this generation's columns were read
            yield i, ""

    def release_texts(self) -> None:
        """Drop the texts read while building, once lexical and vectors no longer need them."""
        if "bm25" in self._lexical and self._vectors is not None:
            self._texts = {}

    # -- visibility ---------------------------------------------------------------------

    def visible(self, principal: Principal, within: Scope | None = None) -> np.ndarray:
        """Boolean mask of fragments the principal may see (and that apply inside ``within``): its
        scopes' fragments, and those it receives through a subscription that applies there."""
        verdict = np.array([principal.can_see(scope, owner=owner) and applies(scope, within)
                            for scope, owner in self._group_keys], dtype=bool)
        mask = verdict[self._group] if len(self.ids) else np.zeros(0, dtype=bool)
        for r in principal.received:
            i = self.pos.get(r.fragment_id)
            if (i is not None and receiving.holds_at(r, self._group_keys[self._group[i]][0], "active")
                    and principal.can_see(r.applies) and receiving.received_within(r, within)):
                mask[i] = True
        return mask

    def in_persona(self, persona: str) -> np.ndarray:
        """Mask of the fragments scoped to ``persona`` (in any org): the persona ranking feature's input."""
        verdict = np.array([scope.persona == persona for scope, _ in self._group_keys], dtype=bool)
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

    def superseders(self, mask: np.ndarray, principal: Principal | None = None) -> np.ndarray:
        """Per position, the position of the superseder a caller who sees ``mask`` is told
        about (-1: not superseded for this caller). Given the caller, an archived superseder it
        sees counts where no active one does: ``n + j`` names the j-th of ``retired``
        (``superseder_ref`` turns either into an id and version)."""
        by = supersession.superseders(mask, *self._supersedes, self.updated_s)
        if principal is None or not self.retired.ids:
            return by
        r = self.retired
        return supersession.with_retired(by, len(self.ids), r.seen(principal), r.new, r.old, r.updated_s)

    def retired_superseded(self, principal: Principal, mask: np.ndarray) -> np.ndarray:
        """Positions in ``mask`` that only an archived superseder the caller sees supersedes."""
        by = self.superseders(mask, principal)
        return np.flatnonzero((by >= len(self.ids)) & mask)

    def superseder_ref(self, k: int) -> tuple:
        """(id, version) of the superseder at ``k`` (a position, or ``n + j`` for an archived one:
        then (id, version, "archived"))."""
        n = len(self.ids)
        if k < n:
            return self.ids[k], int(self.versions[k])
        j = k - n
        return self.retired.ids[j], int(self.retired.versions[j]), "archived"

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
                for i, held in enumerate(self.rows["tags"]):
                    for tag in held:
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

    # -- lexical ------------------------------------------------------------------------

    def lexical(self, name: str, seed: Bm25 | None = None):
        name = canonical_backend(name)
        backend = self._lexical.get(name)
        if backend is None:
            with self._lock:
                backend = self._lexical.get(name)
                if backend is None:
                    if name == "bm25":
                        backend = Bm25.derive(seed, self.ids, self.rows["content_hash"], self.derived.vocabulary,
                                              texts=self.texts_of, all_texts=self.all_texts)
                    else:
                        backend = DuckdbFts(lambda: [t for _, t in sorted(self.all_texts())], self.ids, self.store,
                                            self.generation, build=self.derived.build_fts)
                    self._lexical[name] = backend
                    self.release_texts()
        return backend

    def ages_days(self, now: datetime) -> np.ndarray:
        return ((now - EPOCH).total_seconds() - self.fresh_s) / 86400.0

    def half_lives(self, half_life: Callable[[str], float]) -> np.ndarray:
        """Per-fragment half-life in days, from a per-kind rule."""
        if not self._kind_keys:
            return np.zeros(0)
        return np.array([half_life(k) for k in self._kind_keys], dtype=np.float64)[self._kind_idx]


def _gone(fid: str) -> Fragment:
    """A placeholder for a fragment removed by another process after this generation was read."""
    from ..models import Content

    return Fragment(id=fid, version=0, content=Content(kind="note", title=fid, body="", scope=Scope("-"),
                                                       owner="-"), content_hash="", created_at=EPOCH,
                    updated_at=EPOCH)


def _groups(rows: Rows) -> tuple[np.ndarray, list[tuple[Scope, str | None]]]:
    """Fragments grouped by (scope, owner of session-scoped ones): visibility is decided per group."""
    keys = list(zip(rows["org"].tolist(), rows["repo"].tolist(), rows["persona"].tolist(),
                    rows["session"].tolist(), rows["owner"].tolist()))
    groups: dict[tuple, int] = {}
    index = np.fromiter((groups.setdefault((o, r, p, s, owner if s else None), len(groups))
                         for o, r, p, s, owner in keys), dtype=np.int64, count=len(keys))
    named = [(Scope(o, r, p, s), owner) for (o, r, p, s, owner) in groups]
    return index, named


def applies(scope: Scope, within: Scope | None) -> bool:
    """A fragment applies inside a working scope when each level it sets matches it."""
    if within is None:
        return True
    for level in ("org", "repo", "persona", "session"):
        mine, theirs = getattr(scope, level), getattr(within, level)
        if mine is not None and theirs is not None and mine != theirs:
            return False
    return True

