"""Store queries for exports: curated sets and their manual members; bundle imports."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from .rows import VersionWrite


class ExportQueries:
    # The host class (Store) provides _q and transaction().

    def get_set(self, name: str, scope: str) -> dict[str, Any] | None:
        """The set named ``name`` in ``scope`` (sets are named within their scope), or None."""
        found = self.sets_named(name, scope)
        return found[0] if found else None

    def sets_named(self, name: str, scope: str | None = None) -> list[dict[str, Any]]:
        """Every set named ``name`` (in ``scope`` only, when given), by scope, with its members."""
        rows = self._q("SELECT name, owner, scope, query, created_at, picked FROM sets WHERE name = ? AND "
                       "(? IS NULL OR scope = ?) ORDER BY scope", [name, scope, scope])
        out = []
        for r in rows:
            members = self._q("SELECT fragment_id, mode FROM set_members WHERE set_name = ? AND set_scope = ? "
                              "ORDER BY fragment_id", [r[0], r[2]])
            out.append({"name": r[0], "owner": r[1], "scope": r[2], "query": r[3], "created_at": r[4],
                        "picked": bool(r[5]),
                        "include": [m[0] for m in members if m[1] == "include"],
                        "exclude": [m[0] for m in members if m[1] == "exclude"]})
        return out

    def set_names(self) -> list[tuple[str, str, str]]:
        """(name, scope, owner) of every set, by name then scope."""
        return [tuple(r) for r in self._q("SELECT name, scope, owner FROM sets ORDER BY name, scope")]

    def put_set(self, name: str, owner: str, scope: str, query: str | None, at: datetime, picked: bool = False
                ) -> None:
        """A new set; ``picked``: its members are exactly its hand includes (no scope base, no query)."""
        self._q("INSERT INTO sets (name, owner, scope, query, created_at, picked) VALUES (?, ?, ?, ?, ?, ?)",
                [name, owner, scope, query, at, bool(picked)])

    def put_member(self, name: str, scope: str, fragment_id: str, mode: str | None) -> None:
        with self.transaction():
            self._q("DELETE FROM set_members WHERE set_name = ? AND set_scope = ? AND fragment_id = ?",
                    [name, scope, fragment_id])
            if mode is not None:
                self._q("INSERT INTO set_members VALUES (?, ?, ?, ?)", [name, scope, fragment_id, mode])

    def import_history(self, writes: list[VersionWrite]) -> None:
        """Write versions of one fragment (from a bundle) in order, the last one made current:
        earlier ones go straight into the history, the last through ``write_versions``."""
        with self.transaction():
            for w in writes[:-1]:
                self._q("INSERT INTO fragment_versions VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [w.fragment_id, w.number, w.author, w.at, w.reason, w.content.content_hash(),
                         json.dumps(w.content.to_dict())])
            self.write_versions(writes[-1:])
