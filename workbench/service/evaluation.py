"""Evaluation: retrieval quality on the workspace's golden set, or on a BEIR directory."""

from __future__ import annotations

import shutil
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from ..config import GOLDEN_NAME, WorkspaceConfig
from ..models import utcnow
from ..retrieval.pipeline import Settings
from ..userpath import expand_user
from .search import Retrieval
from .workspace import Feature, Workspace


class Evaluation(Feature):
    """Evaluation over the golden set (in the workspace) or a BEIR directory."""

    def __init__(self, ws: Workspace, retrieval: Retrieval):
        super().__init__(ws)
        self.retrieval = retrieval

    def golden_path(self, golden: str | Path | None = None) -> Path | None:
        """The golden set to use: ``golden`` as given, else ``golden`` of workbench.yaml (relative to the
        workspace folder), else the workspace's golden.yaml when there is one, else None."""
        if golden:
            return expand_user(golden)
        if self.config.golden:
            return self.root / expand_user(self.config.golden)
        default = self.root / GOLDEN_NAME
        return default if default.is_file() else None

    def eval_golden(self, path: str, *, pipelines: list[str] | None = None, compare: tuple[str, str] | None = None,
                    now: datetime | None = None) -> dict[str, Any]:
        from ..retrieval import evaluate

        queries, out = self.run_golden(path, _pipelines(pipelines, compare), now=now)
        report = _finish(out, compare, {q.get("id", str(i)): q["query"] for i, q in enumerate(queries)})
        entries = evaluate.load_path_golden(path)
        if entries:
            report["paths"] = self.rank_path_golden(entries, now=now)
        archived = evaluate.load_golden(path, archived=True)
        if archived:   # answered only by archived fragments: ranked with include_archived, reported apart
            for q in archived:
                self.principal(q["principal"])
            out = evaluate.run_golden(self.retrieval.archive_index(), archived, self.principal,
                                      self.retrieval.settings(), _pipelines(pipelines, compare), now or utcnow(),
                                      floor=self.retrieval.confidence_floor())
            report["archived"] = {name: {k: v for k, v in m.items() if k != "by_scope"}
                                  for name, m in out["metrics"].items()}
        return report

    def rank_path_golden(self, entries: list[dict[str, Any]], *, now: datetime | None = None) -> dict[str, Any]:
        """Recall of golden ``paths:`` entries: each ranked as ``context --paths`` selects for its principal
        (with its query when it has one; before the budget, pins aside), with the hybrid pipeline."""
        from ..rank.paths import normalise_paths
        from ..retrieval import evaluate

        now = now or utcnow()
        settings = self.retrieval.settings(k=evaluate.CONTEXT_K)
        runs, rankings = [], {}
        for i, q in enumerate(entries):
            who = self.principal(q["principal"])
            _, hits, avoid, _, _ = self.retrieval.work_select(
                q.get("query"), normalise_paths(q["paths"]), who, settings, within=None, now=now,
                floor=self.retrieval.confidence_floor() if q.get("query") else None, with_pins=False)
            ranked = [h.id for h in sorted([*hits, *avoid], key=lambda h: -h.score)]
            rankings[q.get("id", str(i))] = ranked
            runs.append((ranked, {fid: 1.0 for fid in q["relevant"]}))
        return {**evaluate.path_metrics(runs), "with_query": sum(1 for q in entries if q.get("query")),
                "path_weight": self.retrieval.path_weight()}

    def run_golden(self, path: str | Path, pipelines: list[str], *, now: datetime | None = None
                   ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Load the golden set at ``path`` and rank each query as its principal with each pipeline:
        (the queries, ``{"metrics": per pipeline, "rankings": pipeline → query id → ranked ids}``)."""
        from ..retrieval import evaluate

        queries = evaluate.load_golden(path)
        return queries, self.rank_golden(queries, pipelines, now=now)

    def rank_golden(self, queries: list[dict[str, Any]], pipelines: list[str], *, now: datetime | None = None,
                    keep_context: str | None = None) -> dict[str, Any]:
        """``run_golden`` for golden queries already loaded (``retrieval.evaluate.load_golden``); with
        ``keep_context``, also what context selects for each query with that pipeline."""
        from ..retrieval import evaluate

        for q in queries:
            self.principal(q["principal"])
        now = now or utcnow()
        index = self.retrieval.search_index()
        # Pins are a curation overlay that always comes first; evaluation measures ranking alone.
        return evaluate.run_golden(index, queries, self.principal, self.retrieval.settings(), pipelines, now,
                                   floor=self.retrieval.confidence_floor(), keep_context=keep_context,
                                   acting=self.retrieval.acting)

    @staticmethod
    def eval_beir(folder: str, *, split: str = "test", pipelines: list[str] | None = None,
                  compare: tuple[str, str] | None = None, cache: str | None = None,
                  progress: Callable | None = None, abstention: bool = False,
                  sizes: list[int | None] | None = None, embedder=None) -> dict[str, Any]:
        """Evaluate on a BEIR directory. Embeddings are cached (by text hash) in ``cache``: a DuckDB
        file (default: $WORKBENCH_CACHE, else ~/.cache/workbench/eval.duckdb) or a PostgreSQL URL.

        ``abstention``: instead, workspaces of each of ``sizes`` documents (None: the whole set;
        default 20, 200, 2,000 and the whole set) where each query is answerable or not
        (retrieval/abstention.py), with the answered and abstained rates of the prior and of the
        legacy model (fitted on the sample corpus before issue 28) at their floors, per size.
        ``embedder``: rank with this model's vectors (``eval --compare-models``) instead of the bundled model's."""
        import os
        from pathlib import Path

        from ..retrieval import evaluate
        from ..retrieval.manager import IndexManager
        from ..store import open_store

        names = _pipelines(pipelines, compare)
        for name in names:
            evaluate.preset(Settings(), name)
        corpus, queries, qrels = evaluate.load_beir(folder, split)
        location = cache or os.environ.get("WORKBENCH_CACHE") or str(Path.home() / ".cache" / "workbench"
                                                                     / "eval.duckdb")
        if "://" in location:  # a PostgreSQL database as the cache (the same figures on either backend)
            store = open_store(location, Path.home() / ".cache" / "workbench")
        else:
            cache_path = Path(location)
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            store = open_store(cache_path, cache_path.parent)
        try:
            index = evaluate.beir_index(corpus, IndexManager(store, embedder, follow=embedder is None))
            index.progress = progress
            if abstention or any(evaluate.PRESETS[n]["pipeline"] != "bm25" for n in names):
                index.vectors()
            if abstention:
                from ..rank import calibration
                from ..retrieval.abstention import DEFAULT_SIZES

                return {"abstention": evaluate.run_abstention(
                    corpus, queries, qrels, IndexManager(store), sizes or list(DEFAULT_SIZES),
                    {"prior": calibration.PRIOR, "legacy": calibration.LEGACY}, Settings(), progress)}
            out = evaluate.run_beir(index, queries, qrels, Settings(), names)
        finally:
            store.close()
        return _finish(out, compare, queries)


def golden_to_copy(config: Path, loaded: WorkspaceConfig) -> Path | None:
    """The golden file that a workbench.yaml about to be copied names (relative to its folder), or None
    when it names none or no such file is there (a config copied alone: the workspace then has no golden
    set until one is put where its ``golden:`` points, and ``check`` says so)."""
    if not loaded.golden:
        return None
    source = config.parent / expand_user(loaded.golden)
    return source if source.is_file() else None


def copy_golden(source: Path, root: Path, config: Path) -> None:
    """Copy the golden set into the workspace as golden.yaml and make the copied ``config`` name it so:
    only its ``golden:`` line changes (comments and everything else stay as written), unless the value
    spans lines, when the config is written anew."""
    import re

    from .. import safeyaml
    from ..errors import WorkbenchError

    if source.resolve() != (root / GOLDEN_NAME).resolve():
        shutil.copyfile(source, root / GOLDEN_NAME)
    if WorkspaceConfig.load(config).golden == GOLDEN_NAME:
        return
    text = config.read_text(encoding="utf-8")
    config.write_text(re.sub(r"^golden[ \t]*:.*$", f"golden: {GOLDEN_NAME}", text, count=1, flags=re.MULTILINE),
                      encoding="utf-8")
    try:
        if WorkspaceConfig.load(config).golden == GOLDEN_NAME:
            return
    except WorkbenchError:
        pass
    import yaml

    data = safeyaml.load(text, file=str(config))
    data["golden"] = GOLDEN_NAME
    config.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def _pipelines(pipelines: list[str] | None, compare: tuple[str, str] | None) -> list[str]:
    from ..retrieval.evaluate import DEFAULT_PIPELINES

    names = list(dict.fromkeys(pipelines or DEFAULT_PIPELINES))
    for name in compare or ():
        if name not in names:
            names.append(name)
    return names


def _finish(out: dict[str, Any], compare: tuple[str, str] | None, queries: dict[str, str]) -> dict[str, Any]:
    from ..retrieval import evaluate
    from ..retrieval.results import EvalReport

    result = EvalReport(out["metrics"])
    if compare:
        result["compare"] = evaluate.compare(out["rankings"], compare[0], compare[1], queries)
    return result
