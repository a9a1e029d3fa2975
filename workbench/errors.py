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


class SecretFound(UserError):
    """The text holds a credential; nothing is stored without --allow-secret."""


class WorkspaceBusy(UserError):
    """Another process holds the workspace's write lock."""


class WorkspaceMissing(UserError):
    """No workspace at the resolved location."""


class StoreError(WorkbenchError):
    """The database failed in a way that is not the user's fault (exit 1)."""


class ModelError(WorkbenchError):
    """The bundled embedding model could not be loaded: a broken install, not the user's input
    (exit 1). A reranker folder the user named that holds no model is a ``UserError``."""
