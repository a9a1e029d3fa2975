"""The one error hierarchy of workbench.

Every error carries a message meant for a person; faces print it (CLI: stderr and
exit code) or show it (TUI: a notification). Library errors (duckdb, yaml,
jsonschema, model loading) are translated into these at the boundary with
``raise ... from e``. This module must not import anything heavy.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, *, param: str | None = None):
        super().__init__(message)
        self.message = message
        # The API parameter the message is about ("reason", "until", ...). Core messages name no
        # face's flags: each face adds its own hint for ``param`` (the CLI its option, MCP its argument).
        self.param = param

    def __str__(self) -> str:
        return self.message


class UserError(WorkbenchError):
    """Bad input, an unknown name or id, or an action that is not allowed (exit 2)."""

    exit_code = 2


class ValidationError(UserError):
    """A fragment file or the workspace config does not follow its schema."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None):
        self.file = file
        self.field = field
        where = ": ".join(p for p in (file, field) if p)
        super().__init__(f"{where}: {message}" if where else message)
        self.problem = message


class NotFound(UserError):
    """An unknown fragment id, version or principal (also used when scope hides a fragment)."""


class PermissionDenied(UserError):
    """The principal may not do this in this scope."""


class Conflict(UserError):
    """The fragment changed since the version the caller started from (a lost update averted),
    or an import does not fit the local history."""


class ReadOnly(UserError):
    """The workspace cannot be written (read-only file, folder or filesystem)."""


class RateLimited(UserError):
    """Too many of one kind of write by one principal in a window (agent proposals: ``proposals.per_hour``
    in workbench.yaml); nothing was stored. The team server answers 429."""


class SecretFound(UserError):
    """The text holds a credential; nothing is stored without --allow-secret."""


class Unauthenticated(UserError):
    """A request without a valid token (the team server answers 401). ``reason`` says why, for the
    server's log only: "missing", "malformed", "unknown", "revoked", "expired" or "unknown-principal".
    The message is the same for every reason but "missing", so a client cannot tell whether a
    token id exists."""

    REASONS = ("missing", "malformed", "unknown", "revoked", "expired", "unknown-principal")
    MISSING = "authentication required: no token was given"
    INVALID = "authentication required: the token is not valid"

    def __init__(self, reason: str, *, token_id: str | None = None):
        if reason not in self.REASONS:
            raise ValueError(f"unknown reason {reason!r} (valid: {', '.join(self.REASONS)})")
        super().__init__(self.MISSING if reason == "missing" else self.INVALID)
        self.reason = reason
        self.token_id = token_id  # the id part when the token was well formed (for logs), else None


class WorkspaceBusy(UserError):
    """Another process holds the workspace's write lock."""


class SchemaTooNew(UserError):
    """The workspace's schema was upgraded by a newer workbench than this one (every command refuses it)."""


class BackupInvalid(UserError):
    """A backup file that is not one, is damaged, or was changed after it was written."""


class WorkspaceMissing(UserError):
    """No workspace at the resolved location."""


class StoreError(WorkbenchError):
    """The database failed in a way that is not the user's fault (exit 1)."""


class StoreUnavailable(StoreError):
    """The database cannot be reached now (a PostgreSQL restart, a network cut): retry shortly.
    The team server answers 503 with Retry-After."""


class ModelError(WorkbenchError):
    """The bundled embedding model could not be loaded: a broken install, not the user's input
    (exit 1). A reranker folder the user named that holds no model is a ``UserError``."""
