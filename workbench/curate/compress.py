"""Extractive compression of a scope's oldest session summaries and observations, and which of a
compressed summary's sentences an answer came from. Pure: no store, no model (no language model is
available here), no clock.

``summarise`` picks the sentences that carry the most distinct information: greedy budgeted maximum
coverage of content terms, each term weighted by how few sources use it (``1 + ln(n / df)``), a
sentence's gain being the weight of the terms no chosen sentence covers yet, divided by the square
root of its length; the budget is in words (``budget_for``: 30 a source, at most the configured one). Each chosen sentence cites its source ``id@vN``; the
summary's body lists every source, so each is cited even when none of its sentences was chosen.

``attribute`` reads a summary back: the cited sentences that share the most content terms with a
query (only citations the summary's own ``compressed_from`` lists count: a sentence written by
someone else cannot forge one).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = ["Source", "Sentence", "attribute", "budget_for", "cited_lines", "render", "sentences", "summarise", "terms"]

_WORD = re.compile(r"[a-z0-9][a-z0-9_./-]*[a-z0-9]|[a-z0-9]")
_SPLIT = re.compile(r"(?<=[.!?])(?<!\.\.\.)\s+(?=[A-Z0-9`\"'(])")
_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)]|#+)\s+")
_CITED = re.compile(r"^- (.*) \[([a-z0-9][a-z0-9._-]{0,127}@v[1-9][0-9]*)\]$")
STOP = frozenset("""a an and are as at be been but by can could did do does for from had has have he her his how i
if in into is it its it's may me more most my no not of on or our out over she so some such than that the their
them then there these they this those to too was we were what when where which while who why will with would you
your also after before about all any each just only own same very via per up down off again once here both few
other should shall being having does doing until against between through during above below under further""".split())
MIN_WORDS = 4      # shorter fragments of text are not sentences worth keeping
MAX_WORDS = 80     # nor are run-on lines (a pasted log): they would eat the budget
WORDS_PER_SOURCE = 30   # the budget grows by this per source, up to the configured one: a summary compresses


def budget_for(n_sources: int, limit: int) -> int:
    """The summary's budget in words for ``n_sources`` sources: ``WORDS_PER_SOURCE`` each, at most ``limit``."""
    return max(1, min(limit, WORDS_PER_SOURCE * n_sources))


@dataclass(frozen=True)
class Source:
    """One fragment version being compressed: ``ref`` is its citation, id@vN."""
    ref: str
    title: str
    body: str


@dataclass(frozen=True)
class Sentence:
    ref: str        # the source's id@vN
    order: int      # position among all candidate sentences (sources in the given order)
    text: str
    words: int
    terms: frozenset[str]


def terms(text: str) -> frozenset[str]:
    """The content terms of ``text``: lower-cased words, stop words and single characters dropped."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in STOP and len(w) > 1)


def sentences(sources: Sequence[Source]) -> list[Sentence]:
    """Every candidate sentence of the sources' bodies, in order: markdown list marks and headings
    stripped, one line per sentence at most, fragments under ``MIN_WORDS`` or over ``MAX_WORDS`` words left out."""
    out: list[Sentence] = []
    for src in sources:
        for line in src.body.splitlines():
            line = _MARK.sub("", line).strip()
            for part in _SPLIT.split(line):
                text = " ".join(part.split())
                n = len(text.split())
                if MIN_WORDS <= n <= MAX_WORDS:
                    out.append(Sentence(src.ref, len(out), text, n, terms(text)))
    return out


def summarise(sources: Sequence[Source], budget: int = 400) -> list[Sentence]:
    """The sentences that cover the most distinct content within ``budget`` words, in source order."""
    pool = sentences(sources)
    if not pool:
        return []
    df: dict[str, int] = {}
    for src in sources:
        for t in terms(src.title + "\n" + src.body):
            df[t] = df.get(t, 0) + 1
    n = max(len(sources), 1)
    weight = {t: 1.0 + math.log(n / c) for t, c in df.items()}
    covered: set[str] = set()
    chosen: list[Sentence] = []
    left, spent = list(pool), 0
    while left:
        best, best_gain = None, 0.0
        for s in left:
            if spent + s.words > budget:
                continue
            gain = sum(weight.get(t, 1.0) for t in s.terms - covered) / math.sqrt(s.words)
            if gain > best_gain:
                best, best_gain = s, gain
        if best is None:
            break
        chosen.append(best)
        covered |= best.terms
        spent += best.words
        left = [s for s in left if s is not best]
    return sorted(chosen, key=lambda s: s.order)


def render(intro: str, chosen: Iterable[Sentence], refs: Sequence[str]) -> str:
    """A summary's markdown body: ``intro``, one list line per sentence ending with its citation
    ``[id@vN]``, then every source."""
    lines = [intro, ""]
    lines += [f"- {s.text} [{s.ref}]" for s in chosen]
    lines += ["", "Sources: " + ", ".join(refs) + "."]
    return "\n".join(lines) + "\n"


def cited_lines(body: str, refs: Iterable[str]) -> list[tuple[str, str]]:
    """(sentence, id@vN) of each list line of ``body`` that cites one of ``refs``."""
    allowed = set(refs)
    out = []
    for line in body.splitlines():
        m = _CITED.match(line.strip())
        if m and m.group(2) in allowed:
            out.append((m.group(1), m.group(2)))
    return out


def attribute(query: str, body: str, refs: Iterable[str], limit: int = 3) -> list[tuple[str, str]]:
    """The cited sentences of a summary an answer to ``query`` most likely came from: those sharing
    the most content terms with the query (ties: the earlier line), at most ``limit``; none share
    any: every cited source's first sentence, so the trace still names where the summary came from."""
    lines = cited_lines(body, refs)
    q = terms(query)
    scored = [(len(q & terms(text)), -i, text, ref) for i, (text, ref) in enumerate(lines)]
    hits = [(text, ref) for overlap, _, text, ref in sorted(scored, reverse=True) if overlap > 0][:limit]
    if hits:
        return hits
    first: dict[str, str] = {}
    for text, ref in lines:
        first.setdefault(ref, text)
    return [(text, ref) for ref, text in first.items()][:limit]
