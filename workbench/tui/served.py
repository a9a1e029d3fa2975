"""The app process `workbench serve` starts for each browser tab (``python -m workbench.tui.served``).

It differs from ``workbench tui`` in three ways, each because of how textual-serve works:

- A start-up failure is shown in the page. textual-serve shows only its splash screen until the
  app's driver starts, and a process that exits before that (workspace busy, missing, an unknown
  principal) leaves the splash up forever with the message in the server's log. So a
  ``WorkbenchError`` at start runs ``StartFailed``, a one-screen app that shows the message.
- The workspace wait at start is longer (``START_LOCK_WAIT_S``, unless ``WORKBENCH_LOCK_TIMEOUT``
  is set): a page reloaded while its first app is starting finds that app still holding the
  workspace until the server has stopped it.
- The app never outlives its connection. ``ServedDriver`` quits when its input closes (the server
  is gone) and, once asked to quit, ends the process after ``EXIT_GRACE_S`` whatever it is doing;
  after the app returns, the process ends at once (``os._exit``), without waiting for threads
  such as a model load (DuckDB's write-ahead log keeps a write whole either way).

This module must not serve anything: the server is ``workbench.tui.serve``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any, Callable

from textual import messages
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.drivers.web_driver import WebDriver

from ..errors import WorkbenchError
from .plain import Static

START_LOCK_WAIT_S = 15.0  # how long a served app waits at start for another process to let the workspace go
EXIT_GRACE_S = 3.0        # once asked to quit, the process ends by then even if the app has not returned
DRIVER = "workbench.tui.served:ServedDriver"  # what textual-serve's TEXTUAL_DRIVER names in the app process


def _end_process_soon(code: int = 0) -> None:
    def watchdog() -> None:
        threading.Event().wait(EXIT_GRACE_S)
        os._exit(code)
    threading.Thread(target=watchdog, name="wb-exit-watchdog", daemon=True).start()


class ServedDriver(WebDriver):
    """Textual's web driver, but the app ends when the server stops talking to it."""

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # stdin closed: the server died or dropped the process
            _end_process_soon()
            self._app.post_message(messages.ExitApp())

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type == "quit":  # the tab was closed or the server is stopping
            _end_process_soon()
        super().on_meta(packet_type, payload)


class StartFailed(App):
    """Shown in the page instead of the workbench when it cannot start."""

    TITLE = "workbench"
    CSS = """
    Screen { align: center middle; }
    #start-failed { width: 80%; max-width: 100; height: auto; border: heavy $error; padding: 1 2; }
    #start-failed-title { text-style: bold; color: $error; }
    #start-failed-message { margin: 1 0; }
    """
    BINDINGS = [Binding("q", "quit", "Close", id="start-failed-close"),
                Binding("escape", "quit", "Close", id="start-failed-close-esc", show=False)]

    def __init__(self, message: str):
        super().__init__()
        self.message = message

    def compose(self) -> ComposeResult:
        with Vertical(id="start-failed"):
            yield Static("The workbench could not start", id="start-failed-title")
            yield Static(self.message, id="start-failed-message", markup=False)
            yield Static("Reload the page to try again. Press q to close.", id="start-failed-hint")


def lock_wait() -> float:
    """Seconds to wait at start for the workspace: WORKBENCH_LOCK_TIMEOUT when set, else longer
    than the CLI's default (a reloaded page's earlier app may still hold it)."""
    value = os.environ.get("WORKBENCH_LOCK_TIMEOUT")
    try:
        return float(value) if value else START_LOCK_WAIT_S
    except ValueError:
        return START_LOCK_WAIT_S


def run(workspace: str, principal: str | None = None, *, connect: Callable[[str], Any] | None = None) -> int:
    """Open the workspace and run the workbench; on a start-up error, show it. Returns the exit code.
    ``connect(workspace)``: the facade of a team server holding the workspace, or None (then the
    workspace is opened here); given by the launcher (this package does not know the server)."""
    from ..service import Workbench
    from .app import WorkbenchApp

    wb = None
    try:
        wb = connect(workspace) if connect is not None else None
        if wb is None:
            wb = Workbench.open(workspace, lock_timeout=lock_wait())
        app = WorkbenchApp(wb, principal=principal)
    except WorkbenchError as e:
        if wb is not None:
            wb.close()
        print(f"workbench: {e.message}", file=sys.stderr, flush=True)  # for the server's log
        StartFailed(e.message).run()
        return e.exit_code
    try:
        app.run()
    finally:
        if app.lock.acquire(timeout=0.5):
            try:
                wb.close()
            finally:
                app.lock.release()
    return app.return_code or 0


def main(argv: list[str] | None = None, *, connect: Callable[[str], Any] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m workbench.tui.served",
                                     description="One browser tab's workbench app (started by `workbench serve`).")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--as", dest="principal")
    args = parser.parse_args(argv)
    code = run(args.workspace, args.principal, connect=connect)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)  # not waiting for daemon threads (a model load) or the interpreter's teardown


if __name__ == "__main__":
    main()
