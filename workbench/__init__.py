"""workbench: a local-first knowledge workbench for curating what AI agents know.

    from workbench import Workbench
    wb = Workbench.open(".workbench")

The public API is imported lazily so that `workbench --help` stays fast and
never imports torch.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Workbench", "Scope", "Principal", "Fragment", "Version", "WorkbenchError", "__version__"]


def __getattr__(name: str):
    if name == "Workbench":
        from .service import Workbench

        return Workbench
    if name in ("Scope", "Principal", "Fragment", "Version"):
        from . import models

        return getattr(models, name)
    if name == "WorkbenchError":
        from .errors import WorkbenchError

        return WorkbenchError
    raise AttributeError(f"module 'workbench' has no attribute {name!r}")
