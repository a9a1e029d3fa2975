""""Discard changes?" and "Save anyway?" in a small modal box, answered by key or button.

They only ask: the caller decides what discarding or saving means. Escape and enter on the
focused default are the safe answer (keep editing; save nothing); only `d` (or the Discard
button), or `s` (Save anyway) says yes.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer

from ..plain import Label


class DiscardScreen(ModalScreen[bool]):
    """Dismisses with True to discard, False to keep editing."""

    DEFAULT_CSS = """
    DiscardScreen { align: center middle; }
    .confirm-box { width: 72; height: auto; padding: 1 2; border: thick $warning; background: $surface; }
    .confirm-box Label { width: 1fr; }
    .dialog-actions { height: auto; margin-top: 1; }
    .dialog-actions Button { margin: 0 1; }
    """

    BINDINGS = [
        Binding("d", "discard", "Discard", id="discard-yes"),
        Binding("k", "keep", "Keep editing", id="discard-keep"),
        Binding("escape", "keep", "Keep editing", id="discard-cancel", show=False),
    ]

    def __init__(self, what: str = "your changes", leaving: str = "Leaving now") -> None:
        super().__init__()
        self.what, self.leaving = what, leaving

    def compose(self) -> ComposeResult:
        with Vertical(classes="confirm-box"):
            yield Label("Discard changes?", classes="pane-title")
            yield Label(f"{self.leaving} throws away {self.what}; nothing has been saved.", markup=False)
            with Horizontal(classes="dialog-actions"):
                yield Button("Discard (d)", id="discard-yes-button", variant="error")
                yield Button("Keep editing (k)", id="discard-keep-button", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#discard-keep-button", Button).focus()

    @on(Button.Pressed, "#discard-yes-button")
    def action_discard(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#discard-keep-button")
    def action_keep(self) -> None:
        self.dismiss(False)


class SaveAnywayScreen(ModalScreen[bool]):
    """"This edit changes golden queries: save anyway?", listing each changed query with the
    fragment's rank before → after (the core's ``ImpactReport``). Dismisses with True to save;
    escape and the focused default (Cancel) save nothing."""

    DEFAULT_CSS = """
    SaveAnywayScreen { align: center middle; }
    SaveAnywayScreen .confirm-box { width: 90%; max-width: 110; height: auto; max-height: 90%; padding: 1 2;
                                    border: thick $warning; background: $surface; }
    SaveAnywayScreen #impact-queries { height: auto; max-height: 14; }
    SaveAnywayScreen .impact-query { width: 1fr; height: auto; }
    SaveAnywayScreen .dialog-actions { height: auto; margin-top: 1; }
    SaveAnywayScreen .dialog-actions Button { margin: 0 1; }
    """

    BINDINGS = [
        Binding("s", "save", "Save anyway", id="impact-save"),
        Binding("c", "cancel", "Cancel", id="impact-cancel"),
        Binding("escape", "cancel", "Cancel", id="impact-escape", show=False),
    ]

    def __init__(self, report) -> None:
        super().__init__()
        self.report = report

    def compose(self) -> ComposeResult:
        from textual.containers import VerticalScroll

        report = self.report
        changed = report.changed
        with Vertical(classes="confirm-box"):
            yield Label(f"This edit changes {len(changed) + report.hidden_changed} golden "
                        f"{'query' if len(changed) + report.hidden_changed == 1 else 'queries'}", classes="pane-title")
            yield Label(f"Rank of {report.fragment_id} before → after, within the top {report.k}:", markup=False)
            with VerticalScroll(id="impact-queries"):
                for q in changed:
                    what = "loses its answer" if q.breaks else "its top 3 changes"
                    yield Label(f"• {q.query} ({q.query_id}, {q.principal}): {q.move(report.k)}, {what}",
                                classes="impact-query", markup=False)
                if report.hidden_changed:
                    yield Label(f"• and {report.hidden_changed} more asked by people you may not see",
                                classes="impact-query", markup=False)
            with Horizontal(classes="dialog-actions"):
                yield Button("Save anyway (s)", id="impact-save-button", variant="warning")
                yield Button("Cancel (c)", id="impact-cancel-button", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#impact-cancel-button", Button).focus()

    @on(Button.Pressed, "#impact-save-button")
    def action_save(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#impact-cancel-button")
    def action_cancel(self) -> None:
        self.dismiss(False)
