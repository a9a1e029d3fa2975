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
    """The passages of each indexed text (``[]`` for one whose body fits in one window). The texts
    are tokenized in batches: a few calls to the tokenizer whatever the number of texts."""
    split = [split_title(t) for t in texts]
    counts = _offsets([body for _, body in split])
    long = [i for i, offsets in enumerate(counts) if len(offsets) > window]
    parts = {i: sections(split[i][1]) for i in long}
    flat = [(i, section) for i in long for section in parts[i]]
    sized = dict(zip(((i, j) for i in long for j in range(len(parts[i]))), _offsets([s.text for _, s in flat])))
    groups: dict[int, list[tuple[str, str, list | None]]] = {}
    for i in long:
        groups[i] = _group(split[i][0], parts[i], [sized[(i, j)] for j in range(len(parts[i]))], window)
    merged = [(i, g) for i in long for g, (_, _, offsets) in enumerate(groups[i]) if offsets is None]
    for (i, g), offsets in zip(merged, _offsets([groups[i][g][1] for i, g in merged])):
        prefix, text, _ = groups[i][g]
        groups[i][g] = (prefix, text, offsets)
    out: list[list[str]] = [[] for _ in texts]
    for i in long:
        for prefix, text, offsets in groups[i]:
            for start, end in _spans(len(offsets), window, stride):
                passage = text[offsets[start][0]:offsets[end - 1][1]]
                out[i].append(f"{prefix}\n\n{passage}" if prefix else passage)
    return out


def windows(text: str, *, window: int = WINDOW, stride: int = STRIDE) -> list[str]:
    return windows_many([text], window=window, stride=stride)[0]


def _group(title: str, parts, sized, window: int) -> list[tuple[str, str, list | None]]:
    """Sections as (prefix, text, token offsets), neighbours merged while they fit in one window
    (a merged group's offsets are None: it is tokenized again, joined)."""
    groups: list[tuple[str, str, list | None]] = []
    pending: list[tuple[str, list]] = []
    pending_n = 0
    pending_prefix = title

    def flush() -> None:
        if len(pending) == 1:
            groups.append((pending_prefix, pending[0][0], pending[0][1]))
        elif pending:
            groups.append((pending_prefix, "\n\n".join(t for t, _ in pending), None))

    for section, offsets in zip(parts, sized):
        n = len(offsets)
        if pending and pending_n + n > window:
            flush()
            pending, pending_n = [], 0
        if not pending:
            pending_prefix = section.heading_path(title) if title else " > ".join(section.path)
        pending.append((section.text, offsets))
        pending_n += n
    flush()
    return groups
