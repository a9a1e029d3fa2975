"""Small modal questions: a one-line prompt (label and input) and a yes / no confirmation.

Both fit at 80 columns (90% of the width, at most 70) and only ask: the caller decides what
the answer means. Escape is always the safe answer (nothing typed, or "no"; a prompt holding typed text asks first).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer

from ..plain import Input, Label
from .keepwork import KeepsWork


class PromptScreen(KeepsWork, ModalScreen[str | None]):
    """Dismisses with the text typed (stripped), or None when empty or cancelled."""

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen .prompt-box { width: 90%; max-width: 70; height: auto; padding: 1 2; border: thick $primary;
                               background: $surface; }
    PromptScreen .prompt-box Label { width: 1fr; margin-bottom: 1; }
    PromptScreen .prompt-box Input { width: 1fr; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt-cancel")]

    def __init__(self, question: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.question, self.placeholder, self.value = question, placeholder, value

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt-box"):
            yield Label(self.question, id="prompt-label", markup=False)
            yield Input(self.value, placeholder=self.placeholder, id="prompt-input")

    @on(Input.Submitted, "#prompt-input")
    def _done(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.leave(lambda: self.dismiss(None))


class ConfirmScreen(ModalScreen[bool]):
    """A yes / no question: ``y`` (or the yes button) dismisses with True; ``n``, escape or the
    focused default (the no button) with False."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen .confirm-box { width: 90%; max-width: 70; height: auto; padding: 1 2; border: thick $warning;
                                 background: $surface; }
    ConfirmScreen .confirm-box Label { width: 1fr; }
    ConfirmScreen .dialog-actions { height: auto; margin-top: 1; }
    ConfirmScreen .dialog-actions Button { margin: 0 1; }
    """
    BINDINGS = [
        Binding("y", "yes", "Yes", id="confirm-yes"),
        Binding("n", "no", "No", id="confirm-no"),
        Binding("escape", "no", "Cancel", id="confirm-cancel", show=False),
    ]

    def __init__(self, title: str, message: str, *, yes: str = "Yes", no: str = "Cancel") -> None:
        super().__init__()
        self.title_text, self.message, self.yes, self.no = title, message, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(classes="confirm-box"):
            yield Label(self.title_text, classes="pane-title", markup=False)
            yield Label(self.message, id="confirm-message", markup=False)
            with Horizontal(classes="dialog-actions"):
                yield Button(f"{self.yes} (y)", id="confirm-yes-button", variant="warning")
                yield Button(f"{self.no} (n)", id="confirm-no-button", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#confirm-no-button", Button).focus()

    @on(Button.Pressed, "#confirm-yes-button")
    def action_yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-no-button")
    def action_no(self) -> None:
        self.dismiss(False)
