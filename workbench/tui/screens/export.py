"""Export: choose a scope and a format, preview it, then write it (in a worker)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, Input, Select, Static, TextArea

from .base import WbScreen

FORMATS = [("fragment files (markdown + front matter)", "fragment-files")]


class ExportScreen(WbScreen):
    BINDINGS = [
        Binding("escape", "back", "Back", id="export-back"),
        Binding("ctrl+r", "preview", "Preview", id="export-preview"),
    ]

    def body(self) -> ComposeResult:
        yield Static("Export: what agents and other tools will receive", classes="pane-title")
        with Horizontal(classes="form"):
            yield Input(placeholder="scope, e.g. org=northwind,repo=ledger (empty: all you can see)", id="export-scope")
            yield Select(FORMATS, value="fragment-files", allow_blank=False, id="export-format")
            yield Button("Preview", id="preview")
        with Horizontal(classes="form"):
            yield Input(placeholder="write into folder", id="export-dir")
            yield Button("Write", id="write", variant="primary")
        yield Static("", id="export-summary", classes="hint")
        yield TextArea("", id="preview", read_only=True)

    def _scope(self) -> str | None:
        return self.query_one("#export-scope", Input).value.strip() or None

    @on(Button.Pressed, "#preview")
    def _preview_pressed(self) -> None:
        self.action_preview()

    def action_preview(self) -> None:
        plan = self.app.attempt(self.wb.preview_files, scope=self._scope(), principal=self.me)
        if plan is None:
            return
        summary = f"{len(plan)} files" + (f", first: {plan[0][0]}" if plan else "")
        self.query_one("#export-summary", Static).update(summary)
        self.query_one("#preview", TextArea).load_text(plan[0][1] if plan else "(nothing to export)")

    @on(Button.Pressed, "#write")
    @on(Input.Submitted, "#export-dir")
    def _write(self) -> None:
        folder = self.query_one("#export-dir", Input).value.strip()
        if not folder:
            self.notify("Which folder? Type a path to write into.", severity="error")
            return
        scope, me = self._scope(), self.me

        def job(progress) -> str:
            written = self.wb.export_files(folder, scope=scope, principal=me, progress=progress)
            return f"wrote {len(written)} files to {folder}"
        self.app.run_job(f"exporting to {folder}", job)

    def action_back(self) -> None:
        self.app.pop_screen()
