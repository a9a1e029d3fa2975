"""What receiving a published context and asking for paths cost (issue 30), on a sample workspace.

    python benchmarks/receiving.py .workbench          # after `make demo` (the sample subscribes)
    cp -r .workbench /tmp/nosub && workbench --workspace /tmp/nosub unsubscribe northwind/platform \
        --scope org=tidewater,persona=sre --as tomas.silva && python benchmarks/receiving.py /tmp/nosub

Times warm searches for new questions (each text is new to the query-vector cache: the golden
queries with a suffix per workspace and principal) as tomas.silva (who receives northwind/platform)
and raj.patel (Tidewater, outside the subscribing scope), ``context --paths`` for the golden path
entries (no query), and resolving a principal (with its receipts) — p50 / p95 in ms.
"""

import statistics
import sys
import time
from pathlib import Path

import yaml

from workbench import Workbench

GOLDEN = Path(__file__).resolve().parent.parent / "sample_corpus" / "golden.yaml"


def timed(fn, items) -> tuple[float, float]:
    out = []
    for it in items:
        t = time.perf_counter()
        fn(it)
        out.append((time.perf_counter() - t) * 1000)
    out.sort()
    return statistics.median(out), out[max(0, int(len(out) * 0.95) - 1)]


def main(ws: str) -> None:
    golden = yaml.safe_load(GOLDEN.read_text(encoding="utf-8"))["queries"]
    texts = [q["query"] for q in golden if "paths" not in q][:90]
    paths = [q["paths"] for q in golden if "paths" in q]
    suffix = " " + Path(ws).name
    with Workbench.open(ws) as wb:
        wb.search("warm up the model", principal="raj.patel", trace=False)
        for who in ("tomas.silva", "raj.patel"):
            p50, p95 = timed(lambda q: wb.search(f"{q}{suffix} {who.split('.')[0]}", principal=who, trace=False),
                             texts)
            print(f"search (new question) as {who}: p50 {p50:.1f} ms, p95 {p95:.1f} ms over {len(texts)}")
        p50, p95 = timed(lambda ps: wb.context(None, paths=ps, principal="marco.bianchi"), paths)
        print(f"context --paths (no query): p50 {p50:.1f} ms, p95 {p95:.1f} ms over {len(paths)}")
        t = time.perf_counter()
        for _ in range(200):
            wb.principal("tomas.silva")
        print(f"principal resolution (with receipts): {(time.perf_counter() - t) / 200 * 1000:.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".workbench")
