"""The connection, shown in the header: where the TUI's workspace is (``local <path>`` or
``server <url>``) and, over a team server, whether the server answers.

Over a server the app probes it off the UI thread (the facade's ``ping``: the server's /healthz,
then the address its advert names now, so a server restarted on another port is found again):
every few seconds while it answers, every second while it does not. The header says
``unreachable, retrying`` from the first failed request or probe, and ``reconnected`` for a few
seconds once it answers again. Nothing is retried or queued here: a request that could not reach
the server failed and said so, and the dialog that asked for it is still open with its text.

This module only watches and tells; it decides nothing and calls no core method but ``ping``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

PROBE_S = 3.0          # between probes while the server answers
RETRY_S = 1.0          # between probes while it does not
RECONNECTED_S = 8.0    # how long the header says "reconnected"

OK, UNREACHABLE, RECONNECTED = "ok", "unreachable", "reconnected"


def where(wb: Any) -> str:
    """``server <url>`` for a facade over a team server (its ``where()``), else ``local <folder>``."""
    described = getattr(wb, "where", None)
    if callable(described):
        return str(described())
    return f"local {home_relative(Path(wb.root))}"


def home_relative(path: Path) -> str:
    """The folder as a user types it: under the home folder as ``~/…``."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except (ValueError, RuntimeError):
        return str(path)


def shortened(location: str) -> str:
    """A location cut to its last folder (``local …/ws``), for a narrow header; a URL stays whole."""
    kind, _, rest = location.partition(" ")
    if kind != "local" or "/" not in rest.rstrip("/"):
        return location
    return f"{kind} …/{Path(rest).name}"


class Connection:
    """Watches the app's facade: ``state`` is OK, UNREACHABLE or RECONNECTED; ``changed`` is called
    on the UI thread whenever it moves (the app redraws its header)."""

    def __init__(self, app: Any, changed) -> None:
        self.app, self.changed = app, changed
        self.remote = callable(getattr(app.wb, "ping", None))
        self.state = OK
        self._probing = False
        self._last_probe = time.monotonic()
        self._settle_timer = None

    def suffix(self) -> str:
        return {UNREACHABLE: " · unreachable, retrying", RECONNECTED: " · reconnected"}.get(self.state, "")

    def start(self) -> None:
        if self.remote:
            self.app.set_interval(RETRY_S, self._tick)

    def noticed(self) -> None:
        """After a request: a facade that could not reach its server says so at once."""
        if self.remote and not getattr(self.app.wb, "reachable", True) and self.state != UNREACHABLE:
            self._move(UNREACHABLE)

    def _tick(self) -> None:
        due = RETRY_S if self.state == UNREACHABLE else PROBE_S
        if self._probing or self.app.closing or time.monotonic() - self._last_probe < due:
            return
        self._probing = True
        self._last_probe = time.monotonic()

        def run() -> None:
            answered = bool(self.app.wb.ping())
            if not self.app.closing:
                try:
                    self.app.call_from_thread(self._probed, answered)
                except RuntimeError:  # the app has gone meanwhile
                    pass
        threading.Thread(target=run, name="wb-probe", daemon=True).start()

    def _probed(self, answered: bool) -> None:
        self._probing = False
        if not answered:
            if self.state != UNREACHABLE:
                self._move(UNREACHABLE)
        elif self.state == UNREACHABLE:
            self._move(RECONNECTED)
            self.app.notify(f"reconnected to the workbench server at {self.app.wb.url}", title="Connection")
            self._settle_timer = self.app.set_timer(RECONNECTED_S, self._settled)

    def _settled(self) -> None:
        if self.state == RECONNECTED:
            self._move(OK)

    def _move(self, state: str) -> None:
        self.state = state
        self.changed()


def header_line(who: str, calibration: str | None, model: str, location: str, state: str, width: int) -> str:
    """The header's subtitle: the workspace and principal, the calibration, the model's state and
    the connection. When it does not fit ``width``, the calibration goes first, then the folder is
    cut to its last part: the connection always shows."""
    budget = max(20, width - 22)  # the header's icon, its margins and "workbench — "
    calibrated = f" · {calibration}" if calibration else ""
    for line in (f"{who}{calibrated}{model} · {location}{state}", f"{who}{model} · {location}{state}"):
        if len(line) <= budget:
            return line
    return f"{who}{model} · {shortened(location)}{state}"
