"""The edit conflict dialog: someone saved the fragment while this editor was open.

Shows who changed it (from the history, in the TUI's words: the core's Conflict message names a
CLI command) and the diff between the version the edit started from and the latest one
(coloured, scrollable), and lets the user choose explicitly: reload the latest (their text is
kept beside it: ctrl+r), keep their text and save it over the latest (ctrl+s, as the save
they asked for), or cancel back to editing (esc). It decides nothing and saves nothing
itself: it dismisses with "reload", "keep" or None and the editor acts. Everything it shows comes from the core (no diffing here).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll

from ...inert import inert
from ..plain import Label, Static
from .dialog import Choice, Dialog, dialog_bindings

RELOAD, KEEP = "reload", "keep"


def moved_on(fragment_id: str, base: int, versions) -> str:
    """Who changed the fragment since ``base``, in the TUI's words (from the history the core returns)."""
    later = [v for v in versions if v.number > base]
    if not later:
        return f"{fragment_id} changed since v{base}; nothing of yours was saved."
    who = ", ".join(dict.fromkeys(v.author for v in later))
    last = later[-1]
    said = "" if last.hidden else f": {last.reason!r}"
    return (f"{fragment_id} changed since v{base}: now v{last.number}, by {who} "
            f"(last {last.created_at:%Y-%m-%d %H:%M}{said}). Nothing of yours was saved.")


def coloured_diff(diff: str) -> Text:
    """A unified diff with added lines green, removed red, hunk headers cyan."""
    text = Text()
    for line in diff.splitlines(keepends=True):
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        text.append(inert(line), style)
    return text


class ConflictScreen(Dialog):
    """Dismisses with RELOAD, KEEP, or None (cancel: back to editing, nothing changed)."""

    VARIANTS: ClassVar[dict[str, str]] = {"confirm": "warning", "reload": "primary"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "conflict-keep-button", "reload": "conflict-reload-button",
                  "cancel": "conflict-cancel-button"}
    DEFAULT_CSS = """
    ConflictScreen .dialog-box { width: 96%; max-width: 120; height: 1fr; border: thick $error; }
    #conflict-message { height: auto; padding: 0 1; }
    #conflict-diff-scroll { height: 1fr; border: solid $primary-background; }
    """
    BINDINGS = dialog_bindings("conflict", "Keep mine, save over latest",
                               others=[Choice("ctrl+r", "reload", "Reload latest")])

    def __init__(self, fragment_id: str, message: str, *, base: int, latest: int, diff: str) -> None:
        super().__init__(words={"confirm": f"Keep mine, save over v{latest}"})
        self.fragment_id, self.message = fragment_id, message
        self.base, self.latest, self.diff = base, latest, diff

    def body(self) -> ComposeResult:
        yield Label(f"Not saved: {self.fragment_id} changed while you were editing",
                    classes="pane-title", markup=False)
        yield Static(self.message, id="conflict-message", markup=False)
        yield Static(f"What others changed, v{self.base} → v{self.latest} (keeping yours would undo it; your "
                     "text is still in the editor):", classes="hint", markup=False)
        with VerticalScroll(id="conflict-diff-scroll"):
            shown = (coloured_diff(self.diff) if self.diff else
                     Text(f"no difference in content between v{self.base} and v{self.latest}"))
            yield Static(shown, id="conflict-diff")

    def first_focus(self):
        return self.query_one("#conflict-diff-scroll")  # arrows and page keys scroll the diff

    def confirm(self) -> None:
        self.answer(KEEP)

    def action_reload(self) -> None:
        self.answer(RELOAD)
