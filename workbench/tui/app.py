"""WorkbenchApp: screens, bindings (each with an id), the command palette, background jobs.

Nothing blocks the UI. Every store call runs off the UI thread through ``submit`` (a daemon
thread; the result comes back on the UI thread), behind one lock shared by all of them: store
reads, writes, index refreshes, embedding and model loading. A job shows its label in the job
line when it takes long, and a progress bar when it reports progress.

The workspace connection is kept while the app is in use and released after a long idle spell
(``IDLE_RELEASE_S``) or at once when another process asks for it (the CLI touches a request
file when it finds the workspace held), so ordinary actions never pay a reconnect.

Quit is immediate: the screen is restored at once and jobs still running are abandoned
(``tui`` then ends the process; DuckDB's write-ahead log keeps any write whole).

The key grammar (help.py's INTRO states it for users): a plain character never changes anything.
The app's plain keys only move between screens (``LETTER_ACTIONS``); on a screen with a form
(``FORM``) and whenever a text field or a button has focus they never fire, so typing cannot
trigger them. Keys that write are ctrl+letter, the same on every screen (rowactions.py), act on
the focused row only, and ask first where the write is destructive; ctrl+o lists a row's actions.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen

from ..errors import WorkbenchError
from ..inert import inert
from .connection import Connection, header_line, where
from .format import calibration_label
from .jobs import JobLine


def plain(message: str) -> str:
    """The core's message in the TUI's words (no CLI flags); see tui/messages.py."""
    from .messages import plain as translate

    return translate(message)


IDLE_RELEASE_S = 60.0   # seconds without use before the workspace is let go (or when another process asks)
MODEL_DELAY_S = 3.0     # the model starts loading this long after launch, or after the first search
SLOW_JOB_S = 0.3        # a job running longer than this shows its label in the job line
# app-level keys that are plain characters (they only move between screens): never fired from a text
# field, a button or a form screen
LETTER_ACTIONS = {"browse", "search", "inbox", "pins", "new_antipattern", "export", "help", "quit", "gaps"}


class WorkbenchApp(JobLine, App):
    """The workbench TUI on one open workspace, acting as one principal."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: a subclass elsewhere finds it too
    TITLE = "workbench"
    BINDINGS = [
        Binding("question_mark", "help", "Help", id="help"),
        Binding("b", "browse", "Browse", id="browse"),
        Binding("slash", "search", "Search", id="search"),
        Binding("i", "inbox", "Inbox", id="inbox"),
        Binding("p", "pins", "Pins", id="pins"),
        Binding("n", "new_antipattern", "Anti-pattern", id="new-antipattern", show=False),
        Binding("g", "gaps", "Gaps", id="gaps", show=False),
        Binding("x", "export", "Export", id="export"),
        Binding("q", "quit", "Quit", id="quit"),
        Binding("ctrl+q", "quit_anywhere", "Quit (from anywhere)", id="quit-anywhere", show=False, priority=True),
    ]

    def __init__(self, workbench, *, principal: str | None = None, now: datetime | None = None,
                 load_model: bool = True):
        super().__init__()
        self.wb = workbench
        self.principal = workbench.principal(principal)
        self.now = now                      # fixed "now" for reproducible screens (tests, snapshots)
        self.load_model = load_model
        self.lock = threading.RLock()
        self.model_ready = False
        self.job_active = False
        self.idle_release_s = IDLE_RELEASE_S
        self._last_use = time.monotonic()
        self.pending = 0                    # jobs submitted and not yet delivered (tests wait on 0)
        self._latest: dict[str, int] = {}   # per key, the newest job's number: older results are dropped
        self._jobs = 0
        self._threads: set[threading.Thread] = set()  # job threads still running
        self.closing = False
        self.data_version = 0               # bumped after every write; screens reload when they see it move
        self.model_state = "not loaded" if load_model else "off"
        self.offered = frozenset(workbench.actions(self.principal))  # the write actions it may take at all
        self.calibration = calibration_label(workbench.calibration_info())  # for the header: one meta row
        self.connection = Connection(self, self._show_identity)  # local <path> or server <url>, and whether it answers
        self._show_identity()

    def _show_identity(self) -> None:
        model = {"loading": " · model loading…", "failed": " · model unavailable"}.get(self.model_state, "")
        width = self.size.width if self.is_running else 120
        self.sub_title = header_line(f"{self.wb.config.name} · as {self.principal.name}", self.calibration, model,
                                     self.location(), self.connection.suffix(), width)

    def location(self) -> str:
        """Where the workspace is: ``local <folder>`` or ``server <url>`` (the header shows it)."""
        return where(self.wb)

    def on_resize(self) -> None:
        self._show_identity()

    def notify(self, message: str, *, title: str = "", severity: str = "information", timeout: float | None = None,
               markup: bool = False) -> None:
        """A notification whose message and title are shown as plain, inert text: they often quote what
        others wrote (a title, an id, the core's error about them). ``markup`` is ignored."""
        super().notify(inert(str(message)), title=inert(str(title)), severity=severity, timeout=timeout,
                       markup=False)

    def format_title(self, title: str, sub_title: str) -> Content:
        """The header's title and subtitle (the workspace's and the principal's names), inert."""
        return super().format_title(inert(title), inert(sub_title))

    def clock(self) -> datetime:
        from ..models import utcnow

        return self.now or utcnow()

    # -- the workspace, safely from any thread -------------------------------------------

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            try:
                return fn(*args, **kwargs)
            finally:
                self._last_use = time.monotonic()

    def _release_when_idle(self) -> None:
        """Let go of the workspace after a long quiet spell, or at once when another process
        asks for it and no job holds it; the next call reconnects (and sees what others changed)."""
        idle = time.monotonic() - self._last_use >= self.idle_release_s
        if not idle and not self.wb.release_requested():
            return
        if self.lock.acquire(blocking=False):
            try:
                self.wb.release()
            finally:
                self.lock.release()

    def submit(self, fn: Callable[..., Any], *args: Any, done: Callable[[Any], None] | None = None,
               failed: Callable[[WorkbenchError], None] | None = None, label: str | None = None,
               key: str | None = None, write: bool = False, **kwargs: Any) -> None:
        """Run ``fn(*args, **kwargs)`` on a daemon thread behind the workspace lock; then, on the UI
        thread, ``done(result)``, or ``failed(error)`` for a WorkbenchError (by default an error
        notification). With ``key``, only the newest job of that key is delivered (search as you
        type). ``write=True`` bumps ``data_version`` on success, so every screen reloads when shown.
        ``label`` is shown in the job line while the job runs longer than ``SLOW_JOB_S``."""
        self._jobs += 1
        number = self._jobs
        if key is not None:
            self._latest[key] = number
        self.pending += 1
        shown = {"label": False}

        def show_label() -> None:
            if label and not shown.get("ended"):
                shown["label"] = True
                self.start_job(label)
        timer = self.set_timer(SLOW_JOB_S, show_label) if label else None

        def deliver(outcome: str, value: Any) -> None:
            self.pending -= 1
            shown["ended"] = True
            self.connection.noticed()
            if timer is not None:
                timer.stop()
            if shown["label"]:
                self.end_job()
            if self.closing or (key is not None and self._latest.get(key) != number):
                return
            if outcome == "ok":
                if write:
                    self.data_version += 1
                if done is not None:
                    done(value)
            elif failed is not None:
                failed(value)
            else:
                self.notify(plain(value), title="Not done", severity="error", timeout=8)

        def run() -> None:
            try:
                try:
                    outcome, value = "ok", self.call(fn, *args, **kwargs)
                except WorkbenchError as e:
                    outcome, value = "error", e
                except Exception as e:  # noqa: BLE001 - a bug must not kill the UI silently
                    outcome, value = "error", WorkbenchError(f"internal error: {type(e).__name__}: {e}")
                if self.closing:
                    return
                try:
                    self.call_from_thread(deliver, outcome, value)
                except RuntimeError:  # the app has gone meanwhile
                    pass
            finally:
                self._threads.discard(threading.current_thread())
        thread = threading.Thread(target=run, name=f"wb-job-{number}", daemon=True)
        self._threads.add(thread)
        thread.start()

    def wait_for_jobs(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the job threads still running; whether they all ended.
        Quitting does not wait for them (quit is immediate), so a job that was in flight can still be
        inside the workspace after ``run()`` returns: whoever uses the workspace next in this process
        waits here first."""
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(thread.is_alive() for thread in list(self._threads))

    def changed(self) -> None:
        """A write happened outside ``submit(write=True)``: screens reload when next shown."""
        self.data_version += 1

    def attempt(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a core call; a WorkbenchError becomes an error notification (never a traceback)."""
        try:
            return self.call(fn, *args, **kwargs)
        except WorkbenchError as e:
            self.notify(plain(e), title="Not done", severity="error", timeout=8)
            return None

    # -- layout ------------------------------------------------------------------------

    first_paint_at: float | None = None

    def painted(self) -> None:
        """Called once the first screen has been rendered (the benchmark's first-paint mark)."""
        if self.first_paint_at is None:
            import time

            self.first_paint_at = time.perf_counter()

    def on_mount(self) -> None:
        from .screens.browse import BrowseScreen

        self.push_screen(BrowseScreen())
        self.set_interval(0.5, self._release_when_idle)
        self.connection.start()
        self.set_timer(1.0, self._preload)
        if self.load_model:  # not at once: importing torch starves the UI thread of the GIL for seconds
            self.set_timer(MODEL_DELAY_S, self.ensure_model)

    def _preload(self) -> None:
        """Import the screens one opens next while the user looks at the first one, so the first
        open of a fragment or the editor does not pay for their imports."""
        from .screens import diff, edit, fragment, revert, search  # noqa: F401

    def ensure_model(self) -> None:
        """Start loading the embedding model unless it is loading, loaded, or off. Called a few
        seconds after launch, or as soon as the first (lexical) search result has been shown."""
        if self.model_state == "not loaded":
            self.warm_model()

    def warm_model(self) -> None:
        """Load the embedding model after the first paint, on its own thread (not behind the
        workspace lock, so browsing and lexical search go on meanwhile); the header says so."""
        self.model_state = "loading"
        self._show_identity()

        def loaded(_: Any) -> None:
            self.model_ready = True
            self.model_state = "ready"
            self._show_identity()
            # embed what is new and build the index now, with progress, rather than in the first search
            self.submit(self.wb.warm, progress=self.job_progress, label="preparing the search index",
                        done=lambda _: self.end_job())

        def failed(e: Exception) -> None:
            self.model_state = "failed"
            self._show_identity()
            self.notify(getattr(e, "message", str(e)), title="Model", severity="error")

        def run() -> None:
            try:
                self.wb.index.load_model()
                outcome: tuple = (loaded, None)
            except Exception as e:  # noqa: BLE001 - shown, never a traceback
                outcome = (failed, e)
            if not self.closing:
                try:
                    self.call_from_thread(*outcome)
                except RuntimeError:
                    pass
        threading.Thread(target=run, name="wb-model", daemon=True).start()

    def refresh_screen(self) -> None:
        reload = getattr(self.screen, "reload", None)
        if reload:
            reload()

    # -- keys -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Plain-character app keys never fire into a form: not on a screen with a form, and
        not while a text field or a button has focus (ctrl+q, ctrl+p and esc always work)."""
        if action in LETTER_ACTIONS and self._typing():
            return False
        return self.offers(action)

    def offers(self, action: str) -> bool:
        """May the principal use this key (or palette command) at all? As the core says (offers.py)."""
        from .offers import offers

        return offers(self.offered, action)

    def _typing(self) -> bool:
        from textual.widgets import Button, Input, TextArea

        screen = self.screen
        if getattr(screen, "FORM", False):
            return True
        return isinstance(screen.focused, (Input, TextArea, Button))

    def action_quit(self) -> None:
        """Quit at once, unless an editor or a form holds unsaved text: then ask first."""
        editors = [s for s in self.screen_stack if getattr(s, "unsaved_text", lambda: False)()]
        if not editors:
            self.quit_now()
            return
        from .screens.confirm import DiscardScreen

        def answered(discard: bool | None) -> None:
            if discard:
                self.quit_now()
        last = editors[-1]
        what = last.discard_what() if hasattr(last, "discard_what") else f"your unsaved edit of {last.fragment_id}"
        self.push_screen(DiscardScreen(what, leaving="Quitting"), answered)

    def action_quit_anywhere(self) -> None:
        self.action_quit()

    def quit_now(self) -> None:
        self.closing = True
        self.exit()

    # -- actions ------------------------------------------------------------------------

    def _switch(self, screen: Screen) -> None:
        self.push_screen(screen)

    def action_browse(self) -> None:
        from .screens.browse import BrowseScreen

        while len(self.screen_stack) > 2:
            self.pop_screen()
        if not isinstance(self.screen, BrowseScreen):
            self.push_screen(BrowseScreen())

    def action_search(self) -> None:
        from .screens.search import SearchScreen

        self._switch(SearchScreen())

    def action_inbox(self) -> None:
        from .screens.inbox import InboxScreen

        self._switch(InboxScreen())

    def action_pins(self) -> None:
        from .screens.pins import PinsScreen

        self._switch(PinsScreen())

    def action_gaps(self) -> None:
        from .screens.gaps import GapsScreen

        self._switch(GapsScreen())

    def action_new_antipattern(self) -> None:
        from .screens.antipattern import AntiPatternScreen

        self._switch(AntiPatternScreen())

    def action_export(self) -> None:
        from .screens.export import ExportScreen

        self._switch(ExportScreen())

    def action_published(self) -> None:
        from .screens.published import PublishedScreen

        self._switch(PublishedScreen())

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        self._switch(HelpScreen())

    def open_fragment(self, fragment_id: str) -> None:
        from .screens.fragment import FragmentScreen

        self._switch(FragmentScreen(fragment_id))

    def action_rebuild_index(self) -> None:
        def job(progress) -> str:
            data = self.wb.warm(progress=progress)
            return f"index ready: {data['fragments']} fragments, {data['embedded']} newly embedded"
        self.run_job("rebuilding the index", job)

    def ingest_folder(self, folder: str) -> None:
        def job(progress) -> str:
            report = self.wb.ingest([Path(folder)], actor=self.principal, progress=progress).to_dict()
            labels = (("ahead", "where the workbench is ahead"),
                      ("conflicts", "conflicts (nothing of them written: workbench ingest --theirs or --ours)"))
            sync = "".join(f", {len(report[key])} {label}" for key, label in labels if report.get(key))
            return (f"ingest: {report['added']} added, {report['updated']} updated, {report['unchanged']} unchanged, "
                    f"{len(report['errors'])} errors{sync}")
        self.run_job(f"ingesting {folder}", job)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        from .offers import system_commands

        return system_commands(self, screen, super().get_system_commands(screen))

    def action_ingest_prompt(self) -> None:
        from .screens.prompt import PromptScreen

        def done(value: str | None) -> None:
            if value:
                self.ingest_folder(value)
        self.push_screen(PromptScreen("Ingest fragment files from folder:", placeholder="sample_corpus/fragments",
                                      confirm="Ingest"),
                         done)


def run(workspace: str | None = None, principal: str | None = None, *, workbench=None) -> None:
    """Run the app; on quit, close the workspace unless a job still holds it (then it is left to
    the process's end: DuckDB's write-ahead log keeps a write whole either way). ``workbench``: a
    facade the launcher opened (a team server's), used instead of opening ``workspace`` here."""
    from ..service import Workbench

    wb = workbench if workbench is not None else Workbench.open(workspace)
    app = WorkbenchApp(wb, principal=principal)
    try:
        app.run()
    finally:
        close_quickly(app, wb)


def close_quickly(app: WorkbenchApp, wb) -> None:
    """Close the workspace if no job holds it within a moment (a job still running is abandoned)."""
    if app.lock.acquire(timeout=0.3):
        try:
            wb.close()
        finally:
            app.lock.release()


def end_process(code: int = 0) -> None:
    """End a TUI process at once: jobs and the model load run on daemon threads, and letting the
    interpreter tear down under them (torch, DuckDB) is slow and can abort. Call only from a
    process that runs the TUI and nothing else (the `tui` command, the probes)."""
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
