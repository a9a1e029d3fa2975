"""Model upgrades through a shadow window: the embedding-model registry (``workbench model``).

``add`` registers a local model folder (checked: a tokenizer, 384-dimension vectors; nothing is
downloaded). ``shadow`` embeds the texts the index embeds (``SearchIndex.embedding_items``: the
same list, so a second generation holds exactly what the serving one does) under the new model,
skipping texts already embedded (resumable), recording its progress; the serving model keeps
serving meanwhile. ``promote`` switches atomically (one transaction, which bumps the generation,
so every process's index is rebuilt from the new model's vectors) and only when the shadow is
complete; ``rollback`` switches back within ``models.rollback_days`` (no embedding: the previous
model's vectors are kept), after which a replaced model's vectors are dropped (``expire``, run by
``model list``, ``shadow``, ``promote`` and ``rollback``). Who may change models is the policy's
(``may_change_models``). Renders nothing.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable

from .. import policy
from ..errors import ModelError, NotFound, UserError
from ..models import Principal, utcnow
from ..retrieval import models as registry
from ..retrieval.embedder import DIM, MODEL_NAME
from ..userpath import expand_user
from .workspace import Feature

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
BATCH = 256  # texts encoded between two writes (and, on DuckDB, between two releases of the file)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.replace(microsecond=0).isoformat() + "Z"


@dataclass(frozen=True)
class ModelInfo:
    """One registered model, as ``model list`` shows it (``to_dict`` is the JSON contract)."""

    name: str
    kind: str                    # bundled | onnx | sentence-transformers
    path: str
    dimension: int
    state: str                   # serving | shadow | retired
    added_at: datetime | None
    promoted_at: datetime | None
    previous: str | None         # what ``rollback`` switches back to (serving model only)
    rollback_until: datetime | None  # serving model: the end of the rollback window
    retired_at: datetime | None
    dropped_at: datetime | None  # when a retired model's vectors were dropped
    vectors: int                 # stored vectors of this model
    shadow_done: int             # the last progress recorded by ``model shadow``
    shadow_total: int

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("added_at", "promoted_at", "rollback_until", "retired_at", "dropped_at"):
            data[key] = _iso(data[key])
        return data

    def __repr__(self) -> str:
        return f"<ModelInfo {self.name} {self.state} {self.kind} vectors={self.vectors}>"


@dataclass(frozen=True)
class ShadowReport:
    name: str
    total: int          # distinct texts the index embeds
    embedded: int       # embedded by this run
    skipped: int        # already embedded (a resumed or repeated shadow)
    seconds: float
    background: int | None = None  # the pid of the background process, when it runs there

    @property
    def per_second(self) -> float:
        return round(self.embedded / self.seconds, 1) if self.seconds > 0 and self.embedded else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "seconds": round(self.seconds, 2), "per_second": self.per_second}


class Models(Feature):
    """The embedding-model registry: add, list, shadow, promote, rollback, and the window's end."""

    def __init__(self, ws, retrieval):
        super().__init__(ws)
        self.retrieval = retrieval

    # -- reading ----------------------------------------------------------------------------

    def model_list(self, *, now: datetime | None = None) -> list[ModelInfo]:
        """Every model, the serving one first (the bundled model too, registered or not); replaced
        models past the rollback window lose their vectors first (when the workspace is writable)."""
        now = now or utcnow()
        self.expire(now=now)
        rows = self.store.model_rows()
        if not any(r.state == "serving" for r in rows):
            rows = [self._bundled_row(None, state="serving"), *[r for r in rows if r.name != MODEL_NAME]]
        order = {"serving": 0, "shadow": 1, "retired": 2}
        return [self._info(r) for r in sorted(rows, key=lambda r: (order.get(r.state, 3), r.added_at or now, r.name))]

    def _info(self, row) -> ModelInfo:
        until = (row.promoted_at + timedelta(days=self.config.models_rollback_days)
                 if row.state == "serving" and row.promoted_at is not None and row.previous else None)
        return ModelInfo(row.name, row.kind, row.path, row.dimension, row.state, row.added_at, row.promoted_at,
                         row.previous if row.state == "serving" else None, until, row.retired_at, row.dropped_at,
                         self.store.embedding_count(row.name), row.shadow_done, row.shadow_total)

    def _bundled_row(self, at: datetime | None, *, state: str):
        from ..retrieval.bundled import model_dir
        from ..store.model_registry import ModelRow

        return ModelRow(MODEL_NAME, str(model_dir()), "bundled", DIM, at, state, None, None, None, None, 0, 0, None)

    def _row(self, name: str):
        row = self.store.model_row(name)
        if row is None and name == MODEL_NAME:
            return self._bundled_row(None, state="serving" if self.store.serving_model_row() is None else "retired")
        if row is None:
            known = ", ".join(r.name for r in self.store.model_rows()) or MODEL_NAME
            raise NotFound(f"unknown model {name!r} (registered: {known}; add one with `workbench model add PATH`)")
        return row

    # -- changing ---------------------------------------------------------------------------

    def _require(self, actor: str | Principal | None) -> None:
        who = None if actor is None else self.principal(actor)
        policy.may_change_models(who).check()
        self.store.require_writable("change the embedding model")

    def _ensure_bundled(self, now: datetime) -> None:
        """Give the bundled model its row (serving, unless another serves) on the first change."""
        if self.store.model_row(MODEL_NAME) is None:
            row = self._bundled_row(now, state="serving" if self.store.serving_model_row() is None else "retired")
            self.store.put_model_row(row.name, row.path, row.kind, row.dimension, now, row.state)

    def model_add(self, path: str | Path, *, name: str | None = None, actor: str | Principal | None = None,
                  now: datetime | None = None) -> ModelInfo:
        """Register the local model folder ``path`` under ``name`` (default: the folder's name),
        as a shadow candidate: checked (tokenizer, 384-dimension unit vectors), never downloaded."""
        self._require(actor)
        now = now or utcnow()
        folder = expand_user(path).resolve()
        kind = registry.detect_kind(folder)
        name = name or folder.name
        if not _NAME.match(name):
            raise UserError(f"model name {name!r}: use letters, digits, '.', '_' and '-' (at most 64)", param="name")
        if name == MODEL_NAME or self.store.model_row(name) is not None:
            raise UserError(f"a model named {name!r} is registered already (choose another with --name)",
                            param="name")
        try:
            dim = registry.probe(registry.RegisteredEmbedder(name, folder, kind))
        except ModelError as e:  # the user's folder, not a broken install
            raise UserError(f"{folder}: not a usable embedding model ({e})", param="path") from e
        registry.check_dimension(dim, folder)
        with self.store.transaction("add a model"):
            self._ensure_bundled(now)
            self.store.put_model_row(name, str(folder), kind, DIM, now, "shadow")
        return self._info(self.store.model_row(name))

    def model_shadow(self, name: str, *, actor: str | Principal | None = None, wait: bool = True,
                     progress: Callable | None = None, now: datetime | None = None) -> ShadowReport:
        """Embed the workspace's texts under ``name`` while the serving model serves. With ``wait``
        here and now (resumable: texts already embedded are skipped); otherwise in a background
        process (a thread of this one when it serves many threads: the team server)."""
        self._require(actor)
        now = now or utcnow()
        self.expire(now=now)
        row = self._row(name)
        if row.state == "serving":
            raise UserError(f"{name} serves already: shadow another model (see `workbench model list`)")
        if not wait:
            return self._background(name, actor)
        with self.store.transaction("shadow a model"):
            self._ensure_bundled(now)
            if row.state == "retired":
                self.store.set_model_state(name, "shadow")
        embedder = registry.embedder_for(row.name, row.path, row.kind, self.config.embedder)
        index = self.ws.index.current()
        items = index.embedding_items()
        have = self.store.embedded_hashes(name)
        todo = [(h, i) for h, i in items if h not in have]
        done, total, start = len(items) - len(todo), len(items), time.perf_counter()
        self.store.set_model_progress(name, done, total, utcnow())
        for at in range(0, len(todo), BATCH):
            chunk = todo[at:at + BATCH]
            texts = index.texts_of([i for _, i in chunk])
            self._let_go()
            self.ws.index.embed([h for h, _ in chunk], texts, embedder=embedder)  # stored under its name
            done += len(chunk)
            self.store.set_model_progress(name, done, total, utcnow())
            if progress:
                progress("shadow", done, total)
        return ShadowReport(name, total, len(todo), len(items) - len(todo), time.perf_counter() - start)

    def _let_go(self) -> None:
        """Between batches, on a DuckDB file held by this process alone: let go of it, so other
        processes (a search from another terminal) use the workspace while this one encodes."""
        if not getattr(self.store, "shared", False) and not getattr(self.store, "replicas", False):
            self.store.release()

    def _background(self, name: str, actor: str | Principal | None) -> ShadowReport:
        import os
        import subprocess
        import sys
        import threading

        if getattr(self.store, "shared", False):  # the team server: a thread, below the readers' priority
            def run() -> None:
                from ..store.background import lower_priority

                lower_priority()
                self.model_shadow(name, actor=actor, wait=True)

            threading.Thread(target=run, name=f"model-shadow-{name}", daemon=True).start()
            return ShadowReport(name, 0, 0, 0, 0.0, background=os.getpid())
        argv = [sys.executable, "-m", "workbench", "--workspace", str(self.root), "model", "shadow", name, "--wait"]
        if actor is not None:
            argv += ["--as", actor.name if isinstance(actor, Principal) else actor]
        log = open(self.root / "model-shadow.log", "ab")
        try:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        finally:
            log.close()
        return ShadowReport(name, 0, 0, 0, 0.0, background=child.pid)

    def missing(self, name: str) -> tuple[int, int]:
        """(texts ``name`` has no vector for, texts the index embeds)."""
        items = self.ws.index.current().embedding_items()
        have = self.store.embedded_hashes(name)
        return sum(1 for h, _ in items if h not in have), len(items)

    def model_promote(self, name: str, *, actor: str | Principal | None = None,
                      now: datetime | None = None) -> ModelInfo:
        """Serve ``name`` from now on: one transaction (the registry and the generation), refused
        while its shadow lacks a text the index embeds. The replaced model's vectors are kept for
        ``models.rollback_days``."""
        self._require(actor)
        now = now or utcnow()
        self.expire(now=now)
        row = self._row(name)
        if row.state == "serving":
            raise UserError(f"{name} serves already")
        lacking, total = self.missing(name)
        if lacking:
            raise UserError(f"the shadow of {name} is incomplete ({total - lacking}/{total} texts embedded): run "
                            f"`workbench model shadow {name}` (it resumes) and promote it when it is complete")
        embedder = registry.embedder_for(row.name, row.path, row.kind, self.config.embedder)
        embedder.load()  # a folder gone or broken is refused before anything switches
        with self.store.transaction("promote a model"):
            self._ensure_bundled(now)
            old = self.store.serving_model_row()
            self.store.set_model_state(old.name, "retired", retired_at=now)
            self.store.set_model_state(name, "serving", promoted_at=now, previous=old.name)
            self.store.bump_generation()
        self.ws.index.follow_serving()
        return self._info(self.store.model_row(name))

    def model_rollback(self, *, actor: str | Principal | None = None, now: datetime | None = None) -> ModelInfo:
        """Serve the model the serving one replaced, within the rollback window: its vectors are
        still stored, so nothing is embedded (texts added since are, by the index, as after any
        edit). The model rolled back from stays as a shadow (promote it again later)."""
        self._require(actor)
        now = now or utcnow()
        self.expire(now=now)
        row = self.store.serving_model_row()
        if row is None or not row.previous or row.promoted_at is None:
            raise UserError("nothing to roll back: no model was promoted (see `workbench model list`)")
        previous = self.store.model_row(row.previous)
        days = self.config.models_rollback_days
        if previous is None or previous.dropped_at is not None or now > row.promoted_at + timedelta(days=days):
            raise UserError(f"the rollback window of {row.name} closed {days} days after its promotion "
                            f"({_iso(row.promoted_at + timedelta(days=days))}): the vectors of {row.previous} "
                            f"are dropped; shadow it again (`workbench model shadow {row.previous}`) and promote it")
        with self.store.transaction("roll back the model"):
            self.store.set_model_state(row.name, "shadow")
            self.store.set_model_state(previous.name, "serving", promoted_at=previous.promoted_at)
            self.store.bump_generation()
        self.ws.index.follow_serving()
        return self._info(self.store.model_row(previous.name))

    def expire(self, *, now: datetime | None = None) -> list[str]:
        """Drop the vectors of models replaced more than ``models.rollback_days`` ago (once); the
        names of those dropped now. Nothing on a read-only workspace."""
        if not self.store.can_store_derived():
            return []
        now = now or utcnow()
        limit = now - timedelta(days=self.config.models_rollback_days)
        dropped = []
        for row in self.store.model_rows():
            if row.state == "retired" and row.dropped_at is None and row.retired_at is not None and row.retired_at < limit:
                with self.store.transaction("drop a replaced model's vectors"):
                    self.store.drop_embeddings(row.name)
                    self.store.mark_model_dropped(row.name, now)
                dropped.append(row.name)
        return dropped

    @staticmethod
    def build_int8(out: str | Path, *, force: bool = False) -> dict[str, Any]:
        """An int8-quantized copy of the bundled model in ``out`` (an ONNX model folder to ``model add``),
        and the cosine of its vectors against the bundled model's on the probe sentences."""
        from ..retrieval.embedder import Embedder

        folder = registry.build_int8(out, force=force)
        copy = registry.RegisteredEmbedder(folder.name, folder, "onnx")
        return {"path": str(folder), **registry.agreement(Embedder(), copy, list(registry.PROBES))}

    # -- comparing ----------------------------------------------------------------------------

    def pair(self, models: tuple[str, ...] | list[str] | None) -> tuple[str, str]:
        """The two models to compare: as given, else the serving one and the only shadow."""
        if models:
            if len(models) != 2:
                raise UserError("--compare-models takes two model names, or none (the serving model and its shadow)")
            for name in models:
                self._row(name)
            return models[0], models[1]
        serving = next(m for m in self.model_list() if m.state == "serving")
        shadows = [m.name for m in self.model_list() if m.state == "shadow"]
        if len(shadows) != 1:
            raise UserError("name the two models to compare (--compare-models A B): "
                            + (f"there are {len(shadows)} shadow models ({', '.join(shadows)})" if shadows
                               else "there is no shadow model (`workbench model add PATH`)"))
        return serving.name, shadows[0]

    def embedder(self, name: str):
        row = self._row(name)
        if row.dropped_at is not None:
            raise UserError(f"the vectors of {name} were dropped (its rollback window closed): shadow it again")
        return registry.embedder_for(row.name, row.path, row.kind, self.config.embedder)

    def model_index(self, name: str):
        """A search index of the workspace scored with ``name``'s vectors (its own IndexManager, which
        does not follow the serving model); refused while ``name`` lacks a text the index embeds."""
        from ..retrieval.manager import IndexManager

        embedder = self.embedder(name)
        if name != self.ws.index.embedder.name:
            lacking, total = self.missing(name)
            if lacking:
                raise UserError(f"{name} lacks {lacking} of the {total} texts' vectors: finish `workbench model "
                                f"shadow {name}` before comparing")
        return IndexManager(self.store, embedder, follow=False).current()

    def compare_golden(self, path: str | Path, models: tuple[str, ...] | list[str] | None = None, *,
                       pipelines: list[str] | None = None, now: datetime | None = None) -> dict[str, Any]:
        """The golden figures of two models side by side (default: the serving model and its shadow),
        each ranking with its own vectors and its own query vectors."""
        from ..retrieval import evaluate

        pair = self.pair(models)
        queries = evaluate.load_golden(path)
        for q in queries:
            self.principal(q["principal"])
        names = list(dict.fromkeys(pipelines or COMPARED))
        settings, floor, now = self.retrieval.settings(), self.retrieval.confidence_floor(), now or utcnow()
        out = {}
        for name in pair:
            found = evaluate.run_golden(self.model_index(name), queries, self.principal, settings, names, now,
                                        floor=floor)
            out[name] = found["metrics"]
        return {"set": "golden", "models": list(pair), "pipelines": names, "metrics": out}

    def compare_beir(self, folder: str, models: tuple[str, ...] | list[str] | None = None, *, split: str = "test",
                     pipelines: list[str] | None = None, cache: str | None = None,
                     progress: Callable | None = None) -> dict[str, Any]:
        """``compare_golden`` on a BEIR directory (each model's vectors cached by text hash in ``cache``)."""
        from .evaluation import Evaluation

        pair = self.pair(models)
        names = list(dict.fromkeys(pipelines or COMPARED))
        out = {}
        for name in pair:
            report = Evaluation.eval_beir(folder, split=split, pipelines=names, cache=cache, progress=progress,
                                          embedder=self.embedder(name))
            out[name] = {k: v for k, v in report.items() if k in names}
        return {"set": "beir", "models": list(pair), "pipelines": names, "metrics": out}


COMPARED = ("dense", "hybrid")  # the pipelines a model changes (bm25 is the same for both)
