"""Fit the long-document constants on a BEIR set by K-fold cross-validation (issue 31, item 4).

Not on the product path: it reuses the product's pieces (embedder and its cache, the windows,
the BM25 scorer, the fusions) to score variants quickly, then picks a configuration on K-1 folds
of the queries and reports nDCG@10 on the held-out fold (mean over folds). Reported figures are
held-out only; the in-sample best is printed apart, marked as such.

    .venv/bin/python benchmarks/longdocs_fit.py ../shared/datasets/scifact \
        --cache /tmp/longdocs-tmp/scifact-ws/eval.duckdb [--folds 5] [--seed 0]

Variants: BM25 title weight (1-5), k1, b; dense over the fragment vector ("doc"), or MaxP over
its passages as well ("maxp"); fusion "weighted" (dense weight w) or "zscore"; dense pseudo-
relevance feedback with the top-f fused documents (0 = none).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.rank.bm25 import BM25Matrix  # noqa: E402
from workbench.rank.fusion import top_k, weighted, zscore  # noqa: E402
from workbench.rank.maxp import maxp  # noqa: E402
from workbench.retrieval import evaluate  # noqa: E402
from workbench.retrieval.columns import text_hash  # noqa: E402
from workbench.retrieval.lexical import Vocabulary, field_tokens, split_title  # noqa: E402
from workbench.retrieval.manager import IndexManager  # noqa: E402
from workbench.retrieval.windows import windows_many  # noqa: E402
from workbench.store import open_store  # noqa: E402


def ndcg10(ranked: np.ndarray, judged: dict[int, float]) -> float:
    gains = [judged.get(int(d), 0.0) for d in ranked[:10]]
    dcg = sum(g / np.log2(r + 2) for r, g in enumerate(gains))
    ideal = sorted(judged.values(), reverse=True)[:10]
    idcg = sum(g / np.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("beir")
    ap.add_argument("--cache", required=True)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="a small BM25 grid")
    ap.add_argument("--prf", default="0,2,3", help="feedback depths to try (0: none)")
    args = ap.parse_args()
    corpus, queries, qrels = evaluate.load_beir(args.beir, "test")
    store = open_store(Path(args.cache), Path(args.cache).parent)
    derived = IndexManager(store)
    index = evaluate.beir_index(corpus, derived)
    t = time.perf_counter()
    V = index.vectors()
    print(f"fragment vectors: {len(V)} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    texts = [index.text(i) for i in range(len(index.ids))]
    t = time.perf_counter()
    passages = windows_many(texts)
    owner = np.array([i for i, ps in enumerate(passages) for _ in ps], dtype=np.int64)
    flat = [p for ps in passages for p in ps]
    hashes = [text_hash(p) for p in flat]
    stored = derived.embeddings(list(dict.fromkeys(hashes)))
    todo = list(dict.fromkeys(h for h in hashes if h not in stored))
    text_of = dict(zip(hashes, flat))
    t_embed = time.perf_counter()
    for start in range(0, len(todo), 256):
        part = todo[start:start + 256]
        stored.update(zip(part, derived.embed(part, [text_of[h] for h in part])))
        print(f"\rpassages embedded {min(start + 256, len(todo))}/{len(todo)}", end="", file=sys.stderr)
    embed_s = time.perf_counter() - t_embed
    P = np.stack([stored[h] for h in hashes]) if hashes else np.zeros((0, V.shape[1]), np.float32)
    long_docs = sum(1 for ps in passages if ps)
    print(f"\npassages: {len(flat)} of {long_docs} long fragments ({len(flat) / len(V):.2f}x the fragment "
          f"vectors); {len(todo)} embedded now in {embed_s:.1f}s; windows in {time.perf_counter() - t:.1f}s",
          file=sys.stderr)

    qids = [q for q in qrels if q in queries]
    pos = index.pos
    judged = [{pos[d]: float(s) for d, s in qrels[q].items() if d in pos and s > 0} for q in qids]
    QV = index.embedder.encode([queries[q] for q in qids])
    dense_doc = QV @ V.T                                  # (queries, docs)
    dense_pass = QV @ P.T if len(P) else np.zeros((len(qids), 0))
    dense_maxp = np.stack([maxp(dense_doc[i], dense_pass[i], owner) for i in range(len(qids))])
    dense = {"doc": dense_doc, "maxp": dense_maxp, "mix": 0.5 * (dense_doc + dense_maxp)}

    vocab = Vocabulary()
    split = [split_title(t) for t in texts]
    title_tok = [vocab.tokenize(a) for a, _ in split]
    body_tok = [vocab.tokenize(b) for _, b in split]
    q_tok = [vocab.tokenize(queries[q]) for q in qids]
    weights = (1, 4) if args.quick else (1, 2, 3, 4, 5)
    k1s = (1.2,) if args.quick else (0.9, 1.2, 1.5)
    bs = (0.75, 0.9) if args.quick else (0.75, 0.9, 1.0)
    lexical = {}
    for w in weights:
        for_w = [field_tokens(a, b, w) for a, b in zip(title_tok, body_tok)]
        ids: dict[str, int] = {}
        docs = [np.array([ids.setdefault(t, len(ids)) for t in d], dtype=np.int64) for d in for_w]
        qids_tok = [[ids[t] for t in q if t in ids] for q in q_tok]
        for k1, b in itertools.product(k1s, bs):
            m = BM25Matrix(docs, len(ids), k1=k1, b=b)
            lexical[(w, k1, b)] = np.stack([m.scores(q).astype(np.float64) for q in qids_tok])
    print(f"bm25 variants: {len(lexical)}", file=sys.stderr)

    fusions = ([("weighted", w) for w in (0.6, 0.7)] + [("zscore", w) for w in (0.5, 0.6)] if args.quick else
               [("weighted", w) for w in (0.5, 0.6, 0.7, 0.8)] + [("zscore", w) for w in (0.4, 0.5, 0.6, 0.7)])
    prfs = tuple(int(x) for x in args.prf.split(","))
    configs = list(itertools.product(lexical, dense, fusions, prfs))
    print(f"configs: {len(configs)}", file=sys.stderr)

    def run(lex_key, dense_key, fusion_spec, prf) -> np.ndarray:
        out = np.zeros(len(qids))
        name, w = fusion_spec
        fuse = weighted if name == "weighted" else zscore
        for i in range(len(qids)):
            lex = lexical[lex_key][i]
            lex = np.where(lex > 0, lex, -np.inf)
            d = dense[dense_key][i]
            fused = fuse(lex, d, dense_weight=w, depth=100)
            if prf:
                top = top_k(fused, prf)
                qv = QV[i] + V[top].mean(axis=0)
                qv = qv / np.linalg.norm(qv)
                d2 = V @ qv
                if dense_key != "doc":
                    m2 = maxp(d2, P @ qv, owner)
                    d2 = m2 if dense_key == "maxp" else 0.5 * (d2 + m2)
                fused = fuse(lex, d2, dense_weight=w, depth=100)
            out[i] = ndcg10(top_k(fused, 10), judged[i])
        return out

    t = time.perf_counter()
    per = {}
    for n, c in enumerate(configs):
        per[c] = run(*c)
        if n % 50 == 0:
            print(f"\r{n}/{len(configs)} {time.perf_counter() - t:.0f}s", end="", file=sys.stderr)
    print(file=sys.stderr)

    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(qids))
    folds = np.array_split(order, args.folds)

    def cv(candidates) -> tuple[float, list]:
        held, chosen = np.zeros(len(qids)), []
        for f in range(args.folds):
            test = folds[f]
            train = np.concatenate([folds[g] for g in range(args.folds) if g != f])
            best = max(candidates, key=lambda c: per[c][train].mean())
            held[test] = per[best][test]
            chosen.append(best)
        return float(held.mean()), chosen, held

    baseline = ((1, 1.5, 0.75), "doc", ("weighted", 0.7), 0)
    if baseline not in per:
        baseline = next(c for c in configs if c[1] == "doc" and c[3] == 0 and c[2] == ("weighted", 0.7))
    report = {"baseline (product before, fixed)": round(float(per[baseline].mean()), 4), "baseline_config": str(baseline)}
    families = {
        "bm25 fields + fusion (dense doc, no prf)": [c for c in configs if c[1] == "doc" and c[3] == 0],
        "+ maxp or mix (no prf)": [c for c in configs if c[3] == 0],
        "doc + prf": [c for c in configs if c[1] == "doc"],
        "mix only (+ prf)": [c for c in configs if c[1] == "mix"],
        "all (+ prf)": configs,
        "maxp only, product bm25 (weighted 0.7)": [c for c in configs if c[0] == baseline[0] and c[2] == ("weighted", 0.7) and c[3] == 0],
    }
    base_scores = per[baseline]
    for name, cands in families.items():
        mean, chosen, held = cv(cands)
        diff = held - base_scores
        report[name] = {"held_out": round(mean, 4), "paired_se": round(float(diff.std(ddof=1) / np.sqrt(len(diff))), 4),
                        "won": int((diff > 1e-9).sum()), "lost": int((diff < -1e-9).sum()),
                        "chosen": sorted({str(c) for c in chosen})}
    best = max(configs, key=lambda c: per[c].mean())
    report["in-sample best (not a result)"] = {"config": str(best), "ndcg@10": round(float(per[best].mean()), 4)}
    for c in sorted(configs, key=lambda c: -per[c].mean())[:10]:
        print(f"{per[c].mean():.4f} {c}", file=sys.stderr)
    print(json.dumps(report, indent=2))
    store.close()


if __name__ == "__main__":
    main()
