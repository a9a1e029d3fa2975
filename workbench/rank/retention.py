"""How much of a text at the baseline is still in its new version: a bottom-k sketch of word shingles.

Knowledge CI keeps, for each fragment that answers a golden query, a small sketch of its body:
the ``SKETCH`` smallest 32-bit digests of its word 3-grams (every gram when there are fewer).
Those digests are a uniform sample of the body's grams, so the share of them the new body still
holds estimates the share of the old text that remains (containment; exact for a body of fewer
than ``SKETCH`` grams, about ±0.09 at one half otherwise). A text that grew keeps its old grams;
one reduced to "Ask in #platform", or rewritten about something else, keeps almost none.

The sketch is text (hex), so a baseline file stays JSON a reviewer can diff. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import re

SKETCH = 32        # digests kept per text (8 hex characters each)
SHINGLE = 3        # words per gram
_WORD = re.compile(r"\w+")
_HEX = re.compile(r"(?:[0-9a-f]{8})*")


def words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _digests(text: str) -> set[int]:
    w = words(text)
    grams = [w] if 0 < len(w) < SHINGLE else [w[i:i + SHINGLE] for i in range(len(w) - SHINGLE + 1)]
    return {int.from_bytes(hashlib.blake2b(" ".join(g).encode("utf-8"), digest_size=4).digest(), "big")
            for g in grams}


def sketch(text: str) -> str:
    """The text's sketch: its ``SKETCH`` smallest gram digests, ascending, as hex ('' for no words)."""
    return "".join(f"{d:08x}" for d in sorted(_digests(text))[:SKETCH])


def is_sketch(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 8 * SKETCH and _HEX.fullmatch(value) is not None


def retained(old_sketch: str, new_text: str) -> float:
    """The estimated share of the sketched text that ``new_text`` still holds, 0..1 (1 for an empty sketch)."""
    old = [int(old_sketch[i:i + 8], 16) for i in range(0, len(old_sketch), 8)]
    if not old:
        return 1.0
    new = _digests(new_text)
    return sum(d in new for d in old) / len(old)
