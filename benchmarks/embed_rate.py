"""Corpus embedding throughput of the ONNX encoder at 10k fragments: length-bucketed batches
(what ``Embedder.encode`` does) against the unbucketed reference (batches of 32 in the given
order, each padded to its longest), in one run, with the smallest cosine between the two.

    .venv/bin/python benchmarks/embed_rate.py [--n 10000] [--reference 2000] [--texts scifact:DIR]

Texts are bench.py's synthetic fragments (the sample corpus recombined, as `workbench bench`
builds its workspace) as the index embeds them (``index_text``), or a BEIR corpus's title + text
(``--texts beir:DIR``). The reference path runs on the first ``--reference`` texts only (it is the
slow one); its rate is reported on those, beside the bucketed rate on the same texts. Wall-clock
and process CPU seconds both: the machine is shared, so CPU seconds per fragment is the steadier
figure. The ONNX session is the workspace's (threads = cores; see onnx_model.py).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def synthetic_texts(n: int) -> list[str]:
    from workbench.ingest.files import parse_fragment
    from workbench.retrieval.columns import index_text

    spec = importlib.util.spec_from_file_location("workbench_benchmarks_bench", HERE / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    with tempfile.TemporaryDirectory(prefix="embed-rate-") as tmp:
        out = Path(tmp)
        bench.synthesize(n, out)
        frags = [parse_fragment(p.read_text(encoding="utf-8"), file=str(p)) for p in sorted(out.glob("*.md"))]
    # parse_fragment gives a Fragment-like with .content; index_text wants title/body/tags on the object
    return [index_text(_Frag(f.content)) for f in frags]


class _Frag:
    def __init__(self, content):
        self.content, self.title, self.body, self.tags = content, content.title, content.body, content.tags


def beir_texts(folder: str, n: int) -> list[str]:
    from workbench.retrieval.evaluate import load_beir

    corpus, _, _ = load_beir(folder)
    return [f"{title}\n\n{text}" for _, title, text in corpus[:n]]


def timed(fn, texts):
    t, c = time.perf_counter(), time.process_time()
    vectors = fn(texts)
    return vectors, time.perf_counter() - t, time.process_time() - c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10000)
    parser.add_argument("--reference", type=int, default=2000)
    parser.add_argument("--texts", default="synthetic", help="synthetic (default) or beir:DIR")
    args = parser.parse_args()
    from workbench.retrieval.embedder import Embedder
    from workbench.retrieval.onnx_model import MAX_TOKENS

    texts = synthetic_texts(args.n) if args.texts == "synthetic" else beir_texts(args.texts[5:], args.n)
    embedder = Embedder(backend="onnx")
    embedder.encode(texts[:64])  # opens the sessions
    onnx = embedder._onnx_encoder()
    from workbench.retrieval.embedder import tokenizer

    lengths = np.array([min(len(e.ids) + 2, MAX_TOKENS) for e in tokenizer().encode_batch(texts)])
    vectors, wall, cpu = timed(embedder.encode, texts)
    m = min(args.reference, len(texts))
    ref, ref_wall, ref_cpu = timed(onnx.encode_unbucketed, texts[:m])
    _, sub_wall, sub_cpu = timed(embedder.encode, texts[:m])
    cos = np.sum(ref * vectors[:m], axis=1)
    padded = sum(int(lengths[i:i + 32].max()) * len(lengths[i:i + 32]) for i in range(0, m, 32))
    out = {"texts": len(texts), "source": args.texts, "cores": len(os.sched_getaffinity(0)),
           "load_avg": [round(x, 2) for x in os.getloadavg()],
           "tokens_mean": round(float(lengths.mean()), 1), "tokens_p95": int(np.percentile(lengths, 95)),
           "bucketed": {"fragments_per_s": round(len(texts) / wall, 1), "wall_s": round(wall, 1),
                        "cpu_ms_per_fragment": round(cpu * 1000 / len(texts), 2)},
           "reference_subset": m,
           "reference_unbucketed": {"fragments_per_s": round(m / ref_wall, 1),
                                    "cpu_ms_per_fragment": round(ref_cpu * 1000 / m, 2),
                                    "padding_share": round(1 - float(lengths[:m].sum()) / padded, 3)},
           "bucketed_same_subset": {"fragments_per_s": round(m / sub_wall, 1),
                                    "cpu_ms_per_fragment": round(sub_cpu * 1000 / m, 2)},
           "min_cosine_vs_reference": float(cos.min()), "max_abs_cosine_gap": float(np.abs(1 - cos).max())}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
