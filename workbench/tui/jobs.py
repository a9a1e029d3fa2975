"""The job line every screen shows at its foot (a label and a progress bar), for long work the
app runs off the UI thread: start it, report progress from the job's thread, end it.

A mixin of ``WorkbenchApp`` (it uses the app's ``submit``, ``notify`` and ``refresh_screen``); it
runs nothing itself and decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.widgets import ProgressBar

from ..errors import WorkbenchError
from .plain import Static


class JobLine:
    """The app's job line: ``start_job``, ``job_progress`` (from any thread), ``end_job``, ``run_job``."""

    job_active = False

    def _bar(self) -> tuple[Static, ProgressBar] | None:
        try:
            return self.screen.query_one("#job-label", Static), self.screen.query_one("#job", ProgressBar)
        except Exception:  # noqa: BLE001 - a screen without a job bar (a modal prompt)
            return None

    def start_job(self, label: str, total: int | None = None) -> None:
        self.job_active = True
        found = self._bar()
        if found:
            found[0].update(label)
            found[1].update(total=total, progress=0)
            found[0].display = found[1].display = True

    def job_progress(self, stage: str, done: int, total: int) -> None:
        def update() -> None:
            found = self._bar()
            if found:
                found[0].update(f"{stage}: {done}/{total}")
                found[1].update(total=total, progress=done)
                found[0].display = found[1].display = True
        self.call_from_thread(update)

    def end_job(self, message: str | None = None, severity: str = "information") -> None:
        self.job_active = False
        found = self._bar()
        if found:
            found[0].display = found[1].display = False
        if message:
            self.notify(message, severity=severity)

    def run_job(self, label: str, fn: Callable[[Callable], str], *, write: bool = True) -> None:
        """Run ``fn(progress)`` as a job with a progress bar shown from the start; its return value
        is the closing notification. Counts as a write (screens reload) unless ``write=False``."""
        self.start_job(label)

        def done(message: str) -> None:
            self.end_job(message)
            self.refresh_screen()

        def failed(e: WorkbenchError) -> None:
            self.end_job(_plain(e), "error")

        self.submit(fn, self.job_progress, done=done, failed=failed, write=write)


def _plain(message) -> str:
    from .messages import plain

    return plain(message)
