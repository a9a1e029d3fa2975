"""Calibration of the workspace: fit confidence and the abstention floor on its own golden set,
store the fit in the workspace (a ``meta`` row), or fall back to the shipped prior.

``calibrate`` ranks each golden query as its principal through the served (hybrid) pipeline,
takes the signals of its top candidates (retrieval/pipeline.signals) with a label (judged
relevant or not; every candidate of an unanswerable query is 0) and fits them with
``rank.calibration.fit_golden``. Held-back figures come from a fit without a quarter of the
queries (chosen by a hash of the id); the stored model is then fitted on every query. The fitting
maths is in ``rank/calibration.py``; this module only gathers and stores. It renders nothing.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import policy
from ..errors import PermissionDenied, UserError
from ..models import Principal, utcnow
from ..rank import calibration as cal
from .evaluation import Evaluation
from .search import Retrieval
from .workspace import Feature, Workspace

TOP = 20               # candidates per golden query (context ranks 20 by default)
HOLD_BACK_FROM = 20    # golden sets this large hold a quarter of their queries back for checking


@dataclass
class CalibrationReport:
    """What ``calibrate`` fitted (or would fit, with ``dry_run``) and what it replaced."""

    calibration: cal.Calibration
    previous: cal.Calibration
    stored: bool
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"calibration": self.calibration.to_dict(), "previous": self.previous.to_dict(),
                "stored": self.stored, "notes": list(self.notes)}

    def __repr__(self) -> str:
        return f"<CalibrationReport {self.calibration.describe()}{'' if self.stored else ' (not stored)'}>"


def held_back(qid: str) -> bool:
    return int(hashlib.sha256(qid.encode("utf-8")).hexdigest(), 16) % 4 == 0


class Calibrating(Feature):
    """``calibrate``: fit the workspace's calibration on its golden set; ``calibration``: the one in use."""

    def __init__(self, ws: Workspace, retrieval: Retrieval, evaluation: Evaluation):
        super().__init__(ws)
        self.retrieval = retrieval
        self.evaluation = evaluation

    def calibration(self) -> cal.Calibration:
        """The calibration in use: the workspace's golden fit when one is stored, else the prior."""
        return self.retrieval.calibration()

    def calibration_info(self) -> dict[str, Any]:
        """How the workspace is calibrated, for ``info`` and the TUI's header: ``summary`` (one line),
        ``source`` ("golden" or "prior"), the floor ``context`` applies (workbench.yaml's
        ``confidence_floor`` wins over the fit's), and for a golden fit when, from what and on how many queries."""
        model = self.calibration()
        floor = self.retrieval.confidence_floor()
        summary = model.describe()
        if abs(floor - model.floor) > 1e-12:
            summary += f"; workbench.yaml's confidence_floor {floor:.2f} applies"
        return {"summary": summary, "source": model.source, "floor": floor, "model_floor": model.floor,
                "fitted_at": model.fitted_at, "fitted_from": model.fitted_from,
                "queries": model.counts.get("queries")}

    def calibrate(self, golden: str | Path | None = None, *, dry_run: bool = False, reset: bool = False,
                  target: float = cal.TARGET_ANSWERED, principal: str | Principal | None = None
                  ) -> CalibrationReport:
        """Fit confidence and the floor on the golden set (``golden``, default the workspace's) and
        store them, unless ``dry_run``. ``target``: the answered rate the floor keeps on the fitted
        queries (0.5..1). ``reset`` removes a stored fit (the prior applies again). Only the local
        administrator or an admin principal may store one."""
        who = None if principal is None else self.principal(principal)
        if not dry_run and not policy.may_calibrate(who):
            raise PermissionDenied(f"only an admin may calibrate the workspace ({who.name} is not one)")
        previous = self.calibration()
        if reset:
            if not dry_run:
                self.store.put_calibration(None)
                self.retrieval.forget_calibration()
            return CalibrationReport(cal.PRIOR, previous, not dry_run, ["the prior applies"])
        if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0.5 <= float(target) <= 1.0:
            raise UserError(f"the answered target must be a number from 0.5 to 1, not {target!r}", param="target")
        from ..retrieval.evaluate import load_golden

        path = self.evaluation.golden_path(golden)
        if path is None:
            raise UserError("no golden set to calibrate on: pass one (--golden FILE), name it as `golden:` in "
                            f"workbench.yaml, or put golden.yaml in the workspace folder ({self.root})", param="golden")
        if not path.is_file():
            raise UserError(f"no golden set at {path}", param="golden")
        queries = load_golden(path)
        signals, y, qids, answerable = self._candidates(queries)
        held = {q for q in answerable if held_back(q)} if len(answerable) >= HOLD_BACK_FROM else set()
        try:
            checked = cal.fit_golden(signals, y, qids, answerable, held, target=float(target))
            fitted = cal.fit_golden(signals, y, qids, answerable, set(), target=float(target))
        except cal.TooSmall as e:
            raise UserError(f"{path}: the golden set is too small to fit a calibration: {e}; the workspace keeps "
                            f"{previous.describe()} (add queries, including some the corpus cannot answer "
                            "with `relevant: []`)", param="golden") from e
        notes = [] if held else [(f"{len(answerable)} queries: too few to hold any back (from {HOLD_BACK_FROM}), "
                                  "so there are no held-back figures")]
        from dataclasses import replace

        fitted = replace(fitted, fitted_at=utcnow().isoformat(timespec="seconds"), fitted_from=str(path),
                         held_out=checked.held_out if held else {"queries": 0},
                         counts={**fitted.counts, "held_out": len(held)})
        if not dry_run:
            self.store.put_calibration(json.dumps(fitted.to_dict(), sort_keys=True))
            self.retrieval.forget_calibration()
        return CalibrationReport(fitted, previous, not dry_run, notes)

    def _candidates(self, queries: list[dict[str, Any]]):
        """Signals, labels and query ids of each golden query's top ``TOP`` candidates, and which queries are answerable."""
        from dataclasses import replace

        from ..retrieval import evaluate
        from ..retrieval.pipeline import rank, signals

        index = self.retrieval.search_index()
        settings = replace(evaluate.preset(self.retrieval.settings(), "hybrid"), k=TOP)
        now = utcnow()
        vectors = index.embedder.encode([q["query"] for q in queries])
        cols: dict[str, list[np.ndarray]] = {}
        labels, owners, answerable = [], [], {}
        for i, q in enumerate(queries):
            qid = str(q.get("id", i))
            who = self.principal(q["principal"])
            ranking = rank(index, q["query"], who, settings, now=now, query_vector=vectors[i])
            top = ranking.order[:TOP]
            relevant = set(q["relevant"])
            answerable[qid] = bool(relevant)
            if not top:
                continue
            for name, values in signals(index, ranking, top).items():
                cols.setdefault(name, []).append(np.asarray(values, dtype=np.float64))
            labels.extend(int(index.ids[j] in relevant) for j in top)
            owners.extend([qid] * len(top))
        merged = {name: np.concatenate(v) for name, v in cols.items()} or \
            {name: np.zeros(0) for name in cal.FEATURES}
        return merged, np.array(labels, dtype=np.float64), np.array(owners, dtype=object), answerable
