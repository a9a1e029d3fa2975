"""Building the ``SearchIndex`` of a store generation: whole, or as a patch of the previous one.

After an edit the same fragments stay active and a few changed: ``build_index`` then patches the
previous generation (``SearchIndex.patched``) instead of rebuilding, provided the link graph did
not change (``same_edges`` compares the changed fragments' links and source pointers, read now,
with the ones the index holds), so PageRank and per-caller authority carry over. Anything else
(fragments added or removed, more than ``PATCH_MAX`` changed, a link changed) is a full build,
which still reuses what did not change (columns, text hashes, vectors, bm25 postings).
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from typing import Callable

import numpy as np

from .columns import Rows, Source, read_rows
from .index import Retired, SearchIndex
from .lexical import Bm25

__all__ = ["PATCH_MAX", "build_index", "graph_digest", "same_edges"]

PATCH_MAX = 2000  # changed fragments up to which a new generation patches the previous one


def _patch(store, derived, previous: SearchIndex, rows: Rows, texts: dict[str, str],
           generation: int) -> SearchIndex | None:
    """The index of ``generation`` as a patch of ``previous`` (SearchIndex.patched), or None when
    a full build is needed: fragments added or removed, too many changed, or a changed
    fragment's links, source pointers or supersedes differ (the graph, so PageRank, changed)."""
    if previous.graph_sig is None or rows.n != previous.rows.n or not (
            rows["id"] is previous.rows["id"] or np.array_equal(rows["id"], previous.rows["id"])):
        return None
    changed = np.flatnonzero((rows["version"] != previous.rows["version"])
                             | (rows["verified"] != previous.rows["verified"]))
    if changed.size > PATCH_MAX:
        return None
    if changed.size:
        if any(rows["supersedes"][i] != previous.rows["supersedes"][i] for i in changed.tolist()):
            return None
        ids = [previous.ids[i] for i in changed.tolist()]
        if not same_edges(previous, changed, store.links(ids), store.source_edges(ids)):
            return None
    derived.carry_authority(generation, previous.generation)
    return previous.patched(rows, generation, changed, texts)


def build_index(store, derived, previous: SearchIndex | None = None, progress: Callable | None = None,
                seed=None) -> SearchIndex:
    """The index of the store's current generation (``derived``: the IndexManager that owns it).
    After an edit only what changed is read again: unchanged fragments keep their columns, text
    hashes, vectors and lexical postings, and PageRank is recomputed only when the link graph
    changed. ``seed`` (a persisted snapshot, in a fresh process) plays the previous index's part."""
    generation = store.generation()
    if previous is not None:
        rows, texts = read_rows(store, previous.rows)
        index = _patch(store, derived, previous, rows, texts, generation)
        if index is not None:
            index.retired = Retired.of(store.index_columns(status="archived"), index.pos)
            return index
    else:
        known = (dict(zip(zip(seed.ids.tolist(), seed.content_hashes.tolist()), seed.text_hashes.tolist()))
                 if seed is not None else None)
        rows, texts = read_rows(store, None, known=known)
    ids = rows["id"].tolist()
    edges, source_edges = store.links(), store.source_edges()
    supersedes = sorted((fid, old) for fid, olds in zip(ids, rows["supersedes"]) for old in olds)
    graph_sig = graph_digest(ids, edges, source_edges, supersedes)
    same_graph = previous.generation if previous is not None and previous.graph_sig == graph_sig else None
    authority = derived.authority(ids, edges, source_edges, supersedes, generation, same_graph, graph_sig)
    index = SearchIndex(rows, generation, derived, authority, Source(store=store), progress, links=edges,
                        source_links=source_edges, texts=texts, previous=previous)
    index.graph_sig = graph_sig
    index.retired = Retired.of(store.index_columns(status="archived"), index.pos)
    index.adopt_authority(previous)
    if previous is not None:
        if previous._vectors is not None:
            index.adopt_vectors((previous.hashes, previous._vectors), previous._passages)
        old = previous._lexical.get("bm25")
        if old is not None:
            index.lexical("bm25", seed=old)
    elif seed is not None:
        if seed.vectors is not None:
            index.adopt_vectors((seed.text_hashes.tolist(), seed.vectors))
        index.lexical("bm25", seed=Bm25.of_base(derived.vocabulary, seed.postings, seed.ids, seed.content_hashes))
    return index


def same_edges(index: SearchIndex, changed: np.ndarray, links: list[tuple[str, str]], source_edges: list[tuple[str, str]]) -> bool:
    """Whether ``links`` and ``source_edges`` (those of the fragments at ``changed``, read
    now) are the edges ``index`` holds from those fragments, as ``edge_arrays`` keeps them."""
    n = max(len(index.ids), 1)
    a = np.fromiter((index.pos.get(x, -1) for x, _ in links), dtype=np.int64, count=len(links))
    b = np.fromiter((index.pos.get(y, -1) for _, y in links), dtype=np.int64, count=len(links))
    keep = (a >= 0) & (b >= 0) & (a != b)
    src, dst = index._links
    held = np.isin(src, changed)
    if not np.array_equal(np.unique(a[keep] * n + b[keep]), np.unique(src[held] * n + dst[held])):
        return False
    names = index.source_names
    number = []
    for _, name in source_edges:
        j = bisect_left(names, name)
        if j == len(names) or names[j] != name:
            return False                             # a source no fragment cited before
        number.append(j)
    m = max(len(names), 1)
    c = np.fromiter((index.pos.get(x, -1) for x, _ in source_edges), dtype=np.int64, count=len(source_edges))
    refs = np.unique(c * m + np.array(number, dtype=np.int64)) if source_edges else np.zeros(0, dtype=np.int64)
    s_src, s_num = index._sources
    held = np.isin(s_src, changed)
    if not np.array_equal(refs, np.unique(s_src[held] * m + s_num[held])):
        return False
    # a source that only the changed fragments cited, and no longer cite, leaves the name list
    cited = np.zeros(len(names), dtype=bool)
    cited[s_num[~held]] = True
    if refs.size:
        cited[refs % m] = True
    return bool(cited.all())


def graph_digest(ids: list[str], edges, source_edges, supersedes) -> str:
    """A digest of everything PageRank reads (the active ids, links, source pointers and
    supersedes edges), stable across processes: the stored PageRank is reused by any process
    whose graph has the same digest (a CLI edit of text alone leaves it valid)."""
    h = hashlib.sha256("\n".join(ids).encode("utf-8"))
    for part in (edges, source_edges, supersedes):
        h.update(b"\x00" + "\n".join(f"{a}\t{b}" for a, b in sorted(part)).encode("utf-8"))
    return h.hexdigest()
