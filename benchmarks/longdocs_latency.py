"""What passages (MaxP) cost a search at N fragments: p50/p95 of the ranker with and without them,
on new query texts (no query-vector cache), in one synthetic workspace (bench.py's), and how
many passage vectors the workspace holds beside its fragment vectors.

    .venv/bin/python benchmarks/longdocs_latency.py 10000 [--queries 100] [--workdir DIR] [--feedback]

With ``--feedback`` it compares the default search with dense PRF (``Settings.feedback``) instead.

Fragment and passage vectors are seeded from real section embeddings as bench.py seeds them
(latency does not depend on the values); query texts are the golden queries with a counter
appended, embedded for real, each once, asked as lead0 (who sees one org of four, as bench.py asks).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--workdir")
    ap.add_argument("--feedback", action="store_true", help="without / with dense PRF instead of passages")
    args = ap.parse_args()
    from workbench import Workbench
    from workbench.models import utcnow
    from workbench.retrieval.columns import text_hash
    from workbench.retrieval.evaluate import load_golden
    from workbench.retrieval.pipeline import Settings, hits_from, rank
    from workbench.retrieval.windows import windows_many

    work = Path(args.workdir or tempfile.mkdtemp(prefix="longdocs-lat-"))
    root = work / "ws"
    if not root.exists():
        import yaml

        bench.synthesize(args.n, work / "src")
        config = work / "bench.yaml"
        config.write_text(yaml.safe_dump(bench._config(), sort_keys=False), encoding="utf-8")
        with Workbench.init(root, config=config) as wb:
            report = wb.ingest([work / "src"], actor="curator")
            assert not report.errors, report.errors[:3]
    with Workbench.open(root) as wb:
        pool = bench._section_pool(wb.embedder, size=200)
        bench.seed_vectors(wb, pool)
        index = wb.search_index()
        t = time.perf_counter()
        cut = windows_many(index.texts_of(list(range(len(index.ids)))))
        windows_s = time.perf_counter() - t
        hashes = list(dict.fromkeys(text_hash(p) for ps in cut for p in ps))
        have = set(wb.store.embeddings(wb.embedder.name, None))
        todo = [h for h in hashes if h not in have]
        rng = np.random.default_rng(3)
        pool_arr = np.stack(pool)
        for start in range(0, len(todo), 20000):
            chunk = todo[start:start + 20000]
            vecs = pool_arr[rng.integers(0, len(pool_arr), size=(len(chunk), 3))].mean(axis=1)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            wb.store.put_embeddings(wb.embedder.name, chunk, vecs.astype(np.float32))
        t = time.perf_counter()
        index.vectors()
        index.lexical("bm25")
        build_s = time.perf_counter() - t
        golden = load_golden(bench.SAMPLE / "golden.yaml")
        asks = [(q["query"] + f" {i}", "lead0") for i, q in
                enumerate(golden * (args.queries // len(golden) + 1))][:args.queries]
        now = utcnow()
        out = {"fragments": len(index.ids), "passages": len(index.passages()),
               "long_fragments": int(sum(1 for ps in cut if ps)), "windows_s": round(windows_s, 2),
               "vectors_and_passages_build_s": round(build_s, 2)}
        base = Settings(k=10)
        pairs = ((("without", base), ("feedback", replace(base, feedback=True))) if args.feedback else
                 (("without", replace(base, passages=False)), ("with", replace(base, passages=True))))
        times: dict[str, list[float]] = {label: [] for label, _ in pairs}
        for i, (query, who) in enumerate(asks):   # the arms interleaved query by query, alternating
            principal = wb.principal(who)         # which goes first (load and warm-up hit both alike)
            for label, settings in (pairs if i % 2 == 0 else pairs[::-1]):
                qv = wb.embedder.encode_query_uncached(query + label)
                t = time.perf_counter()
                ranking = rank(index, query, principal, settings, now=now, query_vector=qv)
                hits_from(index, ranking, settings)
                times[label].append((time.perf_counter() - t) * 1000)
        for label, got in times.items():
            out[label] = {"p50_ms": round(float(np.percentile(got, 50)), 2),
                          "p95_ms": round(float(np.percentile(got, 95)), 2)}
    print(json.dumps(out, indent=2))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
