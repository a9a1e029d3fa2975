"""API tokens: per-principal bearer tokens for the team server (create, list, revoke, authenticate).

A token is ``wbt_<id>_<secret>``: the id (12 lowercase hex characters) is public and names the
token in lists, revocations and logs; the secret is ``secrets.token_urlsafe(32)``. Only the sha256
of the whole token is stored, so the token is shown once, when it is created. Authentication is
one primary-key lookup and a constant-time hash comparison; every failure but a missing token
gives the client the same message (``Unauthenticated.reason`` tells the log why).

Authentication reads no store: every token's row (id, principal, hash, dates) is held in memory,
read once per connection to the database and kept current by ``token_create`` and
``token_revoke`` as they commit. While a workspace is open no other process writes it (DuckDB
holds the file), so the memory is the table: a revocation refuses the token on the very next
request, whichever face revoked it, and a wrong token is refused without a query (a flood of
them costs a hash and a dictionary lookup each). ``identify`` is that check alone; recording
a use (at most once a minute per token) is a write, ``record_use``, which the caller may run
elsewhere (the team server: on a worker thread, never on its event loop).

Who may manage whose tokens is ``policy.may_manage_token``'s to decide. Here ``actor=None`` is the
local administrator: whoever can write the database file and runs the CLI on it directly. A face
that serves other people (the team server) must always pass the authenticated principal, never
None. This module does no HTTP and keeps no state between calls.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from .. import policy
from ..errors import NotFound, Unauthenticated, UserError
from ..models import Principal
from ..models import utcnow
from ..store.tokens import TokenRow
from .workspace import Feature

PREFIX = "wbt"
MAX_EXPIRES_DAYS = 3650
MAX_NOTE_CHARS = 200
TOUCH_INTERVAL = timedelta(minutes=1)   # last_used is recorded at most this often per token
_ID = re.compile(r"[0-9a-f]{12}")
_TOKEN = re.compile(r"wbt_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")  # token_urlsafe(32) is 43 characters
_MAX_RAW = 200   # longer input is malformed before any regular expression looks at it
_NOWHERE = hashlib.sha256(b"no such token").hexdigest()  # compared against when the id is unknown


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.replace(microsecond=0).isoformat() + "Z"


def token_hash(raw: str) -> str:
    """The stored form of a token: sha256 hex of the whole token."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def token_id_of(raw: str) -> str | None:
    """The id part of a well-formed token, else None."""
    if len(raw) > _MAX_RAW:
        return None
    match = _TOKEN.fullmatch(raw)
    return match.group(1) if match else None


@dataclass(frozen=True)
class IssuedToken:
    """A token just created. ``token`` is the only copy there will ever be: show it once."""

    token: str = field(repr=False)
    id: str
    principal: str
    created: datetime
    expires: datetime | None
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "id": self.id, "principal": self.principal, "created": _iso(self.created),
                "expires": _iso(self.expires), "note": self.note}

    def __repr__(self) -> str:  # never the secret: reprs end up in logs and notebooks
        return (f"IssuedToken(id={self.id!r}, principal={self.principal!r}, expires={_iso(self.expires)!r}, "
                f"token='{PREFIX}_{self.id}_…')")


@dataclass(frozen=True)
class TokenInfo:
    """What is known about a token (never its secret or hash). ``status`` is "active", "revoked"
    or "expired" as of the call. ``already_revoked`` is set on ``token_revoke``'s answer only (True
    when an earlier call revoked it, and this one changed nothing), else None."""

    id: str
    principal: str
    created: datetime
    expires: datetime | None
    revoked: datetime | None
    last_used: datetime | None
    note: str | None
    status: str
    already_revoked: bool | None = None

    @classmethod
    def from_row(cls, row: TokenRow, now: datetime, *, already_revoked: bool | None = None) -> "TokenInfo":
        status = ("revoked" if row.revoked_at is not None else
                  "expired" if row.expires_at is not None and now >= row.expires_at else "active")
        return cls(row.id, row.principal, row.created_at, row.expires_at, row.revoked_at, row.last_used_at,
                   row.note, status, already_revoked)

    def to_dict(self) -> dict[str, Any]:
        data = {"id": self.id, "principal": self.principal, "created": _iso(self.created),
                "expires": _iso(self.expires), "revoked": _iso(self.revoked), "last_used": _iso(self.last_used),
                "note": self.note, "status": self.status}
        if self.already_revoked is not None:
            data["already_revoked"] = self.already_revoked
        return data


