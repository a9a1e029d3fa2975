"""64-bit SimHash over word shingles, and near-duplicate pairs by Hamming distance.

Pairs within distance d share at least one of d + 1 bands exactly (pigeonhole), so
candidates come from band buckets instead of comparing every pair.

Speed (ingest computes a SimHash for every new fragment, and at 100k fragments the pairs
are looked for among all of them): a text's value is the sign of each bit summed over every
shingle occurrence (the same as each distinct shingle weighted by its count), shingle digests
are memoised (a bounded memo: common shingles recur across fragments), and ``near_pairs``
works on numpy arrays, so the Python work per shingle is a dict lookup and the work per
candidate pair is none.
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")
BITS = 64
_MEMO_LIMIT = 200_000          # shingle digests kept (~40 MB at most); cleared when full


class _Digests(dict):
    """Shingle (a tuple of words) → the 8 big-endian bytes of its BLAKE2b digest, memoised."""

    def __missing__(self, gram: tuple[str, ...]) -> bytes:
        if len(self) >= _MEMO_LIMIT:
            self.clear()
        digest = self[gram] = hashlib.blake2b(" ".join(gram).encode("utf-8"), digest_size=8).digest()
        return digest


_digests = _Digests()


def _shingles(text: str, shingle: int) -> list[tuple[str, ...]]:
    """Every word ``shingle``-gram occurrence of the text (a text shorter than that is one gram)."""
    words = _WORD.findall(text.lower())
    if len(words) < shingle:
        return [tuple(words)] if words else []
    return list(zip(*(words[k:] for k in range(shingle))))


def simhash(text: str, *, shingle: int = 2) -> int:
    """SimHash of the text's word ``shingle``-grams, each weighted by its count."""
    grams = _shingles(text, shingle)
    if not grams:
        return 0
    bits = np.unpackbits(np.frombuffer(b"".join(map(_digests.__getitem__, grams)), dtype=np.uint8).reshape(-1, 8),
                         axis=1, bitorder="big")
    ones = bits.sum(axis=0, dtype=np.int64)
    return int.from_bytes(np.packbits(2 * ones > len(grams), bitorder="big").tobytes(), "big")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


_POPCOUNT = np.array([i.bit_count() for i in range(256)], dtype=np.uint8)


def _popcount(x: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x).astype(np.int64)
    return _POPCOUNT[x.view(np.uint8).reshape(-1, 8)].sum(axis=1, dtype=np.int64)


def near_pairs(hashes: dict[str, int], max_distance: int = 3,
               only: Iterable[str] | None = None) -> list[tuple[str, str, int]]:
    """(a, b, distance) for pairs within ``max_distance``, a < b, sorted by (distance, a, b);
    with ``only``, pairs that involve at least one of those ids."""
    ids = sorted(hashes)                    # index order is id order, so i < j means a < b
    if len(ids) < 2:
        return []
    values = np.fromiter((hashes[i] for i in ids), dtype=np.uint64, count=len(ids))
    focus = None
    if only is not None:
        wanted = set(only)
        focus = np.fromiter((i in wanted for i in ids), dtype=bool, count=len(ids))
        if not focus.any():
            return []
    bands = max_distance + 1
    width = BITS // bands
    mask = np.uint64((1 << width) - 1)
    found = []
    for band in range(bands):
        keys = (values >> np.uint64(band * width)) & mask
        left, right = _bucket_pairs(keys, focus)
        near = _popcount(values[left] ^ values[right]) <= max_distance  # before dedup: most candidates are far
        found.append(left[near] * len(ids) + right[near])
    codes = np.unique(np.concatenate(found))    # a pair may share several bands
    if not len(codes):
        return []
    left, right = np.divmod(codes, len(ids))
    distance = _popcount(values[left] ^ values[right])
    order = np.lexsort((right, left, distance))
    return [(ids[a], ids[b], d) for a, b, d in
            zip(left[order].tolist(), right[order].tolist(), distance[order].tolist())]


def _bucket_pairs(keys: np.ndarray, focus: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i < j) that share a key, as two arrays; with ``focus``, only pairs where
    i or j is in focus (and only buckets holding a focus member are expanded)."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_keys[1:] != sorted_keys[:-1])))
    sizes = np.diff(np.append(starts, len(keys)))
    group = sizes >= 2
    if focus is not None and group.any():
        has = np.zeros(len(starts), dtype=bool)
        has[group] = np.logical_or.reduceat(focus[order], starts)[group]
        group &= has
    starts, sizes = starts[group], sizes[group]
    if not len(starts):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    # each member at sorted position p pairs with the members after it in its bucket
    member = np.repeat(starts, sizes) + _ranges(sizes)
    after = np.repeat(starts + sizes, sizes) - member - 1
    p = np.repeat(member, after)
    q = p + 1 + _ranges(after)
    a, b = order[p].astype(np.int64), order[q].astype(np.int64)
    if focus is not None:
        keep = focus[a] | focus[b]
        a, b = a[keep], b[keep]
    return np.minimum(a, b), np.maximum(a, b)


def _ranges(sizes: np.ndarray) -> np.ndarray:
    """0..size-1 for each size, concatenated."""
    total = int(sizes.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    ends = np.cumsum(sizes)
    return np.arange(total, dtype=np.int64) - np.repeat(ends - sizes, sizes)
