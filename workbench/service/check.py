"""Knowledge CI: run the golden queries, compare them with a stored baseline, report regressions.

``check`` ranks the golden set exactly as ``eval`` does (the hybrid pipeline, each query as its
own principal; Evaluation.run_golden) and compares each query with the baseline file
(retrieval/regressions.py). By default the queries are ranked at the baseline's clock, so
that freshness decaying between two runs is not reported as a change: what shows is what
changed in the fragments, the configuration or the code.

Who reads the report is the ``principal`` (policy.sees_query and policy.sees decide what it
names; the rest is counted as hidden). With none given and no default principal, the local
administrator reads everything, as with ``eval``. The verdict always covers every query: a CI
gate does not depend on who runs it. This module renders nothing.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from .. import policy
from ..errors import UserError
from ..models import Principal, utcnow
from .evaluation import Evaluation
from .workspace import Feature, Workspace

TOP = 3                  # the ranks a report names fragments of (moves and top-3 changes)
PIPELINE = "hybrid"      # what `eval` reports first and search serves
MIN_K, MAX_K = 3, 100    # the top 3 is compared; rankings go 100 deep
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "queries", "answered", "abstention", "negatives")


class Checks(Feature):
    """``check``: the golden set against its baseline."""

    def __init__(self, ws: Workspace, evaluation: Evaluation, calibrating=None):
        super().__init__(ws)
        self.evaluation = evaluation
        self.calibrating = calibrating   # refits the calibration with --update-baseline

    def check(self, golden: str | Path | None = None, baseline: str | Path | None = None, *,
              update_baseline: bool = False, principal: str | Principal | None = None, k: int = 10,
              now: datetime | None = None):
        """Run the golden queries and compare them with the baseline (default: ``<golden>.baseline.json``
        next to the golden file); with ``update_baseline``, write the baseline from this run (atomically)
        after reporting what changed since the old one, if it could be read. Returns a ``CheckReport``.

        ``golden``: default ``Evaluation.golden_path``. ``k``: top ids kept per query (3..100).
        ``now``: the ranking clock (default: the baseline's when comparing, the current time when writing)."""
        from ..retrieval import regressions
        from ..retrieval.evaluate import load_golden

        if isinstance(k, bool) or not isinstance(k, int) or not MIN_K <= k <= MAX_K:
            raise UserError(f"k must be a whole number from {MIN_K} to {MAX_K} (got {k!r})", param="k")
        golden_path = self.evaluation.golden_path(golden)
        if golden_path is None:
            raise UserError("no golden set: pass one (--golden FILE), name it as `golden:` in workbench.yaml, or "
                            f"put golden.yaml in the workspace folder ({self.root})", param="golden")
        if not golden_path.is_file():
            raise UserError(f"no golden set at {golden_path}", param="golden")
        baseline_path = Path(baseline).expanduser() if baseline else golden_path.with_name(
            f"{golden_path.stem}.baseline.json")
        queries = load_golden(golden_path)
        regressions.unique_ids(queries, str(golden_path))
        reader = self._reader(principal)
        old = _old_baseline(baseline_path) if update_baseline else regressions.read_baseline(baseline_path)
        ids = {regressions.query_id(q, i) for i, q in enumerate(queries)}
        if old is not None and not update_baseline and old["queries"] and not ids & {q["id"] for q in old["queries"]}:
            raise UserError(f"{baseline_path} was written for other queries (none of its {len(old['queries'])} "
                            f"query ids is in {golden_path}): run `workbench check --update-baseline` to replace it")
        at = now or (utcnow() if update_baseline or old is None else regressions.ranked_at(old))

        out = self.evaluation.rank_golden(queries, [PIPELINE], now=at)
        current = regressions.snapshot(queries, out["rankings"][PIPELINE], k)
        metrics = {m: out["metrics"][PIPELINE].get(m) for m in METRICS}
        report = regressions.compare(old, current, metrics, golden=str(golden_path), baseline_path=str(baseline_path),
                                     updated=update_baseline, **self._visibility(reader, current, old))
        if update_baseline:
            regressions.write_baseline(baseline_path, regressions.baseline_data(
                current, metrics, golden=golden_path.name, k=k, ranked_at=at.isoformat(), pipeline=PIPELINE))
            self._refit(golden_path, report)
        return report

    def _refit(self, golden_path: Path, report) -> None:
        """``--update-baseline`` also refits the calibration on the golden set (calibrating.py); a set
        too small to fit keeps the calibration in use, and the report says so."""
        if self.calibrating is None:
            return
        try:
            fitted = self.calibrating.calibrate(golden_path).calibration.describe()
        except UserError as e:
            fitted = f"not refitted: {e}"
        report.calibration = fitted

    def _reader(self, principal: str | Principal | None) -> Principal | None:
        """Who reads the report: the principal given, else the default one; None (everything shown)
        when there is neither."""
        if principal is None and not (os.environ.get("WORKBENCH_PRINCIPAL") or self.config.default_principal):
            return None
        return self.principal(principal)

    def _visibility(self, reader: Principal | None, current: list[dict], old: dict | None) -> dict:
        named = {fid for q in [*current, *(old["queries"] if old else ())] for fid in (*q["top"][:TOP], *q["relevant"])}
        fragments = {f.id: f for f in self.store.fragments(ids=sorted(named))}

        def owner_of(fid: str) -> str | None:
            found = fragments.get(fid)
            return found.owner if found is not None else None

        if reader is None:
            return {"shows_query": lambda name: True, "shows_fragment": lambda fid: True, "owner_of": owner_of}
        askers = self.config.principals
        return {"shows_query": lambda name: policy.sees_query(reader, askers.get(name)),
                "shows_fragment": lambda fid: fid in fragments and policy.sees(reader, fragments[fid]),
                "owner_of": owner_of}


def _old_baseline(path: Path) -> dict | None:
    """The baseline about to be replaced, when it can be read (a corrupt one is what an update repairs)."""
    from ..retrieval import regressions

    try:
        return regressions.read_baseline(path)
    except UserError:
        return None
