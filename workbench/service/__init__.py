"""The core API: ``Workbench`` and the features it composes.

Every face (CLI, TUI, MCP, notebooks) calls this package and nothing below it decides a rule.
"""

from .facade import Workbench

__all__ = ["Workbench"]
