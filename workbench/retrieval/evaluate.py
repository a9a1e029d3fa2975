"""Evaluation: a golden set over the workspace, or a BEIR directory, through the same
ranking code as search. Reports nDCG@10, recall@10, recall@100 and MRR@10 per pipeline.

Golden queries run as their principal, so the scope rule holds in evaluation too. Negative
queries (``relevant: []``, ``type: negative``: questions the corpus does not answer) are left
out of those averages; for them the golden report gives the *abstention* rate: the share for
which context, selected exactly as ``context`` selects it (superseded fragments out, the
confidence floor applied; pins, a curation overlay, are not part of evaluation), serves
nothing. ``answered`` is its counterpart on the positive queries: the share for which that
selection keeps at least one relevant fragment.
BEIR corpora are embedded once: vectors are cached by text hash in a cache database.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from ..errors import UserError
from ..models import Content, Fragment, Principal, Scope
from ..rank.calibration import DEFAULT_FLOOR
from ..rank.metrics import summarise
from . import golden_rules
from .index import SearchIndex
from .pipeline import Settings, hits_from, rank

PRESETS: dict[str, dict[str, Any]] = {
    "bm25": {"pipeline": "bm25", "lexical": "bm25"},
    "fts": {"pipeline": "bm25", "lexical": "duckdb-fts"},
    "dense": {"pipeline": "dense"},
    "hybrid": {"pipeline": "hybrid", "fusion": "weighted"},
    "hybrid-rrf": {"pipeline": "hybrid", "fusion": "rrf"},
    "hybrid-nopriors": {"pipeline": "hybrid", "fusion": "weighted", "use_priors": False},
    "dense-passages": {"pipeline": "dense", "passages": True},
    "hybrid-passages": {"pipeline": "hybrid", "fusion": "weighted", "passages": True},
    "hybrid-zscore": {"pipeline": "hybrid", "fusion": "zscore"},
    "hybrid-prf": {"pipeline": "hybrid", "fusion": "weighted", "feedback": True},
}
DEFAULT_PIPELINES = ("bm25", "dense", "hybrid")
CONTEXT_K = 20  # what ``context`` ranks by default


def preset(base: Settings, name: str) -> Settings:
    if name not in PRESETS:
        raise UserError(f"unknown pipeline {name!r} (valid: {', '.join(PRESETS)})")
    return replace(base, k=100, depth=100, **PRESETS[name]).check()


# -- golden ------------------------------------------------------------------------------

def load_golden(path: str | Path, *, archived: bool = False) -> list[dict[str, Any]]:
    """The golden queries of ``path`` (not its ``paths:`` entries): those whose answer is active, or
    with ``archived``, only those marked ``archived: true`` (answered by an archived fragment: ranked
    as ``search --include-archived`` ranks, apart from the main figures)."""
    from ..safeyaml import load as safe_load

    try:
        data = safe_load(Path(path).read_text(encoding="utf-8"), file=str(path), max_bytes=16 * 1024 ** 2,
                         max_nodes=200_000)
    except OSError as e:
        raise UserError(f"cannot read {path}: {e}") from e
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text ({e})") from e
    queries = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(queries, list) or not queries:
        raise UserError(f"{path}: expected a 'queries' list")
    for i, q in enumerate(queries):
        if isinstance(q, dict) and "paths" in q:
            continue   # a question about paths (context for the work at hand): load_path_golden's
        if not isinstance(q, dict) or not {"query", "principal", "relevant"} <= set(q):
            raise UserError(f"{path}: queries.{i}: needs query, principal and relevant")
        if not isinstance(q["relevant"], list):
            raise UserError(f"{path}: queries.{i}: relevant must be a list (empty for a negative query)")
        if q.get("type") == "negative" and q["relevant"]:
            raise UserError(f"{path}: queries.{i}: a negative query has no relevant fragments (relevant: [])")
        golden_rules.validate(q, f"{path}: queries.{i}")
        if not isinstance(q.get("archived", False), bool):
            raise UserError(f"{path}: queries.{i}: archived must be true or false")
    return [q for q in queries if "paths" not in q and bool(q.get("archived", False)) == archived]


def load_path_golden(path: str | Path) -> list[dict[str, Any]]:
    """The golden entries that carry ``paths:`` (repository paths the work touches; a ``query`` is
    optional), each with ``principal`` and a non-empty ``relevant``: evaluated by ``context
    --paths`` and reported apart (``paths`` in the eval report)."""
    from ..rank.paths import normalise_paths
    from ..safeyaml import load as safe_load

    try:
        data = safe_load(Path(path).read_text(encoding="utf-8"), file=str(path), max_bytes=16 * 1024 ** 2,
                         max_nodes=200_000)
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {path}: {e}") from e
    out = []
    for i, q in enumerate((data.get("queries") or []) if isinstance(data, dict) else []):
        if not isinstance(q, dict) or "paths" not in q:
            continue
        where = f"{path}: queries.{i}"
        if not isinstance(q["paths"], list) or not q["paths"]:
            raise UserError(f"{where}: paths must be a non-empty list of repository paths")
        if not isinstance(q.get("relevant"), list) or not q["relevant"] or "principal" not in q:
            raise UserError(f"{where}: a paths entry needs principal and a non-empty relevant list")
        if "query" in q and not (isinstance(q["query"], str) and q["query"].strip()):
            raise UserError(f"{where}: query must be text when given")
        try:
            normalise_paths(q["paths"])
        except UserError as e:
            raise UserError(f"{where}: {e.message}") from e
        out.append(q)
    return out


def path_metrics(runs: list[tuple[list[str], dict[str, float]]]) -> dict[str, Any]:
    """recall@5, recall@10, MRR@10 and the share of entries with a relevant fragment in the top 5."""
    from ..rank.metrics import mrr_at, recall_at

    n = len(runs)
    if not n:
        return {"queries": 0}
    return {"recall@5": round(sum(recall_at(r, j, 5) for r, j in runs) / n, 4),
            "recall@10": round(sum(recall_at(r, j, 10) for r, j in runs) / n, 4),
            "mrr@10": round(sum(mrr_at(r, j, 10) for r, j in runs) / n, 4),
            "hit@5": round(sum(bool(set(r[:5]) & set(j)) for r, j in runs) / n, 4), "queries": n}


def is_negative(q: dict[str, Any]) -> bool:
    """A query the corpus does not answer: no relevant fragment (``type: negative``)."""
    return not q["relevant"]


def run_golden(index: SearchIndex, queries: list[dict[str, Any]], principal_of: Callable[[str], Principal],
               base: Settings, pipelines: Iterable[str], now: datetime,
               floor: float = DEFAULT_FLOOR, keep_context: str | None = None,
               acting: Callable[[Principal, Settings, str | None], Settings] | None = None) -> dict[str, Any]:
    """Rank each golden query as its principal with each pipeline: ``{"metrics", "rankings"}``; with
    ``keep_context`` (a pipeline's name), also ``"context"``: query id → (hits, avoid) as context
    selects them for that pipeline (before the token budget). ``acting`` (the service's
    ``Retrieval.acting``) puts each query in its persona (its ``persona:``, else its agent's own);
    ``by_persona`` reports the metrics per persona ("-": asked in none)."""
    rankings: dict[str, dict[str, list[str]]] = {}
    kept: dict[str, tuple[list, list]] = {}
    report: dict[str, Any] = {}
    pipelines = list(pipelines)
    # every pipeline needs the query vectors: a hit's confidence uses the dense cosine
    vectors = index.embedder.encode([q["query"] for q in queries]) if queries else None
    for name in pipelines:
        settings = preset(base, name)
        runs, by_scope, by_persona = [], defaultdict(list), defaultdict(list)
        rankings[name] = {}
        negatives = abstained = answered = 0
        for i, q in enumerate(queries):
            who = principal_of(q["principal"])
            asked = acting(who, settings, q.get("persona")) if acting is not None else settings
            ranking = rank(index, q["query"], who, asked, now=now,
                           query_vector=None if vectors is None else vectors[i])
            ranked = [index.ids[j] for j in ranking.order]
            rankings[name][q.get("id", str(i))] = ranked
            hits, avoid = hits_from(index, ranking, replace(settings, k=CONTEXT_K), for_context=True,
                                    min_confidence=floor)
            served = {h.id for h in [*hits, *avoid]}
            if name == keep_context:
                kept[q.get("id", str(i))] = (hits, avoid)
            if is_negative(q):
                negatives += 1
                abstained += not served
                continue
            judged = {fid: 1.0 for fid in q["relevant"]}
            runs.append((ranked, judged))
            by_persona[asked.persona or "-"].append((ranked, judged))
            answered += bool(served & set(judged))
            first = next((index.fragment(index.pos[f]) for f in q["relevant"] if f in index.pos), None)
            if first is not None:
                by_scope[f"org={first.scope.org}"].append((ranked, judged))
        report[name] = {**summarise(runs),
                        "answered": round(answered / len(runs), 4) if runs else None,
                        "abstention": round(abstained / negatives, 4) if negatives else None,
                        "negatives": negatives, "min_confidence": floor,
                        "by_scope": {s: summarise(r) for s, r in sorted(by_scope.items())},
                        "by_persona": {p: summarise(r) for p, r in sorted(by_persona.items())}}
    return {"metrics": report, "rankings": rankings, **({"context": kept} if keep_context else {})}


# -- BEIR --------------------------------------------------------------------------------

def load_beir(folder: str | Path, split: str = "test") -> tuple[list[tuple[str, str, str]], dict[str, str],
                                                                   dict[str, dict[str, float]]]:
    root = Path(folder)
    need = [root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"]
    missing = [str(p) for p in need if not p.is_file()]
    if missing:
        raise UserError(f"{root} is not a BEIR directory: missing {', '.join(missing)}")
    corpus: list[tuple[str, str, str]] = []
    for n, line in enumerate(need[0].read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
            corpus.append((str(doc["_id"]), doc.get("title") or "", doc.get("text") or ""))
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise UserError(f"{need[0]}:{n}: not a BEIR corpus line ({e})") from e
    queries: dict[str, str] = {}
    for n, line in enumerate(need[1].read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
            queries[str(q["_id"])] = q["text"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise UserError(f"{need[1]}:{n}: not a BEIR query line ({e})") from e
    qrels: dict[str, dict[str, float]] = defaultdict(dict)
    for n, line in enumerate(need[2].read_text(encoding="utf-8").splitlines(), start=1):
        cols = line.strip().split("\t")
        if n == 1 and cols and cols[0].strip().lower() in ("query-id", "query_id", "qid", "query"):
            continue  # header
        if len(cols) < 3:
            if line.strip():
                raise UserError(f"{need[2]}:{n}: expected query-id<TAB>corpus-id<TAB>score")
            continue
        try:
            qrels[cols[0]][cols[1]] = float(cols[2])
        except ValueError as e:
            raise UserError(f"{need[2]}:{n}: score {cols[2]!r} is not a number") from e
    if not corpus or not qrels:
        raise UserError(f"{root}: empty corpus or qrels")
    return corpus, queries, dict(qrels)


BEIR_PRINCIPAL = Principal(name="beir", orgs=("beir",))


def beir_index(corpus: list[tuple[str, str, str]], derived) -> SearchIndex:
    """An index over a BEIR corpus; ``derived`` is the IndexManager of the embedding cache."""
    epoch = datetime(2000, 1, 1)
    fragments = [Fragment(id=doc_id, version=1, content=Content(kind="note", title=title, body=text,
                                                                scope=Scope("beir"), owner="beir"),
                          content_hash="", created_at=epoch, updated_at=epoch) for doc_id, title, text in corpus]
    digest = hashlib.sha256("\n".join(f"{i}\t{t}\t{x}" for i, t, x in corpus).encode("utf-8")).hexdigest()
    # the generation keys the cached FTS table to this exact corpus
    return SearchIndex.of_fragments(fragments, generation=-int(digest[:12], 16), derived=derived, authority={})


def run_beir(index: SearchIndex, queries: dict[str, str], qrels: dict[str, dict[str, float]], base: Settings,
             pipelines: Iterable[str]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    rankings: dict[str, dict[str, list[str]]] = {}
    now = datetime(2000, 1, 1)
    judged_ids = [qid for qid in qrels if qid in queries]
    vectors = {}
    if any(PRESETS[name]["pipeline"] != "bm25" for name in pipelines):
        vectors = dict(zip(judged_ids, index.embedder.encode([queries[q] for q in judged_ids])))
    for name in pipelines:
        settings = replace(preset(base, name), use_priors=False)
        runs = []
        rankings[name] = {}
        for qid in judged_ids:
            judged = qrels[qid]
            ranking = rank(index, queries[qid], BEIR_PRINCIPAL, settings, now=now, query_vector=vectors.get(qid))
            ranked = [index.ids[j] for j in ranking.order]
            rankings[name][qid] = ranked
            runs.append((ranked, judged))
        report[name] = summarise(runs)
    return {"metrics": report, "rankings": rankings}


def compare(rankings: dict[str, dict[str, list[str]]], a: str, b: str, queries: dict[str, str]
            ) -> list[dict[str, Any]]:
    """Queries whose top 3 differ between pipelines ``a`` and ``b``."""
    for name in (a, b):
        if name not in rankings:
            raise UserError(f"the compared pipeline {name!r} was not among those run ({', '.join(rankings)})",
                            param="compare")
    out = []
    for qid, ranked_a in rankings[a].items():
        ranked_b = rankings[b].get(qid, [])
        if ranked_a[:3] != ranked_b[:3]:
            out.append({"query_id": qid, "query": queries.get(qid, ""), a: ranked_a[:3], b: ranked_b[:3]})
    return out


# -- abstention across corpus sizes -----------------------------------------------------------

def run_abstention(corpus: list[tuple[str, str, str]], queries: dict[str, str], qrels: dict[str, dict[str, float]],
                   derived, sizes, models: dict[str, Any], base: Settings, progress: Callable | None = None
                   ) -> dict[str, Any]:
    """Per size (abstention.plan) and per calibration in ``models`` (name → rank.calibration.Calibration):
    answered (context serves something for an answerable query), answered_relevant (it serves a
    relevant document), abstained (it serves nothing for an unanswerable one), and recall@10 of the
    answerable queries; context selected as ``context`` selects it, at each model's own floor."""
    from .abstention import plan

    by_id = {doc[0]: doc for doc in corpus}
    plans = plan([doc[0] for doc in corpus], qrels, queries, sizes)
    asked = sorted({q for _, p in plans for q in (*p.answerable, *p.unanswerable)})
    vectors: dict[str, Any] = {}
    settings = replace(preset(base, "hybrid"), use_priors=False)
    now = datetime(2000, 1, 1)
    tally: dict[str, dict[str, Any]] = {}
    for n, (size, p) in enumerate(plans):
        index = beir_index([by_id[d] for d in p.docs], derived)
        if not vectors:
            vectors = dict(zip(asked, index.embedder.encode([queries[q] for q in asked])))
        label = "all" if size is None or size >= len(corpus) else str(size)
        row = tally.setdefault(label, {"documents": [], "workspaces": 0, "runs": [], "negatives": 0,
                                       **{m: {"answered": 0, "relevant": 0, "abstained": 0} for m in models}})
        row["workspaces"] += 1
        row["documents"].append(len(p.docs))
        row["negatives"] += len(p.unanswerable)
        for qid in (*p.answerable, *p.unanswerable):
            ranking = rank(index, queries[qid], BEIR_PRINCIPAL, settings, now=now, query_vector=vectors[qid])
            relevant = {d for d, v in qrels[qid].items() if v > 0}
            answerable = qid in p.answerable
            if answerable:
                row["runs"].append(([index.ids[j] for j in ranking.order], {d: 1.0 for d in relevant}))
            for name, model in models.items():
                hits, _ = hits_from(index, ranking, replace(settings, k=CONTEXT_K), for_context=True,
                                    min_confidence=model.floor, model=model)
                served = {h.id for h in hits}
                counts = row[name]
                if answerable:
                    counts["answered"] += bool(served)
                    counts["relevant"] += bool(served & relevant)
                else:
                    counts["abstained"] += not served
        if progress:
            progress("abstention", n + 1, len(plans))
    report: dict[str, Any] = {}
    for label, row in tally.items():
        positives, negatives = len(row["runs"]), row["negatives"]
        metrics = summarise(row["runs"])
        entry = {"documents": max(row["documents"]), "workspaces": row["workspaces"], "answerable": positives,
                 "unanswerable": negatives, "recall@10": metrics.get("recall@10")}
        for name, model in models.items():
            c = row[name]
            entry[name] = {"floor": model.floor,
                           "answered": round(c["answered"] / positives, 4) if positives else None,
                           "answered_relevant": round(c["relevant"] / positives, 4) if positives else None,
                           "abstained": round(c["abstained"] / negatives, 4) if negatives else None}
        report[label] = entry
    return report
