"""workbench: a local-first knowledge workbench for curating what AI agents know.

    from workbench import Workbench
    wb = Workbench.open(".workbench")                        # the workspace, in this process
    wb = Workbench.connect("https://kb.internal", token)     # the same API, over a team server

The public API is imported lazily so that `workbench --help` stays fast and
never imports torch.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Workbench", "Scope", "Principal", "Fragment", "Version", "WorkbenchError", "connect", "__version__"]


def connect(url: str, token: str | None = None):
    """The core API of the workspace a team server at ``url`` serves, as ``token``'s principal
    (default: ``$WORKBENCH_TOKEN``): the same methods, types and errors as ``Workbench.open``'s,
    each a call to the server (``Workbench.connect``). For notebooks and
    scripts when the workspace is served, or lives in PostgreSQL behind replicas."""
    from .service import Workbench

    return Workbench.connect(url, token)


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
