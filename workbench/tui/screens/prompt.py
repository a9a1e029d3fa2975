"""A one-line prompt in a modal box."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class PromptScreen(ModalScreen[str | None]):

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    .prompt-box { width: 70; height: auto; padding: 1 2; border: thick $primary; background: $surface; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt-cancel")]

    def __init__(self, question: str, placeholder: str = "") -> None:
        super().__init__()
        self.question, self.placeholder = question, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt-box"):
            yield Label(self.question)
            yield Input(placeholder=self.placeholder, id="prompt-input")

    @on(Input.Submitted, "#prompt-input")
    def _done(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
