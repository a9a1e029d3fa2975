"""Passages of long fragments for the dense retriever: what MaxP scores (rank/maxp.py).

The bundled model reads 256 tokens and a fragment's vector is of its first 256: the tail of a
long fragment was never embedded. ``windows(text)`` cuts the indexed text of a long fragment into
passages of ``WINDOW`` tokens every ``STRIDE`` tokens (so consecutive ones overlap), heading-aware
(markdown sections are kept apart and small neighbouring ones merged; a window never spans two
sections that together exceed the window), each passage prefixed with the fragment's title and
its heading path. A fragment whose body fits in one window has none: it costs nothing extra.

Each passage is embedded once and stored in the embeddings cache under the model's name, keyed by
``text_hash`` of the passage's own text, so passage vectors follow the model like fragment
vectors do. The window constants are part of ``WINDOWS_VERSION``; changing them changes the
passages (so their hashes) and nothing else.

No I/O beyond the model's tokenizer (token offsets).
"""

from __future__ import annotations

from .lexical import split_title
from .text import sections

WINDOW = 128   # tokens of body per passage (the title comes on top)
STRIDE = 96    # tokens between passage starts: 32 tokens of overlap
WINDOWS_VERSION = f"windows-{WINDOW}-{STRIDE}"


def _offsets(texts: list[str]) -> list[list[tuple[int, int]]]:
    from .embedder import tokenizer

    if not texts:
        return []
    return [list(enc.offsets) for enc in tokenizer().encode_batch(texts, add_special_tokens=False)]


def _spans(n: int, window: int, stride: int) -> list[tuple[int, int]]:
    """Token spans [start, end) covering n tokens: windows every ``stride``, the last one ending at n."""
    if n <= window:
        return [(0, n)]
    out = []
    start = 0
    while True:
        end = min(start + window, n)
        out.append((start, end))
        if end >= n:
            return out
        start += stride


def windows_many(texts: list[str], *, window: int = WINDOW, stride: int = STRIDE) -> list[list[str]]:
    """The passages of each indexed text (``[]`` for one whose body fits in one window)."""
    split = [split_title(t) for t in texts]
    bodies = [body for _, body in split]
    counts = _offsets(bodies)
    out: list[list[str]] = []
    for (title, body), offsets in zip(split, counts):
        if len(offsets) <= window:
            out.append([])
            continue
        out.append(_passages(title, body, window, stride))
    return out


def windows(text: str, *, window: int = WINDOW, stride: int = STRIDE) -> list[str]:
    return windows_many([text], window=window, stride=stride)[0]


def _passages(title: str, body: str, window: int, stride: int) -> list[str]:
    parts = sections(body) or []
    groups: list[tuple[str, str]] = []       # (prefix, text), small neighbouring sections merged
    sized = _offsets([s.text for s in parts])
    pending: list[str] = []
    pending_n = 0
    pending_prefix = title
    for section, offsets in zip(parts, sized):
        n = len(offsets)
        prefix = section.heading_path(title) if title else " > ".join(section.path)
        if pending and pending_n + n > window:
            groups.append((pending_prefix, "\n\n".join(pending)))
            pending, pending_n = [], 0
        if not pending:
            pending_prefix = prefix
        pending.append(section.text)
        pending_n += n
    if pending:
        groups.append((pending_prefix, "\n\n".join(pending)))
    out: list[str] = []
    for (prefix, text), offsets in zip(groups, _offsets([g[1] for g in groups])):
        for start, end in _spans(len(offsets), window, stride):
            passage = text[offsets[start][0]:offsets[end - 1][1]]
            out.append(f"{prefix}\n\n{passage}" if prefix else passage)
    return out
