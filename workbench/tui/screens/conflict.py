"""The edit conflict dialog: someone saved the fragment while this editor was open.

Shows who changed it (from the history, in the TUI's words: the core's Conflict message names a
CLI command) and the diff between the version the edit started from and the latest one
(coloured, scrollable), and lets the user choose explicitly: reload the latest (their text is
kept beside it), keep their text and save it over the latest, or cancel back to editing. It
decides nothing and saves nothing itself: it dismisses with "reload", "keep" or None and the
editor acts. Everything it shows comes from the core (no diffing here).
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer

from ...inert import inert
from ..plain import Label, Static

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


class ConflictScreen(ModalScreen[str | None]):
    """Dismisses with RELOAD, KEEP, or None (cancel: back to editing, nothing changed)."""

    DEFAULT_CSS = """
    ConflictScreen { align: center middle; }
    .conflict-box { width: 96%; max-width: 120; height: 1fr; max-height: 100%; padding: 0 1;
                    border: thick $error; background: $surface; }
    #conflict-message { height: auto; padding: 0 1; }
    #conflict-diff-scroll { height: 1fr; border: solid $primary-background; }
    .dialog-actions { height: auto; margin-top: 1; }
    .dialog-actions Button { margin: 0 1; }
    """

    BINDINGS = [
        Binding("r", "reload", "Reload latest", id="conflict-reload"),
        Binding("k", "keep", "Keep my text, save over latest", id="conflict-keep-mine"),
        Binding("escape", "cancel", "Cancel", id="conflict-cancel"),
    ]

    def __init__(self, fragment_id: str, message: str, *, base: int, latest: int, diff: str) -> None:
        super().__init__()
        self.fragment_id, self.message = fragment_id, message
        self.base, self.latest, self.diff = base, latest, diff

    def compose(self) -> ComposeResult:
        with Vertical(classes="conflict-box"):
            yield Label(f"Not saved: {self.fragment_id} changed while you were editing",
                        classes="pane-title", markup=False)
            yield Static(self.message, id="conflict-message", markup=False)
            yield Static(f"What others changed, v{self.base} → v{self.latest} (k would undo it; your text is "
                         "still in the editor):", classes="hint", markup=False)
            with VerticalScroll(id="conflict-diff-scroll"):
                shown = (coloured_diff(self.diff) if self.diff else
                         Text(f"no difference in content between v{self.base} and v{self.latest}"))
                yield Static(shown, id="conflict-diff")
            with Horizontal(classes="dialog-actions"):
                yield Button("Reload latest (r)", id="conflict-reload-button", variant="primary")
                yield Button(f"Keep mine, save over v{self.latest} (k)", id="conflict-keep-button",
                             variant="warning")
                yield Button("Cancel (esc)", id="conflict-cancel-button")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#conflict-diff-scroll").focus()  # arrows and page keys scroll the diff

    @on(Button.Pressed, "#conflict-reload-button")
    def action_reload(self) -> None:
        self.dismiss(RELOAD)

    @on(Button.Pressed, "#conflict-keep-button")
    def action_keep(self) -> None:
        self.dismiss(KEEP)

    @on(Button.Pressed, "#conflict-cancel-button")
    def action_cancel(self) -> None:
        self.dismiss(None)
