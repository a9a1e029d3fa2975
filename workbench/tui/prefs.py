"""The TUI's remembered view choices (Search's explain pane shown or hidden, ...), per principal.

A choice a person makes about how a screen looks should stick: across searches, screen switches
and app restarts. The choices live in a small JSON file, ``tui-prefs.json``, in the workspace folder
(so ``WORKBENCH_HOME`` relocates them with everything else), one entry per principal, as
``{"principals": {"marco.bianchi": {"search.explain": false}}}``. A TUI on a team server's facade
(no folder of its own) keeps them in ``$XDG_STATE_HOME/workbench/tui-prefs.json`` instead.

It must hold view choices only: never data, never a secret, nothing the core decides. It never
fails the app: a missing, unreadable or corrupt file reads as the defaults, and a file that cannot
be written leaves the choice in force for this session only. Writes replace the file whole (0600).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FILE_NAME = "tui-prefs.json"
MAX_BYTES = 64 * 1024  # a preferences file larger than this is not ours: read as the defaults


def prefs_path(workbench: Any) -> Path:
    """Where the choices of a TUI on ``workbench`` live: its workspace folder, else the user's state dir."""
    root = getattr(workbench, "root", None)
    if isinstance(root, (str, os.PathLike)):   # a team server's facade has no folder (nor a root)
        return Path(root) / FILE_NAME
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "workbench" / FILE_NAME


class Prefs:
    """One principal's view choices, read once and written on every change."""

    def __init__(self, path: Path, principal: str) -> None:
        self.path, self.principal = path, principal
        self._mine: dict[str, Any] = dict(self._read().get("principals", {}).get(principal, {}))

    def _read(self) -> dict:
        try:
            with open(self.path, "rb") as f:
                data = f.read(MAX_BYTES + 1)
            if len(data) > MAX_BYTES:
                return {}
            loaded = json.loads(data.decode("utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(loaded, dict) or not isinstance(loaded.get("principals", {}), dict):
            return {}
        mine = loaded.get("principals", {}).get(self.principal, {})
        if not isinstance(mine, dict):
            loaded["principals"][self.principal] = {}
        return loaded

    def get(self, key: str, default: Any) -> Any:
        value = self._mine.get(key, default)
        return value if type(value) is type(default) else default

    def set(self, key: str, value: Any) -> None:
        """Remember ``key``; kept for this session even when the file cannot be written."""
        self._mine[key] = value
        data = self._read()  # another principal's (or another TUI's) choices made meanwhile are kept
        data.setdefault("principals", {})[self.principal] = self._mine
        tmp = self.path.with_name(f".{FILE_NAME}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the user's alone, like the workspace
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(json.dumps(data, indent=1, sort_keys=True))
            os.replace(tmp, self.path)
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass


def prefs_of(app: Any) -> Prefs:
    """The app's principal's choices (read on first use, then kept on the app)."""
    prefs = getattr(app, "_prefs", None)
    if prefs is None or prefs.principal != app.principal.name:
        prefs = app._prefs = Prefs(prefs_path(app.wb), app.principal.name)
    return prefs
