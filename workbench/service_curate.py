"""The curation half of ``Workbench``: pins (and later staleness, merges, nudges)."""

from __future__ import annotations

from datetime import datetime

from .curate.pins import Pin, check_pin, from_row
from .errors import NotFound, PermissionDenied, UserError
from .ingest.files import parse_timestamp
from .models import Principal, Scope
from .store.store import utcnow


class CurateMixin:
    def pin(self, fragment_id: str, *, scope: Scope | str, actor: str | Principal | None = None,
            reason: str | None = None, until: datetime | str | None = None) -> Pin:
        who = self.principal(actor)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        fragment = self.store.get(fragment_id)
        if fragment is None:
            raise NotFound(f"unknown fragment {fragment_id!r}")
        check_pin(who, fragment.scope, where, fragment_id, fragment.status)
        if isinstance(until, str):
            try:
                until = parse_timestamp(until)
            except ValueError as e:
                raise UserError(f"bad --until {until!r}: expected a date like 2027-01-31") from e
        now = utcnow()
        if until is not None and until <= now:
            raise UserError(f"--until {until.date()} is in the past")
        with self.store.transaction():
            self.store.put_pin(fragment_id, str(where), who.name, now, reason, until)
            self.store.add_event("pin", actor=who.name, fragment_id=fragment_id,
                                 detail={"scope": str(where), "reason": reason,
                                         "until": until.isoformat() if until else None})
        return Pin(fragment_id, where, who.name, now, reason, until)

    def unpin(self, fragment_id: str, *, scope: Scope | str, actor: str | Principal | None = None,
              reason: str | None = None) -> None:
        who = self.principal(actor)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        if not who.leads(where):
            led = ", ".join(str(s) for s in who.lead_of) or "no scope"
            raise PermissionDenied(f"{who.name} is not a tech lead of {where} (leads: {led})")
        with self.store.transaction():
            if not self.store.delete_pin(fragment_id, str(where)):
                raise NotFound(f"{fragment_id} is not pinned in {where}")
            self.store.add_event("unpin", actor=who.name, fragment_id=fragment_id,
                                 detail={"scope": str(where), "reason": reason})

    def pins(self, *, scope: Scope | str | None = None, principal: str | Principal | None = None,
             include_expired: bool = False) -> list[Pin]:
        """Pins in force (or all), in scopes the principal can see, optionally of one scope."""
        who = self.principal(principal)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        rows = self.store.pins(now=None if include_expired else utcnow())
        pins = [from_row(r) for r in rows]
        return [p for p in pins if (where is None or p.scope == where) and who.can_see(p.scope)]
