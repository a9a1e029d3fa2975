"""Research: which confidence features keep their meaning as a corpus grows?

Builds SciFact workspaces of several sizes (answerable queries keep their relevant documents,
unanswerable ones lose them) and the sample golden set, and dumps per-candidate features of the
hybrid top 20 to an .npz for fitting with ``rank.calibration.fit``: the signals the served model
reads (``retrieval.pipeline.signals``: cosine, coverage, margin). The other candidates measured
for BENCHMARKS.md (margin over the best other, z-score over the visible cosines) were computed by
an earlier version of this script and are not reproduced here.

    .venv/bin/python benchmarks/abstention_features.py --beir DIR --cache FILE --out feats.npz [--sample WS]
    .venv/bin/python benchmarks/calibrate_prior.py feats.npz      # fit the prior on them

Per candidate: group (0 BEIR, 1 the sample golden set), size (the requested size, 0 for the whole
set), query id, position, label, workspace (the plan's number), whether the query is answerable
there, and the features (``names``).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from workbench.retrieval import evaluate
from workbench.retrieval.abstention import plan
from workbench.retrieval.pipeline import Settings, rank, signals

TOP = 20


def collect(index, qtexts, qvecs, who, settings, now, label_of, group, size, rows, workspace=-1, answerable=()):
    for qid, text in qtexts.items():
        ranking = rank(index, text, who, settings, now=now, query_vector=qvecs[qid])
        top = [i for i in ranking.order[:TOP]]
        if not top:
            continue
        feats = signals(index, ranking, top)
        for j, i in enumerate(top):
            rows.append((group, size, qid, j, label_of(qid, index.ids[i]), workspace, qid in answerable,
                         *[feats[k][j] for k in sorted(feats)]))
    return sorted(feats)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--beir", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--sizes", default="20,200,2000,0")
    ap.add_argument("--out", required=True)
    ap.add_argument("--sample", help="a sample workspace folder (golden set as its principals)")
    args = ap.parse_args()
    from workbench.retrieval.manager import IndexManager
    from workbench.store import open_store

    corpus, queries, qrels = evaluate.load_beir(args.beir)
    store = open_store(Path(args.cache), Path(args.cache).parent)
    derived = IndexManager(store)
    full = evaluate.beir_index(corpus, derived)
    full.vectors()
    qids = [q for q in qrels if q in queries]
    qv = dict(zip(qids, full.embedder.encode([queries[q] for q in qids])))
    settings = replace(evaluate.preset(Settings(), "hybrid"), use_priors=False)
    from datetime import datetime
    now = datetime(2000, 1, 1)
    rows: list = []
    names = None
    sizes = [int(s) or None for s in args.sizes.split(",")]
    by_id = {c[0]: c for c in corpus}
    for n, (size, ws) in enumerate(plan([c[0] for c in corpus], qrels, queries, sizes)):
        index = evaluate.beir_index([by_id[d] for d in ws.docs], derived)
        texts = {q: queries[q] for q in [*ws.answerable, *ws.unanswerable]}
        names = collect(index, texts, qv, evaluate.BEIR_PRINCIPAL, settings, now,
                        lambda q, d: int(d in qrels.get(q, {})), 0, size or 0, rows, n, set(ws.answerable))
        print(size, len(ws.docs), len(ws.answerable), len(ws.unanswerable), len(rows), file=sys.stderr)
    store.close()
    if args.sample:
        from workbench import Workbench
        from workbench.models import utcnow

        wb = Workbench.open(args.sample)
        index = wb.search_index()
        golden = evaluate.load_golden(Path(args.sample) / "golden.yaml")
        rel = {q["id"]: set(q["relevant"]) for q in golden}
        vecs = index.embedder.encode([q["query"] for q in golden])
        base = evaluate.preset(wb.settings(), "hybrid")
        for q, v in zip(golden, vecs):
            collect(index, {q["id"]: q["query"]}, {q["id"]: v}, wb.principal(q["principal"]), base, utcnow(),
                    lambda qid, d: int(d in rel[qid]), 1, int(index.visible(wb.principal(q["principal"])).sum()), rows,
                    -1, {q["id"]} if q["relevant"] else set())
    group = np.array([r[0] for r in rows])
    size = np.array([r[1] for r in rows])
    qid = np.array([str(r[2]) for r in rows])
    pos = np.array([r[3] for r in rows])
    label = np.array([r[4] for r in rows])
    workspace = np.array([r[5] for r in rows])
    answerable = np.array([r[6] for r in rows], dtype=bool)
    x = np.array([r[7:] for r in rows], dtype=np.float64)
    np.savez(args.out, group=group, size=size, qid=qid, pos=pos, label=label, workspace=workspace,
             answerable=answerable, x=x, names=np.array(names))


if __name__ == "__main__":
    main()
