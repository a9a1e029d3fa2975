"""One long-lived process at scale: ``python benchmarks/long_lived.py --fragments 100000 [--json]``.

The figures of issue 13 that belong to a process holding a large workspace (an MCP server, the
TUI, a notebook), measured in a fresh child process so its peak RSS is the product's own, not
the builder's:

1. open the workspace and answer a first search (from the persisted index snapshot);
2. ``--queries`` warm searches (golden queries, principal ``agent``), without and with the trace
   write, p50 / p95 ms;
3. five edits by ``lead0``, each followed by the search that finds it: ms from the edit's commit
   to that search's answer (the new generation patched from the previous one);
4. peak RSS (VmHWM) after each step, and at the end.

The workspace is built first (``--workspace DIR`` keeps it, and an existing one there is reused):
bench.py's synthetic fragments ingested, its synthetic vectors (real section embeddings, mixed)
stored, and ``warm()`` run as ``workbench index`` leaves it. ``--busy N`` measures the child a
second time with N busy-loop processes (busy.py). A benchmark, not a test: it asserts nothing
about speed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
EDITS = 5


def _sibling(name: str):
    key = f"workbench_benchmarks_long_lived_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, HERE / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


def _hwm_mb() -> float:
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as f:
        fields = dict(line.split(":", 1) for line in f)
    return round(int(fields["VmHWM"].split()[0]) / 1024, 1)


def _ms(times: list[float]) -> dict[str, float]:
    arr = np.asarray(times)
    return {"p50": round(float(np.percentile(arr, 50)), 2), "p95": round(float(np.percentile(arr, 95)), 2)}


def build(n: int, ws: Path, store: str | None = None) -> dict[str, Any]:
    """bench.py's workspace of ``n`` fragments in ``ws`` (reused when it already holds one), its data
    in the folder's DuckDB file, or in PostgreSQL at ``store``."""
    from workbench.service import Workbench

    config = {**_sibling("bench")._config(), **({"store": store} if store else {})}
    if (ws / "workbench.duckdb").is_file() and not store:
        return {"reused": True}
    if store and (ws / "workbench.yaml").is_file():
        if yaml.safe_load((ws / "workbench.yaml").read_text(encoding="utf-8")).get("store") == store:
            with Workbench.open(ws) as wb:
                if wb.store.counts()["fragments"] >= n:
                    return {"reused": True}
    bench = _sibling("bench")
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "workbench.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    files = ws.parent / "files"
    t = time.perf_counter()
    bench.synthesize(n, files)
    with Workbench.open(ws) as wb:
        report = wb.ingest([files], actor="curator")
        if report.errors:
            raise SystemExit(f"ingest reported errors: {report.errors[:3]}")
        bench.seed_vectors(wb, bench._section_pool(wb.embedder, size=min(600, max(32, n // 4))))
        wb.warm()
    shutil.rmtree(files, ignore_errors=True)
    return {"reused": False, "build_s": round(time.perf_counter() - t, 1)}


def measure(ws: Path, queries: int) -> dict[str, Any]:
    """Steps 1-4 in this process (run as a child: see the module doc)."""
    from workbench import Workbench

    golden = yaml.safe_load((HERE.parent / "sample_corpus" / "golden.yaml").read_text(encoding="utf-8"))["queries"]
    texts = [q["query"] for q in golden if "paths" not in q][:queries]
    out: dict[str, Any] = {"rss_mb": {}}
    t = time.perf_counter()
    with Workbench.open(ws) as wb:
        wb.search(texts[0], principal="agent", trace=False)
        out["open_and_first_search_s"] = round(time.perf_counter() - t, 3)
        out["rss_mb"]["first_search"] = _hwm_mb()
        for trace in (False, True):
            times = []
            for text in texts:
                t = time.perf_counter()
                wb.search(text, principal="agent", trace=trace)
                times.append((time.perf_counter() - t) * 1000)
            out[f"warm_search_ms_trace_{str(trace).lower()}"] = _ms(times)
        out["rss_mb"]["searches"] = _hwm_mb()
        visible = []
        targets = [h.id for h in wb.search("retry storms deploy rollback", principal="lead0", k=20, trace=False).hits]
        stamp = int(time.time())
        for i, fid in enumerate(targets[:EDITS]):
            f = wb.get(fid, principal="lead0")
            marker = f"zebrafinch{i}x{stamp} quokka{i}x{stamp}"
            wb.edit(fid, f.body + f"\n\nEdited for the benchmark: {marker}.", reason="bench", actor="lead0")
            t = time.perf_counter()
            found = wb.search(marker, principal="lead0", trace=False)
            visible.append((time.perf_counter() - t) * 1000)
            if fid not in [h.id for h in found.hits[:1] + found.avoid[:1]]:
                raise RuntimeError(f"the edited fragment {fid} was not found first after the edit")
        out["edit_visible_ms"] = {"each": [round(v, 1) for v in visible], "median": round(float(np.median(visible)), 1)}
        out["rss_mb"]["edits"] = _hwm_mb()
        out["fragments"] = len(wb.search_index().ids)
    out["rss_mb"]["closed"] = out["peak_rss_mb"] = _hwm_mb()
    return out


def child(ws: Path, queries: int) -> dict[str, Any]:
    """Steps 1-4 on the workspace ``ws`` in a fresh child process; its figures (or an ``error``)."""
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", str(ws),
                           "--queries", str(queries)], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout)


def run(n: int, *, workspace: Path | None = None, queries: int = 100, busy: int = 0) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="workbench-long-lived-")) if workspace is None else None
    ws = workspace or root / "ws"
    try:
        built = build(n, ws)
        data: dict[str, Any] = {"fragments_requested": n, "workspace": built, "queries": queries,
                                "load_avg_start": [round(x, 2) for x in os.getloadavg()]}
        data["idle"] = child(ws, queries)
        if busy:
            with _sibling("busy").busy(busy):
                data["busy"] = child(ws, queries)
            data["busy_processes"] = busy
        data["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]
        return data
    finally:
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fragments", type=int, default=10000, help="fragments in the built workspace (default 10000)")
    parser.add_argument("--workspace", type=Path, help="build (or reuse) the workspace here and keep it")
    parser.add_argument("--queries", type=int, default=100, help="warm searches timed (default 100)")
    parser.add_argument("--busy", type=int, default=0, help="also measure with N busy-loop processes")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # the child's entry point
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.queries)))
        return
    data = run(args.fragments, workspace=args.workspace, queries=args.queries, busy=args.busy)
    if args.json:
        print(json.dumps(data, indent=2))
        return
    for phase in ("idle", "busy"):
        if phase in data:
            d = data[phase]
            if "error" in d:
                print(f"{phase}: {d['error']}")
                continue
            print(f"{phase}: {d['fragments']} fragments; open + first search {d['open_and_first_search_s']} s; "
                  f"warm search p50/p95 {d['warm_search_ms_trace_false']['p50']}/{d['warm_search_ms_trace_false']['p95']} ms "
                  f"(with trace {d['warm_search_ms_trace_true']['p50']}/{d['warm_search_ms_trace_true']['p95']}); "
                  f"edit visible median {d['edit_visible_ms']['median']} ms; peak RSS {d['peak_rss_mb']} MB")


if __name__ == "__main__":
    main()
