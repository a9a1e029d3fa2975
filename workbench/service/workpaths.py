"""Context for the work at hand: the fragments linked to the files a piece of work touches.

``Retrieval.context(..., paths=, diff=, diff_range=)`` and ``Retrieval.search`` (the same arguments) call
this module. It turns what the caller
gave (paths, a unified diff's text, a git range read in ``repo``) into normalised repository paths,
links them to fragments by what those record (source pointers, git-ingested chunks, ``applies_to``
globs, CODEOWNERS of ``repo``) and ranks the linked fragments with the query's hits by the
weighted rule of rank/paths.py, each with its reason.

Visibility is the index's, as for any search: a fragment is looked at only when the caller's
visible mask (the working scope, the search filters) holds it, and a fragment stored with a
secret-guard override or superseded (for this caller) is never added. This module decides no
visibility of its own and adds nothing the caller could not find by a search.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from ..errors import UserError
from ..models import Principal, Scope
from ..rank import paths as rule
from ..retrieval.pipeline import Hit, Ranking, _hit, _top_score

# A work path holding these is a glob no shell expanded: refused (``[`` is a file's: Next.js' [id].tsx).
GLOB_CHARS = ("*", "?")
INGESTED_TAG = "git"   # git ingest tags its chunks "git" (ingest/git.py) and gives them ids "git.…"


def work_paths(paths: Any = None, diff: str | None = None, diff_range: str | None = None,
               repo: str | None = None) -> list[str] | None:
    """The work's paths, normalised (None when none of ``paths``, ``diff``, ``diff_range`` is given)."""
    if paths is None and diff is None and diff_range is None:
        return None
    from ..ingest.diffs import changed_paths, diff_paths

    given: list[str] = []
    if paths is not None:
        if isinstance(paths, str):
            paths = [paths]
        if not isinstance(paths, (list, tuple)) or not all(isinstance(p, str) for p in paths):
            raise UserError("paths must be a list of repository paths", param="paths")
        globbed = next((p for p in paths if any(c in p for c in GLOB_CHARS)), None)
        if globbed is not None:
            raise UserError(f"bad path {globbed[:200]!r}: a glob; paths name the files the work touches (let the "
                            "shell expand a glob, or give --diff)", param="paths")
        given += list(paths)
    if diff is not None:
        given += diff_paths(diff)
    if diff_range is not None:
        changed = changed_paths(diff_range, repo)
        if not changed:
            raise UserError(f"git diff {diff_range} changed no files", param="diff")
        given += changed
    if not given:
        raise UserError("no paths given", param="paths")
    return rule.normalise_paths(given)


def code_owners(work: list[str], repo: str | None, config) -> dict[str, list[str]]:
    """Path → principals CODEOWNERS of ``repo`` names for it ({} when no repo folder is given)."""
    if not repo:
        return {}
    from ..ingest.diffs import owners_of

    return owners_of(work, repo, config)


def _linked(row: tuple) -> rule.Linked | None:
    fid, kind, owner, sources, globs, tags = row
    found = []
    for source in sources or ():
        try:
            found.append(rule.normalise_path(source.get("path", "")))
        except (UserError, AttributeError):
            continue   # a source pointer that is no repository path (absolute, a URL): no link
    ingested = INGESTED_TAG in tags and fid.startswith("git.")
    applies = tuple(g for g in (globs or ()) if isinstance(g, str) and rule.glob_problem(g) is None)
    if not found and not applies:
        return None
    return rule.Linked(fid, kind, owner, applies, tuple(found), ingested)


def path_index(feature) -> rule.PathIndex:
    """The ``PathIndex`` of the store's current generation, kept on ``feature`` until it changes."""
    generation = feature.store.generation()
    held = getattr(feature, "_path_index", None)
    if held is not None and held[0] == generation:
        return held[1]
    built = rule.PathIndex(item for item in map(_linked, feature.store.path_links()) if item is not None)
    feature._path_index = (generation, built)
    return built


def _not_superseded(index, ranking: Ranking | None, who: Principal, seen: np.ndarray) -> np.ndarray:
    """Positions not superseded for this caller (for a query: unless the query names them)."""
    keep = np.ones(len(index.ids), dtype=bool)
    if ranking is not None:
        for i in ranking.superseded:
            keep[i] = i in ranking.named
        return keep
    if len(index.ids):
        keep &= index.superseders(seen, who) < 0
    return keep


