"""Nudge inbox: your fragments that need a look, most used first; verify, snooze or edit each.
Under them, when there are any, the proposals awaiting your review (agents' notes, session
summaries and anti-patterns in scopes you lead): open one, accept it (choosing scope and owner),
edit then accept, or reject it with a reason its author reads.

The tables fit their width (``columns.fit``): title, kind, owner (or who proposed it), age and
reason first; used, cited, scope and id fold away on a narrow terminal (→ scrolls to them). The
highlighted row's full id, title and reasons, and its folded columns, are in the detail line
under each. The key grammar's ctrl keys act on the
focused row of the table that has focus (tab moves between them): on your fragments the row keys
(rowactions.py: ctrl+y verify and ctrl+z snooze ask first, ctrl+e edit, ctrl+k pin, ...); on
proposals ctrl+a accept, ctrl+e edit then accept, ctrl+r reject (asks, with a reason); enter opens
either; ctrl+o lists them. Plain letters never act here.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical

from ...errors import WorkbenchError
from ..columns import Column, age_badges, short_name
from ..format import age, scope_label
from ..messages import plain
from ..plain import DataTable, Input, Label, Static
from ..table import FitTable
from .base import WbScreen
from .rowactions import ROW_ACTIONS, RowActions, RowFragment, row_bindings

STALE_COLUMNS = (
    Column("title", "title", priority=0, min_width=16, max_width=48, grow=True, comfort=24),
    Column("kind", "kind", priority=0, whole=True, max_width=15),
    Column("owner", "owner", priority=1, min_width=9, max_width=20, compact=short_name),
    Column("age", "age", priority=1, whole=True, max_width=9),
    Column("reason", "reason", priority=2, min_width=16, max_width=60, grow=True),
    Column("used", "used", priority=3, whole=True, max_width=6, justify="right"),
    Column("cited", "cited", priority=3, whole=True, max_width=6, justify="right"),
    Column("id", "id", priority=4, min_width=16, max_width=32),
)
PROPOSAL_COLUMNS = (
    Column("title", "title", priority=0, min_width=16, max_width=48, grow=True, comfort=24),
    Column("kind", "kind", priority=0, whole=True, max_width=15),
    Column("by", "by", priority=1, min_width=9, max_width=24, compact=short_name),
    Column("age", "age", priority=1, whole=True, max_width=9),
    Column("scope", "scope", priority=2, min_width=12, max_width=40),
    Column("id", "id", priority=3, min_width=16, max_width=32),
)


def mine(wb, me, now) -> list:
    """The stale fragments ``me`` owns (a job)."""
    return [i for i in wb.stale(now=now, principal=me) if i.fragment.owner == me.name]


class InboxScreen(RowActions, WbScreen):
    """Nudge inbox: ctrl+y verify, ctrl+z snooze (for the days typed), ctrl+e edit, enter open."""

    DEFAULT_CSS = """
    InboxScreen #inbox { height: 1fr; min-height: 4; }
    InboxScreen #inbox-detail { height: auto; max-height: 3; }
    InboxScreen #snooze-row { height: auto; }
    InboxScreen #snooze-row Label { padding: 1 1 0 1; }
    InboxScreen #snooze-days { width: 12; }
    InboxScreen #snooze-hint { width: 1fr; padding: 1 1 0 1; }
    InboxScreen #proposals-pane { display: none; height: 1fr; }
    InboxScreen #proposals { height: 1fr; min-height: 4; }
    InboxScreen #proposal-detail { height: auto; max-height: 3; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open", id="inbox-open", show=False),
        *row_bindings("inbox"),
        Binding("ctrl+a", "accept", "Accept", id="inbox-accept"),
        Binding("ctrl+r", "reject", "Reject", id="inbox-reject"),
        Binding("escape", "back", "Back", id="inbox-back"),
    ]
    ROW_TABLE = "inbox"

    def __init__(self) -> None:
        super().__init__()
        self.items: list = []
        self.proposals: list = []   # proposals awaiting this principal's review, oldest first

    def body(self) -> ComposeResult:
        yield Static("Nudge inbox: your fragments that need a look, most used first", classes="pane-title")
        yield Static("", id="inbox-count", classes="hint")
        yield FitTable(STALE_COLUMNS, fixed=1, id="inbox")
        yield Static("", id="inbox-detail", classes="hint", markup=False)
        with Horizontal(id="snooze-row"):
            yield Label("Snooze days:", id="snooze-label")
            yield Input(value="30", placeholder="days", id="snooze-days", restrict=r"[0-9]*", max_length=5)
            yield Static("ctrl+z offers to hide the focused row for that long",
                         id="snooze-hint", classes="hint")
        with Vertical(id="proposals-pane"):
            yield Static("Proposals to review", classes="pane-title")
            yield Static("", id="proposals-count", classes="hint")
            yield FitTable(PROPOSAL_COLUMNS, fixed=1, id="proposals")
            yield Static("", id="proposal-detail", classes="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#inbox", DataTable).focus()
        self.reload()

    def reload(self) -> None:
        self.app.submit(mine, self.wb, self.me, self.app.clock(), done=self._show, label="loading the inbox…",
                        key="inbox-load")
        self.app.submit(self.wb.proposals, principal=self.me, to_review=True, done=self._show_proposals,
                        label="loading proposals…", key="inbox-proposals")

    def _item_values(self) -> list[dict]:
        now = self.app.clock()
        return [{"title": i.fragment.title, "kind": i.fragment.kind, "owner": i.fragment.owner,
                 "age": age_badges(age(i.last_touched, now), stale=True), "reason": "; ".join(i.reasons),
                 "used": str(i.traces), "cited": str(i.in_links), "id": i.fragment.id} for i in self.items]

    def _proposal_values(self) -> list[dict]:
        now, orgs = self.app.clock(), self.me.orgs
        return [{"title": f.title, "kind": f.kind, "by": f.content.detail("proposed_by") or f.owner,
                 "age": age(f.created_at, now), "scope": scope_label(f.scope, orgs), "id": f.id}
                for f in self.proposals]

    @staticmethod
    def _fill(table: FitTable, values: list[dict]) -> None:
        table.prepare(values)
        table.clear()
        table.add_rows([table.cells(v) for v in values])

    @on(FitTable.Relaid, "#inbox")
    def _relaid_items(self) -> None:
        self._show(self.items)

    @on(FitTable.Relaid, "#proposals")
    def _relaid_proposals(self) -> None:
        self._show_proposals(self.proposals)

    def _show(self, items: list) -> None:
        table = self.query_one("#inbox", FitTable)
        row = table.cursor_row
        self.items = items
        self._fill(table, self._item_values())
        if items:
            table.move_cursor(row=min(max(row, 0), len(items) - 1))
        self.query_one("#inbox-count", Static).update(
            f"{len(items)} to check · ^y verify · ^z snooze · ^e edit · enter open · ^o all" if items
            else "Nothing to check: all your fragments are fresh.")
        self._show_detail()

    @on(DataTable.RowHighlighted, "#inbox")
    def _show_detail(self) -> None:
        item = self._item()
        if item is None:
            self.query_one("#inbox-detail", Static).update("")
            return
        table = self.query_one("#inbox", FitTable)
        folded = table.folded_text(self._item_values()[table.cursor_row], skip=("id", "title", "reason"))
        self.query_one("#inbox-detail", Static).update(" · ".join(
            [item.fragment.id, item.fragment.title, "; ".join(item.reasons), *([folded] if folded else [])]))

    def _show_proposals(self, proposals: list) -> None:
        table = self.query_one("#proposals", FitTable)
        row = table.cursor_row
        self.proposals = proposals
        self._fill(table, self._proposal_values())
        pane = self.query_one("#proposals-pane")
        pane.display = bool(proposals)
        if proposals:
            table.move_cursor(row=min(max(row, 0), len(proposals) - 1))
            self.query_one("#proposals-count", Static).update(
                f"{len(proposals)} awaiting your review · ^a accept · ^e edit, then accept · ^r reject · enter open")
            if not self.items and not table.has_focus:
                table.focus()
        elif table.has_focus:
            self.query_one("#inbox", DataTable).focus()
        self._show_proposal_detail()
        self.refresh_bindings()

    @on(DataTable.RowHighlighted, "#proposals")
    def _show_proposal_detail(self) -> None:
        f = self._proposal()
        if f is None:
            self.query_one("#proposal-detail", Static).update("")
            return
        table = self.query_one("#proposals", FitTable)
        folded = table.folded_text(self._proposal_values()[table.cursor_row], skip=("id", "title", "by", "scope"))
        self.query_one("#proposal-detail", Static).update(" · ".join(
            [f.id, f.title, f"proposed by {f.content.detail('proposed_by') or f.owner} in {f.scope}",
             *([folded] if folded else [])]))

    def _on_proposals(self) -> bool:
        """Whether the proposals table has focus (the letter keys then act on proposals)."""
        focused = self.focused
        return focused is not None and focused.id == "proposals"

    def _proposal(self):
        table = self.query_one("#proposals", DataTable)
        if not self.proposals or not 0 <= table.cursor_row < len(self.proposals):
            return None
        return self.proposals[table.cursor_row]

    def _item(self):
        table = self.query_one("#inbox", DataTable)
        if not self.items or not 0 <= table.cursor_row < len(self.items):
            return None
        return self.items[table.cursor_row]

    def _current(self) -> str | None:
        if self._on_proposals():
            proposal = self._proposal()
            return proposal.id if proposal else None
        item = self._item()
        return item.fragment.id if item else None

    def _failed(self, e: WorkbenchError) -> None:
        self.notify(plain(e), title="Not done", severity="error", timeout=8)

    def row_fragment(self) -> RowFragment | None:
        """The focused row of your stale fragments (the row keys act there only)."""
        item = self._item()
        if item is None:
            return None
        f = item.fragment
        return RowFragment(f.id, f.title, f.scope, f.version)

    def row_focused(self) -> bool:
        """A row of either table has focus (the check of each key says which table it acts on)."""
        return self.focused is not None and self.focused.id in ("inbox", "proposals")

    def snooze_days(self) -> int:
        """The days typed beside the table (the dialog checks them), else 30."""
        raw = self.query_one("#snooze-days", Input).value.strip()
        return int(raw) if raw.isdigit() else 30

    def action_edit_row(self) -> None:
        """On a proposal: edit, then accept (the accept dialog opens once the edit is saved)."""
        from .edit import EditScreen

        if not self._on_proposals():
            super().action_edit_row()  # the inbox reloads when shown again after a save
            return
        proposal = self._proposal()
        if proposal:
            self.app.push_screen(EditScreen(proposal.id, base=proposal.version),
                                 lambda saved: self._accept(saved) if saved else None)

    def action_accept(self) -> None:
        proposal = self._proposal()
        if proposal and self._on_proposals():
            self._accept(proposal)

    def _accept(self, proposal) -> None:
        """Ask where it goes and who owns it, then accept it as the version reviewed (``base``)."""
        from .review import AcceptDialog

        def accept(request):  # while the dialog is open: a failure leaves it as it was
            return self.wb.accept(proposal.id, principal=self.me, scope=request.scope, owner=request.owner,
                                  reason=request.reason, base=proposal.version)

        def accepted(f) -> None:
            self.notify(f"accepted {f.id} into {f.scope}, owner {f.owner}")
            self.reload()
        self.app.push_screen(AcceptDialog(proposal, self.me.name).writing(accept, done=accepted, label="accepting…"))

    def action_reject(self) -> None:
        from .review import RejectDialog

        proposal = self._proposal()
        if not proposal or not self._on_proposals():
            return

        def reject(reason: str):
            return self.wb.reject(proposal.id, principal=self.me, reason=reason, base=proposal.version)

        def rejected(f) -> None:
            self.notify(f"rejected {f.id}: its author reads your reason")
            self.reload()
        self.app.push_screen(RejectDialog(proposal).writing(reject, done=rejected, label="rejecting…"))

    @on(DataTable.RowSelected, "#inbox")
    @on(DataTable.RowSelected, "#proposals")
    def _chosen(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        fid = self._current()
        if fid:
            self.app.open_fragment(fid)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Each ctrl key acts on the focused row of its table: the row keys on your fragments (edit and
        the menu on proposals too), accept and reject on proposals; none while a field has focus."""
        on_proposals = self._on_proposals()
        if action in {"accept", "reject"}:
            return on_proposals and bool(self.proposals) and super().check_action(action, parameters)
        if action in ROW_ACTIONS - {"edit_row", "row_menu", "open_row"} and on_proposals:
            return False
        return super().check_action(action, parameters)

    def menu_subject(self) -> str:
        if self._on_proposals():
            f = self._proposal()
            return f"{f.id} · {f.title}" if f else ""
        return super().menu_subject()

    def action_open_row(self) -> None:
        self.action_open()

    def commands(self):
        return [*self.row_commands(),
                ("Accept the highlighted proposal", self._accept_highlighted),
                ("Reject the highlighted proposal", self._reject_highlighted)]

    def _accept_highlighted(self) -> None:
        proposal = self._proposal()
        if proposal:
            self._accept(proposal)

    def _reject_highlighted(self) -> None:
        self.query_one("#proposals", DataTable).focus()
        self.action_reject()

    def action_back(self) -> None:
        self.app.pop_screen()
