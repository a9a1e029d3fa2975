"""The store: the only place SQL lives.

``Store`` wraps one DuckDB connection to a workspace file and offers typed reads
and transactional writes of fragments, versions and events.
"""

from .store import Store

__all__ = ["Store"]
