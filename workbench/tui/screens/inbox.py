"""Nudge inbox: my stale fragments, with verify, snooze and edit."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Input, Static

from .base import WbScreen


class InboxScreen(WbScreen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="inbox-back"),
        Binding("v", "verify", "Verify", id="inbox-verify"),
        Binding("z", "snooze", "Snooze", id="inbox-snooze"),
        Binding("e", "edit", "Edit", id="inbox-edit"),
    ]

    def body(self) -> ComposeResult:
        yield Static("Nudge inbox: your fragments that need a look, most used first", classes="pane-title")
        yield Static("", id="inbox-count", classes="hint")
        yield DataTable(id="inbox", cursor_type="row", zebra_stripes=True)
        yield Input(value="30", placeholder="snooze days", id="snooze-days")

    def on_mount(self) -> None:
        self.query_one("#inbox", DataTable).add_columns("id", "title", "age", "used", "cited", "reason")
        self.reload()
        self.query_one("#inbox", DataTable).focus()

    def reload(self) -> None:
        items = self.app.call(self.wb.stale, now=self.app.clock(), principal=self.me)
        self.items = [i for i in items if i.fragment.owner == self.me.name]
        table = self.query_one("#inbox", DataTable)
        table.clear()
        for i in self.items:
            table.add_row(i.fragment.id, i.fragment.title, f"{i.age_days}d", str(i.traces), str(i.in_links),
                          "; ".join(i.reasons))
        self.query_one("#inbox-count", Static).update(
            f"{len(self.items)} to check · v verify · z snooze · e edit · enter open" if self.items
            else "Nothing to check: all your fragments are fresh.")

    def _current(self):
        table = self.query_one("#inbox", DataTable)
        return self.items[table.cursor_row].fragment.id if self.items else None

    def action_verify(self) -> None:
        fid = self._current()
        if fid and self.app.attempt(self.wb.verify, fid, actor=self.me, now=self.app.now) is not None:
            self.notify(f"{fid} verified")
            self.reload()

    def action_snooze(self) -> None:
        fid = self._current()
        raw = self.query_one("#snooze-days", Input).value.strip()
        if not fid:
            return
        if not raw.lstrip("-").isdigit():
            self.notify("snooze days must be a whole number", severity="error")
            return
        if self.app.attempt(self.wb.snooze, fid, days=int(raw), actor=self.me, now=self.app.now) is not None:
            self.notify(f"{fid} snoozed for {raw} days")
            self.reload()

    def action_edit(self) -> None:
        from .edit import EditScreen

        fid = self._current()
        if fid:
            self.app.push_screen(EditScreen(fid), lambda _: self.reload())

    @on(DataTable.RowSelected, "#inbox")
    def _chosen(self) -> None:
        fid = self._current()
        if fid:
            self.app.open_fragment(fid)

    def action_back(self) -> None:
        self.app.pop_screen()
