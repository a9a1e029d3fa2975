"""The revert dialog: "Revert to vN?", asked before anything is written.

Names the version to go back to and the one shown now, shows (coloured, scrollable) what the
revert would change, and needs a reason. It only asks: it dismisses with the reason typed, or
None (escape, Cancel), and the fragment screen reverts. ctrl+s or enter reverts (the frame
is ``dialog.Dialog``'s). The diff comes from the core.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll

from ..plain import Input, Label, Static
from .conflict import coloured_diff
from .dialog import Dialog, dialog_bindings


class RevertScreen(Dialog):
    """Dismisses with the reason (revert) or None (cancel: nothing is written)."""

    BOX_CLASSES = "revert-box"
    VARIANTS: ClassVar[dict[str, str]] = {"confirm": "warning"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "revert-confirm-button", "cancel": "revert-cancel-button"}
    DEFAULT_CSS = """
    RevertScreen .dialog-box { width: 96%; max-width: 110; height: 1fr; border: thick $warning; }
    #revert-message { height: auto; padding: 0 1; }
    #revert-diff-scroll { height: 1fr; min-height: 3; border: solid $primary-background; }
    #revert-row { height: auto; margin-top: 1; }
    #revert-row Label { width: auto; padding: 1 1 0 0; }
    #revert-reason { width: 1fr; }
    #revert-error { height: auto; }
    """
    BINDINGS = dialog_bindings("revert", "Revert")

    def __init__(self, fragment_id: str, target, *, current: int, diff: str) -> None:
        """``target`` is the history entry (a Version) to go back to; ``current`` the version shown."""
        super().__init__()
        self.fragment_id, self.target, self.current, self.diff = fragment_id, target, current, diff

    def body(self) -> ComposeResult:
        t = self.target
        yield Label(f"Revert {self.fragment_id} to v{t.number}?", classes="pane-title", markup=False)
        yield Static(f"This saves a new version, v{self.current + 1}, with the content of v{t.number} "
                     f"({t.author}, {t.created_at:%Y-%m-%d %H:%M}: {t.reason}). It replaces v{self.current}, "
                     "the version shown now; nothing is lost, the history keeps every version.",
                     id="revert-message", markup=False)
        yield Label(f"What the revert changes, v{self.current} → v{t.number}:", classes="hint", markup=False)
        with VerticalScroll(id="revert-diff-scroll"):
            shown = (coloured_diff(self.diff) if self.diff else
                     Text(f"no difference in content between v{self.current} and v{t.number}"))
            yield Static(shown, id="revert-diff")
        with Horizontal(id="revert-row"):
            yield Label("Reason")
            yield Input(placeholder="why revert? (required)", id="revert-reason")
        yield Static("", id="revert-error", classes="error", markup=False)

    def confirm(self) -> None:
        reason = self.query_one("#revert-reason", Input).value.strip()
        if not reason:
            self.query_one("#revert-error", Static).update("A reason is required: say why you revert.")
            self.query_one("#revert-reason", Input).focus()
            return
        self.answer(reason)
