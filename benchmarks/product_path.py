"""The product path against the ranker, in one run: what `Workbench.search` (scope, pins, secret
guard, calibration, fragment reads, the trace write) adds to ``pipeline.rank`` on the same queries.

    .venv/bin/python benchmarks/product_path.py WS [--principal P] [--queries FILE.jsonl] [--busy 1]
        [--rounds 3] [--profile]

Every timed call asks a question the query-vector cache has not seen (the cache is emptied
before each call), so both paths pay the query embedding, as a new question does. The four paths
run on each query in turn (the ranker, then search without a trace, search with its trace queued
as it is now, and search with its trace committed on its own as before issue 31:
``TRACE_DEFER_MAX`` set to 1 for that call), so drift of a shared machine falls on all alike; the
three searches rotate which goes first, because the first reads the hits' fragments from the store
and the others find them cached. Reported: p50/p95 ms of each, the ratio of search (with
trace) to the ranker at p50, and with ``--busy N`` the same with N busy-loop processes (busy.py).
``--profile`` prints cProfile's top functions of the traced search path (cumulative).

``--queries``: a BEIR queries.jsonl (e.g. SciFact's 300 test claims); default the sample's golden
queries. WS: e.g. the SciFact workspace of memory_peak.py (principal ``reader``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _busy_module():
    spec = importlib.util.spec_from_file_location("workbench_benchmarks_busy", HERE / "busy.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pct(values) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {"p50": round(float(np.percentile(arr, 50)), 2), "p95": round(float(np.percentile(arr, 95)), 2)}


def load_queries(path: str | None) -> list[str]:
    if path:
        return [json.loads(line)["text"] for line in Path(path).read_text(encoding="utf-8").splitlines()
                if line.strip()]
    import yaml

    golden = yaml.safe_load((HERE.parent / "sample_corpus" / "golden.yaml").read_text(encoding="utf-8"))
    return [q["query"] for q in golden["queries"] if "paths" not in q]


def measure(wb, texts: list[str], principal: str, rounds: int) -> dict:
    from workbench.models import utcnow
    from workbench.retrieval.pipeline import rank

    who = wb.principal(principal)
    settings = wb.settings()
    index = wb.search_index()
    embedder = index.embedder
    from workbench.store import tracequeue

    times: dict[str, list[float]] = {"ranker": [], "search_no_trace": [], "search": [],
                                     "search_trace_committed_each": []}
    queued = tracequeue.TRACE_DEFER_MAX
    names = list(times)[1:]
    for _ in range(rounds):
        for n, text in enumerate(texts):
            turn = n % len(names)  # the search variants take turns going first: the first reads the hits'
            for name in ["ranker"] + names[turn:] + names[:turn]:  # fragments, the next find them cached
                embedder.forget_queries()
                if name == "search_trace_committed_each":  # as before issue 31: one commit per trace
                    wb.store.flush_traces()
                    tracequeue.TRACE_DEFER_MAX = 1
                t = time.perf_counter()
                if name == "ranker":
                    rank(index, text, who, settings, now=utcnow())
                else:
                    wb.search(text, principal=principal, trace=name != "search_no_trace")
                times[name].append((time.perf_counter() - t) * 1000)
                tracequeue.TRACE_DEFER_MAX = queued
    out = {name: _pct(v) for name, v in times.items()}
    out["ratio_p50"] = round(out["search"]["p50"] / out["ranker"]["p50"], 2)
    out["ratio_p95"] = round(out["search"]["p95"] / out["ranker"]["p95"], 2)
    out["ratio_p50_committed_each"] = round(out["search_trace_committed_each"]["p50"] / out["ranker"]["p50"], 2)
    return out


def profile(wb, texts: list[str], principal: str) -> None:
    import cProfile
    import pstats

    embedder = wb.search_index().embedder
    prof = cProfile.Profile()
    for text in texts:
        embedder.forget_queries()
        prof.enable()
        wb.search(text, principal=principal)
        prof.disable()
    pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ws")
    parser.add_argument("--principal", default="reader")
    parser.add_argument("--queries")
    parser.add_argument("--limit", type=int, default=100, help="query texts used (default 100)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--busy", type=int, default=0)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    from workbench.service import Workbench

    texts = load_queries(args.queries)[:args.limit]
    with Workbench.open(args.ws) as wb:
        wb.warm()
        for text in texts[:10]:  # the first touch of the code paths and the hits' fragments
            wb.search(text, principal=args.principal)
        if args.profile:
            profile(wb, texts, args.principal)
            return
        before = wb.store.trace_total()
        out = {"workspace": args.ws, "fragments": len(wb.search_index().ids), "queries": len(texts),
               "rounds": args.rounds, "cpus": os.cpu_count(), "load_avg_start": [round(x, 2) for x in os.getloadavg()],
               "idle": measure(wb, texts, args.principal, args.rounds)}
        if args.busy:
            with _busy_module().busy(args.busy):
                out[f"busy_{args.busy}"] = measure(wb, texts, args.principal, args.rounds)
        wb.store.flush_traces() if hasattr(wb.store, "flush_traces") else None
        out["traces_written"] = wb.store.trace_total() - before
        out["traces_expected"] = 2 * len(texts) * args.rounds * (2 if args.busy else 1)
        out["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
