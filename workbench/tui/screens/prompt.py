"""Small modal questions: a one-line prompt (label and input) and a yes / no confirmation, in the
shared dialog frame (buttons and footer with the same words; ctrl+s or enter answers, esc cancels).

Both fit at 80 columns (90% of the width, at most 70) and only ask: the caller decides what
the answer means. Escape is always the safe answer (nothing typed, or "no").
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult

from ..plain import Input, Label, Static
from .dialog import Dialog, dialog_bindings


class PromptScreen(Dialog):
    """Dismisses with the text typed (stripped), or None when cancelled. With ``required``, an
    empty answer is refused in the dialog (else it dismisses with None, as cancel does)."""

    BOX_CLASSES = "prompt-box"
    DEFAULT_CSS = """
    PromptScreen .dialog-box { max-width: 70; padding: 0 2; }
    PromptScreen .dialog-box Label { width: 1fr; margin: 1 0; }
    PromptScreen .dialog-box Input { width: 1fr; }
    """
    BINDINGS = dialog_bindings("prompt", "OK")
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "prompt-ok-button", "cancel": "prompt-cancel-button"}

    def __init__(self, question: str, placeholder: str = "", value: str = "", *, confirm: str = "OK",
                 required: str | None = None) -> None:
        super().__init__(words={"confirm": confirm})
        self.question, self.placeholder, self.value, self.required = question, placeholder, value, required

    def body(self) -> ComposeResult:
        yield Label(self.question, id="prompt-label", markup=False)
        yield Input(self.value, placeholder=self.placeholder, id="prompt-input")
        yield Static("", id="prompt-error", classes="error", markup=False)

    def confirm(self) -> None:
        text = self.query_one("#prompt-input", Input).value.strip()
        if not text and self.required:
            self.query_one("#prompt-error", Static).update(self.required)
            self.query_one("#prompt-input", Input).focus()
            return
        self.answer(text or None)


class ConfirmScreen(Dialog):
    """A yes / no question: ctrl+s, enter or the yes button dismisses with True; escape or the
    no button with False."""

    BOX_CLASSES = "confirm-box"
    CANCELLED = False
    VARIANTS: ClassVar[dict[str, str]] = {"confirm": "warning", "cancel": "primary"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "confirm-yes-button", "cancel": "confirm-no-button"}
    DEFAULT_CSS = """
    ConfirmScreen .dialog-box { max-width: 70; padding: 1 2; border: thick $warning; }
    ConfirmScreen .dialog-box Label { width: 1fr; }
    ConfirmScreen .dialog-actions { margin-top: 1; }
    """
    BINDINGS = dialog_bindings("confirm", "Yes")

    def __init__(self, title: str, message: str, *, yes: str = "Yes", no: str = "Cancel") -> None:
        super().__init__(words={"confirm": yes, "cancel": no})
        self.title_text, self.message, self.yes, self.no = title, message, yes, no

    def body(self) -> ComposeResult:
        yield Label(self.title_text, classes="pane-title", markup=False)
        yield Label(self.message, id="confirm-message", markup=False)

    def confirm(self) -> None:
        self.answer(True)
