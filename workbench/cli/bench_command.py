"""`workbench bench`: the latency benchmark, which lives outside the package.

The benchmark code is ``benchmarks/bench.py`` of a source checkout (it is not installed with the
package), loaded by path: ``$WORKBENCH_BENCHMARKS/bench.py`` if that is set, else
``<repo root>/benchmarks/bench.py``. Its ``run(n, *, queries, workdir, progress)`` does the work.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Callable

import click

from .options import INT, command, json_option
from .render import emit_json, table

MISSING = "workbench bench runs from a source checkout: benchmarks/bench.py not found (set WORKBENCH_BENCHMARKS)"


def bench_path() -> Path:
    """Where ``bench.py`` is looked for."""
    import workbench

    folder = os.environ.get("WORKBENCH_BENCHMARKS")
    root = Path(folder) if folder else Path(workbench.__file__).resolve().parents[1] / "benchmarks"
    return root / "bench.py"


def load_run() -> Callable[..., dict[str, Any]]:
    """The benchmark's ``run`` function (UserError when there is no benchmark to run)."""
    from ..errors import UserError

    path = bench_path()
    if path.is_file():
        spec = importlib.util.spec_from_file_location("workbench_benchmarks_bench", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses and pickling look modules up by name
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(spec.name, None)
            raise
        return module.run
    raise UserError(MISSING)


@command("bench", "Benchmark search latency on a synthetic workspace, against the DuckDB-native path.",
         "workbench bench --fragments 10000 --queries 100 --json > bench.json")
@click.option("--fragments", type=INT, default=1000, metavar="N", help="synthetic fragments (default 1000)")
@click.option("--queries", type=INT, default=100, metavar="Q", help="queries to time (default 100)")
@click.option("--keep", metavar="DIR", help="build the workspace in DIR and keep it")
@json_option()
def bench(fragments, queries, keep, as_json):
    from ..errors import UserError

    if fragments < 10 or queries < 1:
        raise UserError("--fragments must be at least 10 and --queries at least 1")
    run = load_run()
    result = run(fragments, queries=queries, workdir=Path(keep) if keep else None,
                 progress=lambda msg: print(f"bench: {msg}", file=sys.stderr, flush=True))
    if as_json:
        emit_json(result)
        return
    print(f"{result['fragments']} fragments, {result['queries']} queries as 'agent' "
          f"(sees {result['visible_share']:.0%} of the workspace)")
    rows = [["search (end to end)", result["search_ms"]["p50"], result["search_ms"]["p95"],
             result["baseline_search_ms"]["p50"], result["baseline_search_ms"]["p95"]]]
    for stage, v in result["stages_ms"].items():
        b = result["baseline_stages_ms"][stage]
        rows.append([stage, v["p50"], v["p95"], b["p50"], b["p95"]])
    print(table(["stage (ms)", "p50", "p95", "duckdb p50", "duckdb p95"], ([str(c) for c in r] for r in rows)))
    print(f"\nspeed-up at p50 vs DuckDB-native: {result['speedup_p50']}x")
    for key in ("ingest_fragments_per_s", "reingest_unchanged_s", "index_build_s", "edit_rebuild_index_ms",
                "lexical_rebuild_ms", "peak_rss_mb"):
        print(f"{key}: {result[key]}")
    print(f"dense paths: {result['dense_paths']}")
    paint = dict(result["tui_first_paint_s"])
    flow = paint.pop("flow", None)
    print(f"TUI first paint: {paint}")
    if flow:
        print(f"TUI flow (first search after launch, open after 10 s idle, quit): {flow}")


COMMANDS = [bench]
