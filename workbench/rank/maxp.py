"""MaxP: a long fragment's dense score is the best of its own vector's and its passages'.

A fragment's vector covers its first 256 tokens only; a long fragment also has passage vectors
(retrieval/windows.py), each owned by one fragment. ``maxp`` lifts each fragment's cosine to
the best cosine among its passages, so an answer in the tail of a long fragment is found by the
dense retriever alone. Fragments outside the mask stay at -inf whatever their passages score.

Pure: arrays in, arrays out.
"""

from __future__ import annotations

import numpy as np


def maxp(doc: np.ndarray, passages: np.ndarray, owner: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Per fragment, max(its own score, the scores of the passages it owns). ``doc`` holds -inf
    outside the candidates; ``owner[j]`` is the position of passage j's fragment; with ``mask``,
    passages of fragments outside it are ignored (without it, those of fragments scoring -inf)."""
    out = np.array(doc, dtype=np.float64, copy=True)
    if passages.size == 0:
        return out
    owner = np.asarray(owner, dtype=np.int64)
    keep = mask[owner] if mask is not None else np.isfinite(out[owner])
    if keep.any():
        np.maximum.at(out, owner[keep], np.asarray(passages, dtype=np.float64)[keep])
    return out


def best_passage(passages: np.ndarray, owner: np.ndarray, position: int) -> int | None:
    """Index of the best-scoring passage of the fragment at ``position`` (None: it has none)."""
    mine = np.flatnonzero(np.asarray(owner) == position)
    if mine.size == 0:
        return None
    return int(mine[np.argmax(np.asarray(passages)[mine])])