class Identified(NamedTuple):
    """A token checked good: its principal, its id, and whether its use is due to be recorded
    (``Tokens.record_use``: the last record is a minute old or more)."""

    principal: Principal
    token_id: str
    use_due: bool


class Tokens(Feature):
    """Create, list and revoke API tokens; authenticate a request's bearer token to its principal."""

    def __init__(self, ws):
        super().__init__(ws)
        self._lock = threading.Lock()
        self._rows: dict[str, TokenRow] | None = None   # every token by id; replaced whole, never changed
        self._used: dict[str, datetime] = {}              # id -> the last use recorded (or claimed)

    def _view(self) -> dict[str, TokenRow]:
        """Every token by id, read from the store when not held (first use, after ``forget_tokens``)."""
        rows = self._rows
        if rows is None:
            with self._lock:
                if self._rows is None:
                    self._rows = {row.id: row for row in self.store.token_rows()}
                    self._used = {row.id: row.last_used_at for row in self._rows.values() if row.last_used_at}
                rows = self._rows
        return rows

    def _remember(self, row: TokenRow) -> None:
        """A token row as just committed (created or revoked): the view is replaced, never edited,
        so a reader on another thread sees the old dictionary or the new one."""
        with self._lock:
            if self._rows is not None:
                self._rows = {**self._rows, row.id: row}

    def load_tokens(self) -> int:
        """Read every token into memory now (a server, before it listens), so no request does. The count."""
        return len(self._view())

    def forget_tokens(self) -> None:
        """Drop the tokens held in memory (the database was let go: another process may write it
        meanwhile); the next check reads them again."""
        with self._lock:
            self._rows, self._used = None, {}

    def _actor(self, actor: Principal | str | None) -> Principal | None:
        """None stays None (the local administrator); a name must be a known principal."""
        return None if actor is None else self.principal(actor)

    def token_create(self, principal: str, *, expires_days: int | None = None, note: str | None = None,
                     actor: Principal | str | None = None, now: datetime | None = None) -> IssuedToken:
        """A new token for ``principal`` (a principal of workbench.yaml), valid for ``expires_days``
        (1..3650; None: until revoked). The result holds the token; only its hash is stored."""
        who = self._actor(actor)
        name = principal.name if isinstance(principal, Principal) else principal
        if not isinstance(name, str) or name not in self.config.principals:
            known = ", ".join(sorted(self.config.principals))
            raise UserError(f"cannot create a token for unknown principal {name!r}: a token is for a principal "
                            f"of workbench.yaml (known: {known})")
        policy.may_create_token(who, name).check()
        days = _check_expires(expires_days)
        note = _check_note(note)
        now = now or utcnow()
        expires = now + timedelta(days=days) if days is not None else None
        with self.store.transaction("create a token"):
            token_id = secrets.token_hex(6)
            while self.store.token_row(token_id) is not None:  # 48 bits: a clash is all but impossible
                token_id = secrets.token_hex(6)
            raw = f"{PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
            self.store.put_token(token_id, name, token_hash(raw), now, expires, note)
            self.store.add_event("token.create", actor=who.name if who else None, at=now,
                                 detail={"token_id": token_id, "principal": name, "expires": _iso(expires),
                                         "note": note})
        self._remember(TokenRow(token_id, name, token_hash(raw), now, expires, None, None, note))
        return IssuedToken(raw, token_id, name, now, expires, note)

    def token_list(self, *, actor: Principal | str | None = None, now: datetime | None = None) -> list[TokenInfo]:
        """The tokens ``actor`` may manage (an admin or the local administrator: all; anyone else:
        their own), oldest first, with their status as of ``now``."""
        who = self._actor(actor)
        now = now or utcnow()
        return [TokenInfo.from_row(row, now) for row in self.store.token_rows()
                if policy.may_manage_token(who, row.principal)]

    def token_revoke(self, token_id: str, *, actor: Principal | str | None = None,
                     now: datetime | None = None) -> TokenInfo:
        """Revoke a token by its id: it stops authenticating at once. Revoking a revoked token changes
        nothing and says so (``already_revoked``). A token the actor may not manage is refused as an
        unknown id, so its existence is not revealed."""
        who = self._actor(actor)
        if not isinstance(token_id, str) or not _ID.fullmatch(token_id):
            raise NotFound(_not_an_id(token_id))
        now = now or utcnow()
        with self.store.transaction("revoke a token"):
            row = self.store.token_row(token_id)
            if row is None or not policy.may_manage_token(who, row.principal):
                raise NotFound(f"unknown token id {token_id!r}")
            if row.revoked_at is not None:
                self._remember(row)
                return TokenInfo.from_row(row, now, already_revoked=True)
            self.store.revoke_token(token_id, now)
            self.store.add_event("token.revoke", actor=who.name if who else None, at=now,
                                 detail={"token_id": token_id, "principal": row.principal})
        self._remember(row._replace(revoked_at=now))  # committed: refused from the next check on
        return TokenInfo.from_row(row._replace(revoked_at=now), now, already_revoked=False)

    def authenticate(self, raw: str | None, *, now: datetime | None = None) -> Principal:
        """The principal whose token ``raw`` is (the bearer token, without the "Bearer " scheme).
        Raises ``Unauthenticated`` (exit 2; a server answers 401) when it is missing, malformed,
        unknown, revoked, expired or its principal left workbench.yaml. Checked in memory
        (``identify``); records the use at most once a minute per token, and never fails because
        of that."""
        found = self.identify(raw, now=now)
        if found.use_due:
            self.record_use(found.token_id, now=now)
        return found.principal

    def identify(self, raw: str | None, *, now: datetime | None = None) -> Identified:
        """``authenticate`` without recording the use: no store read, no write (the tokens are
        held in memory), so it may run where waiting is not allowed. When the use is due to be
        recorded, this call claims it (``use_due``; concurrent checks of the token do not) and
        the caller runs ``record_use``. Raises ``Unauthenticated`` as ``authenticate``."""
        if raw is None or not raw.strip():
            raise Unauthenticated("missing")
        raw = raw.strip()
        token_id = token_id_of(raw)
        if token_id is None:
            raise Unauthenticated("malformed")
        row = self._view().get(token_id)
        matches = hmac.compare_digest(token_hash(raw), row.token_hash if row is not None else _NOWHERE)
        if row is None or not matches:  # (the same work either way)
            raise Unauthenticated("unknown", token_id=token_id)
        now = now or utcnow()
        if row.revoked_at is not None:
            raise Unauthenticated("revoked", token_id=token_id)
        if row.expires_at is not None and now >= row.expires_at:
            raise Unauthenticated("expired", token_id=token_id)
        who = self.config.principals.get(row.principal)
        if who is None:
            raise Unauthenticated("unknown-principal", token_id=token_id)
        with self._lock:
            last = self._used.get(token_id)
            due = last is None or now - last >= TOUCH_INTERVAL
            if due:
                self._used[token_id] = now  # claimed: one record a minute, even when it fails
        return Identified(who, token_id, due)

    def record_use(self, token_id: str, *, now: datetime | None = None) -> None:
        """Record a use of a token (``last_used`` in ``token list``). Best effort: a read-only
        workspace records nothing, and a failure (or another writer in progress, on a server)
        skips the record rather than fail or wait."""
        try:
            if self.store.can_store_derived():   # a read-only workspace records no uses
                self.store.touch_token(token_id, now or utcnow())
        except Exception:  # best effort: a failed record of use must never fail authentication
            pass


