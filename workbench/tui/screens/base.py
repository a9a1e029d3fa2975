"""The frame every screen shares: header, body, a job progress bar and the footer."""

from __future__ import annotations

from typing import Callable, Iterable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Header, ProgressBar, Static


class WbScreen(Screen):
    def compose(self) -> ComposeResult:
        yield Header()
        yield from self.body()
        label = Static("", id="job-label")
        bar = ProgressBar(id="job", show_eta=False)
        label.display = bar.display = False
        yield label
        yield bar
        yield Footer()

    def body(self) -> ComposeResult:  # pragma: no cover - every screen defines its body
        yield from ()

    def commands(self) -> Iterable[tuple[str, Callable[[], None]]]:
        """(name, callback) pairs this screen adds to the command palette."""
        return []

    @property
    def wb(self):
        return self.app.wb

    @property
    def me(self):
        return self.app.principal
