"""Store queries for secret-guard overrides: versions stored with --allow-secret."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any


class OverrideQueries:
    # The host class (Store) provides _q and transaction().

    def put_secret_override(self, fragment_id: str, version: int, actor: str, at: datetime,
                            findings: list[dict[str, Any]]) -> None:
        """Record that ``version`` of a fragment was stored despite the guard (and an event for it)."""
        with self.transaction():
            self.forget_generation()  # and the flagged set cached with it
            self._q("INSERT OR REPLACE INTO secret_overrides VALUES (?, ?, ?, ?, ?)",
                    [fragment_id, version, actor, at, json.dumps(findings)])
            self.add_event("allow-secret", actor=actor, fragment_id=fragment_id,
                           detail={"version": version, "file": "; ".join(dict.fromkeys(f["file"] for f in findings)),
                                   "findings": "; ".join(f["findings"] for f in findings)}, at=at)

    def secret_flagged(self) -> frozenset[str]:
        """Ids of fragments whose current version was stored with an override. Every search asks,
        so the set is kept until the next write that could change it (``forget_generation``:
        each commit of a new version, each override, a rollback, a reconnect); inside a
        transaction it is read afresh and not kept."""
        held = getattr(self, "_flagged", None)
        if held is not None and held[0] == self.gen_epoch and not self._depth:
            return held[1]
        epoch = self.gen_epoch
        rows = self._q("SELECT o.fragment_id FROM secret_overrides o JOIN fragments f "
                       "ON f.id = o.fragment_id AND f.version = o.version")
        found = frozenset(r[0] for r in rows)
        if epoch == self.gen_epoch and not self._depth:  # no write meanwhile (shared mode)
            self._flagged = (epoch, found)
        return found
