"""Evaluation: retrieval quality on the workspace's golden set, or on a BEIR directory."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable

from ..retrieval.pipeline import Settings
from ..store.store import utcnow
from .search import Retrieval
from .workspace import Feature, Workspace


class Evaluation(Feature):
    """Evaluation over the golden set (in the workspace) or a BEIR directory."""

    def __init__(self, ws: Workspace, retrieval: Retrieval):
        super().__init__(ws)
        self.retrieval = retrieval

    def eval_golden(self, path: str, *, pipelines: list[str] | None = None, compare: tuple[str, str] | None = None,
                    now: datetime | None = None) -> dict[str, Any]:
        from ..retrieval import evaluate

        queries = evaluate.load_golden(path)
        for q in queries:
            self.principal(q["principal"])
        names = _pipelines(pipelines, compare)
        now = now or utcnow()
        index = self.retrieval.search_index()
        # Pins are a curation overlay that always comes first; evaluation measures ranking alone.
        out = evaluate.run_golden(index, queries, self.principal, self.retrieval.settings(), names, now,
                                  floor=self.retrieval.confidence_floor())
        return _finish(out, compare, {q.get("id", str(i)): q["query"] for i, q in enumerate(queries)})

    @staticmethod
    def eval_beir(folder: str, *, split: str = "test", pipelines: list[str] | None = None,
                  compare: tuple[str, str] | None = None, cache: str | None = None,
                  progress: Callable | None = None) -> dict[str, Any]:
        """Evaluate on a BEIR directory. Embeddings are cached (by text hash) in ``cache``
        (default: $WORKBENCH_CACHE, else ~/.cache/workbench/eval.duckdb)."""
        import os
        from pathlib import Path

        from ..retrieval import evaluate
        from ..retrieval.manager import IndexManager
        from ..store import Store

        names = _pipelines(pipelines, compare)
        for name in names:
            evaluate.preset(Settings(), name)
        corpus, queries, qrels = evaluate.load_beir(folder, split)
        cache_path = Path(cache or os.environ.get("WORKBENCH_CACHE") or Path.home() / ".cache" / "workbench"
                          / "eval.duckdb")
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        store = Store(cache_path)
        try:
            index = evaluate.beir_index(corpus, IndexManager(store))
            index.progress = progress
            if any(evaluate.PRESETS[n]["pipeline"] != "bm25" for n in names):
                index.vectors()
            out = evaluate.run_beir(index, queries, qrels, Settings(), names)
        finally:
            store.close()
        return _finish(out, compare, queries)


def _pipelines(pipelines: list[str] | None, compare: tuple[str, str] | None) -> list[str]:
    from ..retrieval.evaluate import DEFAULT_PIPELINES

    names = list(dict.fromkeys(pipelines or DEFAULT_PIPELINES))
    for name in compare or ():
        if name not in names:
            names.append(name)
    return names


def _finish(out: dict[str, Any], compare: tuple[str, str] | None, queries: dict[str, str]) -> dict[str, Any]:
    from ..retrieval.results import EvalReport
    from ..retrieval import evaluate

    result = EvalReport(out["metrics"])
    if compare:
        result["compare"] = evaluate.compare(out["rankings"], compare[0], compare[1], queries)
    return result
