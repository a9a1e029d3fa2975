"""Gaps: questions agents asked in the last 30 days that got nothing useful (an abstention, or only
low-confidence fragments), near-identical ones grouped, most asked first. You see your own calls
and, as a lead, those made in the scopes you lead. ctrl+d (or enter; ctrl+o lists it) drafts an
answer to the focused group: the form opens with the question as its title, the questions asked in its body and the
group's scope, and saves a draft (a proposal, served to no one) that an owner publishes from the
inbox once the answer is written. A drafted question is no longer listed.

The table fits its width (``columns.fit``): count, question, who asked and when first; where it
was asked and since when fold away on a narrow terminal (→ scrolls to them). The highlighted
group's other phrasings, scopes and dates are in the detail lines under it.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding

from ...service.gaps import draft
from ..columns import Column
from ..plain import DataTable, Static
from ..table import FitTable
from .base import WbScreen

DAYS = 30
COLUMNS = (
    Column("n", "n", priority=0, whole=True, max_width=4, justify="right"),
    Column("question", "question", priority=0, min_width=20, max_width=72, grow=True, comfort=44),
    Column("who", "asked by", priority=1, min_width=10, max_width=28),
    Column("last", "last", priority=1, whole=True, max_width=5),
    Column("scope", "in", priority=2, min_width=12, max_width=40),
    Column("first", "first", priority=3, whole=True, max_width=5),
)


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


class GapsScreen(WbScreen):
    """Gaps: unanswered questions in your scopes; ctrl+d drafts a fragment that answers one."""

    DEFAULT_CSS = """
    GapsScreen #gaps { height: 1fr; min-height: 4; }
    GapsScreen #gaps-detail { height: auto; max-height: 4; }
    """
    BINDINGS = [
        Binding("ctrl+d", "draft", "Draft a fragment", id="gaps-draft"),
        Binding("enter", "draft", "Draft", id="gaps-open", show=False),
        Binding("ctrl+o", "row_menu", "Actions", id="gaps-actions"),
        Binding("escape", "back", "Back", id="gaps-back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.report = None
        self.groups: list = []

    def body(self) -> ComposeResult:
        yield Static(f"Gaps: questions agents asked in the last {DAYS} days that got nothing useful",
                     classes="pane-title")
        yield Static("loading…", id="gaps-count", classes="hint")
        yield FitTable(COLUMNS, fixed=2, id="gaps")
        yield Static("", id="gaps-detail", classes="hint", markup=False)

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one("#gaps", DataTable).focus()
        self.reload()

    def reload(self) -> None:
        self.app.submit(self.wb.gaps, days=DAYS, principal=self.me, now=self.app.now, done=self._show,
                        label="finding unanswered questions…", key="gaps-load")

    def _show(self, report) -> None:
        if not self.is_attached:
            return
        table = self.query_one("#gaps", DataTable)
        row = table.cursor_row
        self.report, self.groups = report, list(report.groups)
        values = [{"n": str(g.count), "question": g.question, "who": ", ".join(name for name, _ in g.principals),
                   "last": f"{g.last_seen:%m-%d}", "scope": ", ".join(s for s, _ in g.scopes),
                   "first": f"{g.first_seen:%m-%d}"} for g in self.groups]
        table.prepare(values)
        table.clear()
        table.add_rows([table.cells(v) for v in values])
        if self.groups:
            table.move_cursor(row=min(max(row, 0), len(self.groups) - 1))
        self.query_one("#gaps-count", Static).update(
            f"{report.questions} question(s) in {len(self.groups)} group(s) · "
            + ("^d drafts a fragment that answers one" if self.app.offers("draft")
               else "answer one with a proposal (workbench propose)")
            if self.groups else f"No unanswered questions in the last {DAYS} days in your scopes.")
        self._show_detail()

    @on(FitTable.Relaid, "#gaps")
    def _relaid(self) -> None:
        if self.report is not None:
            self._show(self.report)

    def _group(self):
        table = self.query_one("#gaps", DataTable)
        if not self.groups or not 0 <= table.cursor_row < len(self.groups):
            return None
        return self.groups[table.cursor_row]

    @on(DataTable.RowHighlighted, "#gaps")
    def _show_detail(self) -> None:
        g = self._group()
        if g is None:
            self.query_one("#gaps-detail", Static).update("")
            return
        who = ", ".join(f"{name} ({count})" for name, count in g.principals)
        lines = [g.question, f"asked {g.count}× by {who} · in {', '.join(s for s, _ in g.scopes) or '-'} · "
                             f"{g.first_seen:%Y-%m-%d} to {g.last_seen:%Y-%m-%d}"]
        lines += [f"also: {example}" for example in g.examples[1:]]
        self.query_one("#gaps-detail", Static).update("\n".join(lines))

    @on(DataTable.RowSelected, "#gaps")
    def _chosen(self) -> None:
        if self.app.offers("draft"):  # as the ctrl+d key: only for a principal who may create fragments
            self.action_draft()

    def action_draft(self) -> None:
        from .new_fragment import NewFragmentScreen

        g = self.__group_to_draft()
        if g is None:
            return
        fields = draft(g, self.me)
        self.app.push_screen(NewFragmentScreen(**fields, heading="Draft an answer to an unanswered question",
                                               reason=f"answers a gap: {clip(g.question, 80)}", gap=g.question))

    def __group_to_draft(self):
        g = self._group()
        if g is not None and not hasattr(self.wb, "draft_gap"):   # a team server's RPC offers no drafting yet
            self.notify("drafting an answer needs the workspace itself (`workbench tui` where it lives), "
                        "not a team server", severity="warning")
            return None
        return g

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """ctrl+d acts on the focused row of the table only."""
        if action == "draft" and self.focused is not self.query_one("#gaps", DataTable):
            return False
        return super().check_action(action, parameters)

    def menu_subject(self) -> str:
        g = self._group()
        return clip(g.question, 60) if g else ""

    def commands(self):
        return [("Draft a fragment answering the highlighted question", self.action_draft)]

    def action_back(self) -> None:
        self.app.pop_screen()
