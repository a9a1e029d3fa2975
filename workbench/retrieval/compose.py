"""Context composition: pins first, then ranked fragments until the token budget is
spent, then an "avoid" section of anti-patterns. Pure: token counting is passed in.

Anti-patterns are budgeted before ranked fragments so a full budget never drops them
silently; whatever does not fit is listed in ``omitted`` with the reason. When no ranked
fragment or anti-pattern is left (all below the confidence floor, or none matched), the
note says so plainly: ``NO_KNOWLEDGE``. A superseded fragment that is served anyway (a pin,
or one the query names) carries its "superseded by ID@vN" label under its title.

When nothing at all is served, the agent receives a notice instead, and it is paid for like
everything else: the note when it fits the budget, else its short form, else nothing (a budget of
1 token serves an empty text and reports ``used`` 0; the note stays in the result's metadata).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .pipeline import Hit
from .text import sections, strip_boilerplate

TokenCounter = Callable[[str], int]
NO_KNOWLEDGE = "no relevant knowledge in scope"
SEPARATOR = "\n\n---\n\n"   # between blocks of the text an agent receives
AVOID_HEADING = "# Avoid"


def cite(hit: Hit) -> str:
    """The citation line that ends every served item."""
    via = f" via {hit.via}" if hit.via else ""   # received through a subscription: whose context it came from
    return f"(source: {hit.id}@v{hit.fragment.version}{via})"


def abstention_line(note: str) -> str:
    return f"_{note[0].upper()}{note[1:]}._"


def join(fragments: list["ContextItem"], avoid: list["ContextItem"], lead: str | None = None) -> str:
    """The text an agent receives: items (each already cited), then the avoid section. Every part
    of it was counted against the budget in ``compose``."""
    blocks = ([lead] if lead else []) + [i.text for i in fragments]
    if avoid:
        blocks += [AVOID_HEADING] + [i.text for i in avoid]
    return SEPARATOR.join(blocks)


@dataclass(frozen=True)
class ContextItem:
    hit: Hit
    text: str
    tokens: int
    partial: bool = False
    sections: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = self.hit.to_dict()
        data.update({"text": self.text, "tokens": self.tokens})
        if self.partial:
            data["partial"] = True
            data["sections"] = list(self.sections)
        return {k: data[k] for k in ("id", "version", "title", "kind", "score", "confidence", "scores", "tokens",
                                     "source", "updated_at", "text", "scope", "owner", "superseded_by", "reason",
                                     "via", "partial", "sections") if k in data}


@dataclass
class Composition:
    budget: int
    used: int = 0
    fragments: list[ContextItem] = field(default_factory=list)
    avoid: list[ContextItem] = field(default_factory=list)
    omitted: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None
    notice: str = ""      # what is served when nothing else is: the note, shortened, or nothing (counted)


def short_note(note: str, budget: int) -> str:
    """The short form of a note, for a budget too small for the note itself."""
    return "nothing relevant" if note == NO_KNOWLEDGE else f"nothing fits {budget} tokens"


def fit_notice(note: str | None, budget: int, count: TokenCounter) -> tuple[str, int]:
    """(the notice served in place of knowledge, its tokens): ``note``, else its short form, else
    nothing, whichever first fits ``budget``."""
    for text in ((note, short_note(note, budget)) if note else ()):
        n = count(text)
        if n <= budget:
            return text, n
    return "", 0


def render(hit: Hit) -> str:
    """The text served for a fragment: title heading, anti-pattern fields, stripped body."""
    f = hit.fragment
    lines = [f"## {f.title}", *_label(hit)]
    lines += [f"**{label}:** {value}" for label, value in f.content.antipattern()]
    body = strip_boilerplate(f.body)
    return "\n\n".join([*lines, body, cite(hit)] if body else [*lines, cite(hit)])


def _partial(hit: Hit, query: str, room: int, count: Callable[[str], int],
             count_many: Callable[[list[str]], list[int]]) -> ContextItem | None:
    """The best-matching sections of a fragment that fit in ``room`` tokens, with heading paths.

    Sections are taken greedily in order of query-word overlap. Each trial is priced as the sum
    of its blocks' counts (blocks are joined by blank lines, and the model's tokenizer splits on
    whitespace first, so the sum is the joined text's count; each block is counted once, and
    memoised across calls), then the chosen text is counted whole once and trimmed further
    should the sum ever be short."""
    parts = sections(strip_boilerplate(hit.fragment.body))
    if len(parts) < 2:
        return None
    words = {w for w in re.findall(r"[a-z0-9]{3,}", query.lower())}
    scored = sorted(range(len(parts)), key=lambda i: -len(words & set(re.findall(r"[a-z0-9]{3,}",
                                                                               parts[i].text.lower()))))
    frame = _join(hit, parts, [])
    blocks = [_block(hit, parts, i) for i in range(len(parts))]
    sizes = count_many([frame, *blocks])
    used, each = sizes[0], sizes[1:]
    chosen: list[int] = []
    for i in scored:
        if used + each[i] <= room:
            chosen.append(i)
            used += each[i]
    while chosen:
        text = _join(hit, parts, sorted(chosen))
        tokens = count(text)
        if tokens <= room:
            return ContextItem(hit, text, tokens, partial=True,
                               sections=tuple(parts[i].heading_path(hit.fragment.title) for i in sorted(chosen)))
        chosen.pop()  # the least matching one goes first
    return None


def _label(hit: Hit) -> list[str]:
    label = hit.superseded_label()
    return ([f"> {label}"] if label else []) + ([f"> why: {hit.reason}"] if hit.reason else [])


def _block(hit: Hit, parts, i: int) -> str:
    return f"[{parts[i].heading_path(hit.fragment.title)}]\n{parts[i].text}"


def _join(hit: Hit, parts, chosen: list[int]) -> str:
    blocks = [f"## {hit.fragment.title}", *_label(hit), *(_block(hit, parts, i) for i in chosen)]
    return "\n\n".join([*blocks, cite(hit)])


def compose(pins: list[Hit], ranked: list[Hit], avoid: list[Hit], *, budget: int, query: str,
            count: TokenCounter, count_many: Callable[[list[str]], list[int]] | None = None) -> Composition:
    out = Composition(budget=budget)
    rendered: dict[str, tuple[str, int]] = {}
    many = count_many or (lambda texts: [count(t) for t in texts])
    if count_many is not None:  # count every candidate in one batch up front
        hits = {h.id: h for h in [*pins, *avoid, *ranked]}
        texts = {fid: render(h) for fid, h in hits.items()}
        rendered = {fid: (text, n) for (fid, text), n in zip(texts.items(), count_many(list(texts.values())))}

    def full(hit: Hit) -> tuple[str, int]:
        if hit.id not in rendered:
            text = render(hit)
            rendered[hit.id] = (text, count(text))
        return rendered[hit.id]

    # Everything in the text an agent receives is paid for: each item's separator, the avoid
    # heading, and (pins only, nothing relevant) the sentence saying so.
    separator = count(SEPARATOR)
    pinned_ids = {h.id for h in pins}
    nothing = not any(h.id not in pinned_ids for h in [*ranked, *avoid])
    if nothing and pins:
        out.used += count(abstention_line(NO_KNOWLEDGE)) + separator

    def take(hit: Hit, bucket: list[ContextItem], allow_partial: bool) -> None:
        text, tokens = full(hit)
        frame = separator + (count(AVOID_HEADING) + separator if bucket is out.avoid and not out.avoid else 0)
        room = budget - out.used - frame
        if tokens <= room:
            bucket.append(ContextItem(hit, text, tokens))
            out.used += tokens + frame
            return
        part = _partial(hit, query, room, count, many) if allow_partial and room > 0 else None
        if part is not None:
            bucket.append(part)
            out.used += part.tokens + frame
            return
        out.omitted.append({"id": hit.id, "tokens": tokens, "reason": "over budget"})

    seen: set[str] = set()
    pin_items: list[ContextItem] = []
    for hit in pins:
        if hit.id not in seen:
            seen.add(hit.id)
            take(hit, out.avoid if hit.fragment.kind == "anti-pattern" else pin_items, False)
    for hit in avoid:
        if hit.id not in seen:
            seen.add(hit.id)
            take(hit, out.avoid, False)
    ranked_items: list[ContextItem] = []
    for hit in ranked:
        if hit.id not in seen:
            seen.add(hit.id)
            take(hit, ranked_items, True)
    out.fragments = pin_items + ranked_items
    if nothing:   # pins aside, nothing passed
        out.note = NO_KNOWLEDGE
    elif not out.fragments and not out.avoid:
        smallest = min(full(h)[1] for h in [*pins, *ranked, *avoid])
        out.note = (f"budget of {budget} tokens is smaller than the smallest matching fragment "
                    f"({smallest} tokens): nothing served")
    if not out.fragments and not out.avoid:   # only the notice is served: it is all that is paid for
        out.notice, out.used = fit_notice(out.note, budget, count)
    return out
