"""Knowledge CI: run the golden queries, compare them with a stored baseline, report regressions.

``check`` ranks the golden set exactly as ``eval`` does (the hybrid pipeline, each query as its
own principal; Evaluation.rank_golden), composes for each query the context an agent would be
served (as ``context`` with its defaults, pins aside, no trace), and compares each query with the
baseline file (retrieval/regressions.py, retrieval/answers.py) and with its own assertions
(retrieval/golden_rules.py). By default the queries are ranked at the baseline's clock, so that
freshness decaying between two runs is not reported as a change: what shows is what changed in
the fragments, the configuration or the code.

Who reads the report is the ``principal`` (policy.sees_query and policy.sees decide what it
names; the rest is counted as hidden). A fragment deleted since the baseline is judged by what
the baseline recorded of it (its scope, owner and status, policy.sees_listed): named to a reader
who could see it, counted for the others. With no principal given and no default principal, the
local administrator reads everything, as with ``eval``. The verdict always covers every query: a
CI gate does not depend on who runs it. This module renders nothing.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from .. import policy
from ..errors import UserError
from ..models import Fragment, Principal, Scope, utcnow
from ..rank import retention
from ..retrieval import answers, golden_rules, regressions
from ..retrieval import baseline as baseline_file
from ..userpath import expand_user
from .evaluation import Evaluation
from .workspace import Feature, Workspace

TOP = 3                  # the ranks a report names fragments of (moves and top-3 changes)
PIPELINE = "hybrid"      # what `eval` reports first and search serves
MIN_K, MAX_K = 3, 100    # the top 3 is compared; rankings go 100 deep
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "queries", "answered", "abstention", "negatives")
BUDGET = 3200            # the token budget ``context`` serves by default


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
        from ..retrieval.evaluate import load_golden

        if isinstance(k, bool) or not isinstance(k, int) or not MIN_K <= k <= MAX_K:
            raise UserError(f"k must be a whole number from {MIN_K} to {MAX_K} (got {k!r})", param="k")
        golden_path = self.evaluation.golden_path(golden)
        if golden_path is None:
            raise UserError("no golden set: pass one (--golden FILE), name it as `golden:` in workbench.yaml, or "
                            f"put golden.yaml in the workspace folder ({self.root})", param="golden")
        if not golden_path.is_file():
            raise UserError(f"no golden set at {golden_path}", param="golden")
        baseline_path = expand_user(baseline) if baseline else golden_path.with_name(
            f"{golden_path.stem}.baseline.json")
        queries = load_golden(golden_path)
        regressions.unique_ids(queries, str(golden_path))
        reader = self._reader(principal)
        old = _old_baseline(baseline_path) if update_baseline else baseline_file.read_baseline(baseline_path)
        ids = {regressions.query_id(q, i) for i, q in enumerate(queries)}
        if old is not None and not update_baseline and old["queries"] and not ids & {q["id"] for q in old["queries"]}:
            raise UserError(f"{baseline_path} was written for other queries (none of its {len(old['queries'])} "
                            f"query ids is in {golden_path}): run `workbench check --update-baseline` to replace it")
        at = now or (utcnow() if update_baseline or old is None else baseline_file.ranked_at(old))

        fitted = self._refit(golden_path) if update_baseline else None
        out = self.evaluation.rank_golden(queries, [PIPELINE], now=at, keep_context=PIPELINE)
        served, texts = self._served(queries, out["context"])
        rankings = out["rankings"][PIPELINE]
        current = regressions.snapshot(queries, rankings, k, served)
        failed = {}
        for i, q in enumerate(queries):
            key = q.get("id", str(i))   # run_golden's key
            found = golden_rules.failures(q, rankings[key], served[key], texts[key])
            if found:
                failed[regressions.query_id(q, i)] = found
        metrics = {m: out["metrics"][PIPELINE].get(m) for m in METRICS}
        stored = self._stored(current, old)
        report = regressions.compare(old, current, metrics, golden=str(golden_path), baseline_path=str(baseline_path),
                                     updated=update_baseline, readers=self._readers(reader, stored, old),
                                     now=self._now(stored), failed=failed)
        if update_baseline:
            baseline_file.write_baseline(baseline_path, baseline_file.baseline_data(
                current, metrics, golden=golden_path.name, k=k, ranked_at=at.isoformat(), pipeline=PIPELINE,
                fragments=_records(current, stored)))
        if fitted is not None:
            report.calibration = fitted
        return report

    def _refit(self, golden_path: Path) -> str | None:
        """``--update-baseline`` first refits the calibration on the golden set (calibrating.py), so the
        baseline records what context serves under the new fit; a set too small to fit keeps the
        calibration in use, and the report says so."""
        if self.calibrating is None:
            return None
        try:
            return self.calibrating.calibrate(golden_path).calibration.describe()
        except UserError as e:
            return f"not refitted: {e}"

    def _served(self, queries: list[dict], selected: dict[str, tuple[list, list]]
                ) -> tuple[dict[str, list[str]], dict[str, str]]:
        """Per query (keyed as run_golden keys them): the ids context serves within its default budget,
        and the text it serves."""
        from ..retrieval.compose import compose, join

        tokens = self.ws.index.tokens
        ids, texts = {}, {}
        for i, q in enumerate(queries):
            key = q.get("id", str(i))
            hits, avoid = selected[key]
            if not hits and not avoid:
                ids[key], texts[key] = [], ""
                continue
            composed = compose([], hits, avoid, budget=BUDGET, query=q["query"], count=tokens.count,
                               count_many=tokens.count_many)
            ids[key] = [item.hit.id for item in [*composed.fragments, *composed.avoid]]
            texts[key] = join(composed.fragments, composed.avoid)
        return ids, texts

    def _stored(self, current: list[dict], old: dict | None) -> dict[str, Fragment]:
        """The fragments, as stored now, that a report may name: every query's relevant ones, top 3
        and served ones, now and at the baseline."""
        named = {fid for q in [*current, *(old["queries"] if old else ())]
                 for fid in (*q["top"][:TOP], *q["relevant"], *q.get("served", ()))}
        return {f.id: f for f in self.store.fragments(ids=sorted(named))}

    def _now(self, stored: dict[str, Fragment]) -> answers.Now:
        askers = self.config.principals

        def visible_to(name: str, fid: str) -> bool:
            return name in askers and fid in stored and policy.sees(askers[name], stored[fid])

        return answers.Now({fid: _record(f, body=True) for fid, f in stored.items()}, visible_to)

    def _reader(self, principal: str | Principal | None) -> Principal | None:
        """Who reads the report: the principal given, else the default one; None (everything shown)
        when there is neither."""
        if principal is None and not (os.environ.get("WORKBENCH_PRINCIPAL") or self.config.default_principal):
            return None
        return self.principal(principal)

    def _readers(self, reader: Principal | None, stored: dict[str, Fragment], old: dict | None
                 ) -> regressions.Readers:
        recorded = old.get("fragments", {}) if old else {}

        def owner_of(fid: str) -> str | None:
            if fid in stored:
                return stored[fid].owner
            return recorded[fid]["owner"] if fid in recorded else None

        if reader is None:
            return regressions.Readers(lambda name: True, lambda fid: True, owner_of)

        def shows_fragment(fid: str) -> bool:
            if fid in stored:
                return policy.sees(reader, stored[fid])
            was = recorded.get(fid)  # deleted since the baseline: as the baseline knew it
            return was is not None and policy.sees_listed(reader, Scope.parse(was["scope"]), was["owner"],
                                                          was["status"])

        askers = self.config.principals
        return regressions.Readers(lambda name: policy.sees_query(reader, askers.get(name)), shows_fragment,
                                   owner_of)


def _record(f: Fragment, *, body: bool = False, sketch: bool = False) -> dict:
    """What a baseline keeps of a fragment (``body``: and its body, for the comparison only)."""
    out = {"owner": f.owner, "scope": str(f.scope), "status": f.status}
    if sketch:
        out.update(words=len(retention.words(f.body)), sketch=retention.sketch(f.body))
    if body:
        out["body"] = f.body
    return out


def _records(current: list[dict], stored: dict[str, Fragment]) -> dict[str, dict]:
    """The baseline's ``fragments``: a record of each fragment the current run names, with a sketch
    of the body of each that answers a golden query."""
    relevant = {fid for q in current for fid in q["relevant"]}
    named = {fid for q in current for fid in (*q["top"][:TOP], *q["relevant"], *q["served"])}
    return {fid: _record(stored[fid], sketch=fid in relevant) for fid in sorted(named) if fid in stored}


def _old_baseline(path: Path) -> dict | None:
    """The baseline about to be replaced, when it can be read (a corrupt one is what an update repairs)."""
    try:
        return baseline_file.read_baseline(path)
    except UserError:
        return None
