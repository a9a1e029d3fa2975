"""The diff between two versions of a fragment, coloured and scrollable, with a version picker.

A large modal so the diff is usable at 24 rows: two compact pickers (from, to) list every version
with its author, time and reason; the diff below scrolls with the arrows and page keys. The diff
text comes from the core (``Workbench.diff``, through ``app.submit``); nothing is diffed here.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, OptionList

from ...errors import WorkbenchError
from ..format import LOADING, version_line
from ..plain import Input, Label, Select, Static, TextArea
from .conflict import coloured_diff

LETTER_ACTIONS = {"pick_from", "pick_to", "swap"}


class DiffScreen(ModalScreen[None]):
    """Shows ``diff(a, b)``; the pickers (``f``, ``t``) or ``s`` (swap) choose another pair."""

    DEFAULT_CSS = """
    DiffScreen { align: center middle; }
    .diff-box { width: 96%; height: 1fr; max-height: 100%; padding: 0 1; border: thick $primary; background: $surface; }
    #diff-pick { height: auto; }
    #diff-pick Label { width: auto; padding: 0 1; }
    #diff-pick Select { width: 1fr; }
    #diff-pick SelectCurrent Static#label { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #diff-scroll { height: 1fr; border: solid $primary-background; }
    """

    BINDINGS = [
        Binding("escape", "close", "Close", id="diff-close"),
        Binding("f", "pick_from", "From version", id="diff-pick-from"),
        Binding("t", "pick_to", "To version", id="diff-pick-to"),
        Binding("s", "swap", "Swap", id="diff-swap"),
    ]

    def __init__(self, fragment_id: str, versions: list, a: int, b: int) -> None:
        super().__init__()
        self.fragment_id, self.versions = fragment_id, list(versions)
        self.a, self.b = a, b
        self.text: Text | None = None   # the diff as shown (coloured), once loaded

    def compose(self) -> ComposeResult:
        options = [(version_line(v), v.number) for v in self.versions]
        with Vertical(classes="diff-box"):
            yield Label(f"Diff of {self.fragment_id}", classes="pane-title", markup=False)
            with Horizontal(id="diff-pick"):
                yield Label("from")
                yield Select(options, value=self.a, allow_blank=False, compact=True, id="diff-from")
                yield Label("to")
                yield Select(options, value=self.b, allow_blank=False, compact=True, id="diff-to")
            with VerticalScroll(id="diff-scroll"):
                yield Static(LOADING, id="diff")
            yield Label("f / t: pick the versions · s: swap · ↑↓ pgup pgdn: scroll · esc: close", classes="hint")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#diff-scroll").focus()
        self.show()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Letter keys never fire while a picker's list (type to search) or a text field has focus."""
        return not (action in LETTER_ACTIONS and isinstance(self.focused, (Input, TextArea, Button, OptionList)))

    def show(self) -> None:
        a, b = self.a, self.b
        self.query_one("#diff", Static).update(LOADING)

        def done(diff: str) -> None:
            if not self.is_attached:  # closed before the diff came
                return
            self.text = coloured_diff(diff) if diff else Text(f"no difference between v{a} and v{b}")
            self.query_one("#diff", Static).update(self.text)
            self.query_one("#diff-scroll").scroll_home(animate=False)

        def failed(e: WorkbenchError) -> None:
            if not self.is_attached:
                return
            self.text = Text(e.message, "red")
            self.query_one("#diff", Static).update(self.text)
        self.app.submit(self.app.wb.diff, self.fragment_id, a, b, principal=self.app.principal, done=done,
                        failed=failed, label="diffing…", key=f"diff-{id(self)}")

    @on(Select.Changed)
    def _picked(self) -> None:
        a, b = self.query_one("#diff-from", Select).value, self.query_one("#diff-to", Select).value
        if (a, b) != (self.a, self.b) and isinstance(a, int) and isinstance(b, int):
            self.a, self.b = a, b
            self.show()

    def action_pick_from(self) -> None:
        self._open("#diff-from")

    def action_pick_to(self) -> None:
        self._open("#diff-to")

    def _open(self, selector: str) -> None:
        select = self.query_one(selector, Select)
        select.focus()
        select.action_show_overlay()

    def action_swap(self) -> None:
        self.a, self.b = self.b, self.a
        with self.prevent(Select.Changed):
            self.query_one("#diff-from", Select).value = self.a
            self.query_one("#diff-to", Select).value = self.b
        self.show()

    def action_close(self) -> None:
        self.dismiss(None)
