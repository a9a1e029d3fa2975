"""`workbench bench`: the latency benchmark, which lives outside the package.

The benchmark code is ``benchmarks/bench.py`` of a source checkout (it is not installed with the
package), loaded by path: ``$WORKBENCH_BENCHMARKS/bench.py`` if that is set, else
``<repo root>/benchmarks/bench.py``. Its ``run(n, *, queries, workdir, progress[, busy, cold_runs])`` does the work
(``busy`` and ``cold_runs`` are passed only when not their defaults).
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

COLD_RUNS, MAX_BUSY = 5, 32
DEFAULTS = {"busy": 0, "cold_runs": COLD_RUNS, "scan_rows": 0}  # not passed on when unchanged: an older run() need not take them
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
         "workbench bench --fragments 10000 --queries 100 --busy 1 --json > bench.json")
@click.option("--fragments", type=INT, default=1000, metavar="N", help="synthetic fragments (default 1000)")
@click.option("--queries", type=INT, default=100, metavar="Q", help="queries to time (default 100)")
@click.option("--busy", type=INT, default=0, metavar="N",
              help="also measure every latency figure with N busy-loop processes running (default 0: idle only)")
@click.option("--cold-runs", type=INT, default=COLD_RUNS, metavar="R",
              help=f"cold `workbench search` processes timed per workspace (default {COLD_RUNS}; 0 skips them)")
@click.option("--keep", metavar="DIR", help="build the workspace in DIR and keep it")
@json_option()
@click.option("--scan-rows", type=INT, default=0, metavar="N",
              help="also time the exact and int8 dense scans on N synthetic vectors (e.g. 1000000; default 0: skip)")
def bench(fragments, queries, busy, cold_runs, keep, as_json, scan_rows):
    from ..errors import UserError

    if fragments < 10 or queries < 1:
        raise UserError("--fragments must be at least 10 and --queries at least 1")
    if not 0 <= busy <= MAX_BUSY or cold_runs < 0:
        raise UserError(f"--busy takes 0 to {MAX_BUSY} processes and --cold-runs 0 or more")
    if scan_rows < 0:
        raise UserError("--scan-rows takes 0 or more vectors")
    run = load_run()
    extra = {k: v for k, v in (("busy", busy), ("cold_runs", cold_runs), ("scan_rows", scan_rows)) if v != DEFAULTS[k]}
    result = run(fragments, queries=queries, workdir=Path(keep) if keep else None,
                 progress=lambda msg: print(f"bench: {msg}", file=sys.stderr, flush=True), **extra)
    if as_json:
        emit_json(result)
        return
    print_result(result)


def print_result(result: dict[str, Any]) -> None:
    """The figures as tables: with ``--busy``, each latency next to its busy twin."""
    busy = result.get("busy") or {}
    n_busy = result.get("busy_processes", 0)
    tag = f" ({n_busy} busy)" if busy else ""

    def pair(figure: dict | None, *keys: str) -> list[str]:
        return [str(figure.get(k, "")) if isinstance(figure, dict) else "" for k in keys]

    print(f"{result['fragments']} fragments, {result['queries']} queries as 'agent' "
          f"(sees {result['visible_share']:.0%} of the workspace)")
    heads = ["stage (ms)", "p50", "p95"] + (["busy p50", "busy p95"] if busy else []) + ["duckdb p50", "duckdb p95"] \
        + (["duckdb busy p50", "duckdb busy p95"] if busy else [])
    rows = [["search (end to end)", *pair(result["search_ms"], "p50", "p95"),
             *(pair(busy.get("search_ms"), "p50", "p95") if busy else []),
             *pair(result["baseline_search_ms"], "p50", "p95"),
             *(pair(busy.get("baseline_search_ms"), "p50", "p95") if busy else [])]]
    if "cached_search_ms" in result:  # the cache-hit path: the same texts asked again (not the headline)
        rows.append(["search, query vector cached", *pair(result["cached_search_ms"], "p50", "p95"),
                     *(pair(busy.get("cached_search_ms"), "p50", "p95") if busy else []),
                     "", "", *(["", ""] if busy else [])])
    for stage, v in result["stages_ms"].items():
        rows.append([stage, *pair(v, "p50", "p95"),
                     *(pair(busy.get("stages_ms", {}).get(stage), "p50", "p95") if busy else []),
                     *pair(result["baseline_stages_ms"][stage], "p50", "p95"),
                     *(pair(busy.get("baseline_stages_ms", {}).get(stage), "p50", "p95") if busy else [])])
    print(table(heads, rows))
    if "query_cache_hits" in result:
        print(f"search (end to end) times new questions: the query-vector cache answered "
              f"{result['query_cache_hits']} of its timed calls")
    print(f"\nspeed-up at p50 vs DuckDB-native: {result['speedup_p50']}x"
          + (f"; {busy.get('speedup_p50')}x{tag}" if busy else ""))
    embed, corpus = result.get("query_embed_ms", {}), result.get("corpus_embed", {})
    if embed:
        rows = [[name, *(pair(v, "p50", "p95") if "error" not in v else [v["error"], ""]),
                 *(pair(busy.get("query_embed_ms", {}).get(name), "p50", "p95") if busy else []),
                 str(corpus.get(name, {}).get("fragments_per_s", ""))] for name, v in embed.items()]
        print()
        print(table(["query embedding (ms)", "p50", "p95"] + (["busy p50", "busy p95"] if busy else [])
                    + ["corpus fragments/s"], rows))
        print(f"workspace embedder: {result.get('embedder_backend')}; smallest onnx/torch cosine: "
              f"{result.get('backend_agreement_min_cosine')}")
    cold = result.get("cold_cli") or {}
    if cold:
        keys = ("median_s", "min_s", "max_s", "cpu_median_s", "peak_rss_mb")
        rows = [[name, *(pair(v, *keys) if "error" not in v else [str(v["error"])] + [""] * 4),
                 *(pair(busy.get("cold_cli", {}).get(name), "median_s", "min_s", "max_s") if busy else [])]
                for name, v in cold.items()]
        print()
        print(table(["cold search (s)", "median", "min", "max", "cpu median", "peak RSS MB"]
                    + (["busy median", "busy min", "busy max"] if busy else []), rows))
        print(f"command: {next(iter(cold.values())).get('command')} --workspace W "
              f"(sample: marco.bianchi; synthetic: agent)")
    for label, figures in [("", result)] + ([(tag, busy)] if busy else []):
        lived = figures.get("long_lived")
        if lived:
            print(f"\nlong-lived process{label}: " + (lived["error"] if "error" in lived else
                  f"open + first search {lived['open_and_first_search_s']} s; warm search p50/p95 "
                  f"{lived['warm_search_ms_trace_true']['p50']}/{lived['warm_search_ms_trace_true']['p95']} ms "
                  f"with trace; edit visible median {lived['edit_visible_ms']['median']} ms; "
                  f"peak RSS {lived['peak_rss_mb']} MB"))
    print()
    for key in ("ingest_fragments_per_s", "reingest_unchanged_s", "index_build_s", "edit_rebuild_index_ms",
                "lexical_rebuild_ms", "edit_visible_ms", "peak_rss_mb", "peak_rss_mb_end"):
        if key in result:
            print(f"{key}: {result[key]}")
    print(f"dense paths: {result['dense_paths']}")
    scan = result.get("dense_scan")
    if scan:
        print(f"dense scan at {scan.get('n', '?'):,} synthetic vectors: {scan}" if "error" not in scan
              else f"dense scan: {scan['error']}")
    for label, figures in [("", result)] + ([(tag, busy)] if busy else []):
        paint = dict(figures.get("tui_first_paint_s") or {})
        flow = paint.pop("flow", None)
        print(f"TUI first paint{label}: {paint}")
        if flow:
            print(f"TUI flow{label} (first search after launch, open after idle, quit): {flow}")
    machine = result.get("machine")
    if machine:
        print(f"machine: {machine['cpus']} CPUs, started {machine['started_at']}, load average "
              f"{machine['load_avg_start']} at start, {machine['load_avg_end']} at end")


COMMANDS = [bench]
