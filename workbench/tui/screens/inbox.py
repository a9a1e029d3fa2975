"""Nudge inbox: your fragments that need a look, most used first; verify, snooze or edit each.

The table keeps ids and titles short so the reason column shows; the highlighted row's full
id, title and reasons are in the detail line under it.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Input, Label, Static, TextArea

from ...errors import WorkbenchError
from ..messages import plain
from .base import WbScreen

ID_WIDTH, TITLE_WIDTH, REASON_WIDTH = 24, 30, 60


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def mine(wb, me, now) -> list:
    """The stale fragments ``me`` owns (a job)."""
    return [i for i in wb.stale(now=now, principal=me) if i.fragment.owner == me.name]


class InboxScreen(WbScreen):
    """Nudge inbox: v verify, z snooze (for the days typed), e edit, enter open."""

    DEFAULT_CSS = """
    InboxScreen #inbox { height: 1fr; min-height: 4; }
    InboxScreen #inbox-detail { height: auto; max-height: 3; }
    InboxScreen #snooze-row { height: auto; }
    InboxScreen #snooze-row Label { padding: 1 1 0 1; }
    InboxScreen #snooze-days { width: 12; }
    InboxScreen #snooze-hint { width: 1fr; padding: 1 1 0 1; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open", id="inbox-open", show=False),
        Binding("v", "verify", "Verify", id="inbox-verify"),
        Binding("z", "snooze", "Snooze", id="inbox-snooze"),
        Binding("e", "edit", "Edit", id="inbox-edit"),
        Binding("escape", "back", "Back", id="inbox-back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.items: list = []

    def body(self) -> ComposeResult:
        yield Static("Nudge inbox: your fragments that need a look, most used first", classes="pane-title")
        yield Static("", id="inbox-count", classes="hint")
        yield DataTable(id="inbox", cursor_type="row", zebra_stripes=True)
        yield Static("", id="inbox-detail", classes="hint", markup=False)
        with Horizontal(id="snooze-row"):
            yield Label("Snooze days:", id="snooze-label")
            yield Input(value="30", placeholder="days", id="snooze-days", restrict=r"[0-9]*", max_length=5)
            yield Static("z hides the highlighted row for that long",
                         id="snooze-hint", classes="hint")

    def on_mount(self) -> None:
        self.query_one("#inbox", DataTable).add_columns("id", "title", "age", "used", "cited", "reason")
        self.query_one("#inbox", DataTable).focus()
        self.reload()

    def reload(self) -> None:
        self.app.submit(mine, self.wb, self.me, self.app.clock(), done=self._show, label="loading the inbox…",
                        key="inbox-load")

    def _show(self, items: list) -> None:
        table = self.query_one("#inbox", DataTable)
        row = table.cursor_row
        self.items = items
        table.clear()
        for i in items:
            table.add_row(clip(i.fragment.id, ID_WIDTH), clip(i.fragment.title, TITLE_WIDTH), f"{i.age_days}d",
                          str(i.traces), str(i.in_links), clip("; ".join(i.reasons), REASON_WIDTH))
        if items:
            table.move_cursor(row=min(max(row, 0), len(items) - 1))
        self.query_one("#inbox-count", Static).update(
            f"{len(items)} to check · v verify · z snooze · e edit · enter open" if items
            else "Nothing to check: all your fragments are fresh.")
        self._show_detail()

    @on(DataTable.RowHighlighted, "#inbox")
    def _show_detail(self) -> None:
        item = self._item()
        self.query_one("#inbox-detail", Static).update(
            f"{item.fragment.id} · {item.fragment.title} · {'; '.join(item.reasons)}" if item else "")

    def _item(self):
        table = self.query_one("#inbox", DataTable)
        if not self.items or not 0 <= table.cursor_row < len(self.items):
            return None
        return self.items[table.cursor_row]

    def _current(self) -> str | None:
        item = self._item()
        return item.fragment.id if item else None

    def _failed(self, e: WorkbenchError) -> None:
        self.notify(plain(e), title="Not done", severity="error", timeout=8)

    def action_verify(self) -> None:
        fid = self._current()
        if not fid:
            return

        def verified(_) -> None:
            self.notify(f"{fid} verified")
            self.reload()
        self.app.submit(self.wb.verify, fid, actor=self.me, now=self.app.now, done=verified, failed=self._failed,
                        label="verifying…", write=True)

    def action_snooze(self) -> None:
        fid = self._current()
        raw = self.query_one("#snooze-days", Input).value.strip()
        if not fid:
            return
        if not raw.isdigit():
            self.notify("snooze days must be a whole number", severity="error")
            return

        def snoozed(_) -> None:
            self.notify(f"{fid} snoozed for {raw} days")
            self.reload()
        self.app.submit(self.wb.snooze, fid, days=int(raw), actor=self.me, now=self.app.now, done=snoozed,
                        failed=self._failed, label="snoozing…", write=True)

    def action_edit(self) -> None:
        from .edit import EditScreen

        fid = self._current()
        if fid:
            self.app.push_screen(EditScreen(fid))  # the inbox reloads when shown again after a save

    @on(DataTable.RowSelected, "#inbox")
    def _chosen(self) -> None:
        self.action_open()

    def action_open(self) -> None:
        fid = self._current()
        if fid:
            self.app.open_fragment(fid)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The letter keys never fire while the snooze days field has focus."""
        return not (action in {"verify", "snooze", "edit"} and isinstance(self.focused, (Input, TextArea, Button)))

    def commands(self):
        return [("Verify the highlighted fragment", self.action_verify),
                ("Snooze the highlighted fragment", self.action_snooze),
                ("Edit the highlighted fragment", self.action_edit)]

    def action_back(self) -> None:
        self.app.pop_screen()
