"""Store queries for API tokens: the ``tokens`` table (migration 008).

Rows hold the sha256 of a token, never the token. Authentication reads one row by its primary
key (``token_row``). A read-only database opened before migration 008 has no ``tokens`` table:
it holds no tokens, so reads answer "none" instead of failing.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

_COLS = "id, principal, token_hash, created_at, expires_at, revoked_at, last_used_at, note"


class TokenRow(NamedTuple):
    id: str
    principal: str
    token_hash: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    note: str | None


class TokenQueries:
    # The host class (Store) provides _q, con, schema_pending, and in shared mode shared and _write_lock.

    def _no_tokens_table(self) -> bool:
        """A read-only database from before migration 008 (it is read-compatible, so still opened)."""
        _ = self.con  # (re)connect first: schema_pending is decided on connect
        return any(name == "tokens" for _, name in self.schema_pending)

    def token_row(self, token_id: str) -> TokenRow | None:
        """One token by id: a primary-key lookup (what every authenticated request costs)."""
        if self._no_tokens_table():
            return None
        rows = self._q(f"SELECT {_COLS} FROM tokens WHERE id = ?", [token_id])
        return TokenRow(*rows[0]) if rows else None

    def token_rows(self, *, principal: str | None = None) -> list[TokenRow]:
        """Every token (or one principal's), oldest first."""
        if self._no_tokens_table():
            return []
        sql, params = f"SELECT {_COLS} FROM tokens", []
        if principal is not None:
            sql += " WHERE principal = ?"
            params.append(principal)
        return [TokenRow(*r) for r in self._q(sql + " ORDER BY created_at, id", params)]

    def put_token(self, token_id: str, principal: str, token_hash: str, created_at: datetime,
                  expires_at: datetime | None, note: str | None) -> None:
        self._q("INSERT INTO tokens (id, principal, token_hash, created_at, expires_at, note) "
                "VALUES (?, ?, ?, ?, ?, ?)", [token_id, principal, token_hash, created_at, expires_at, note])

    def revoke_token(self, token_id: str, at: datetime) -> None:
        """Mark a token revoked (a revoked token stays revoked: its first revocation time is kept)."""
        self._q("UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [at, token_id])

    def touch_token(self, token_id: str, at: datetime) -> bool:
        """Record a use of the token (authentication calls this at most once a minute per token).
        Best effort: in shared mode (many threads, one writer at a time) it records nothing and
        returns False when another thread is writing, rather than wait behind that write."""
        sql, params = "UPDATE tokens SET last_used_at = ? WHERE id = ?", [at, token_id]
        lock = getattr(self, "_write_lock", None)
        if not getattr(self, "shared", False) or lock is None:
            self._q(sql, params)
            return True
        if not lock.acquire(blocking=False):
            return False
        try:
            self._q(sql, params)
        finally:
            lock.release()
        return True
