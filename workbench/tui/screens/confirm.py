""""Discard changes?" in a small modal box, answered by key or button.

It only asks: the caller decides what discarding means. Escape and enter on the focused
default are the safe answer (keep editing); only `d` (or the Discard button) says yes.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label


class DiscardScreen(ModalScreen[bool]):
    """Dismisses with True to discard, False to keep editing."""

    DEFAULT_CSS = """
    DiscardScreen { align: center middle; }
    .confirm-box { width: 72; height: auto; padding: 1 2; border: thick $warning; background: $surface; }
    .confirm-box Label { width: 1fr; }
    .dialog-actions { height: auto; margin-top: 1; }
    .dialog-actions Button { margin: 0 1; }
    """

    BINDINGS = [
        Binding("d", "discard", "Discard", id="discard-yes"),
        Binding("k", "keep", "Keep editing", id="discard-keep"),
        Binding("escape", "keep", "Keep editing", id="discard-cancel", show=False),
    ]

    def __init__(self, what: str = "your changes", leaving: str = "Leaving now") -> None:
        super().__init__()
        self.what, self.leaving = what, leaving

    def compose(self) -> ComposeResult:
        with Vertical(classes="confirm-box"):
            yield Label("Discard changes?", classes="pane-title")
            yield Label(f"{self.leaving} throws away {self.what}; nothing has been saved.", markup=False)
            with Horizontal(classes="dialog-actions"):
                yield Button("Discard (d)", id="discard-yes-button", variant="error")
                yield Button("Keep editing (k)", id="discard-keep-button", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#discard-keep-button", Button).focus()

    @on(Button.Pressed, "#discard-yes-button")
    def action_discard(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#discard-keep-button")
    def action_keep(self) -> None:
        self.dismiss(False)