def ranked_for_work(feature, index, work: list[str], who: Principal, within: Scope | None, settings,
                    ranking: Ranking | None, hits: list[Hit], avoid: list[Hit], withheld: set[str],
                    owners: dict[str, list[str]], weight: float, confidence: Callable[[int], float | None]
                    ) -> tuple[list[Hit], list[Hit], dict[str, rule.PathLink]]:
    """(hits, avoid, links): the query's hits and anti-patterns (none without a query) merged with
    the fragments linked to ``work``, each ranked by ``rule.combine`` and carrying its reason."""
    visible = index.visible(who, within)
    if settings.filters and len(index.ids):
        visible = visible & settings.filters.mask(index)
    current = _not_superseded(index, ranking, who, index.visible(who))

    def allowed(fid: str) -> bool:
        i = index.pos.get(fid)
        return i is not None and bool(visible[i]) and bool(current[i]) and fid not in withheld

    links = path_index(feature).links(work, allowed, owners)
    top = _top_score(ranking) if ranking is not None else 0.0

    def relevance(i: int) -> float | None:
        if ranking is None:
            return None
        raw = float(ranking.final[i]) if np.isfinite(ranking.final[i]) else 0.0
        return min(1.0, max(0.0, raw) / top) if top > 0 else 0.0

    def scored(hit: Hit, i: int) -> Hit:
        link = links.get(hit.id)
        path = link.score if link else 0.0
        rel = hit.score if ranking is not None else None
        return replace(hit, score=rule.combine(path, rel, weight), reason=link.reason if link else None,
                       scores={**hit.scores, "path": path, "relevance": rel,
                               **({"path_rule": link.rule} if link else {})})

    by_id: dict[str, Hit] = {}
    for hit in [*hits, *avoid]:
        by_id[hit.id] = scored(hit, index.pos[hit.id])
    for fid in links:
        if fid in by_id:
            continue
        i = index.pos[fid]
        if ranking is not None:
            base = _hit(index, ranking, i, 0, top=top, confidence=confidence(i))
            base = replace(base, score=relevance(i) or 0.0)
        else:
            base = Hit(fragment=index.fragment(i), score=0.0, scores={"pinned": False}, rank=0, confidence=None)
        by_id[fid] = scored(base, i)
    weights = {fid: (h.score, links[fid].paths if fid in links else 0) for fid, h in by_id.items()}
    ordered = [by_id[fid] for fid in rule.order(weights)]
    out_hits = [h for h in ordered if h.fragment.kind != "anti-pattern"][:settings.k]
    out_avoid = [h for h in ordered if h.fragment.kind == "anti-pattern"][:settings.k]
    return ([replace(h, rank=n) for n, h in enumerate(out_hits, 1)],
            [replace(h, rank=n) for n, h in enumerate(out_avoid, 1)], links)


def pin_hits(index, pins: list[str], who: Principal, within: Scope | None) -> list[Hit]:
    """The pins that apply, as hits, for a context without a query (no ranking to score them)."""
    visible = index.visible(who, within)
    out = []
    for fid in pins:
        i = index.pos.get(fid)
        if i is not None and visible[i]:
            out.append(Hit(fragment=index.fragment(i), score=1.0, scores={"pinned": True}, rank=0, confidence=None))
    return out


def search_for_work(retrieval, query: str | None, work: list[str], who: Principal, settings, *, within: Scope | None,
                    now, allow_secret: bool, floor: float | None, calibrate: bool, include_archived: bool,
                    repo: str | None, path_weight: float | None, trace: bool, not_stored: str):
    """``search`` with the work's paths: the query's hits (if any) merged with the fragments linked to
    ``work`` and ranked by the rule of rank/paths.py, as ``context`` selects them (pins rank like any
    hit: no budget to put them first in), each hit with its reason; traced with the paths
    (``not_stored``: the note when the trace could not be)."""
    from ..retrieval.results import SearchResult
    from .served import _served

    if query is not None and not (isinstance(query, str) and query.strip()):
        query = None     # paths alone are the question
    _, hits, avoid, links, weight = retrieval.work_select(
        query, work, who, settings, within=within, now=now, allow_secret=allow_secret, floor=floor, repo=repo,
        path_weight=path_weight, with_pins=False, for_context=False, calibrate=calibrate,
        include_archived=include_archived)
    info = settings.to_dict()
    extra = {"paths": work, "path_weight": weight, "path_links": len(links),
             **({"min_confidence": floor} if floor is not None else {}),
             **({"include_archived": True} if include_archived else {})}
    info.update(extra)
    trace_id = None
    if trace:
        served = ([_served(h, "hits", query=query) for h in hits] + [_served(h, "avoid", query=query) for h in avoid])
        trace_id = retrieval._trace("search", query or "", who, within, settings, served, now, extra=extra)
        if trace_id is None:
            info["trace_note"] = not_stored
    return SearchResult(trace_id, query or "", hits, avoid, {}, info, paths=work)
