"""Supersession as ranking sees it: which fragments are replaced, and by what, for one caller.

A fragment is *superseded* while an active fragment lists it in ``supersedes``. What counts
is per caller: only a superseder the caller may see supersedes anything for them, so an old
fragment whose replacement lives in a scope the caller cannot see stays current for that
caller, and nothing about the invisible replacement shows through (no label, no demotion).
When several visible fragments supersede the same one, the most recently updated is named
(ties: the smallest id, which is the smallest index position).

An archived fragment supersedes too (``with_retired``): what it replaced stays superseded, named
by it, while no active superseder the caller sees replaces it.

Superseded fragments are strongly demoted: their ranking score is multiplied by
``DEMOTION`` (divided by it when negative, so a demotion always lowers a score).
Pure: arrays in, arrays out; no I/O.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

DEMOTION = 0.25


def edge_arrays(pairs: Iterable[tuple[str, str]], pos: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(newer, older) positions of every distinct ``(superseding id, superseded id)`` pair
    between known fragments; self-pairs and unknown ids are dropped."""
    n = max(len(pos), 1)
    codes = {pos[a] * n + pos[b] for a, b in pairs if a in pos and b in pos and a != b}
    arr = np.array(sorted(codes), dtype=np.int64)
    return arr // n, arr % n


def superseders(mask: np.ndarray, newer: np.ndarray, older: np.ndarray, updated: np.ndarray) -> np.ndarray:
    """Per fragment position, the position of the superseder the caller (``mask``) sees and
    that is named for it (the most recently ``updated``, then the smallest position), or -1.
    Only superseders inside ``mask`` count; the superseded fragment's own visibility is the
    caller's business (it is never served when not visible anyway)."""
    out = np.full(mask.size, -1, dtype=np.int64)
    if newer.size == 0:
        return out
    keep = mask[newer]
    new, old = newer[keep], older[keep]
    if new.size == 0:
        return out
    order = np.lexsort((new, -updated[new], old))        # by old, then newest superseder, then position
    new, old = new[order], old[order]
    first = np.ones(old.size, dtype=bool)
    first[1:] = old[1:] != old[:-1]
    out[old[first]] = new[first]
    return out


def demote(scores: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``scores`` with the entries at ``positions`` demoted (a copy; -inf stays -inf)."""
    out = scores.copy()
    if positions.size:
        s = out[positions]
        out[positions] = np.where(s > 0, s * DEMOTION, s / DEMOTION)
    return out


def with_retired(by: np.ndarray, n: int, seen_retired: np.ndarray, retired_new: np.ndarray,
                 retired_old: np.ndarray, retired_updated: np.ndarray) -> np.ndarray:
    """``by`` (``superseders``' answer) completed with the archived ("retired") superseders the caller
    sees: a fragment that no active superseder the caller sees replaces, but that an archived one it
    sees lists in ``supersedes``, stays superseded, by ``n + j`` (j: the retired superseder's index;
    the most recently updated, then the smallest index, is named). Archiving a superseder does not
    bring back what it replaced: that takes an explicit change (removing it from ``supersedes``)."""
    if retired_new.size == 0:
        return by
    keep = seen_retired[retired_new] & (by[retired_old] < 0)
    new, old = retired_new[keep], retired_old[keep]
    if new.size == 0:
        return by
    out = by.copy()
    order = np.lexsort((new, -retired_updated[new], old))
    new, old = new[order], old[order]
    first = np.ones(old.size, dtype=bool)
    first[1:] = old[1:] != old[:-1]
    out[old[first]] = n + new[first]
    return out
