"""The frame every screen shares: header, body, a job progress bar and the footer; and the parts of
the key grammar every screen follows: the row's actions menu (ctrl+o), and, on a screen whose main
job is typing (``FORM``), a printable key typed while its table or list has focus goes to its text
field. It decides no action itself: the screens' ``check_action`` and the core do.
"""

from __future__ import annotations

from typing import Callable, Iterable

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, DataTable, Footer, Header, Input, ListView, OptionList, ProgressBar, TextArea, Tree

from ..plain import Static


class WbScreen(Screen):
    """``FORM = True`` on a screen whose main job is typing (search, edit, pin, export,
    anti-pattern): the app's plain-character keys never fire there (see ``WorkbenchApp``), and a
    printable key typed while a table or list of it has focus goes to ``typing_field()``.

    A screen with a ``reload()`` reloads when it is shown again after any write
    (``app.data_version`` moved), so Browse and the rest never show stale rows."""

    FORM = False
    # the screen's actions bound to plain characters (view keys): never fired while a text field or a
    # button has focus, where the character is typed (or ignored)
    LETTER_ACTIONS: frozenset[str] = frozenset()

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
        action at all (``WorkbenchApp.offers``); screens that refine this call it too. The actions
        menu opens on a focused table's row."""
        if action == "row_menu" and not self.row_focused():
            return False
        if action in self.LETTER_ACTIONS and isinstance(self.focused, (Input, TextArea, Button)):
            return False
        return self.app.offers(action)

    def row_focused(self) -> bool:
        """Whether a row is focused, for the row keys and the actions menu: a table has focus."""
        return isinstance(self.focused, DataTable)

    # -- the key grammar -------------------------------------------------------------------

    def typing_field(self) -> Widget | None:
        """The text field that printable keys typed on this (FORM) screen's table or list go to."""
        return None

    def on_key(self, event: events.Key) -> None:
        """On a FORM screen, a printable key typed while a table or list has focus is typed into the
        screen's field instead (focus moves there, the character is appended): letters never act
        on a row there, and nothing typed is lost."""
        if not self.FORM or not event.is_printable or not event.character:
            return
        if not isinstance(self.focused, (DataTable, OptionList, ListView, Tree)):
            return
        if any(self.check_action(b.action, ()) for b in self._bindings.key_to_bindings.get(event.key, ())):
            return  # a key of this screen that may act here (Search's `/`): its binding runs
        field = self.typing_field()
        if field is None or not field.display or field.disabled:
            return
        event.stop()
        event.prevent_default()
        select = isinstance(field, Input) and field.select_on_focus
        if select:  # appended to, not replaced by the next key
            field.select_on_focus = False
        self.set_focus(field)  # at once: the keys typed next go to the field
        if select:
            field.call_later(setattr, field, "select_on_focus", True)  # after its Focus event (queued above)
        if isinstance(field, Input):
            field.cursor_position = len(field.value)
            field.insert_text_at_cursor(event.character)
        elif isinstance(field, TextArea):
            field.insert(event.character)

    def menu_subject(self) -> str:
        """What the actions menu acts on, in a line (the row's id and title)."""
        row = getattr(self, "row_fragment", lambda: None)()
        return f"{row.id} · {row.title}" if row is not None else ""

    def action_row_menu(self) -> None:
        """ctrl+o: the focused row's actions, each with its key (actionsmenu.py)."""
        from .actionsmenu import ActionsMenu, menu_entries

        entries = menu_entries(self)
        if not entries:
            self.notify("nothing you may do on this row", severity="warning")
            return

        def picked(action: str | None) -> None:
            if action:
                getattr(self, f"action_{action}")()
        self.app.push_screen(ActionsMenu(self.menu_subject(), entries), picked)

    def commands(self) -> Iterable[tuple[str, Callable[[], None]]]:
        """(name, callback) pairs this screen adds to the command palette."""
        return []

    @property
    def wb(self):
        return self.app.wb

    @property
    def me(self):
        return self.app.principal
