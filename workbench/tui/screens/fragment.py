"""Fragment: rendered markdown, metadata (and whether a newer fragment supersedes it), links
in and out, authority, and history with a diff between any two versions. Revert from here."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Markdown, Static

from ...errors import Conflict, WorkbenchError
from .base import WbScreen


class FragmentScreen(WbScreen):

    DEFAULT_CSS = """
    #frag-body { height: 1fr; }
    #frag-meta { width: 60; padding: 0 1; border-left: solid $primary-background; }
    #history { height: 10; }
    #diff { height: 12; border-top: solid $primary-background; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", id="fragment-back"),
        Binding("e", "edit", "Edit", id="fragment-edit"),
        Binding("a", "mark_a", "Diff from", id="fragment-diff-a"),
        Binding("d", "mark_b", "Diff to", id="fragment-diff-b"),
        Binding("R", "revert", "Revert to", id="fragment-revert"),
        Binding("v", "verify", "Verify", id="fragment-verify"),
    ]

    def __init__(self, fragment_id: str) -> None:
        super().__init__()
        self.fragment_id = fragment_id
        self.fragment = None
        self.versions = []
        self.diff_from: int | None = None

    def body(self) -> ComposeResult:
        with Horizontal():
            with VerticalScroll(id="frag-body"):
                yield Markdown("", id="frag-markdown")
            with Vertical(id="frag-meta"):
                yield Static("", id="meta")
                yield Static("History (a: diff from · d: diff to · R: revert to)", classes="pane-title")
                yield DataTable(id="history", cursor_type="row")
                yield Static("", id="diff")

    def on_mount(self) -> None:
        self.query_one("#history", DataTable).add_columns("v", "author", "at", "status", "reason")
        self.reload()
        self.query_one("#history", DataTable).focus()

    def reload(self) -> None:
        f = self.app.attempt(self.wb.get, self.fragment_id, principal=self.me)
        if f is None:
            self.app.pop_screen()
            return
        self.fragment = f
        self.versions = self.app.call(self.wb.history, self.fragment_id, principal=self.me)
        graph = {row["id"]: row for row in self.app.call(self.wb.graph, top=0, principal=self.me)}
        node = graph.get(f.id, {"authority": 0.0, "links_in": [], "links_out": []})
        details = "".join(f"\n\n**{label}:** {f.content.detail(key)}" for key, label in
                          (("dont", "Don't"), ("why", "Why"), ("instead", "Instead")) if f.content.detail(key))
        self.query_one("#frag-markdown", Markdown).update(f"# {f.title}{details}\n\n{f.body}")
        sources = ", ".join(f"{s.repo or ''}:{s.path}" for s in f.sources) or "-"
        newer = self.app.call(self.wb.superseded_by, self.fragment_id, principal=self.me)
        meta = [f"[b]{f.id}[/b] v{f.version} · {f.kind} · {f.status}",
                *([f"[b]superseded by {newer[0]}@v{newer[1]}[/b]: prefer it"] if newer else []),
                f"scope: {f.scope}", f"owner: {f.owner}",
                f"updated: {f.updated_at:%Y-%m-%d}  verified: {f'{f.verified_at:%Y-%m-%d}' if f.verified_at else '-'}",
                f"authority: {node['authority']:.4f}",
                f"links out: {', '.join(node['links_out']) or '-'}",
                f"links in: {', '.join(node['links_in']) or '-'}",
                f"sources: {sources}", f"tags: {', '.join(f.tags) or '-'}"]
        self.query_one("#meta", Static).update("\n".join(meta))
        table = self.query_one("#history", DataTable)
        table.clear()
        for v in self.versions:
            table.add_row(str(v.number), v.author, f"{v.created_at:%Y-%m-%d %H:%M}", v.content.status, v.reason)
        table.move_cursor(row=len(self.versions) - 1)

    def _highlighted_version(self) -> int | None:
        table = self.query_one("#history", DataTable)
        return self.versions[table.cursor_row].number if self.versions else None

    def action_mark_a(self) -> None:
        self.diff_from = self._highlighted_version()
        self.notify(f"diff from v{self.diff_from}: move to another version and press d")

    def action_mark_b(self) -> None:
        to = self._highlighted_version()
        start = self.diff_from if self.diff_from is not None else max(1, (to or 1) - 1)
        text = self.app.attempt(self.wb.diff, self.fragment_id, start, to, principal=self.me)
        if text is not None:
            self.query_one("#diff", Static).update(text or f"no difference between v{start} and v{to}")

    def action_revert(self) -> None:
        target = self._highlighted_version()
        if target is None or target == self.fragment.version:
            self.notify("move to an earlier version in the history first", severity="warning")
            return
        try:  # from the version this screen shows: a change saved elsewhere meanwhile is not undone silently
            done = self.app.call(self.wb.revert, self.fragment_id, target, actor=self.me, base=self.fragment.version)
        except Conflict as e:
            self.notify(e.message, title="Not reverted", severity="error", timeout=10)
            self.reload()  # show the latest version and its history
            return
        except WorkbenchError as e:
            self.notify(e.message, title="Not done", severity="error", timeout=8)
            return
        self.notify(f"reverted: {done.id} is now v{done.version} (content of v{target})")
        self.reload()

    def action_verify(self) -> None:
        done = self.app.attempt(self.wb.verify, self.fragment_id, actor=self.me)
        if done is not None:
            self.notify(f"{done.id} verified")
            self.reload()

    def action_edit(self) -> None:
        from .edit import EditScreen

        shown = self.fragment.version if self.fragment else None
        self.app.push_screen(EditScreen(self.fragment_id, base=shown), lambda _: self.reload())

    def action_back(self) -> None:
        self.app.pop_screen()

    @on(DataTable.RowSelected, "#history")
    def _version_chosen(self) -> None:
        self.action_mark_b()

    def commands(self):
        return [("Edit this fragment", self.action_edit), ("Revert to highlighted version", self.action_revert),
                ("Verify this fragment", self.action_verify)]
