"""``IndexManager``: the one owner of a workspace's derived search data.

Derived data is everything retrieval can recompute from the fragments: the in-memory
``SearchIndex`` (lexical postings, vectors, authority, visibility columns), the stored
embeddings, the stored whole-workspace PageRank, the persisted DuckDB FTS index, the SimHash
cache, the current pins, and the model and reranker handles. One manager per open workspace
holds all of it; it builds, refreshes after a change of generation (reusing what did not
change), warms up, and is the only code that writes derived data to the store.

A read may fill these caches (a vector computed for a fragment another process edited is
kept, so the next process does not compute it again), but what a read returns never depends
on whether a cache was filled: derived data is a cache, not a record.
"""

from __future__ import annotations

import contextlib

import threading
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import UserError
from ..models import Fragment
from ..rank.authority import pagerank
from .embedder import Embedder, TokenCounter
from .build import build_index
from .index import CHUNKER_VERSION, SearchIndex, index_text
from .lexical import LEXICAL_VERSION, Vocabulary, canonical_backend

SNAPSHOT_KEY = f"{CHUNKER_VERSION}+{LEXICAL_VERSION}" if LEXICAL_VERSION else CHUNKER_VERSION  # (other postings: not loaded)


class BuildStopped(Exception):
    """A build behind was stopped because the workspace is closing (never reaches a caller)."""


