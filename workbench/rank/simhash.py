"""64-bit SimHash over word shingles, and near-duplicate pairs by Hamming distance.

Pairs within distance d share at least one of d + 1 bands exactly (pigeonhole), so
candidates come from band buckets instead of comparing every pair.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from itertools import combinations
from typing import Iterable

import numpy as np

_WORD = re.compile(r"[a-z0-9]+")
BITS = 64


def simhash(text: str, *, shingle: int = 2) -> int:
    """SimHash of the text's word ``shingle``-grams, each weighted by its count."""
    words = _WORD.findall(text.lower())
    if not words:
        return 0
    grams = Counter(" ".join(words[i:i + shingle]) for i in range(max(1, len(words) - shingle + 1)))
    digests = b"".join(hashlib.blake2b(g.encode("utf-8"), digest_size=8).digest() for g in grams)
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8).reshape(len(grams), 8), axis=1,
                         bitorder="big")                       # column 0 is the most significant bit
    counts = np.fromiter(grams.values(), dtype=np.int64, count=len(grams))
    weights = counts @ (2 * bits.astype(np.int64) - 1)
    value = 0
    for positive in weights > 0:
        value = (value << 1) | int(positive)
    return value


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def near_pairs(hashes: dict[str, int], max_distance: int = 3,
               only: Iterable[str] | None = None) -> list[tuple[str, str, int]]:
    """(a, b, distance) for pairs within ``max_distance``, a < b; with ``only``, pairs that
    involve at least one of those ids."""
    bands = max_distance + 1
    width = BITS // bands
    mask = (1 << width) - 1
    buckets: dict[tuple[int, int], list[str]] = defaultdict(list)
    for fid, h in hashes.items():
        for band in range(bands):
            buckets[(band, (h >> (band * width)) & mask)].append(fid)
    focus = set(only) if only is not None else None
    found: dict[tuple[str, str], int] = {}
    for members in buckets.values():
        if len(members) < 2:
            continue
        for a, b in combinations(sorted(members), 2):
            if (a, b) in found or (focus is not None and a not in focus and b not in focus):
                continue
            d = hamming(hashes[a], hashes[b])
            if d <= max_distance:
                found[(a, b)] = d
    return sorted(((a, b, d) for (a, b), d in found.items()), key=lambda x: (x[2], x[0], x[1]))
