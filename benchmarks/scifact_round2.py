"""SciFact, second round (issue 31, item 4): the untried ideas, each family fitted by 5-fold CV.

Not on the product path. Loads the cached fragment and passage vectors and the product's BM25
(tokenizer, scorer) once, keeps every score matrix in memory (300 queries × 5,183 documents), and
reports per family the held-out nDCG@10 (a configuration chosen on 4 folds, scored on the fifth;
seed 0 as benchmarks/longdocs_fit.py), its paired SE against the product's hybrid, queries won and
lost, and the in-sample best apart (not a result).

    .venv/bin/python benchmarks/scifact_round2.py ../shared/datasets/scifact --cache CACHE.duckdb

Families: corpus-graph smoothing (a doc-doc kNN graph from the dense vectors: dense or fused
scores plus g × the mean over k neighbours), its opposite (a hub penalty: minus g × a document's
mean cosine to its k neighbours) and vectors centred on the corpus mean; dense Rocchio from the top f fused documents
(weight a); RM3 terms from the top f fused documents; both from the top document; fusion
normalisations; a per-query dense weight from score gaps; three signals (doc cosine, MaxP, BM25).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workbench.rank.bm25 import BM25Matrix  # noqa: E402
from workbench.rank.feedback import rocchio_many  # noqa: E402
from workbench.rank.maxp import maxp  # noqa: E402
from workbench.retrieval import evaluate  # noqa: E402
from workbench.retrieval.columns import text_hash  # noqa: E402
from workbench.retrieval.lexical import Vocabulary, field_tokens, split_title  # noqa: E402
from workbench.retrieval.manager import IndexManager  # noqa: E402
from workbench.retrieval.windows import windows_many  # noqa: E402
from workbench.store import open_store  # noqa: E402

LOG = 1.0 / np.log2(np.arange(2, 12))


def weighted(L, D, w=0.7):
    """rank/fusion.weighted over whole matrices (a row is a query)."""
    mx = L.max(axis=1, keepdims=True)
    mx[mx == 0] = 1
    return w * D + (1 - w) * L / mx


def rm3(L: np.ndarray, bm: BM25Matrix, docs: list[np.ndarray], q_ids: list[list[int]], top1: np.ndarray,
        terms: int = 10) -> np.ndarray:
    """RM3-like expansion scores: per query, the ``terms`` heaviest (tf share × idf) new terms of its
    feedback document ``top1[i]``, each term's BM25 weighted by that share, the sum scaled to the
    query's best BM25 (so a weight lam adds lam × the original scale)."""
    nd = len(docs)
    df = np.zeros(bm.vocab_size)
    tfs = []
    for d in docs:
        u, c = np.unique(d, return_counts=True)
        tfs.append((u, c / max(c.sum(), 1)))
        df[u] += 1
    idf = np.log(1 + (nd - df + 0.5) / (df + 0.5))
    E = np.zeros_like(L)
    for i in range(len(q_ids)):
        u, p = tfs[top1[i]]
        asked = set(q_ids[i])
        top = sorted(((t, x * idf[t]) for t, x in zip(u, p) if t not in asked), key=lambda x: -x[1])[:terms]
        total = sum(x for _, x in top) or 1.0
        for t, x in top:
            E[i] += (x / total) * bm.scores([int(t)])
    return E * (L.max(1, keepdims=True) / np.maximum(E.max(1, keepdims=True), 1e-9))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("beir")
    ap.add_argument("--cache", required=True)
    args = ap.parse_args()
    corpus, queries, qrels = evaluate.load_beir(args.beir, "test")
    store = open_store(Path(args.cache), Path(args.cache).parent)
    derived = IndexManager(store)
    index = evaluate.beir_index(corpus, derived)
    V = index.vectors().astype(np.float32)
    texts = [index.text(i) for i in range(len(index.ids))]
    passages = windows_many(texts)
    owner = np.array([i for i, ps in enumerate(passages) for _ in ps], dtype=np.int64)
    hashes = [text_hash(p) for ps in passages for p in ps]
    stored = derived.embeddings(list(dict.fromkeys(hashes)))
    missing = [h for h in hashes if h not in stored]
    P = np.stack([stored[h] for h in hashes]).astype(np.float32) if not missing else None
    qids = [q for q in qrels if q in queries]
    QV = index.embedder.encode([queries[q] for q in qids]).astype(np.float32)
    store.close()
    nq, nd = len(qids), len(texts)
    judged = [{index.pos[d]: float(s) for d, s in qrels[q].items() if d in index.pos and s > 0} for q in qids]
    idcg = np.array([LOG[:min(10, len(j))].sum() for j in judged])

    def ndcg(S):
        top = np.argpartition(-S, 10, axis=1)[:, :10]
        order = np.take_along_axis(top, np.argsort(-np.take_along_axis(S, top, 1), axis=1, kind="stable"), 1)
        gains = np.array([[judged[i].get(int(d), 0.0) for d in order[i]] for i in range(nq)])
        return (gains * LOG).sum(1) / idcg

    vocab = Vocabulary()
    split = [split_title(t) for t in texts]
    tid: dict[str, int] = {}
    docs = [np.array([tid.setdefault(t, len(tid)) for t in field_tokens(vocab.tokenize(a), vocab.tokenize(b), 1)],
                     dtype=np.int64) for a, b in split]
    bm = BM25Matrix(docs, len(tid))
    q_ids = [[tid[t] for t in vocab.tokenize(queries[q]) if t in tid] for q in qids]
    L = np.stack([bm.scores(q).astype(np.float64) for q in q_ids])
    D = QV @ V.T
    F = weighted(L, D)
    base = ndcg(F)
    folds = np.array_split(np.random.default_rng(0).permutation(nq), 5)

    def cv(per: dict) -> dict:
        held, chosen = np.zeros(nq), []
        for f in range(5):
            train = np.concatenate([folds[g] for g in range(5) if g != f])
            best = max(per, key=lambda c: per[c][train].mean())
            held[folds[f]] = per[best][folds[f]]
            chosen.append(str(best))
        d = held - base
        best = max(per, key=lambda c: per[c].mean())
        return {"held_out": round(float(held.mean()), 4), "paired_se": round(float(d.std(ddof=1) / np.sqrt(nq)), 4),
                "won": int((d > 1e-9).sum()), "lost": int((d < -1e-9).sum()), "chosen": sorted(set(chosen)),
                "in_sample_best (not a result)": [str(best), round(float(per[best].mean()), 4)]}

    report: dict = {"hybrid (product, fixed)": round(float(base.mean()), 4)}
    base_key = ("base",)
    # corpus graph: kNN over the fragment vectors, built once
    S = V @ V.T
    np.fill_diagonal(S, -np.inf)
    nbr = np.argsort(-S, axis=1)[:, :32]
    density = np.take_along_axis(S, nbr, 1)      # cosines to the 32 nearest documents, best first
    del S
    per = {base_key: base}
    for k in (4, 8, 16):
        for g in (0.1, 0.2, 0.3, 0.5):
            per[("dense-smooth", k, g)] = ndcg(weighted(L, D + g * D[:, nbr[:, :k]].mean(axis=2)))
            per[("fused-smooth", k, g)] = ndcg(F + g * F[:, nbr[:, :k]].mean(axis=2))
    report["corpus graph: score smoothing over k neighbours"] = cv(per)
    per = {base_key: base}
    for k in (4, 8, 16, 32):   # CSLS-like hub penalty: a document's mean cosine to its k neighbours
        for g in (0.1, 0.2, 0.3, 0.5):
            for w in (0.65, 0.7, 0.75):
                per[("hub-penalty", k, g, w)] = ndcg(weighted(L, D - g * density[:, :k].mean(1)[None], w))
    mu = V.mean(0)
    for c in (0.25, 0.5, 1.0):  # centring both sides on the corpus mean, then normalising
        Vc, Qc = V - c * mu, QV - c * mu
        Dc = (Qc / np.linalg.norm(Qc, axis=1, keepdims=True)) @ (Vc / np.linalg.norm(Vc, axis=1, keepdims=True)).T
        for w in (0.65, 0.7, 0.75):
            per[("centred", c, w)] = ndcg(weighted(L, Dc, w))
    report["corpus graph hub penalty / centred vectors"] = cv(per)
    order = np.argsort(-F, axis=1)[:, :5]
    per = {base_key: base}
    for f in (1, 2, 3, 5):
        for a in (0.25, 0.5, 1.0):
            D2 = rocchio_many(QV, V[order[:, :f]], a) @ V.T
            for w in (0.6, 0.7, 0.8):
                per[("dense-rocchio", f, a, w)] = ndcg(weighted(L, D2, w))
    report["dense Rocchio from the top f fused documents"] = cv(per)
    one = {k: v for k, v in per.items() if k == base_key or k[1] == 1}
    report["dense Rocchio, one feedback document (what hybrid-prf ships)"] = cv(one)
    E = rm3(L, bm, docs, q_ids, order[:, 0])
    per = {base_key: base}
    D1 = rocchio_many(QV, V[order[:, :1]], 0.5) @ V.T
    for lam in (0.2, 0.4):
        for w in (0.65, 0.7):
            per[("rm3 top 1", lam, w)] = ndcg(weighted(L + lam * E, D, w))
            per[("rm3 + rocchio top 1", lam, w)] = ndcg(weighted(L + lam * E, D1, w))
    report["RM3 terms (+ dense Rocchio) from the top fused document"] = cv(per)
    per = {base_key: base}
    for w in np.round(np.arange(0.3, 0.95, 0.05), 2):
        per[("weighted", w)] = ndcg(weighted(L, D, w))
    report["weighted fusion, dense weight fitted"] = cv(per)
    per = {base_key: base}
    for w in np.round(np.arange(0.3, 0.95, 0.05), 2):
        def z(X, depth):
            top = -np.sort(-X, axis=1)[:, :depth]
            return (X - top.mean(1, keepdims=True)) / top.std(1, keepdims=True)
        for depth in (100, 1000, nd):
            per[("zscore", depth, w)] = ndcg(w * z(D, depth) + (1 - w) * z(L, depth))
    report["zscore fusion over the top 100 / 1000 / all"] = cv(per)
    sl = -np.sort(-L, 1)
    sd = -np.sort(-D, 1)
    per = {base_key: base}
    for name, feat in (("bm25 gap", (sl[:, 0] - sl[:, 1]) / sl[:, 0]), ("dense gap", sd[:, 0] - sd[:, 1]),
                       ("bm25 top", sl[:, 0])):
        zf = (feat - feat.mean()) / feat.std()
        for w0 in (0.6, 0.65, 0.7, 0.75):
            for s in (-0.1, -0.05, 0.05, 0.1):
                w = np.clip(w0 + s * zf, 0, 1)[:, None]
                per[("per-query weight", name, w0, s)] = ndcg(w * D + (1 - w) * L / L.max(1, keepdims=True))
    report["per-query dense weight from score gaps"] = cv(per)
    # the tokenizer: Snowball English (the product's) or Porter stems, with k1, b
    import Stemmer

    from workbench.retrieval.lexical import tokenize

    per = {base_key: base}
    joint = {base_key: base}
    for name in ("english", "porter"):
        stemmer = Stemmer.Stemmer(name)
        stem = stemmer.stemWords
        ids: dict[str, int] = {}
        tok_docs = [np.array([ids.setdefault(t, len(ids)) for t in tokenize(a, stem=stem) + tokenize(b, stem=stem)],
                             dtype=np.int64) for a, b in split]
        tok_q = [[ids[t] for t in tokenize(queries[q], stem=stem) if t in ids] for q in qids]
        for k1, b in ((1.5, 0.75), (1.2, 0.75), (1.2, 0.9), (0.9, 0.4)):
            m = BM25Matrix(tok_docs, len(ids), k1=k1, b=b)
            Lv = np.stack([m.scores(q).astype(np.float64) for q in tok_q])
            for w in (0.65, 0.7):
                per[("stemmer", name, k1, b, w)] = ndcg(weighted(Lv, D, w))
            if (k1, b) in ((1.5, 0.75), (1.2, 0.9)):   # joint: + RM3 and dense Rocchio from the top document
                top1 = np.argmax(weighted(Lv, D), axis=1)
                Ev = rm3(Lv, m, tok_docs, tok_q, top1)
                Dv = rocchio_many(QV, V[top1][:, None], 0.5) @ V.T
                for a, Dx in ((0, D), (0.5, Dv)):
                    for lam in (0, 0.2, 0.4):
                        for w in (0.6, 0.65, 0.7):
                            joint[("joint", name, k1, b, a, lam, w)] = ndcg(weighted(Lv + lam * Ev, Dx, w))
    report["BM25 tokenizer: Snowball or Porter stems, k1, b"] = cv(per)
    report["joint: stems, k1, b, RM3 weight, dense Rocchio, dense weight"] = cv(joint)
    if P is not None:
        PD = QV @ P.T
        M = np.stack([maxp(D[i], PD[i], owner) for i in range(nq)])
        Ln = L / L.max(1, keepdims=True)
        per = {base_key: base}
        for wd in np.round(np.arange(0, 0.85, 0.1), 1):
            for wp in np.round(np.arange(0, 0.85, 0.1), 1):
                if wd + wp:
                    per[("doc+maxp+bm25", wd, wp, 0.3)] = ndcg(wd * D + wp * M + 0.3 * Ln)
        report["three signals: doc cosine, MaxP, BM25"] = cv(per)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
