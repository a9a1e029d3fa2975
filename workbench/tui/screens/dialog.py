"""The frame every dialog shares (pin, unpin, snooze, accept, reject, revert, conflict, discard —
which lives here, since cancelling any dialog with typed text asks it —,
save anyway, confirm, prompt), so that dialogs cannot drift apart.

A dialog's choices are its bindings: ``dialog_bindings`` makes them (the confirm choice on
``ctrl+s``, any other choice on its own ctrl key, cancel on ``escape``), and the frame makes the
buttons from the same bindings, so a button's words are always the footer's. Enter confirms too
(through the field it is typed in, or the frame's ``enter`` key) unless a multi-line field (a
TextArea) has focus; a focused button answers enter with its own choice. When it opens, the first
field has focus (a dialog without one: its confirm button). A printable key typed while a button
has focus goes to the dialog's first field: it is never lost on a button while the user thinks
they type a reason. ``has_typed_text()`` tells whether anything was typed since it opened (for
asking before a typed reason is thrown away).

A dialog only asks: it dismisses with its answer and the caller acts. It writes nothing and
decides nothing (the core does, when the caller acts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Select

from ..plain import Input, Label, TextArea

FIELDS = (Input, TextArea, Select)


@dataclass(frozen=True)
class Choice:
    """One answer a dialog offers: its key, its action (``action_<name>`` of the dialog), its words."""

    key: str
    action: str
    words: str
    variant: str = "default"


def dialog_bindings(prefix: str, confirm: str, cancel: str = "Cancel", *,
                    others: Iterable[Choice] = ()) -> list[Binding]:
    """A dialog's BINDINGS (ids ``<prefix>-confirm``, ``<prefix>-<action>``, ``<prefix>-cancel``):
    ``ctrl+s`` confirms, each of ``others`` on its key, ``escape`` cancels, enter confirms (hidden)."""
    return [Binding("ctrl+s", "confirm", confirm, id=f"{prefix}-confirm", priority=True),
            *(Binding(c.key, c.action, c.words, id=f"{prefix}-{c.action}", priority=True) for c in others),
            Binding("escape", "cancel", cancel, id=f"{prefix}-cancel"),
            Binding("enter", "enter", confirm, id=f"{prefix}-enter", show=False)]


class Dialog(ModalScreen):
    """A modal question in the shared frame. A subclass gives ``BINDINGS = dialog_bindings(...)``,
    ``body()`` (its title, text and fields) and ``confirm()`` (check what was typed, then
    ``dismiss`` with the answer); ``CANCELLED`` is what cancel dismisses with. ``VARIANTS`` colours
    the buttons by action; ``BUTTON_IDS`` names them (default ``<action>-button``)."""

    FORM = True                      # the app's plain-character keys never fire here
    CANCELLED: Any = None
    VARIANTS: ClassVar[dict[str, str]] = {"confirm": "primary"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {}
    BOX_CLASSES = ""

    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog .dialog-box { width: 90%; max-width: 72; height: auto; max-height: 100%; padding: 0 1;
                         border: thick $primary; background: $surface; }
    Dialog .dialog-actions { height: auto; }
    Dialog .dialog-actions Button { margin: 0 1 0 0; min-width: 10; }
    """

    def __init__(self, *, words: dict[str, str] | None = None) -> None:
        """``words``: this dialog's own words for some choices, by action (``{"confirm": "Overwrite"}``)."""
        super().__init__()
        for action, said in (words or {}).items():
            self.relabel(action, said)
        self._typed_at_open: list[str] | None = None
        self._write: tuple | None = None
        self.busy = False

    # -- the choices: bindings, footer and buttons from one list ---------------------------------

    def relabel(self, action: str, words: str) -> None:
        """Give the choice ``action`` other words (its footer entry and its button both)."""
        table = self._bindings.key_to_bindings
        for key, bindings in table.items():
            table[key] = [replace(b, description=words) if b.action == action else b for b in bindings]

    def choices(self) -> list[Choice]:
        """The answers offered, in footer order (confirm first, cancel last): one button each."""
        out: dict[str, Choice] = {}
        for key, bindings in self._bindings.key_to_bindings.items():
            for b in bindings:
                if b.show and b.action not in out:
                    out[b.action] = Choice(key, b.action, b.description, self.VARIANTS.get(b.action, "default"))
        return list(out.values())

    def button_id(self, action: str) -> str:
        return self.BUTTON_IDS.get(action, f"{action}-button")

    def compose(self) -> ComposeResult:
        with Vertical(classes=f"dialog-box {self.BOX_CLASSES}".strip()):
            yield from self.body()
            with Horizontal(classes="dialog-actions"):
                for c in self.choices():
                    button = Button(c.words, id=self.button_id(c.action), variant=c.variant)  # type: ignore[arg-type]
                    button.action_name = c.action  # type: ignore[attr-defined]
                    yield button
        yield Footer()

    def body(self) -> ComposeResult:  # pragma: no cover - every dialog says what it asks
        yield from ()

    # -- focus and typing --------------------------------------------------------------------------

    def fields(self) -> list[Any]:
        return [w for w in self.query("Input, TextArea, Select") if isinstance(w, FIELDS) and w.display]

    def first_focus(self):
        """What has focus when the dialog opens: its first field, else its confirm button."""
        for w in self.fields():
            if isinstance(w, (Input, TextArea)):
                return w
        found = self.fields() or list(self.query(f"#{self.button_id('confirm')}"))
        return found[0] if found else None

    def on_mount(self) -> None:
        target = self.first_focus()
        if target is not None:
            self.set_focus(target)  # now: a key typed at once goes there
        self._typed_at_open = self._typed()

    def _typed(self) -> list[str]:
        return [w.text if isinstance(w, TextArea) else w.value for w in self.fields() if isinstance(w, (Input, TextArea))]

    def has_typed_text(self) -> bool:
        """Whether anything was typed into the dialog's text fields since it opened."""
        return self._typed_at_open is not None and self._typed() != self._typed_at_open

    def on_key(self, event: events.Key) -> None:
        """A printable key on a focused button goes to the first text field (or nowhere, said plainly)."""
        if not isinstance(self.focused, Button) or not event.is_printable or event.character in (None, " "):
            return
        event.stop()
        event.prevent_default()
        for w in self.fields():
            if isinstance(w, (Input, TextArea)):
                self.set_focus(w)  # now (its Focus event is queued before the typing below)
                w.call_later(_type_at_end, w, event.character)  # after its focus (which selects its text)
                return
        self.app.bell()

    # -- the answers -------------------------------------------------------------------------------

    def writing(self, write, *, done=None, moot=None, label: str = "saving…") -> Dialog:
        """Make the write while the dialog is still open: on confirm, ``write(answer)`` runs as a job
        (``app.submit``); the dialog closes when it succeeded (then ``done(result)``), and when it
        failed (the server unreachable, or the core refused) it stays open with everything typed,
        and the error is a notification. ``moot(error)``, when given, may say the question itself
        is void (True: say so, the dialog closes; e.g. a revert whose base moved on). Returns the
        dialog (push it without a callback)."""
        self._write = (write, done, moot, label)
        return self

    def answer(self, value: Any) -> None:
        """Dismiss with ``value``, or first make the write ``writing`` named."""
        if self._write is None:
            self.dismiss(value)
            return
        if self.busy:
            return  # a second ctrl+s while the first is on its way
        write, done, moot, label = self._write
        self.busy = True

        def written(result: Any) -> None:
            self.busy = False
            self.dismiss(value)
            if done is not None:
                done(result)

        def failed(error) -> None:
            from ..messages import plain

            self.busy = False
            if moot is not None and moot(error):
                self.dismiss(self.CANCELLED)
                return
            self.app.notify(plain(error), title="Not done", severity="error", timeout=10)
        self.app.submit(write, value, done=written, failed=failed, write=True, label=label)

    @on(Button.Pressed)
    async def _pressed(self, event: Button.Pressed) -> None:
        action = getattr(event.button, "action_name", None)
        if action is not None:
            event.stop()
            await self.run_action(action)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_confirm()

    def action_enter(self) -> None:
        if not isinstance(self.focused, TextArea):
            self.action_confirm()

    def action_confirm(self) -> None:
        self.confirm()

    def confirm(self) -> None:  # pragma: no cover - every dialog says what confirming means
        raise NotImplementedError

    def action_cancel(self) -> None:
        """Cancel: at once when nothing was typed; else ask first ("Discard changes?"), so a
        typed reason is never thrown away by one key."""
        if not self.has_typed_text():
            self.dismiss(self.CANCELLED)
            return
        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(self.CANCELLED)
        self.app.push_screen(DiscardScreen(self.discard_what()), answered)

    def discard_what(self) -> str:
        return "what you typed in this dialog"

    def unsaved_text(self) -> bool:
        """For the app's quit: would leaving lose typed text?"""
        return bool(self.is_mounted) and self.has_typed_text()


