"""“Discard changes?” and “Save anyway?”: small modal questions in the shared dialog frame.

They only ask: the caller decides what discarding or saving means. ``ctrl+s`` or enter says yes
(Discard, Save anyway); escape or the Cancel button keeps editing and saves nothing.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import VerticalScroll

from ..plain import Label
from .dialog import Dialog, dialog_bindings


class DiscardScreen(Dialog):
    """Dismisses with True to discard, False to keep editing."""

    BOX_CLASSES = "confirm-box"
    CANCELLED = False
    VARIANTS: ClassVar[dict[str, str]] = {"confirm": "error", "cancel": "primary"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "discard-yes-button", "cancel": "discard-keep-button"}
    DEFAULT_CSS = """
    DiscardScreen .dialog-box { border: thick $warning; }
    DiscardScreen .dialog-box Label { width: 1fr; }
    """
    BINDINGS = dialog_bindings("discard", "Discard", "Keep editing")

    def __init__(self, what: str = "your changes", leaving: str = "Leaving now") -> None:
        super().__init__()
        self.what, self.leaving = what, leaving

    def body(self) -> ComposeResult:
        yield Label("Discard changes?", classes="pane-title")
        yield Label(f"{self.leaving} throws away {self.what}; nothing has been saved.", markup=False)

    def confirm(self) -> None:
        self.answer(True)


class SaveAnywayScreen(Dialog):
    """"This edit changes golden queries: save anyway?", listing each changed query with the
    fragment's rank before → after (the core's ``ImpactReport``). Dismisses with True to save;
    escape and Cancel save nothing."""

    BOX_CLASSES = "confirm-box"
    CANCELLED = False
    VARIANTS: ClassVar[dict[str, str]] = {"confirm": "warning", "cancel": "primary"}
    BUTTON_IDS: ClassVar[dict[str, str]] = {"confirm": "impact-save-button", "cancel": "impact-cancel-button"}
    DEFAULT_CSS = """
    SaveAnywayScreen .dialog-box { width: 90%; max-width: 110; max-height: 90%; padding: 1 2;
                                   border: thick $warning; }
    SaveAnywayScreen #impact-queries { height: auto; max-height: 14; }
    SaveAnywayScreen .impact-query { width: 1fr; height: auto; }
    """
    BINDINGS = dialog_bindings("impact", "Save anyway")

    def __init__(self, report) -> None:
        super().__init__()
        self.report = report

    def body(self) -> ComposeResult:
        report = self.report
        changed = report.changed
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

    def confirm(self) -> None:
        self.answer(True)