class IndexManager:
    def __init__(self, store, embedder: Embedder | None = None, *, follow: bool = True):
        """``follow``: use the model the store's registry names as serving (retrieval/models.py), now
        and after every change of generation (a promote or rollback bumps it, in any process);
        ``embedder`` is then the bundled model's, used while none registered serves. Without
        ``follow``, ``embedder`` always (evaluating a shadow model beside the serving one)."""
        self.store = store
        self.embedder = embedder or Embedder()
        self._bundled = self.embedder
        self.follows = follow
        self.vocabulary = Vocabulary()
        self.tokens = TokenCounter()
        self._index: SearchIndex | None = None
        self._lock = threading.RLock()  # held for a whole build: nothing on a reader's path may wait on it
        self._aux_lock = threading.Lock()  # the pins (on a reader's path)
        self._rerank_lock = threading.Lock()  # loading a reranker (seconds)
        self._pins: tuple[tuple[int, int], list[dict[str, Any]]] | None = None
        self._rerankers: dict[str, Any] = {}
        self._builders: list[threading.Thread] = []
        self._stopping = threading.Event()  # set while the workspace closes: builds behind stop
        self._local = threading.local()    # .behind: this thread builds behind (may be stopped)
        self.follow_serving()

    # -- the index of the current generation ---------------------------------------------

    def current(self, progress: Callable | None = None, *, fresh: bool = False) -> SearchIndex:
        """The index of the store's current generation: rebuilt after any change, reusing the
        previous generation's fragments, tokens, vectors and authority where nothing changed.

        When the store serves many threads (the team server) and another thread is building the
        next generation, a reader gets the previous one instead of queueing behind the build
        (``fresh=True`` waits: the writer's own refresh, so its next read sees its write)."""
        generation = self.store.generation()
        previous = self._index
        if (not fresh and previous is not None and previous.generation != generation
                and getattr(self.store, "shared", False)):
            self._build_behind()  # unless another thread builds it already
            return previous  # this read sees the one before; the next ones, the new one
        with self._lock:
            if self._index is None or self._index.generation != generation:
                self.follow_serving()  # a promote or rollback bumped the generation: maybe another model now
                seed = self._snapshot() if self._index is None else None
                with self.store.snapshot() if self._index is None else contextlib.nullcontext():
                    # (built from nothing: every read of the build sees one state of the store)
                    built = build_index(self.store, self, previous=self._index, progress=progress, seed=seed)
                if getattr(self.store, "shared", False) and self._index is not None:
                    built.lexical("bm25")  # readers keep the previous generation until this one is whole
                    built.vectors()
                self._index = built
            elif progress is not None:
                self._index.progress = progress
            return self._index

    # -- the persisted snapshot ---------------------------------------------------------------

    def _snapshot(self):
        """The persisted base (snapshot.py) for a fresh index, with this manager's vocabulary
        replaced by the snapshot's (token ids must agree); None when there is none usable."""
        from . import snapshot

        found = snapshot.load(self.store.path, model=self.embedder.name, chunker=SNAPSHOT_KEY)
        if found is None:  # none here: a replica elsewhere may have shared one through the store
            shared = self.store.shared_snapshot()
            if shared and snapshot.unpack(self.store.path, shared):
                found = snapshot.load(self.store.path, model=self.embedder.name, chunker=SNAPSHOT_KEY)
        elif found.vectors is not None and not self.store.has_shared_snapshot():
            packed = snapshot.pack(self.store.path)  # ours, for replicas that start where there is none
            if packed:
                self.store.share_snapshot(packed)
        if found is not None:
            self.vocabulary = Vocabulary(found.vocabulary)
            self._saved = (id(found.postings), found.vectors is not None)
        return found

    def keep(self, index: SearchIndex | None = None) -> bool:
        """Persist the index's base (bm25 postings, vocabulary, text hashes, and the vectors when
        computed) when it is new: built whole rather than carried as a delta on a saved base.
        Cheap when there is nothing new; False when nothing was written."""
        from . import snapshot

        index = index or self._index
        if index is None or not self.store.can_store_derived():
            return False
        bm25 = index._lexical.get("bm25")
        if bm25 is None or not bm25.whole or len(bm25.base_ids) != len(index.ids):
            return False
        key = (id(bm25.base), index.has_vectors())
        if getattr(self, "_saved", None) in (key, (key[0], True)):
            return False
        found = snapshot.Snapshot(bm25.base_ids, bm25.base_content, np.array(index.hashes, dtype=object),
                                  bm25.vocabulary.tokens(), bm25.base, index._vectors)
        if snapshot.save(self.store.path, found, model=self.embedder.name, chunker=SNAPSHOT_KEY):
            self._saved = key
            if found.vectors is not None:  # whole: worth sharing with replicas that start elsewhere
                packed = snapshot.pack(self.store.path)
                if packed:
                    self.store.share_snapshot(packed)
            return True
        return False

    def refresh(self, wait: float | None = None) -> SearchIndex | None:
        """Build the current generation now, with what every search needs (the lexical index and
        the vectors): the team server calls it after a write, so readers do not build it. With
        ``wait``, the build runs on its own thread and this returns after at most ``wait``
        seconds (None if it is still building: a large ingest embeds for a while, and its answer
        need not wait for that; readers keep the previous generation meanwhile)."""
        if wait is None:
            index = self.current(fresh=True)
            index.lexical("bm25")
            index.vectors()
            return index
        done: dict[str, SearchIndex] = {}
        worker = threading.Thread(target=lambda: done.setdefault("index", self._refresh_behind()),
                                  name="index-refresh", daemon=True)
        with self._aux_lock:
            self._builders = [t for t in self._builders if t.is_alive()] + [worker]
        worker.start()
        worker.join(wait)
        return done.get("index")

    def _refresh_behind(self) -> SearchIndex:
        """``refresh`` on a thread of its own, at a lower CPU priority than the readers'."""
        from ..store.background import lower_priority

        lower_priority()
        self._local.behind = True
        try:
            return self.refresh()
        except BuildStopped:
            return None  # the workspace is closing: what was embedded is stored, the rest waits

    def refresh_behind(self) -> None:
        """Another process changed the store (a replica's follower says so): build the new
        generation on its own thread now, so the next reader finds it built."""
        if self._index is not None:
            self._build_behind()

    def _build_behind(self) -> None:
        """Start building the current generation on its own thread, unless a build runs."""
        with self._aux_lock:
            self._builders = [t for t in self._builders if t.is_alive()]
            if self._builders or not self._lock.acquire(blocking=False):
                return
            self._lock.release()
            worker = threading.Thread(target=self._refresh_behind, name="index-refresh", daemon=True)
            self._builders.append(worker)
            worker.start()

    def settle(self, *, stop: bool = False) -> None:
        """Wait for builds still running on their own threads (before the store closes: a build
        must not outlive the connection it reads). With ``stop``, a build behind stops at its next
        batch of embeddings instead of finishing: the index is a cache, the vectors it embedded are
        stored, and whoever needs the rest embeds them (a server stopping after a large ingest
        would otherwise embed it all first, at low priority, on a busy machine for minutes)."""
        if stop:
            self._stopping.set()
        try:
            for worker in list(self._builders):
                worker.join()
            self._builders = []
        finally:
            self._stopping.clear()

    def follow_serving(self) -> bool:
        """Switch to the model the registry names as serving, if it is not this manager's: the index
        is then built anew from that model's stored vectors (never carried over from another
        model's). True when it switched."""
        if not self.follows:
            return False
        from .models import serving_embedder

        found = serving_embedder(self.store, self._bundled, self.embedder)
        if found is self.embedder:
            return False
        with self._lock:
            self.embedder = found
            self._index = None
            self.vocabulary = Vocabulary()
        return True

    def invalidate(self) -> None:
        """Forget everything held in memory (the next ``current()`` rebuilds from the store)."""
        with self._lock:
            self._index = None
            self._pins = None
            self.vocabulary = Vocabulary()

    def warm(self, *, progress: Callable | None = None, lexical: str = "bm25") -> dict[str, int]:
        """Build everything search needs now: authority, the lexical index, the vectors (embedding
        only missing ones), and, when the workspace is writable, the persisted FTS index, so the
        next process's first query needs no build (``quick_lexical``)."""
        lexical = canonical_backend(lexical)
        before = self.store.embedding_count(self.embedder.name)
        index = self.current(progress)
        index.lexical(lexical)
        if lexical != "duckdb-fts" and self.store.can_store_derived() and self.store.persisted_fts:
            index.lexical("duckdb-fts")
        index.lexical("bm25")
        index.vectors()
        self.keep(index)
        return {"fragments": len(index.ids), "embedded": self.store.embedding_count(self.embedder.name) - before,
                "generation": index.generation}

    def quick_lexical(self) -> str:
        """The lexical backend that answers a first query in a fresh process fastest:
        ``duckdb-fts`` when its index, persisted in the workspace, is current (no build: ~20 ms a
        query at 10k fragments), else ``bm25`` (built in memory, ~2 s at 10k)."""
        from . import snapshot

        if self._index is not None and "bm25" in self._index._lexical:
            return "bm25"
        if (snapshot.folder(self.store.path) / "CURRENT").is_file():
            return "bm25"
        return "duckdb-fts" if self.store.fts_generation() == self.store.generation() else "bm25"

    # -- derived data the index asks for (the only writes of derived data) -----------------

    def authority(self, ids: list[str], edges, source_edges, supersedes, generation: int,
                  graph_unchanged_since: int | None, graph: str | None = None) -> dict[str, tuple[float, int, int]]:
        """Whole-workspace PageRank of this generation: the stored one when current, or when the
        link graph did not change since it was computed (the previous generation's in this
        process, or any whose stored graph digest is ``graph``), else computed (and stored if
        writable, with ``graph``)."""
        stored_gen, authority = self.store.authority()
        if stored_gen == generation:
            return authority
        if authority and ((graph_unchanged_since is not None and stored_gen == graph_unchanged_since)
                          or (graph is not None and self.store.authority_graph() == graph)):
            self.store.touch_authority(generation)
            return authority
        authority = pagerank(ids, edges, source_edges=source_edges, supersedes=supersedes)
        self.store.put_authority(authority, generation, graph)
        return authority

    def carry_authority(self, generation: int, unchanged_since: int) -> None:
        """The link graph did not change since generation ``unchanged_since``: the stored PageRank,
        if it is that generation's, holds for ``generation`` too (its scores are not read)."""
        if self.store.authority_generation() == unchanged_since:
            self.store.touch_authority(generation)

    def embeddings(self, hashes: list[str], model: str | None = None) -> dict[str, np.ndarray]:
        """Stored vectors of these text hashes (all stored ones for a large request), of ``model``
        (default: this manager's; an index passes the model whose vectors it holds)."""
        return self.store.embeddings(model or self.embedder.name, hashes if len(hashes) < 5000 else None)

    def embed(self, hashes: list[str], texts: list[str], embedder: Embedder | None = None) -> np.ndarray:
        """Vectors of texts no vector was stored for: computed, and kept in the store. A build
        behind stops here, between batches, when the workspace is closing (``settle(stop=True)``)."""
        if self._stopping.is_set() and getattr(self._local, "behind", False):
            raise BuildStopped()
        embedder = embedder or self.embedder
        matrix = embedder.encode(texts)
        self.store.put_embeddings(embedder.name, hashes, matrix)
        return matrix

    def build_fts(self, ids: list[str], texts: Callable[[], list[str]], generation: int) -> None:
        """The persisted FTS index of this generation (texts read only when it must be built)."""
        if self.store.fts_generation() == generation:
            return
        self.store.build_fts(ids, texts(), generation)

    def simhashes(self, fragments: list[Fragment]) -> dict[str, int]:
        """Fragment id → SimHash of its indexed text, cached by content hash."""
        from ..rank.simhash import simhash

        cache = self.store.simhashes()
        fresh = {f.content_hash: simhash(index_text(f)) for f in fragments if f.content_hash not in cache}
        if fresh and self.store.can_store_derived():
            with self.store.transaction():
                self.store.put_simhashes(fresh)
        cache.update(fresh)
        return {f.id: cache[f.content_hash] for f in fragments}

    # -- the model --------------------------------------------------------------------------

    def load_model(self) -> None:
        """Load the embedding model now (a face warming up in the background)."""
        self.embedder.load()

    def model_loaded(self) -> bool:
        return self.embedder.loaded()

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` as the bundled model counts them."""
        return self.tokens.count(text)

    # -- pins and rerankers ----------------------------------------------------------------

    def pins(self, now: datetime | None) -> list[dict[str, Any]]:
        """Pins in force at ``now`` (all when None), oldest first; read once per generation."""
        key = (self.store.generation(), self.store.epoch)
        with self._aux_lock:  # not the build lock: a search must not wait for the next generation's build
            if self._pins is None or self._pins[0] != key:
                self._pins = (key, self.store.pins(now=None))
            rows = self._pins[1]
        return [dict(p) for p in rows if now is None or p["until"] is None or p["until"] > now]

    def reranker(self, path: str):
        """A sentence-transformers CrossEncoder from a local folder (never the hub), loaded once."""
        if not Path(path).is_dir():
            raise UserError(f"reranker {path!r} is not a local folder holding a cross-encoder")
        with self._rerank_lock:
            if path not in self._rerankers:
                from .embedder import _offline

                _offline()
                try:
                    from sentence_transformers import CrossEncoder

                    self._rerankers[path] = CrossEncoder(path, device="cpu", local_files_only=True)
                except Exception as e:  # noqa: BLE001 - any loading failure is the user's folder
                    raise UserError(f"cannot load the reranker at {path}: {e}") from e
            return self._rerankers[path]
