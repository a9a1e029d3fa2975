"""Export: choose a scope (or a curated set, or a published context) and a format, preview every
planned file, then write. A published context (``ORG/CONTEXT`` in the Set field: set names have no
``/``) exports as agent files or a bundle of its current version as the principal reads it (a
subscriber: what it receives, as served), in the scope the core says it applies in.

The form is two labelled rows (what, then where); the preview fills the rest of the screen.
Writing into a folder that already holds files (an earlier export) asks first, then overwrites.
Previews and writes run off the UI thread (``app.submit``), the write with a progress bar.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button

from ...errors import UserError, WorkbenchError
from ..messages import plain
from ..plain import Input, Select, Static, TextArea
from .base import WbScreen
from .keepwork import KeepsWork

FORMATS = [("AGENTS.md", "agents-md"), ("CLAUDE.md", "claude-md"), ("Cursor rules (.mdc)", "cursor-rules"),
           ("llms.txt", "llms-txt"), ("bundle (a set)", "bundle"), ("fragment files", "fragment-files")]
BUNDLE_NEEDS_A_SET = "a bundle exports a curated set: type the set's name"


def labelled(widget, label: str):
    """A field whose label sits in its top border: one row of the form, no extra line."""
    widget.border_title = label
    return widget


CONTEXT_FORMATS = "a published context exports as agent files or a bundle, not as fragment files"


def is_context(set_name: str | None) -> bool:
    """Whether the Set field names a published context (ORG/CONTEXT) rather than a set."""
    return bool(set_name) and "/" in set_name


def plan_context(wb, fmt: str, name: str, principal) -> list[tuple[str, str]]:
    """The planned files of a published context's export (the core decides what the principal reads)."""
    if fmt == "fragment-files":
        raise UserError(CONTEXT_FORMATS)
    if fmt == "bundle":
        members = wb.context_fragments(name, principal=principal)
        listing = "\n".join(f"{f.id} v{f.version}  {f.title}" for f in members) or "(nothing to export)"
        return [(f"fragments.jsonl ({len(members)} fragments of {name})", listing)]
    files, _ = wb.render_agents(fmt, principal=principal, context=name)
    return sorted(files.items())


def plan_export(wb, fmt: str, scope: str | None, set_name: str | None, principal) -> list[tuple[str, str]]:
    """(path, text) of every file the export would write, without writing. Runs in a job."""
    if is_context(set_name):
        return plan_context(wb, fmt, set_name, principal)
    scope = scope or _set_scope(wb, set_name, principal)
    if fmt == "fragment-files":
        return wb.preview_files(scope=scope, principal=principal)
    if fmt == "bundle":
        if not set_name:
            raise UserError(BUNDLE_NEEDS_A_SET)
        members = wb.set_fragments(set_name, principal=principal)
        listing = "\n".join(f"{f.id} v{f.version}  {f.title}" for f in members) or "(the set is empty)"
        return [(f"fragments.jsonl ({len(members)} fragments)", listing)]
    if scope is None:
        raise UserError("type a scope (or a set) to export for")
    files, _ = wb.render_agents(fmt, scope=scope, principal=principal, set_name=set_name)
    return sorted(files.items())


def _set_scope(wb, set_name: str | None, principal) -> str | None:
    if not set_name:
        return None
    found = wb.set_show(set_name, principal=principal)
    return ",".join(f"{k}={v}" for k, v in found["scope"].items() if v)


def write_export(wb, fmt: str, folder: str, scope: str | None, set_name: str | None, principal, *,
                 force: bool, progress) -> str:
    """Write the export into ``folder`` (``force``: over an earlier one); the closing message."""
    if is_context(set_name):
        if fmt == "fragment-files":
            raise UserError(CONTEXT_FORMATS)
        if fmt == "bundle":
            manifest = wb.export_context_bundle(set_name, folder, principal=principal, force=force)
            return f"wrote a bundle of {manifest['fragments']} fragments of {set_name} to {folder}"
        result = wb.export_agents(fmt, folder, principal=principal, context=set_name, force=force)
        return _wrote(result, folder)
    scope = scope or _set_scope(wb, set_name, principal)
    if fmt == "fragment-files":
        written = wb.export_files(folder, scope=scope, principal=principal, progress=progress, force=force)
        return f"wrote {len(written)} files to {folder}"
    if fmt == "bundle":
        if not set_name:
            raise UserError(BUNDLE_NEEDS_A_SET)
        manifest = wb.export_bundle(set_name, folder, principal=principal, force=force)
        return f"wrote a bundle of {manifest['fragments']} fragments to {folder}"
    if scope is None:
        raise UserError("type a scope (or a set) to export for")
    result = wb.export_agents(fmt, folder, scope=scope, principal=principal, set_name=set_name, force=force)
    return _wrote(result, folder)


