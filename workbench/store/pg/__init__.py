"""The PostgreSQL + pgvector backend: the same store interface as the DuckDB one, for a
workspace shared by server replicas on several machines. Nothing above the store layer
imports this package by name: ``workbench.store.open_store`` chooses it from the workspace's
``store:`` setting."""

from .store import PgStore

__all__ = ["PgStore"]
