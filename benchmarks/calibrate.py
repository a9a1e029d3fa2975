"""Fit the *legacy* confidence model of workbench/rank/calibration.py (``LEGACY``: cosine, coverage
and their agreement, fitted on the sample corpus alone before issue 28) on the golden set, and
check it on held-back queries. Kept to reproduce and compare that model: it is no longer what
workbench serves. The shipped ``PRIOR`` (cosine, coverage and the margin over the visible corpus)
was fitted on SciFact workspaces of several sizes (see rank/calibration.py, BENCHMARKS.md
"Calibration that fits the corpus", and benchmarks/abstention_features.py for the features), and a
workspace fits its own model on its own golden set with ``workbench calibrate`` (or ``check
--update-baseline``), whose maths is ``rank.calibration.fit_golden``.

    .venv/bin/python benchmarks/calibrate.py                 # builds a temporary sample workspace
    .venv/bin/python benchmarks/calibrate.py --workspace DIR # or uses one (sample corpus ingested)

Data: for every golden query, the union of the bm25, dense and hybrid top ``TOP`` candidates as
the query's principal sees them, each with its features (raw dense cosine, lexical coverage) and
label 1 when the golden set judges it relevant (every candidate of a negative query is 0).
Fixed split: a query whose id ends in a number divisible by 4 is held back; the rest train.

Prints the fitted intercept and coefficients, held-back log loss, Brier score and AUC (fitted and
``LEGACY``'s constants), and for a grid of floors the share of negative queries for which context
serves nothing (abstention) and of positive queries whose context keeps a relevant fragment
(answered), per pipeline and split, with the fitted model. The suggested floor is the lowest on
the grid whose training abstention (hybrid) is >= 0.85.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from workbench import Workbench  # noqa: E402
from workbench.models import utcnow  # noqa: E402
from workbench.rank import calibration  # noqa: E402
from workbench.retrieval import evaluate  # noqa: E402
from workbench.retrieval.pipeline import coverage, cosines, hits_from, rank  # noqa: E402

TOP = 20
PIPELINES = ("bm25", "dense", "hybrid")
FLOORS = [round(float(x), 2) for x in np.arange(0.02, 0.41, 0.02)]
TARGET_ABSTENTION = 0.85


def held_back(qid: str) -> bool:
    m = re.search(r"(\d+)$", qid)
    return bool(m) and int(m.group(1)) % 4 == 0


def open_workspace(path: str | None) -> Workbench:
    if path:
        return Workbench.open(path)
    root = Path(tempfile.mkdtemp(prefix="wb-calibrate-")) / "ws"
    wb = Workbench.init(root, config=ROOT / "sample_corpus" / "workbench.yaml")
    report = wb.ingest([ROOT / "sample_corpus" / "fragments"], actor="kb.sync")
    assert not report.errors, report.errors
    wb.warm()
    return wb


def collect(wb: Workbench, queries: list[dict]):
    index = wb.search_index()
    now = utcnow()
    vectors = index.embedder.encode([q["query"] for q in queries])
    rows, rankings = [], {}
    for qi, q in enumerate(queries):
        who = wb.principal(q["principal"])
        feats: dict[int, tuple[float, float]] = {}
        for name in PIPELINES:
            settings = evaluate.preset(wb.settings(), name)
            ranking = rank(index, q["query"], who, settings, now=now, query_vector=vectors[qi])
            rankings[(q["id"], name)] = (ranking, settings)
            top = ranking.order[:TOP]
            for i, cos, cov in zip(top, cosines(index, ranking, top), coverage(index, ranking, top)):
                feats.setdefault(i, (float(cos), float(cov)))
        for i, (cos, cov) in feats.items():
            rows.append((q["id"], cos, cov, int(index.ids[i] in q["relevant"])))
    return index, rows, rankings


def selection_rates(index, queries, rankings, floor: float, split: bool,
                    model: calibration.Calibration) -> dict[str, dict[str, float]]:
    out = {}
    for name in PIPELINES:
        neg = abst = pos = ans = 0
        for q in queries:
            if held_back(q["id"]) != split:
                continue
            ranking, settings = rankings[(q["id"], name)]
            hits, avoid = hits_from(index, ranking, replace(settings, k=evaluate.CONTEXT_K), for_context=True,
                                    min_confidence=floor, model=model)
            served = {h.id for h in [*hits, *avoid]}
            if evaluate.is_negative(q):
                neg, abst = neg + 1, abst + (not served)
            else:
                pos, ans = pos + 1, ans + bool(served & set(q["relevant"]))
        out[name] = {"abstention": round(abst / neg, 3) if neg else None, "answered": round(ans / pos, 3)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", help="a workspace holding the sample corpus (default: build one)")
    parser.add_argument("--golden", default=str(ROOT / "sample_corpus" / "golden.yaml"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    queries = evaluate.load_golden(args.golden)
    with open_workspace(args.workspace) as wb:
        index, rows, rankings = collect(wb, queries)
        ids = [r[0] for r in rows]
        x = calibration.features(np.array([r[1] for r in rows]), np.array([r[2] for r in rows]))
        y = np.array([r[3] for r in rows], dtype=np.float64)
        test = np.array([held_back(i) for i in ids])
        intercept, coefficients = calibration.fit(x[~test], y[~test])
        report = {"rows": {"train": int((~test).sum()), "test": int(test.sum()),
                           "positives_train": int(y[~test].sum()), "positives_test": int(y[test].sum())},
                  "queries": {"train": sum(not held_back(q["id"]) for q in queries),
                              "test": sum(held_back(q["id"]) for q in queries),
                              "negative_test": sum(held_back(q["id"]) and evaluate.is_negative(q) for q in queries)},
                  "fitted": {"intercept": round(intercept, 4), "coefficients": [round(c, 4) for c in coefficients]}}
        raw = np.array([[r[1], r[2]] for r in rows])
        for label, b0, w in (("fitted", intercept, coefficients),
                             ("legacy", calibration.LEGACY.intercept, calibration.LEGACY.coefficients)):
            p = calibration.confidence(raw[:, 0], raw[:, 1], intercept=b0, coefficients=w)
            report[f"held_back_{label}"] = {"log_loss": round(calibration.log_loss(p[test], y[test]), 4),
                                            "brier": round(calibration.brier(p[test], y[test]), 4),
                                            "auc": round(calibration.auc(p[test], y[test]), 4)}
        model = replace(calibration.LEGACY, intercept=intercept, coefficients=tuple(coefficients))
        grid = {}
        for floor in FLOORS:
            grid[floor] = {"train": selection_rates(index, queries, rankings, floor, False, model),
                           "test": selection_rates(index, queries, rankings, floor, True, model)}
        report["floors"] = grid
        report["suggested_floor"] = next((f for f in FLOORS if grid[f]["train"]["hybrid"]["abstention"]
                                          >= TARGET_ABSTENTION), FLOORS[-1])
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(json.dumps({k: v for k, v in report.items() if k != "floors"}, indent=2))
    print("\nfloor  split  " + "  ".join(f"{p:>6} abst/ans" for p in PIPELINES))
    for floor, by_split in report["floors"].items():
        for split, rates in by_split.items():
            print(f"{floor:<5}  {split:<5}  " + "  ".join(
                f"{rates[p]['abstention']:>6.3f}/{rates[p]['answered']:.3f}" for p in PIPELINES))
    print(f"\nLEGACY = Calibration(('cosine', 'coverage', 'agreement'), {intercept!r}, {tuple(coefficients)!r}, "
          f"{report['suggested_floor']!r}, 'legacy')")


if __name__ == "__main__":
    main()
