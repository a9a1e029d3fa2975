"""The row's actions menu (ctrl+o): every action the principal may take on the focused row, each
with its key, picked with the arrows and enter; esc closes it and does nothing.

The explicit mode of the key grammar, and the way in where a terminal or a browser keeps a ctrl
key for itself. The entries are read from the screen's own bindings (its ctrl keys, as its
``check_action`` allows them now: the principal's rights and the focused table), so the menu
cannot offer what the key would refuse, nor drift from the keys. It only picks: the screen runs
the action (which asks first where the action is destructive).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList
from textual.widgets.option_list import Option

from ..plain import Label

# keys that are never a row's action (confirm, the menu itself, the palette, quit)
NOT_ROW_KEYS = {"ctrl+s", "ctrl+o", "ctrl+p", "ctrl+q", "ctrl+c"}

# what each action does, in the menu's words (else the binding's description)
LABELS = {
    "open_row": "Open", "edit_row": "Edit", "pin_row": "Pin in a scope you lead", "unpin_row": "Unpin",
    "verify_row": "Verify: still true (asks)", "snooze_row": "Snooze: off the stale list for a while (asks)",
    "archive_row": "Archive: no longer served (asks)", "accept": "Accept the proposal",
    "reject": "Reject the proposal, with a reason (asks)", "revert": "Revert to the highlighted version (asks)",
    "draft": "Draft an answer", "unpin": "Unpin (asks)",
}


@dataclass(frozen=True)
class MenuEntry:
    action: str     # the screen's action name (without "action_")
    label: str
    key: str        # as the footer shows it (^e, enter)


def menu_entries(screen) -> list[MenuEntry]:
    """The actions the focused row offers now, in the order of the screen's bindings; ``open_row``
    first when the screen opens rows."""
    app = screen.app
    entries: list[MenuEntry] = []
    if hasattr(screen, "action_open_row") and screen.check_action("open_row", ()):
        entries.append(MenuEntry("open_row", LABELS["open_row"], "enter"))
    seen: set[str] = set()
    for key, bindings in type(screen)._merge_bindings().key_to_bindings.items():
        for b in bindings:
            if not key.startswith("ctrl+") or key in NOT_ROW_KEYS or b.action in seen:
                continue
            if not hasattr(screen, f"action_{b.action}") or not screen.check_action(b.action, ()):
                continue
            seen.add(b.action)
            entries.append(MenuEntry(b.action, LABELS.get(b.action, b.description or b.action),
                                     app.get_key_display(b)))
    return entries


class ActionsMenu(ModalScreen[str | None]):
    """Dismisses with the action picked, or None (esc)."""

    DEFAULT_CSS = """
    ActionsMenu { align: center middle; }
    ActionsMenu .menu-box { width: 90%; max-width: 64; height: auto; padding: 0 1; border: thick $primary;
                            background: $surface; }
    ActionsMenu .menu-box Label { width: 1fr; }
    ActionsMenu OptionList { height: auto; max-height: 12; margin-top: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "Close", id="actions-menu-close")]

    def __init__(self, subject: str, entries: list[MenuEntry]) -> None:
        super().__init__()
        self.subject, self.entries = subject, entries

    def compose(self) -> ComposeResult:
        width = max(len(e.label) for e in self.entries) + 2
        with Vertical(classes="menu-box"):
            yield Label("Actions", classes="pane-title")
            yield Label(self.subject, id="actions-menu-subject")
            yield OptionList(*(Option(Text(f"{e.label:<{width}}{e.key}"), id=e.action) for e in self.entries),
                             id="actions-menu-list")
        yield Footer()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = 0
        options.focus()

    @on(OptionList.OptionSelected, "#actions-menu-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