def _type_at_end(field, text: str) -> None:
    """Type ``text`` at the end of a field, as if its cursor were there."""
    if isinstance(field, Input):
        field.cursor_position = len(field.value)
        field.insert_text_at_cursor(text)
    else:
        field.move_cursor(field.document.end)
        field.insert(text)


class DiscardScreen(Dialog):
    """Dismisses with True to discard, False to keep editing."""

    BOX_CLASSES = "confirm-box"
    CANCELLED = False
    VARIANTS: ClassVar[dict[str, str]] = {"discard": "error", "confirm": "primary"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {"discard": "discard-yes-button", "confirm": "discard-keep-button"}
    DEFAULT_CSS = """
    DiscardScreen .dialog-box { border: thick $warning; }
    DiscardScreen .dialog-box Label { width: 1fr; }
    """
    BINDINGS = [Binding("ctrl+d", "discard", "Discard", id="discard-discard", priority=True),
                Binding("ctrl+s", "confirm", "Keep editing", id="discard-confirm", priority=True),
                Binding("escape", "confirm", "Keep editing", id="discard-cancel", show=False),
                Binding("enter", "enter", "Keep editing", id="discard-enter", show=False)]

    def __init__(self, what: str = "your changes", leaving: str = "Leaving now") -> None:
        super().__init__()
        self.what, self.leaving = what, leaving

    def body(self) -> ComposeResult:
        yield Label("Discard changes?", classes="pane-title")
        yield Label(f"{self.leaving} throws away {self.what}; nothing has been saved.", markup=False)

    def first_focus(self):
        return self.query_one(f"#{self.button_id('confirm')}")

    def confirm(self) -> None:
        self.answer(False)

    def action_discard(self) -> None:
        self.answer(True)

    def action_cancel(self) -> None:
        self.answer(False)
