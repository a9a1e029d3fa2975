"""Fit the shipped confidence prior (``rank.calibration.PRIOR``) on the features that
benchmarks/abstention_features.py dumps: SciFact workspaces of several sizes in which each query
is answerable or not, and optionally the sample golden set (checked on, never fitted to).

    .venv/bin/python benchmarks/abstention_features.py --beir DIR --cache FILE --out feats.npz --sample WS
    .venv/bin/python benchmarks/calibrate_prior.py feats.npz

Fit: logistic regression (``rank.calibration.fit``) of ``FEATURES`` on the BEIR candidates of half
of the queries (by a hash of the query id), each size weighted alike (a candidate's weight is one
over its size's candidates), so that the whole set does not drown the small workspaces. Floor: the
highest on ``FLOOR_GRID`` at which the answered rate of the training queries, averaged over the
sizes, is at least ``TARGET_ANSWERED`` (answers first). Prints the model (paste it as ``PRIOR`` in
rank/calibration.py), and per size the answered, answered-with-a-relevant-document and abstained
rates of the held-out half at that floor, with the candidate AUC; and the sample golden set's AUC.
A query is keyed by (workspace, query id): unanswerable queries are asked in every workspace of a size.

The shipped prior was fitted by an earlier version of this script that was not kept; this one is
rebuilt from its description in BENCHMARKS.md. On SciFact (2026-12-04, 13 s with cached vectors) it
gives intercept -6.0599, coefficients (0.8200, 5.8412, 11.5632), floor 0.04, held-out candidate AUC
0.981; the shipped prior is -6.5351, (1.5425, 6.3135, 11.8892), floor 0.04, AUC 0.981. Held-out
answered / abstained at 20, 200, 2,000 and all documents: 0.94/0.82, 0.92/0.70, 0.89/0.51, 0.90/0.33.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workbench.rank import calibration as cal


def half(qid: str) -> bool:
    return int(hashlib.sha256(qid.encode("utf-8")).hexdigest(), 16) % 2 == 0


def by_size_rates(p, y, keys, answerable, sizes, floor):
    out = {}
    for size in sorted(set(sizes.tolist())):
        at = sizes == size
        asked = {k: a for k, a in zip(keys[at], answerable[at])}
        out[int(size)] = cal.rates(p[at], y[at], keys[at], asked, floor)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("features", help="the .npz of benchmarks/abstention_features.py")
    ap.add_argument("--l2", type=float, default=cal.L2)
    ap.add_argument("--target", type=float, default=cal.TARGET_ANSWERED)
    args = ap.parse_args()
    data = np.load(args.features)
    names = [str(n) for n in data["names"]]
    signals = {n: data["x"][:, names.index(n)] for n in names}
    y = data["label"].astype(np.float64)
    beir = data["group"] == 0
    qid = data["qid"].astype(str)
    keys = np.array([f"{w}:{q}" for w, q in zip(data["workspace"], qid)], dtype=object)
    sizes, answerable = data["size"], data["answerable"].astype(bool)
    train = beir & np.array([half(q) for q in qid])
    test = beir & ~train

    counts = {s: int((train & (sizes == s)).sum()) for s in set(sizes[train].tolist())}
    weights = np.array([1.0 / counts[s] for s in sizes[train]])
    x = cal.design(signals, cal.FEATURES)
    b0, w = cal.fit(x[train], y[train], l2=args.l2, weights=weights)
    model = cal.Calibration(cal.FEATURES, b0, w, cal.PRIOR.floor, "prior")
    p = model.confidence(signals)

    def mean_answered(mask, floor):
        rates = by_size_rates(p[mask], y[mask], keys[mask], answerable[mask], sizes[mask], floor)
        return float(np.mean([r["answered"] or 0.0 for r in rates.values()]))

    floor = cal.FLOOR_GRID[0]
    for f in cal.FLOOR_GRID:
        if mean_answered(train, f) >= args.target:
            floor = f
    print(f"PRIOR = Calibration(FEATURES, {b0:.4f}, ({', '.join(f'{v:.4f}' for v in w)}), {floor}, \"prior\")")
    print(f"shipped: intercept {cal.PRIOR.intercept}, coefficients {cal.PRIOR.coefficients}, floor {cal.PRIOR.floor}")
    print(f"held-out candidate AUC {cal.auc(p[test], y[test]):.3f}")
    for size, r in by_size_rates(p[test], y[test], keys[test], answerable[test], sizes[test], floor).items():
        print(f"  size {size or 'all'}: answered {r['answered']}, with a relevant document {r['answered_relevant']}, "
              f"abstained {r['abstained']}")
    sample = data["group"] == 1
    if sample.any():
        print(f"sample golden set: candidate AUC {cal.auc(p[sample], y[sample]):.3f} "
              f"(legacy {cal.auc(cal.LEGACY.confidence(signals)[sample], y[sample]):.3f})")


if __name__ == "__main__":
    main()
