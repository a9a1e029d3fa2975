"""The vector half of the search index (SearchIndex mixes it in): the N × 384 matrix of the
serving model's vectors in position order, the passages of long fragments (MaxP), the int8 codes,
and which texts are embedded (one list, shared with ``model shadow``)."""

from __future__ import annotations

from typing import Iterable

import numpy as np

from .passages import Passages
from .passages import build as build_passages


class IndexVectors:
    """Expects of the index: ``hashes``, ``texts_of``, ``derived``, ``embedder``, ``model``,
    ``progress``, ``release_texts`` and the ``_vectors``/``_passages``/``_passage_seed``/
    ``_quantized``/``_lock`` slots."""

    # -- vectors ------------------------------------------------------------------------

    def vectors(self) -> np.ndarray:
        """N × 384 normalised embeddings; missing ones are embedded once and stored."""
        if self._vectors is None:
            with self._lock:
                if self._vectors is None:
                    self._vectors = self._load_vectors()
                    self.release_texts()
        return self._vectors

    def check_model(self, name: str) -> None:
        """Raise unless this index holds the vectors of model ``name``: a query vector is scored only
        against vectors of the model that computed it (the pipeline asks before every dense stage)."""
        if name != self.model:
            from ..errors import ModelError

            raise ModelError(f"the index holds vectors of {self.model!r}, not of {name!r}: a query is never "
                             "scored against another model's vectors")

    def embedding_items(self, positions: Iterable[int] | None = None) -> list[tuple[str, int]]:
        """(text hash, first position) of each distinct text the vectors hold, of ``positions``
        (default: all), in position order. What ``_fill_vectors`` embeds, and what ``model shadow``
        embeds for another model (service/models.py): one list, so a second model's generation holds
        exactly the texts this index embeds (texts added here, e.g. chunks, follow by themselves)."""
        first: dict[str, int] = {}
        for i in (range(len(self.hashes)) if positions is None else positions):
            first.setdefault(self.hashes[i], int(i))
        return list(first.items())

    def passages(self) -> Passages:
        """The passage vectors of the long fragments and the position owning each (MaxP, rank/maxp.py),
        built on first use (only a search with passages asks): cut, and embedded where no process
        embedded them before."""
        if self._passages is None:
            with self._lock:
                if self._passages is None:
                    self._passages = build_passages(self.hashes, self.texts_of, self.derived, self.embedder.dim,
                                                    seed=self._passage_seed, progress=self.progress)
                    self._passage_seed = None
        return self._passages

    def quantized(self):
        """The int8 codes of ``vectors()`` (rank/quantized.py), built once per index generation."""
        if self._quantized is None:
            from ..rank.quantized import Int8Vectors

            vectors = self.vectors()
            with self._lock:
                if self._quantized is None:
                    self._quantized = Int8Vectors(vectors)
        return self._quantized

    def _load_vectors(self, seed: tuple[list[str], np.ndarray] | None = None) -> np.ndarray:
        """The matrix in position order: rows of ``seed`` (hashes, matrix: a previous index's or a
        snapshot's) where the text hash is the same, stored vectors for the rest, and the texts
        nobody embedded yet embedded now (and stored)."""
        n = len(self.hashes)
        if seed is not None:
            seed_hashes, seed_matrix = seed
            if seed_hashes == self.hashes:  # nothing changed: the same rows (memory-mapped from a snapshot,
                return np.asarray(seed_matrix)  # as a plain array view: no np.memmap overhead per slice)
        out = np.zeros((n, self.embedder.dim), dtype=np.float32)
        have = np.zeros(n, dtype=bool)
        if seed is not None:
            row_of = {h: r for r, h in enumerate(seed_hashes)}
            src = np.array([row_of.get(h, -1) for h in self.hashes], dtype=np.int64)
            have = src >= 0
            out[have] = seed_matrix[src[have]]
        return self._fill_vectors(out, have)

    def _fill_vectors(self, out: np.ndarray, have: np.ndarray) -> np.ndarray:
        """Fill the rows of ``out`` not in ``have``: stored vectors of their text hashes, and the
        texts nobody embedded yet embedded now (and stored)."""
        wanted = [self.hashes[i] for i in np.flatnonzero(~have)]
        if wanted:
            stored = self.derived.embeddings(list(dict.fromkeys(wanted)), model=self.model)
            for i in np.flatnonzero(~have):
                vector = stored.get(self.hashes[i])
                if vector is not None:
                    out[i], have[i] = vector, True
        missing = np.flatnonzero(~have)
        if missing.size:
            todo = self.embedding_items(missing)
            batch = 256
            for start in range(0, len(todo), batch):
                chunk = todo[start:start + batch]
                matrix = self.derived.embed([h for h, _ in chunk], self.texts_of([i for _, i in chunk]),
                                            embedder=self.embedder)
                by_hash = dict(zip((h for h, _ in chunk), matrix))
                for i in missing:
                    vector = by_hash.get(self.hashes[i])
                    if vector is not None:
                        out[i] = vector
                if self.progress:
                    self.progress("embed", min(start + batch, len(todo)), len(todo))
        return out

    def adopt_vectors(self, seed: tuple[list[str], np.ndarray] | None,
                      passages: "Passages | None" = None) -> None:
        """Reuse the vectors of a previous generation (or a snapshot) for text that did not change,
        and the previous generation's ``passages`` likewise."""
        if passages is not None:
            self._passage_seed = passages.by_hash
        if seed is not None:
            self._vectors = self._load_vectors(seed)

    def has_vectors(self) -> bool:
        return self._vectors is not None
