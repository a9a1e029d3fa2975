"""Store queries for the embedding-model registry: the ``embedding_models`` table (migration 016)
and the per-model housekeeping of the ``embeddings`` table (which hashes a model has, dropping a
retired model's vectors).

Written once for both backends (plain SQL with ``?`` parameters, which the PostgreSQL store
translates). A read-only database opened before migration 016 has no registry: it answers "no
models registered", so the bundled model serves, as it did before the registry existed. What the
states mean and who may change them is decided above the store (service/models.py, policy).
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

_COLS = ("name, path, kind, dimension, added_at, state, promoted_at, previous, retired_at, dropped_at, "
         "shadow_done, shadow_total, shadow_at")


class ModelRow(NamedTuple):
    name: str
    path: str
    kind: str
    dimension: int
    added_at: datetime
    state: str
    promoted_at: datetime | None
    previous: str | None
    retired_at: datetime | None
    dropped_at: datetime | None
    shadow_done: int
    shadow_total: int
    shadow_at: datetime | None


class ModelQueries:
    # The host class (Store or PgStore) provides _q, con, transaction() and schema_pending.

    _model_table = False  # seen once: a table is never removed by a newer schema

    def _no_model_table(self) -> bool:
        """No registry here: a read-only database from before migration 016 (it is read-compatible,
        so still opened), or one left at an older schema by a test of upgrades."""
        if self._model_table:
            return False
        found = self._q("SELECT count(*) FROM information_schema.tables WHERE table_name = 'embedding_models'")[0][0]
        self._model_table = bool(found)
        return not found

    def model_rows(self) -> list[ModelRow]:
        """Every registered model, oldest first."""
        if self._no_model_table():
            return []
        return [ModelRow(*r) for r in self._q(f"SELECT {_COLS} FROM embedding_models ORDER BY added_at, name")]

    def model_row(self, name: str) -> ModelRow | None:
        if self._no_model_table():
            return None
        rows = self._q(f"SELECT {_COLS} FROM embedding_models WHERE name = ?", [name])
        return ModelRow(*rows[0]) if rows else None

    def serving_model_row(self) -> ModelRow | None:
        """The registered model that serves (None: none registered serves, so the bundled one does)."""
        if self._no_model_table():
            return None
        rows = self._q(f"SELECT {_COLS} FROM embedding_models WHERE state = 'serving'")
        return ModelRow(*rows[0]) if rows else None

    def put_model_row(self, name: str, path: str, kind: str, dimension: int, added_at: datetime,
                      state: str) -> None:
        self._q("INSERT INTO embedding_models (name, path, kind, dimension, added_at, state) VALUES (?, ?, ?, ?, ?, ?)",
                [name, path, kind, dimension, added_at, state])

    def set_model_state(self, name: str, state: str, *, promoted_at: datetime | None = None,
                        previous: str | None = None, retired_at: datetime | None = None) -> None:
        """Move a model to ``state``; the other columns are set as given (None clears them)."""
        self._q("UPDATE embedding_models SET state = ?, promoted_at = ?, previous = ?, retired_at = ? WHERE name = ?",
                [state, promoted_at, previous, retired_at, name])

    def set_model_progress(self, name: str, done: int, total: int, at: datetime) -> None:
        self._q("UPDATE embedding_models SET shadow_done = ?, shadow_total = ?, shadow_at = ? WHERE name = ?",
                [done, total, at, name])

    def mark_model_dropped(self, name: str, at: datetime) -> None:
        self._q("UPDATE embedding_models SET dropped_at = ? WHERE name = ?", [at, name])

    def embedded_hashes(self, model: str) -> set[str]:
        """The text hashes ``model`` has a stored vector for."""
        return {r[0] for r in self._q("SELECT text_hash FROM embeddings WHERE model = ?", [model])}

    def drop_embeddings(self, model: str) -> int:
        """Remove every stored vector of ``model``; how many there were."""
        n = self._q("SELECT count(*) FROM embeddings WHERE model = ?", [model])[0][0]
        if n:
            self._q("DELETE FROM embeddings WHERE model = ?", [model])
        return int(n)
