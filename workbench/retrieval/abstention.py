"""Abstention on a BEIR set: workspaces of several sizes in which each query is either
answerable (its relevant documents kept) or not (all of them removed), to measure whether
``context`` answers the first and abstains on the others at every corpus size.

The split is deterministic (a seeded shuffle): the queries alternate between answerable and
unanswerable; an unanswerable query sharing a relevant document with an answerable one is
dropped (it could not be made unanswerable). Every workspace leaves out the relevant documents
of every unanswerable query. A size smaller than twice the answerable queries' documents is
covered by several workspaces, each holding the documents of a group of answerable queries (at
most half the size) and filler documents (relevant to no query), so every answerable query is
asked where its documents are; unanswerable queries are asked in every workspace of the size.
A size of ``None`` (or one at least the corpus) is the whole set less the removed documents.

Pure planning: ids in, plans out; ranking and reporting are in evaluate.py.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

DEFAULT_SIZES: tuple[int | None, ...] = (20, 200, 2000, None)


@dataclass(frozen=True)
class Plan:
    """One workspace: its documents, the queries asked there that it answers and those it does not."""

    size: int | None                 # the requested size (None: the whole set)
    docs: tuple[str, ...]
    answerable: tuple[str, ...]
    unanswerable: tuple[str, ...]


def split(qrels: dict[str, dict[str, float]], queries: dict[str, str], seed: int = 0
          ) -> tuple[list[str], list[str]]:
    """(answerable, unanswerable) query ids: judged queries with text, alternating after a seeded
    shuffle; unanswerable ones sharing a relevant document with an answerable one are dropped."""
    judged = sorted(q for q, rel in qrels.items() if q in queries and any(v > 0 for v in rel.values()))
    random.Random(seed).shuffle(judged)
    answerable = judged[0::2]
    kept = {d for q in answerable for d, v in qrels[q].items() if v > 0}
    unanswerable = [q for q in judged[1::2] if not {d for d, v in qrels[q].items() if v > 0} & kept]
    return answerable, unanswerable


def plan(doc_ids: list[str], qrels: dict[str, dict[str, float]], queries: dict[str, str],
         sizes=DEFAULT_SIZES, seed: int = 0) -> list[tuple[int | None, Plan]]:
    """The workspaces for each size, in order (see the module docstring)."""
    answerable, unanswerable = split(qrels, queries, seed)
    relevant = {q: [d for d, v in sorted(qrels[q].items()) if v > 0] for q in [*answerable, *unanswerable]}
    present = set(doc_ids)
    removed = {d for q in unanswerable for d in relevant[q]}
    kept_rel = {d for q in answerable for d in relevant[q]}
    answerable = [q for q in answerable if all(d in present for d in relevant[q])]
    filler = sorted(d for d in present if d not in removed and d not in kept_rel)
    random.Random(seed + 1).shuffle(filler)
    whole = [d for d in doc_ids if d not in removed]
    out: list[tuple[int | None, Plan]] = []
    for size in sizes:
        if size is not None and size < 2:
            raise ValueError("a workspace size is at least 2")
        if size is None or size >= len(whole):
            out.append((size, Plan(size, tuple(whole), tuple(answerable), tuple(unanswerable))))
            continue
        budget = max(1, size // 2)
        groups: list[list[str]] = []
        docs_of: list[list[str]] = []
        for q in answerable:
            need = [d for d in relevant[q] if not groups or d not in docs_of[-1]]
            if len(relevant[q]) > budget:
                continue    # cannot be answerable at this size
            if not groups or len(docs_of[-1]) + len(need) > budget:
                groups.append([])
                docs_of.append([])
                need = list(relevant[q])
            groups[-1].append(q)
            docs_of[-1].extend(need)
        for g, (group, docs) in enumerate(zip(groups, docs_of)):
            start = (g * size) % max(1, len(filler))
            fill = (filler[start:] + filler[:start])[:size - len(docs)]
            out.append((size, Plan(size, tuple(sorted(set(docs) | set(fill))), tuple(group), tuple(unanswerable))))
    return out
