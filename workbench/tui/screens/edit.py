"""Edit: a markdown TextArea with a required reason and inline validation errors.
Saving creates a new version."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Button, Input, Static, TextArea

from ...errors import WorkbenchError
from .base import WbScreen


class EditScreen(WbScreen):
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="edit-save", priority=True),
        Binding("escape", "cancel", "Cancel", id="edit-cancel"),
    ]

    def __init__(self, fragment_id: str) -> None:
        super().__init__()
        self.fragment_id = fragment_id

    def body(self) -> ComposeResult:
        yield Static(f"Editing {self.fragment_id} (markdown body) · ctrl+s saves a new version", classes="pane-title")
        yield TextArea("", id="editor", soft_wrap=True, show_line_numbers=True)
        yield Input(placeholder="reason for this change (required)", id="reason")
        yield Static("", id="errors", classes="error")
        yield Button("Save new version", id="save", variant="primary")

    def on_mount(self) -> None:
        f = self.app.attempt(self.wb.get, self.fragment_id, principal=self.me)
        if f is None:
            self.dismiss(None)
            return
        self.query_one("#editor", TextArea).load_text(f.body)
        self.query_one("#editor", TextArea).focus()

    @on(Button.Pressed, "#save")
    def _pressed(self) -> None:
        self.action_save()

    def action_save(self) -> None:
        body = self.query_one("#editor", TextArea).text
        reason = self.query_one("#reason", Input).value
        errors = self.query_one("#errors", Static)
        if not reason.strip():
            errors.update("A reason is required: say why this changed.")
            self.query_one("#reason", Input).focus()
            return
        try:
            f = self.app.call(self.wb.edit, self.fragment_id, body, reason=reason, actor=self.me, file="(editor)")
        except WorkbenchError as e:
            errors.update(e.message)
            return
        self.notify(f"saved {f.id} v{f.version}")
        self.dismiss(f)

    def action_cancel(self) -> None:
        self.dismiss(None)
