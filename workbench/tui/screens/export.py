"""Export: choose a scope and a format, preview it, then write it (in a worker)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button, Input, Select, Static, TextArea

from .base import WbScreen

FORMATS = [("AGENTS.md", "agents-md"), ("CLAUDE.md", "claude-md"), ("Cursor rules (.mdc)", "cursor-rules"),
           ("llms.txt", "llms-txt"), ("bundle (needs a set)", "bundle"),
           ("fragment files (markdown + front matter)", "fragment-files")]


class ExportScreen(WbScreen):

    DEFAULT_CSS = """
    .form { height: auto; }
    .form Input { margin: 0 1; width: 1fr; }
    .form Select { width: 40; }
    .form Button { width: auto; margin: 0 1; }
    #preview { height: 1fr; border-top: solid $primary-background; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", id="export-back"),
        Binding("ctrl+r", "preview", "Preview", id="export-preview"),
    ]

    def body(self) -> ComposeResult:
        yield Static("Export: what agents and other tools will receive", classes="pane-title")
        with Horizontal(classes="form"):
            yield Input(placeholder="scope, e.g. org=northwind,repo=ledger", id="export-scope")
            yield Input(placeholder="or a curated set", id="export-set")
            yield Select(FORMATS, value="agents-md", allow_blank=False, id="export-format")
            yield Button("Preview", id="preview")
        with Horizontal(classes="form"):
            yield Input(placeholder="write into folder", id="export-dir")
            yield Button("Write", id="write", variant="primary")
        yield Static("", id="export-summary", classes="hint")
        yield TextArea("", id="preview", read_only=True)

    def _scope(self) -> str | None:
        scope = self.query_one("#export-scope", Input).value.strip() or None
        if scope is None and self._set():
            found = self.app.attempt(self.wb.set_show, self._set(), principal=self.me)
            if found:
                scope = ",".join(f"{k}={v}" for k, v in found["scope"].items() if v)
        return scope

    def _set(self) -> str | None:
        return self.query_one("#export-set", Input).value.strip() or None

    def _format(self) -> str:
        return self.query_one("#export-format", Select).value

    def _plan(self) -> list[tuple[str, str]] | None:
        fmt, scope, set_name = self._format(), self._scope(), self._set()
        if fmt == "fragment-files":
            return self.app.attempt(self.wb.preview_files, scope=scope, principal=self.me)
        if fmt == "bundle":
            if not set_name:
                self.notify("a bundle exports a curated set: type its name", severity="error")
                return None
            members = self.app.attempt(self.wb.set_fragments, set_name, principal=self.me)
            return None if members is None else [(f"{f.id} v{f.version}", f.title) for f in members]
        if scope is None:
            self.notify("type a scope (or a set) to export for", severity="error")
            return None
        made = self.app.attempt(self.wb.render_agents, fmt, scope=scope, principal=self.me, set_name=set_name)
        return None if made is None else sorted(made[0].items())

    @on(Button.Pressed, "#preview")
    def _preview_pressed(self) -> None:
        self.action_preview()

    def action_preview(self) -> None:
        plan = self._plan()
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
        fmt, scope, set_name, me = self._format(), self._scope(), self._set(), self.me

        def job(progress) -> str:
            if fmt == "fragment-files":
                written = self.wb.export_files(folder, scope=scope, principal=me, progress=progress)
                return f"wrote {len(written)} files to {folder}"
            if fmt == "bundle":
                manifest = self.wb.export_bundle(set_name or "", folder, principal=me)
                return f"wrote a bundle of {manifest['fragments']} fragments to {folder}"
            result = self.wb.export_agents(fmt, folder, scope=scope or "", principal=me, set_name=set_name)
            return f"wrote {len(result['files'])} files to {folder}"
        self.app.run_job(f"exporting to {folder}", job)

    def action_back(self) -> None:
        self.app.pop_screen()
