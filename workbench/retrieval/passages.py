"""The passage vectors of an index generation: every window of every long fragment (windows.py).

``Passages`` holds the passage matrix and, for each row, the position of the fragment that owns
it (the chunk → fragment map MaxP needs, rank/maxp.py), plus, per fragment text hash, that text's
passage vectors (an empty block for a short one), so the next generation re-cuts and re-reads
only texts that changed. Passage vectors live in the embeddings cache under the model's name,
keyed by the passage text's hash: a text already embedded by any process is read, not embedded.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .columns import text_hash
from .windows import windows_many

BATCH = 256   # passages embedded per call (a build behind may stop between calls)


class Passages:
    def __init__(self, by_hash: dict[str, np.ndarray], hashes: list[str], dim: int):
        self.by_hash = by_hash
        blocks = [by_hash[h] for h in hashes]
        counts = np.fromiter((len(b) for b in blocks), dtype=np.int64, count=len(blocks))
        self.owner = np.repeat(np.arange(len(hashes), dtype=np.int64), counts)
        self.matrix = (np.concatenate([b for b in blocks if len(b)]).astype(np.float32, copy=False)
                       if counts.sum() else np.zeros((0, dim), dtype=np.float32))

    def __len__(self) -> int:
        return len(self.owner)

    def rows_of(self, positions: np.ndarray) -> np.ndarray:
        """Passage rows owned by the fragments at ``positions``."""
        return np.flatnonzero(np.isin(self.owner, positions))


def build(hashes: list[str], texts_of: Callable[[list[int]], list[str]], derived, dim: int,
          seed: dict[str, np.ndarray] | None = None, progress: Callable | None = None) -> Passages:
    """The passages of an index whose fragment texts have these ``hashes``: the blocks of ``seed``
    (a previous generation's ``by_hash``) for unchanged texts; the rest cut from their texts, their
    vectors read from the embeddings cache or embedded now (and stored)."""
    seed = seed or {}
    by_hash: dict[str, np.ndarray] = {}
    todo: dict[str, int] = {}
    for i, h in enumerate(hashes):
        if h in by_hash or h in todo:
            continue
        if h in seed:
            by_hash[h] = seed[h]
        else:
            todo[h] = i
    if todo:
        cut = windows_many(texts_of(list(todo.values())))
        keys = [[text_hash(p) for p in ps] for ps in cut]
        flat = {k: p for ps, ks in zip(cut, keys) for p, k in zip(ps, ks)}
        stored = derived.embeddings(list(flat)) if flat else {}
        missing = [k for k in flat if k not in stored]
        for start in range(0, len(missing), BATCH):
            part = missing[start:start + BATCH]
            stored.update(zip(part, derived.embed(part, [flat[k] for k in part])))
            if progress:
                progress("embed passages", min(start + BATCH, len(missing)), len(missing))
        empty = np.zeros((0, dim), dtype=np.float32)
        for h, ks in zip(todo, keys):
            by_hash[h] = np.stack([stored[k] for k in ks]).astype(np.float32) if ks else empty
    return Passages(by_hash, hashes, dim)
