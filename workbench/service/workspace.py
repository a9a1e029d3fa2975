"""What every feature of the service needs: the open workspace's folder, config, store, index
manager and principals. Features receive one ``Workspace`` (and the other features they call,
by name, in their constructors); none reaches another through a shared ``self``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..config import WorkspaceConfig
from ..models import Principal
from ..retrieval.manager import IndexManager
from ..store import Store


@dataclass
class Workspace:
    root: Path
    config: WorkspaceConfig
    store: Store
    index: IndexManager
    traces_expired_at: float | None = field(default=None, repr=False)  # when traces.retain_days was last applied

    def principal(self, name: str | Principal | None = None) -> Principal:
        """A known principal by name (``None``: the configured default), or a ``Principal`` as given,
        carrying what it receives through subscriptions *now* (``received``: receipts.py resolves
        them). A given Principal's ``received`` is never trusted: a long-lived holder (the TUI's
        ``me``, the server's token principal) would keep receiving after an unsubscribe or a removal
        from the set. Resolving is cached on the store's generation and published counter: cheap."""
        found = name if isinstance(name, Principal) else self.config.principal(name)
        from .receipts import receipts_for

        return receipts_for(self, found)


class Feature:
    """Base of the service's features: shorthand for the workspace's parts."""

    def __init__(self, ws: Workspace):
        self.ws = ws

    @property
    def store(self) -> Store:
        return self.ws.store

    @property
    def config(self) -> WorkspaceConfig:
        return self.ws.config

    @property
    def root(self) -> Path:
        return self.ws.root

    def principal(self, name: str | Principal | None = None) -> Principal:
        return self.ws.principal(name)
