"""Pins: the manager for the scopes the user leads. Non-leads see why they cannot pin."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, DataTable, Input, Select, Static

from .base import WbScreen


class PinsScreen(WbScreen):

    DEFAULT_CSS = """
    .form { height: auto; }
    .form Input { margin: 0 1; width: 1fr; }
    .form Select { width: 40; }
    .form Button { width: auto; margin: 0 1; }
    #errors { height: auto; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", id="pins-back"),
        Binding("u", "unpin", "Unpin", id="pins-unpin"),
    ]

    def body(self) -> ComposeResult:
        yield Static("Pins: a pinned fragment always reaches agents working in its scope", classes="pane-title")
        yield Static("", id="pins-who", classes="hint")
        yield DataTable(id="pins", cursor_type="row")
        with Horizontal(classes="form"):
            yield Input(placeholder="fragment id to pin", id="pin-id")
            yield Select([], prompt="scope", id="pin-scope")
            yield Input(placeholder="reason", id="pin-reason")
            yield Button("Pin", id="pin", variant="primary")
        yield Static("", id="errors", classes="error")

    def on_mount(self) -> None:
        self.query_one("#pins", DataTable).add_columns("id", "scope", "pinned by", "at", "until", "reason")
        led = [str(s) for s in self.me.lead_of]
        select = self.query_one("#pin-scope", Select)
        select.set_options([(s, s) for s in led])
        if led:
            select.value = led[0]
            self.query_one("#pins-who", Static).update(f"{self.me.name} leads: {', '.join(led)}")
        else:
            self.query_one("#pins-who", Static).update(
                f"{self.me.name} is not a tech lead of any scope, so cannot pin: pins are set by the tech leads "
                "named in workbench.yaml (lead_of).")
        self.reload()

    def reload(self) -> None:
        pins = self.app.call(self.wb.pins, principal=self.me)
        self.pins = [p for p in pins if self.me.leads(p.scope)] or pins
        table = self.query_one("#pins", DataTable)
        table.clear()
        for p in self.pins:
            table.add_row(p.fragment_id, str(p.scope), p.pinned_by, f"{p.pinned_at:%Y-%m-%d}",
                          f"{p.until:%Y-%m-%d}" if p.until else "-", p.reason or "")

    @on(Button.Pressed, "#pin")
    @on(Input.Submitted, "#pin-reason")
    def _pin(self) -> None:
        fid = self.query_one("#pin-id", Input).value.strip()
        scope = self.query_one("#pin-scope", Select).value
        errors = self.query_one("#errors", Static)
        if not fid:
            errors.update("Which fragment? Type its id.")
            return
        if scope is Select.NULL:
            errors.update(f"{self.me.name} is not a tech lead of any scope: only tech leads may pin.")
            return
        from ...errors import WorkbenchError

        try:
            self.app.call(self.wb.pin, fid, scope=scope, actor=self.me,
                          reason=self.query_one("#pin-reason", Input).value or None)
        except WorkbenchError as e:
            errors.update(e.message)
            return
        errors.update("")
        self.notify(f"pinned {fid} in {scope}")
        self.reload()

    def action_unpin(self) -> None:
        table = self.query_one("#pins", DataTable)
        if not self.pins:
            return
        pin = self.pins[table.cursor_row]
        if self.app.attempt(self.wb.unpin, pin.fragment_id, scope=pin.scope, actor=self.me) is None and \
                not self.me.leads(pin.scope):
            return
        self.notify(f"unpinned {pin.fragment_id} from {pin.scope}")
        self.reload()

    def action_back(self) -> None:
        self.app.pop_screen()
