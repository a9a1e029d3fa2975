"""Edit: a markdown TextArea with a required reason and inline validation errors.
Saving creates a new version. An anti-pattern is edited as the form it was written in: its don't /
why / instead / evidence fields (antipattern.AntiPatternFields, prefilled from the version loaded)
above its body; the fields changed go to the core's ``edit(fields=...)``, the same edit path.

The editor remembers the version its text started from and always saves with that ``base``, so
a change saved elsewhere meanwhile (the CLI, another TUI) is never overwritten silently: the core
refuses with Conflict and the conflict dialog lets the user choose (reload the latest with their
text kept beside it, keep their text over the latest, or go back to editing). The user's text is
never dropped: not on a conflict, and not on escape (which asks before discarding).

Before a save, the golden queries the edit would change are computed (``edit_impact``, in a job):
when some change, a dialog names each (query, the fragment's rank before → after) and asks "Save
anyway" or "Cancel"; cancelling saves nothing and keeps the text.

Every store call (load, impact, save, the conflict's diff) runs through ``app.submit``. It is a form
(``FORM``): the app's letter keys never fire here. At 80×24 the reason and Save stay on screen.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Button

from ...errors import Conflict, WorkbenchError
from ..plain import Input, Label, Static, TextArea
from .antipattern import AntiPatternFields
from .base import WbScreen
from .confirm import SaveAnywayScreen


def conflict_view(wb, fragment_id: str, base: int, principal):
    """The latest version, who changed it since ``base`` and the diff (for the conflict dialog): one job."""
    from .conflict import moved_on

    latest = wb.get(fragment_id, principal=principal)
    message = moved_on(fragment_id, base, wb.history(fragment_id, principal=principal))
    try:
        diff = wb.diff(fragment_id, base, latest.version, principal=principal)
    except WorkbenchError as e:
        diff = f"(the diff cannot be shown: {e.message})"
    return latest, message, diff


class EditScreen(WbScreen):

    FORM = True
    DEFAULT_CSS = """
    #editor { height: 1fr; min-height: 10; }
    #ap-fields { display: none; }
    EditScreen.antipattern #ap-fields { display: block; }
    EditScreen.antipattern #editor { min-height: 3; }
    #errors { height: auto; }
    #edit-panes { height: 1fr; }
    #mine-pane { display: none; width: 1fr; }
    #mine { height: 1fr; }
    #reason-row { height: auto; }
    #reason-row Label { width: auto; padding: 1 1 0 1; }
    #reason { width: 1fr; }
    #save { margin: 0 1; min-width: 10; }
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
        self.ready = False                # the text has loaded: editing and saving may start
        self.saving = False               # a save is on its way: no second one, no leaving meanwhile

    def body(self) -> ComposeResult:
        yield Static(f"Loading {self.fragment_id}…", id="edit-title", classes="pane-title", markup=False)
        yield AntiPatternFields(id="ap-fields")
        with Horizontal(id="edit-panes"):
            yield TextArea("", id="editor", soft_wrap=True, show_line_numbers=True, read_only=True,
                           placeholder="loading…")
            with Vertical(id="mine-pane"):
                yield Static("Your text (not saved): copy what you need into the editor", classes="pane-title")
                yield TextArea("", id="mine", soft_wrap=True, read_only=True)
        with Horizontal(id="reason-row"):
            yield Label("Reason")
            yield Input(placeholder="why this change? (required)", id="reason")
            yield Button("Save (ctrl+s)", id="save", variant="primary")
        yield Static("", id="errors", classes="error", markup=False)

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#editor", TextArea).focus()
        self.app.submit(self.wb.get, self.fragment_id, principal=self.me, done=self._opened, failed=self._gone,
                        label=f"loading {self.fragment_id}…", key=f"edit-load-{id(self)}")

    def _gone(self, error: WorkbenchError) -> None:
        self.app.notify(error.message, title="Cannot edit", severity="error", timeout=8)
        if self.is_current:
            self.dismiss(None)

    def _opened(self, f) -> None:
        if not self.is_attached:  # left before the text came
            return
        editor = self.query_one("#editor", TextArea)
        editor.read_only, editor.placeholder = False, ""
        self._start_from(f)
        self.ready = True
        if self.has_class("antipattern"):   # its form first: don't / why / instead / evidence
            self.query_one("#ap-edit-dont").focus()
        if self.shown is not None and f.version != self.shown:
            self.notify(f"{f.id} changed since you viewed v{self.shown}: you are editing the latest, v{f.version}",
                        title="Changed meanwhile", severity="warning", timeout=8)

    def _start_from(self, f) -> None:
        """Load version ``f`` into the editor: from now on saves are made from it."""
        editor = self.query_one("#editor", TextArea)
        editor.load_text(f.body)
        self.base, self.loaded = f.version, editor.text  # as the editor holds it: inert (tui/plain.py), its line ends
        structured = f.kind == "anti-pattern"
        self.set_class(structured, "antipattern")
        if structured:
            self.query_one("#ap-fields", AntiPatternFields).load(f)
        self.query_one("#edit-title", Static).update(
            f"Editing {self.fragment_id} v{f.version} ("
            + ("anti-pattern" if structured else "markdown body")
            + ") · ctrl+s saves a new version")

    def fields(self) -> dict[str, str] | None:
        """The anti-pattern fields changed since the version loaded (None: none, or not an anti-pattern)."""
        return self.query_one("#ap-fields", AntiPatternFields).changed() or None if self.has_class("antipattern") \
            else None

    @property
    def unsaved(self) -> bool:
        return (self.query_one("#editor", TextArea).text != self.loaded or self.kept is not None
                or self.fields() is not None)

    def unsaved_text(self) -> bool:
        """For the app's quit: does this editor hold text that would be lost?"""
        return self.is_mounted and self.unsaved

    @on(Button.Pressed, "#save")
    def _pressed(self) -> None:
        self.action_save()

    def action_save(self) -> None:
        if not self.ready or self.saving:
            return
        reason = self.query_one("#reason", Input).value
        if not reason.strip():
            self.query_one("#errors", Static).update("A reason is required: say why this changed.")
            self.query_one("#reason", Input).focus()
            return
        self._check(self.query_one("#editor", TextArea).text, reason, self.base)

    def _check(self, body: str, reason: str, base: int | None) -> None:
        """Before saving: which golden queries the edit would change (the core's ``edit_impact``, in
        a job). None: save. Some: the user sees them (query, rank before → after) and chooses."""
        errors = self.query_one("#errors", Static)
        self.saving = True
        errors.update("checking the golden queries…")
        fields = self.fields()

        def done(report) -> None:
            self.saving = False
            if not self.is_attached:
                return
            if not report.changed and not report.hidden_changed:
                self._save(body, reason, base, fields)
                return
            count = len(report.changed) + report.hidden_changed
            errors.update(f"Not saved yet: this edit changes {count} golden {'query' if count == 1 else 'queries'}.")
            if self.is_current:
                self.app.push_screen(SaveAnywayScreen(report), answered)

        def answered(save: bool | None) -> None:
            if save:
                self._save(body, reason, base, fields)
            else:
                self.query_one("#errors", Static).update("Not saved: the golden queries stay as they are. "
                                                         "Change the text, or ctrl+s and Save anyway.")
                self.query_one("#editor", TextArea).focus()

        def failed(e: WorkbenchError) -> None:
            self.saving = False
            if not self.is_attached:
                return
            if isinstance(e, Conflict):   # moved on since ``base``: the conflict dialog, as a save would
                errors.update(f"Not saved: {self.fragment_id} changed since v{base}.")
                self._conflict(e, base)
            else:
                errors.update(e.message)
        self.app.submit(self.wb.edit_impact, self.fragment_id, body, actor=self.me, file="(editor)", base=base,
                        now=self.app.now, done=done, failed=failed, label="checking the golden queries…",
                        **({"fields": fields} if fields else {}))

    def _save(self, body: str, reason: str, base: int | None, fields: dict[str, str] | None = None) -> None:
        """Save ``body`` as made from version ``base`` (in a job); a Conflict opens the dialog."""
        errors = self.query_one("#errors", Static)
        self.saving = True
        errors.update("saving…")

        def done(f) -> None:
            self.saving = False
            self.notify(f"saved {f.id} v{f.version}")
            self.loaded, self.kept = body, None  # nothing unsaved any more, even if we cannot leave yet
            self.query_one("#ap-fields", AntiPatternFields).loaded = self.query_one("#ap-fields").values()
            errors.update("")
            if self.is_current:
                self.dismiss(f)

        def failed(e: WorkbenchError) -> None:
            self.saving = False
            if isinstance(e, Conflict):
                errors.update(f"Not saved: {self.fragment_id} changed since v{base}.")
                self._conflict(e, base)
            else:
                errors.update(e.message)
        self.app.submit(self.wb.edit, self.fragment_id, body, reason=reason, actor=self.me, file="(editor)",
                        base=base, done=done, failed=failed, write=True, label="saving…",
                        **({"fields": fields} if fields else {}))

    def _conflict(self, error: Conflict, base: int | None) -> None:
        """Show what changed since ``base`` and let the user choose; their text stays in the editor."""
        from .conflict import ConflictScreen

        if base is None:
            return

        def ask(view) -> None:
            latest, message, diff = view
            if not self.is_attached:
                return
            self.query_one("#errors", Static).update(message)
            if not self.is_current:
                return
            self.app.push_screen(ConflictScreen(self.fragment_id, message, base=base, latest=latest.version,
                                                diff=diff), lambda choice: self._resolve(choice, latest))

        def failed(e: WorkbenchError) -> None:  # no longer visible: the message (and the text) stay here
            if not self.is_attached:
                return
            self.query_one("#errors", Static).update(f"Not saved: {self.fragment_id} changed since v{base}, "
                                                     f"and the latest cannot be shown: {e.message}")
        self.app.submit(conflict_view, self.wb, self.fragment_id, base, self.me, done=ask, failed=failed,
                        label="loading the latest version…")

    def _resolve(self, choice: str | None, latest) -> None:
        from .conflict import KEEP, RELOAD

        editor = self.query_one("#editor", TextArea)
        errors = self.query_one("#errors", Static)
        if choice == KEEP:
            errors.update("")
            self._check(editor.text, self.query_one("#reason", Input).value, latest.version)
            return
        if choice == RELOAD:
            fields = self.fields()   # the user's fields are kept with their text, as lines above it
            if editor.text != self.loaded or fields:  # the user's newest own text is what is kept
                self.kept = (self.query_one("#ap-fields", AntiPatternFields).as_text() if fields else "") + editor.text
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
        if self.saving:
            self.notify("saving: wait a moment", severity="warning")
            return
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
