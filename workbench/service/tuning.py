"""``tune``: fit the ranking weights (workbench.yaml's ``ranking:``) on the golden set.

Gathers one retrieval per golden query (as its principal, in its persona: the candidates and the
score vectors re-scoring needs), hands them to the pure maths of rank/tuning.py, and reports the
held-out gain of K-fold cross-validation, never an in-sample figure. With ``write`` it updates the
``ranking:`` section of workbench.yaml, and only that, when the held-out gain is beyond noise.
It renders nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import policy
from ..config import CONFIG_NAME, WorkspaceConfig
from ..errors import PermissionDenied, UserError
from ..models import Principal, utcnow
from ..rank import persona as rank_persona
from ..rank import tuning
from .evaluation import Evaluation
from .search import Retrieval
from .workspace import Feature, Workspace

MIN_QUERIES = 6


@dataclass
class TuneReport:
    """What ``tune`` found: the held-out figures, the current and fitted weights, and whether it wrote."""

    persona: str | None
    queries: int
    cv: tuning.CrossValidation
    current: rank_persona.Weights
    fitted: rank_persona.Weights
    written: bool
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"persona": self.persona, "queries": self.queries, **self.cv.to_dict(),
                "current": self.current.to_dict(), "fitted": self.fitted.to_dict(), "written": self.written,
                "notes": list(self.notes)}

    def __repr__(self) -> str:
        return (f"<TuneReport {self.persona or 'default'}: held-out gain {self.cv.gain:+.4f} "
                f"(se {self.cv.se:.4f}) over {self.queries} queries{' written' if self.written else ''}>")


class Tuning(Feature):
    """``tune``: K-fold fit of the ranking weights, default or per persona, on the golden set."""

    def __init__(self, ws: Workspace, retrieval: Retrieval, evaluation: Evaluation):
        super().__init__(ws)
        self.retrieval = retrieval
        self.evaluation = evaluation

    def tune(self, *, persona: str | None = None, folds: int = 5, write: bool = False,
             golden: str | Path | None = None, principal: str | Principal | None = None,
             now: datetime | None = None, seed: int = 31) -> TuneReport:
        """Fit the weights of ``persona`` (None: ``ranking.default``, the calls in no persona) on the
        golden queries asked in it, by ``folds``-fold cross-validation. ``write`` stores the fit in
        workbench.yaml unless the held-out gain is within noise (the report says why it did not).
        Only the local administrator or an admin principal may write."""
        from ..retrieval.evaluate import load_golden

        who = None if principal is None else self.principal(principal)
        if write and not policy.may_calibrate(who):
            raise PermissionDenied(f"only an admin may change the workspace's ranking ({who.name} is not one)")
        if isinstance(folds, bool) or not isinstance(folds, int) or not 2 <= folds <= 20:
            raise UserError(f"folds must be a whole number from 2 to 20, not {folds!r}", param="folds")
        declared = {p for o in self.config.orgs.values() for p in o.personas}
        if persona is not None and persona not in declared:
            raise UserError(f"unknown persona {persona!r} (declared: {', '.join(sorted(declared))})", param="persona")
        path = self.evaluation.golden_path(golden)
        if path is None or not path.is_file():
            raise UserError(f"no golden set to tune on ({path or 'none configured'})", param="golden")
        asked = [q for q in load_golden(path) if q["relevant"] and self.persona_of(q) == persona]
        if len(asked) < max(MIN_QUERIES, folds):
            raise UserError(f"only {len(asked)} golden queries with relevant fragments are asked in "
                            f"{'persona ' + repr(persona) if persona else 'no persona'}: at least "
                            f"{max(MIN_QUERIES, folds)} are needed to tune", param="persona")
        current = self.config.ranking.weights(persona)
        cands = self.candidates(asked, persona, current, now or utcnow())
        cv = tuning.cross_validate(cands, current, folds, seed=seed)
        fitted = tuning.fit(cands, current)
        notes: list[str] = ["pins are not tuned: evaluation ranks without pins"]
        written = False
        if cv.within_noise:
            notes.append(f"held-out gain {cv.gain:+.4f} is within noise (needs > 0 and >= {tuning.NOISE_SE:g} x "
                         f"paired se {cv.se:.4f}): {'not written' if write else 'nothing to write'}")
        elif write:
            self.write(persona, fitted)
            written = True
            notes.append(f"wrote ranking.{'personas.' + persona if persona else 'default'} to {CONFIG_NAME}")
        return TuneReport(persona, len(asked), cv, current, fitted, written, notes)

    def persona_of(self, q: dict[str, Any]) -> str | None:
        """The persona a golden query is asked in (its ``persona:``, else its agent's own), as search decides."""
        who = self.principal(q["principal"])
        try:
            return policy.personas.acting_persona(who, q.get("persona"), self.retrieval.declared_personas())
        except UserError as e:
            raise UserError(f"golden query {q.get('id', q['query'])!r}: {e.message}", param="golden") from e

    def candidates(self, queries: list[dict[str, Any]], persona: str | None, current: rank_persona.Weights,
                   now: datetime) -> list[tuning.Candidates]:
        """One retrieval per query, as the hybrid evaluation ranks it, kept for re-scoring."""
        import numpy as np

        from ..retrieval.evaluate import preset
        from ..retrieval.pipeline import rank

        index = self.retrieval.search_index()
        settings = preset(self.retrieval.settings(), "hybrid").with_weights(persona, current)
        vectors = index.embedder.encode([q["query"] for q in queries])
        out = []
        for q, qv in zip(queries, vectors):
            r = rank(index, q["query"], self.principal(q["principal"]), settings, now=now, query_vector=qv)
            p = r.parts
            relevant = frozenset(index.pos[f] for f in q["relevant"] if f in index.pos)
            out.append(tuning.Candidates(p["lexical"], p["dense"], p["freshness"], p["authority"], p["in_persona"],
                                         r.demoted if r.demoted is not None else np.zeros(0, dtype=np.int64),
                                         relevant, exact=r.exact, fusion=settings.fusion, depth=settings.depth))
        return out

    def write(self, persona: str | None, fitted: rank_persona.Weights) -> None:
        """Store ``fitted`` in workbench.yaml's ``ranking:`` section; the rest of the file stays as written."""
        ranking = self.config.ranking
        if persona is None:
            ranking = replace(ranking, default=fitted)
        else:
            ranking = replace(ranking, personas={**ranking.personas, persona: fitted})
        path = self.root / CONFIG_NAME
        self.ws.config = write_ranking(path, ranking)


def write_ranking(path: Path, ranking: rank_persona.Ranking) -> WorkspaceConfig:
    """Replace the top-level ``ranking:`` block of the config at ``path`` (or append one), keeping
    every other line, comments included; the result is loaded and validated before it replaces the
    file (atomically), and returned."""
    import os
    import tempfile

    import yaml

    text = path.read_text(encoding="utf-8")
    data = ranking.to_dict()
    block = yaml.safe_dump({"ranking": data}, sort_keys=False, default_flow_style=False) if data else ""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"ranking[ \t]*:", line)), None)
    if start is None:
        new = text + ("" if text.endswith("\n") or not text else "\n") + block
    else:
        end = start + 1
        while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t"):
            end += 1
        while end > start + 1 and not lines[end - 1].strip():   # keep the blank lines before the next key
            end -= 1
        new = "".join(lines[:start]) + block + "".join(lines[end:])
    from .. import safeyaml

    config = WorkspaceConfig.from_data(safeyaml.load(new, file=str(path)), file=str(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".workbench.", suffix=".yaml")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)
    return config
