"""Edit: a markdown TextArea with a required reason and inline validation errors.
Saving creates a new version.

The editor remembers the version its text started from and always saves with that ``base``, so
a change saved elsewhere meanwhile (the CLI, another TUI) is never overwritten silently: the core
refuses with Conflict and the conflict dialog lets the user choose (reload the latest with their
text kept beside it, keep their text over the latest, or go back to editing). The user's text is
never dropped: not on a conflict, and not on escape (which asks before discarding).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Static, TextArea

from ...errors import Conflict, WorkbenchError
from .base import WbScreen


class EditScreen(WbScreen):

    DEFAULT_CSS = """
    #editor { height: 1fr; }
    #reason { margin: 0 1; }
    #errors { height: auto; }
    #edit-panes { height: 1fr; }
    #mine-pane { display: none; width: 1fr; }
    #mine { height: 1fr; }
    """
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="edit-save", priority=True),
        Binding("escape", "cancel", "Cancel", id="edit-cancel"),
    ]

    def __init__(self, fragment_id: str, base: int | None = None) -> None:
        """``base`` is the version the opener showed the user; if the fragment has moved on since,
        the editor opens on the latest version and says so (nothing typed yet, nothing lost)."""
        super().__init__()
        self.fragment_id = fragment_id
        self.shown = base
        self.base: int | None = None      # the version the editor's text started from
        self.loaded = ""                  # that version's body, as loaded (to tell unsaved changes)
        self.kept: str | None = None      # the user's text, set aside by "Reload latest"

    def body(self) -> ComposeResult:
        yield Static(f"Editing {self.fragment_id} (markdown body) · ctrl+s saves a new version", id="edit-title",
                     classes="pane-title", markup=False)
        with Horizontal(id="edit-panes"):
            yield TextArea("", id="editor", soft_wrap=True, show_line_numbers=True)
            with Vertical(id="mine-pane"):
                yield Static("Your text (not saved): copy what you need into the editor", classes="pane-title")
                yield TextArea("", id="mine", soft_wrap=True, read_only=True)
        yield Input(placeholder="reason for this change (required)", id="reason")
        yield Static("", id="errors", classes="error", markup=False)
        yield Button("Save new version", id="save", variant="primary")

    def on_mount(self) -> None:
        f = self.app.attempt(self.wb.get, self.fragment_id, principal=self.me)
        if f is None:
            self.dismiss(None)
            return
        self._start_from(f)
        if self.shown is not None and f.version != self.shown:
            self.notify(f"{f.id} changed since you viewed v{self.shown}: you are editing the latest, v{f.version}",
                        title="Changed meanwhile", severity="warning", timeout=8)
        self.query_one("#editor", TextArea).focus()

    def _start_from(self, f) -> None:
        """Load version ``f`` into the editor: from now on saves are made from it."""
        self.base, self.loaded = f.version, f.body
        self.query_one("#editor", TextArea).load_text(f.body)
        self.query_one("#edit-title", Static).update(
            f"Editing {self.fragment_id} v{f.version} (markdown body) · ctrl+s saves a new version")

    @property
    def unsaved(self) -> bool:
        return self.query_one("#editor", TextArea).text != self.loaded or self.kept is not None

    @on(Button.Pressed, "#save")
    def _pressed(self) -> None:
        self.action_save()

    def action_save(self) -> None:
        reason = self.query_one("#reason", Input).value
        if not reason.strip():
            self.query_one("#errors", Static).update("A reason is required: say why this changed.")
            self.query_one("#reason", Input).focus()
            return
        self._save(self.query_one("#editor", TextArea).text, reason, self.base)

    def _save(self, body: str, reason: str, base: int | None) -> None:
        errors = self.query_one("#errors", Static)
        try:
            f = self.app.call(self.wb.edit, self.fragment_id, body, reason=reason, actor=self.me, file="(editor)",
                              base=base)
        except Conflict as e:
            errors.update(e.message)
            self._conflict(e, base)
            return
        except WorkbenchError as e:
            errors.update(e.message)
            return
        self.notify(f"saved {f.id} v{f.version}")
        self.dismiss(f)

    def _conflict(self, error: Conflict, base: int | None) -> None:
        """Show what changed since ``base`` and let the user choose; their text stays in the editor."""
        from .conflict import ConflictScreen

        latest = self.app.attempt(self.wb.get, self.fragment_id, principal=self.me)
        if latest is None or base is None:  # no longer visible: the message (and the text) stay here
            return
        try:
            diff = self.app.call(self.wb.diff, self.fragment_id, base, latest.version, principal=self.me)
        except WorkbenchError as e:
            diff = f"(the diff cannot be shown: {e.message})"
        self.app.push_screen(ConflictScreen(self.fragment_id, error.message, base=base, latest=latest.version,
                                            diff=diff), lambda choice: self._resolve(choice, latest))

    def _resolve(self, choice: str | None, latest) -> None:
        from .conflict import KEEP, RELOAD

        editor = self.query_one("#editor", TextArea)
        errors = self.query_one("#errors", Static)
        if choice == KEEP:
            errors.update("")
            self._save(editor.text, self.query_one("#reason", Input).value, latest.version)
            return
        if choice == RELOAD:
            if editor.text != self.loaded:  # the user's newest own text is what is kept
                self.kept = editor.text
            if self.kept is not None:
                self.query_one("#mine", TextArea).load_text(self.kept)
                self.query_one("#mine-pane").display = True
            self._start_from(latest)
            errors.update(f"Loaded v{latest.version}, the latest. " + (
                "Your text is on the right, not saved: reapply your change in the editor, then ctrl+s."
                if self.kept is not None else "You had changed nothing."))
        else:
            errors.update(f"Not saved: {self.fragment_id} is now v{latest.version}; you are still editing from "
                          f"v{self.base}, so ctrl+s shows the conflict again (r there reloads the latest).")
        editor.focus()

    def action_cancel(self) -> None:
        if not self.unsaved:
            self.dismiss(None)
            return
        from .confirm import DiscardScreen

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)
            else:
                self.query_one("#editor", TextArea).focus()
        self.app.push_screen(DiscardScreen(f"your changes to {self.fragment_id}"), answered)
