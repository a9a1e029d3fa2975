"""The frame every screen shares: header, body, a job progress bar and the footer."""

from __future__ import annotations

from typing import Callable, Iterable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Header, ProgressBar

from ..plain import Static


class WbScreen(Screen):
    """``FORM = True`` on a screen whose main job is typing (search, edit, pin, export,
    anti-pattern): the app's plain-character keys never fire there (see ``WorkbenchApp``).

    A screen with a ``reload()`` reloads when it is shown again after any write
    (``app.data_version`` moved), so Browse and the rest never show stale rows."""

    FORM = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._seen_version = -1

    def on_mount(self) -> None:
        self._seen_version = self.app.data_version

    def on_screen_resume(self) -> None:
        if self._seen_version not in (-1, self.app.data_version):
            self._seen_version = self.app.data_version
            reload = getattr(self, "reload", None)
            if reload is not None:
                reload()
        else:
            self._seen_version = self.app.data_version

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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A key that writes shows and runs only when the core says the principal may take its
        action at all (``WorkbenchApp.offers``); screens that refine this call it too."""
        return self.app.offers(action)

    def commands(self) -> Iterable[tuple[str, Callable[[], None]]]:
        """(name, callback) pairs this screen adds to the command palette."""
        return []

    @property
    def wb(self):
        return self.app.wb

    @property
    def me(self):
        return self.app.principal
