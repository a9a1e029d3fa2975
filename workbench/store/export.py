"""Store queries for exports: curated sets and their manual members; bundle imports."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from .rows import VersionWrite


class ExportQueries:
    # The host class (Store) provides _q and transaction().

    def get_set(self, name: str) -> dict[str, Any] | None:
        rows = self._q("SELECT name, owner, scope, query, created_at FROM sets WHERE name = ?", [name])
        if not rows:
            return None
        r = rows[0]
        members = self._q("SELECT fragment_id, mode FROM set_members WHERE set_name = ? ORDER BY fragment_id", [name])
        return {"name": r[0], "owner": r[1], "scope": r[2], "query": r[3], "created_at": r[4],
                "include": [m[0] for m in members if m[1] == "include"],
                "exclude": [m[0] for m in members if m[1] == "exclude"]}

    def set_names(self) -> list[str]:
        return [r[0] for r in self._q("SELECT name FROM sets ORDER BY name")]

    def put_set(self, name: str, owner: str, scope: str, query: str | None, at: datetime) -> None:
        self._q("INSERT INTO sets VALUES (?, ?, ?, ?, ?)", [name, owner, scope, query, at])

    def put_member(self, name: str, fragment_id: str, mode: str | None) -> None:
        with self.transaction():
            self._q("DELETE FROM set_members WHERE set_name = ? AND fragment_id = ?", [name, fragment_id])
            if mode is not None:
                self._q("INSERT INTO set_members VALUES (?, ?, ?)", [name, fragment_id, mode])

    def import_history(self, writes: list[VersionWrite]) -> None:
        """Write versions of one fragment (from a bundle) in order, the last one made current:
        earlier ones go straight into the history, the last through ``write_versions``."""
        with self.transaction():
            for w in writes[:-1]:
                self._q("INSERT INTO fragment_versions VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [w.fragment_id, w.number, w.author, w.at, w.reason, w.content.content_hash(),
                         json.dumps(w.content.to_dict())])
            self.write_versions(writes[-1:])