def _wrote(result: dict[str, Any], folder: str) -> str:
    names = [f for f in result["files"] if f != result["manifest"]]  # the manifest is bookkeeping
    what = ", ".join(names) if len(names) <= 3 else f"{len(names)} files"
    pruned = f" (removed {len(result['pruned'])} no longer exported)" if result["pruned"] else ""
    return f"wrote {what} to {folder}{pruned}"


def folder_holds(folder: Path, show: int = 4) -> list[str] | None:
    """None when writing into ``folder`` cannot replace anything (missing or empty), else the
    names of its first entries."""
    try:
        if not folder.is_dir():
            return None
        return sorted(p.name for p in islice(folder.iterdir(), show + 1)) or None
    except OSError:
        return None


class ExportScreen(KeepsWork, WbScreen):
    """Export: preview and write agent files, fragment files or a bundle."""

    FORM = True
    DEFAULT_CSS = """
    ExportScreen .export-row { height: auto; }
    ExportScreen .export-row Input { width: 1fr; }
    ExportScreen #export-scope { width: 2fr; }
    ExportScreen #export-format { width: 26; }
    ExportScreen .export-row Button { width: auto; min-width: 10; }
    ExportScreen #export-file { width: 1fr; }
    ExportScreen #export-summary { width: 1fr; height: 3; padding: 1 1 0 1; }
    ExportScreen #preview-text { height: 1fr; min-height: 4; }
    """
    BINDINGS = [
        Binding("ctrl+r", "preview", "Preview", id="export-preview"),
        Binding("ctrl+s", "write", "Write", id="export-write"),
        Binding("escape", "back", "Back", id="export-back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.plan: list[tuple[str, str]] = []

    def body(self) -> ComposeResult:
        yield Static("Export: what agents and other tools will receive", classes="pane-title")
        with Horizontal(classes="export-row", id="export-what"):
            yield labelled(Input(placeholder="org=northwind,repo=ledger", id="export-scope"), "Scope")
            yield labelled(Input(placeholder="or a curated set", id="export-set",
                                 tooltip="a curated set, or a published context: ORG/CONTEXT"), "Set")
            yield Select(FORMATS, value="agents-md", allow_blank=False, id="export-format")
        with Horizontal(classes="export-row", id="export-where"):
            yield labelled(Input(placeholder="a folder, e.g. out/agents", id="export-dir"), "Write into folder")
            yield Button("Preview", id="preview-button")
            yield Button("Write", id="write-button", variant="primary")
        with Horizontal(classes="export-row", id="export-files"):
            yield Select([], prompt="planned files", id="export-file")
            yield Static("Preview (^r) lists the files the export writes; Write (^s) writes them.",
                         id="export-summary", classes="hint", markup=False)
        yield TextArea("", id="preview-text", read_only=True, soft_wrap=True)

    def on_mount(self) -> None:
        self.query_one("#export-format", Select).query_one("SelectCurrent").border_title = "Format"
        self.query_one("#export-file", Select).query_one("SelectCurrent").border_title = "Showing"
        led = [str(s) for s in self.me.lead_of] or [f"org={o}" for o in self.me.orgs]
        if led:
            self.query_one("#export-scope", Input).value = led[0]
        self.query_one("#export-scope", Input).focus()

    # -- the form ------------------------------------------------------------------------

    def _value(self, selector: str) -> str | None:
        return self.query_one(selector, Input).value.strip() or None

    def _format(self) -> str:
        return self.query_one("#export-format", Select).value

    def _failed(self, e: WorkbenchError) -> None:
        message = plain(e)
        self.query_one("#export-summary", Static).update(f"Not done: {message}")
        self.notify(message, title="Not done", severity="error", timeout=8)

    # -- preview -------------------------------------------------------------------------

    @on(Button.Pressed, "#preview-button")
    @on(Input.Submitted, "#export-scope")
    @on(Input.Submitted, "#export-set")
    def _preview_pressed(self) -> None:
        self.action_preview()

    def action_preview(self) -> None:
        fmt, scope, set_name = self._format(), self._value("#export-scope"), self._value("#export-set")
        self.app.submit(plan_export, self.wb, fmt, scope, set_name, self.me, done=self._show_plan,
                        failed=self._failed, label="preparing the preview…", key="export-preview")

    def _show_plan(self, plan: list[tuple[str, str]]) -> None:
        self.plan = plan
        files = self.query_one("#export-file", Select)
        files.set_options([(path, i) for i, (path, _) in enumerate(plan)])
        where = self._value("#export-scope") or self._value("#export-set") or ""
        if plan:
            files.value = 0
            self.query_one("#export-summary", Static).update(
                f"1 file planned for {where}: {plan[0][0]}" if len(plan) == 1
                else f"{len(plan)} files planned for {where}: choose one in Showing to preview it")
        else:
            self.query_one("#export-summary", Static).update(f"nothing to export for {where}")
            self.query_one("#preview-text", TextArea).load_text("(nothing to export)")

    @on(Select.Changed, "#export-file")
    def _file_chosen(self, event: Select.Changed) -> None:
        if isinstance(event.value, int) and 0 <= event.value < len(self.plan):
            self.query_one("#preview-text", TextArea).load_text(self.plan[event.value][1])

    # -- write ---------------------------------------------------------------------------

    @on(Button.Pressed, "#write-button")
    @on(Input.Submitted, "#export-dir")
    def _write_pressed(self) -> None:
        self.action_write()

    def action_write(self) -> None:
        folder = self._value("#export-dir")
        if not folder:
            self.query_one("#export-summary", Static).update("Which folder? Type a path to write into.")
            self.query_one("#export-dir", Input).focus()
            return
        if self._format() == "bundle" and not self._value("#export-set"):
            self.query_one("#export-summary", Static).update(BUNDLE_NEEDS_A_SET)
            self.query_one("#export-set", Input).focus()
            return
        held = folder_holds(Path(folder))
        if held is None:
            self.write(folder, force=False)
            return
        from .prompt import ConfirmScreen

        shown = ", ".join(held[:4]) + (", …" if len(held) > 4 else "")
        question = ConfirmScreen(
            "Overwrite the earlier export?",
            f"{folder} already holds files ({shown}). Writing replaces the files this export writes and "
            "removes the ones an earlier export of this kind wrote and this one no longer does; other files "
            "are left alone.", yes="Overwrite", no="Cancel")

        def answered(overwrite: bool | None) -> None:
            if overwrite:
                self.write(folder, force=True)
            else:
                self.query_one("#export-summary", Static).update(f"Not written: {folder} was left as it was.")
        self.app.push_screen(question, answered)

    def write(self, folder: str, *, force: bool) -> None:
        """Write in a job with a progress bar; the outcome shows in the summary line too."""
        fmt, scope, set_name, me = self._format(), self._value("#export-scope"), self._value("#export-set"), self.me
        label = f"exporting to {folder}"
        self.app.start_job(label)

        def done(message: str) -> None:
            self.app.end_job(message)
            self.query_one("#export-summary", Static).update(message)
            self.remember_fields()   # written: leaving loses nothing now

        def failed(e: WorkbenchError) -> None:
            self.app.end_job()
            self._failed(e)

        def job(progress: Any) -> str:
            return write_export(self.wb, fmt, folder, scope, set_name, me, force=force, progress=progress)
        self.app.submit(job, self.app.job_progress, done=done, failed=failed, write=True)

    def action_back(self) -> None:
        self.leave(self.app.pop_screen)
