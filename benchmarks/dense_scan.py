"""Dense scan benchmark: the exact float32 scan against the int8 scan with exact re-scoring
(``dense="int8"``, workbench/rank/quantized.py), on synthetic clustered vectors.

Usage: .venv/bin/python benchmarks/dense_scan.py [--n 100000 1000000] [--queries 50] [--busy]
           [--mix VECTORS.npy QUERIES.npy]

Vectors are 384-d and L2-normalised, drawn with graded structure so that recall means something:
50 topics → 2,000 cluster centres → points at varied distances from their centre, plus one offset
shared by all (sentence embeddings have one too), generated in chunks of 100k rows; queries are
drawn the same way (not copies of rows). ``--mix`` instead makes each row a random mix of two rows
of a real embedding matrix (plus a little noise) and takes real query vectors: real embeddings'
anisotropy, dead dimensions and sign patterns, at any size. For each size, for the top 100:

- ``exact``: the numpy path (pipeline._dot_rows over every row, the mask, the top 100), p50/p95 ms
- ``int8``: Int8Vectors.scan with every code ranked (prefilter=0), 4 × depth re-scored by the same
  _dot_rows, then the top 100
- ``int8_prefilter``: the same with the sign-bit pre-filter (the default: the ``PREFILTER`` × depth
  rows nearest in Hamming distance ranked by their codes, when that is ≤ a quarter of the rows)
- recall@100 of each against exact (mean and min over the queries), and the largest difference
  between a returned score and the exact one (0: bitwise the same)
- the build time, the bytes of each structure and the peak RSS of the process so far

``--busy`` runs the measurements a second time with one ``while True: pass`` process competing
for the 2 cores. It prints one JSON dict. A benchmark, not a test: it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench.rank.fusion import top_k
from workbench.rank.quantized import PREFILTER, RESCORE, Int8Vectors
from workbench.retrieval.pipeline import _blas, _dot_rows

DIM = 384


def _unit(a: np.ndarray) -> np.ndarray:
    a /= np.linalg.norm(a, axis=-1, keepdims=True)
    return a


def synthetic(n: int, queries: int, *, seed: int = 0, centres: int = 2000, topics: int = 50,
              chunk: int = 100_000) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    topic = _unit(rng.standard_normal((topics, DIM), dtype=np.float32))
    centre = _unit(topic[rng.integers(0, topics, centres)]
                   + 0.9 * _unit(rng.standard_normal((centres, DIM), dtype=np.float32)))
    offset = _unit(rng.standard_normal(DIM, dtype=np.float32))

    def draw(m: int) -> np.ndarray:
        spread = rng.uniform(0.6, 1.6, (m, 1)).astype(np.float32)
        noise = rng.standard_normal((m, DIM), dtype=np.float32) * (spread / np.float32(np.sqrt(DIM)))
        return _unit(centre[rng.integers(0, centres, m)] + noise + 0.5 * offset)

    out = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, chunk):
        out[start:start + chunk] = draw(min(chunk, n - start))
    return out, draw(queries)


def mixed(n: int, queries: int, base: np.ndarray, base_queries: np.ndarray, *, seed: int = 0,
          chunk: int = 100_000) -> tuple[np.ndarray, np.ndarray]:
    """Rows mixing two real rows (weights a, 1 − a with a in [0.5, 1]) plus noise; real queries."""
    rng = np.random.default_rng(seed)
    base = base.astype(np.float32)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        a = rng.uniform(0.5, 1.0, (m, 1)).astype(np.float32)
        noise = rng.standard_normal((m, base.shape[1]), dtype=np.float32) * np.float32(0.09 / np.sqrt(base.shape[1]))
        out[start:start + m] = _unit(a * base[rng.integers(0, len(base), m)]
                                     + (1 - a) * base[rng.integers(0, len(base), m)] + noise)
    return out, base_queries[:queries].astype(np.float32)


def _pct(ms: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(ms, 50)), 2), "p95": round(float(np.percentile(ms, 95)), 2)}


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _time(fn: Callable[[np.ndarray], np.ndarray], queries: np.ndarray, depth: int) -> tuple[list[float], list]:
    fn(queries[0])  # warm: page the matrix in
    ms, tops = [], []
    for q in queries:
        t = time.perf_counter()
        with _blas().limit(limits=1, user_api="blas"):
            scores = fn(q)
            top = top_k(scores, depth)
        ms.append((time.perf_counter() - t) * 1000)
        tops.append((top, scores))
    return ms, tops


def _recall(truth: list[set], found: list) -> dict[str, float]:
    recall = [len(t & set(top.tolist())) / len(t) for t, (top, _) in zip(truth, found)]
    return {"mean": round(float(np.mean(recall)), 4), "min": round(float(np.min(recall)), 4)}


def measure(vectors: np.ndarray, queries: np.ndarray, iv: Int8Vectors, depth: int, prefilter: int
            ) -> dict[str, Any]:
    mask = np.ones(len(vectors), dtype=bool)
    exact_ms, exact = _time(lambda q: np.where(mask, _dot_rows(vectors, q).astype(np.float64), -np.inf),
                            queries, depth)
    truth = [set(top.tolist()) for top, _ in exact]
    out: dict[str, Any] = {"exact_ms": _pct(exact_ms)}
    for name, factor in (("int8", 0), ("int8_prefilter", prefilter)):
        ms, found = _time(lambda q, f=factor: iv.scan(q, mask, depth, prefilter=f, exact=_dot_rows), queries, depth)
        drift = max(float(np.max(np.abs(s[top] - e[top]))) for (top, s), (_, e) in zip(found, exact))
        out |= {f"{name}_ms": _pct(ms), f"{name}_recall_at_100": _recall(truth, found),
                f"{name}_max_score_difference": drift}
    return out


def run(n: int, queries: int, depth: int, busy: bool, prefilter: int, mix: list[str] | None) -> dict[str, Any]:
    t = time.perf_counter()
    if mix:
        vectors, qs = mixed(n, queries, np.load(mix[0]), np.load(mix[1]))
    else:
        vectors, qs = synthetic(n, queries)
    generated = time.perf_counter() - t
    t = time.perf_counter()
    iv = Int8Vectors(vectors)
    built = time.perf_counter() - t
    report: dict[str, Any] = {
        "n": n, "vectors": "mixed from " + mix[0] if mix else "synthetic", "queries": len(qs), "depth": depth,
        "rescored": RESCORE * depth, "prefilter_rows": prefilter * depth, "generate_s": round(generated, 2),
        "int8_build_s": round(built, 2), "float32_mb": round(vectors.nbytes / 2 ** 20, 1),
        "int8_codes_mb": round(iv.codes.nbytes / 2 ** 20, 1), "sign_bits_mb": round(iv.bits.nbytes / 2 ** 20, 1),
        "loadavg_before": round(os.getloadavg()[0], 2), "idle": measure(vectors, qs, iv, depth, prefilter)}
    if busy:
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            time.sleep(0.5)
            report["busy"] = measure(vectors, qs, iv, depth, prefilter)
        finally:
            spinner.kill()
            spinner.wait()
    report["loadavg_after"] = round(os.getloadavg()[0], 2)
    report["peak_rss_mb"] = _rss_mb()
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000], help="corpus sizes")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--prefilter", type=int, default=PREFILTER, help="sign-bit candidates: this × depth")
    parser.add_argument("--busy", action="store_true", help="also measure with one busy process running")
    parser.add_argument("--mix", nargs=2, metavar=("VECTORS.npy", "QUERIES.npy"),
                        help="mix rows of real embeddings instead of synthetic clusters; real query vectors")
    args = parser.parse_args(argv)
    results = {"cpus": os.cpu_count(), "numpy": np.__version__, "runs": []}
    for n in args.n:
        results["runs"].append(run(n, args.queries, args.depth, args.busy, args.prefilter, args.mix))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
