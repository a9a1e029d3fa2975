"""“Discard changes?” and “Save anyway?”: small modal questions in the shared dialog frame.

They only ask: the caller decides what discarding or saving means. "Save anyway?": ``ctrl+s``
or enter says yes, escape or Cancel saves nothing. "Discard changes?" is the one dialog whose
confirming keys keep the work: ``ctrl+s`` (the reflex of someone who wants their text saved),
enter and escape all mean "Keep editing"; throwing the text away takes its own key, ``ctrl+d``,
or the Discard button.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.containers import VerticalScroll

from ..plain import Label
from .dialog import Dialog, DiscardScreen, dialog_bindings

__all__ = ["DiscardScreen", "SaveAnywayScreen"]


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