def _not_an_id(given: Any) -> str:
    """What ``token_revoke`` says of a malformed id. It never repeats what was given: that may be a
    whole token or part of one, pasted by mistake, and a message ends up in terminals and logs. A
    token's id is public, so the id of what looks like a whole token is named."""
    text = given.strip() if isinstance(given, str) else ""
    head = text[len(PREFIX) + 1:len(PREFIX) + 13]
    if text.startswith(f"{PREFIX}_") and _ID.fullmatch(head):
        return (f"that is a token, not a token id: revoke it by its id, {head} (nothing was revoked, and nothing "
                "else of what was given is repeated)")
    return ("unknown token id: an id is 12 lowercase hex characters, as `token list` shows (what was given is "
            "not repeated)")


def _check_expires(days: Any) -> int | None:
    if days is None:
        return None
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_EXPIRES_DAYS:
        raise UserError(f"a token expires after 1 to {MAX_EXPIRES_DAYS} days, not {days!r}", param="expires_days")
    return days


def _check_note(note: Any) -> str | None:
    if note is None:
        return None
    if not isinstance(note, str):
        raise UserError(f"a token's note is text, not {type(note).__name__}", param="note")
    note = note.strip()
    if len(note) > MAX_NOTE_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in note):
        raise UserError(f"a token's note is one line of at most {MAX_NOTE_CHARS} characters", param="note")
    return note or None
