"""Fragment: rendered markdown (with an anti-pattern's don't / why / instead and its evidence),
metadata (and whether a newer fragment supersedes it), links in and out, authority, and the
history. From the history: a coloured diff between any two versions, and a revert that asks first.
The key grammar's write keys act on the fragment shown (rowactions.py: ctrl+e edit, ctrl+y verify,
ctrl+k pin, ... ctrl+o the menu; ctrl+r reverts to the highlighted version); the plain letters only
change the view (``d`` diff, ``a`` diff from, ``m`` details).

The body gets most of the width; the metadata pane is proportional and can be hidden (``m``).
Every store call runs through ``app.submit`` (the screen shows "loading…" meanwhile): this face
only lays out what the core returns, and decides nothing the core would refuse.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll

from ...errors import Conflict, WorkbenchError
from ...inert import inert
from ..format import LOADING, version_line
from ..plain import DataTable, Markdown, Static
from .base import WbScreen
from .rowactions import RowActions, RowFragment, row_bindings

USAGE_DAYS = 90   # the window of the usage line ("served N times in 90 days by K principals")


def load_fragment(wb, fragment_id: str, principal):
    """The fragment, its history, what supersedes it and how the principal receives it (None: as a
    member of its scope): one job, so the screen fills at once."""
    fragment = wb.get(fragment_id, principal=principal)
    return (fragment, wb.history(fragment_id, principal=principal), wb.superseded_by(fragment_id, principal=principal),
            wb.received(fragment_id, principal=principal))


def graph_node(wb, fragment_id: str, principal) -> dict | None:
    """The fragment's row of the authority graph (links in and out), None when it has none."""
    return wb.graph_node(fragment_id, principal=principal)


def fragment_markdown(f) -> str:
    """The body as shown: title, an anti-pattern's don't / why / instead, its evidence as a list."""
    parts = [f"# {f.title}"]
    parts += [f"**{label}:** {value}" for label, value in f.content.antipattern()]
    evidence = f.content.detail("evidence")
    if evidence:
        items = [evidence] if isinstance(evidence, str) else list(evidence)
        parts.append("**Evidence:**\n\n" + "\n".join(f"- {item}" for item in items))
    parts.append(f.body)
    return "\n\n".join(parts)


class FragmentScreen(RowActions, WbScreen):

    DEFAULT_CSS = """
    #frag-main { height: 1fr; }
    #frag-body { width: 1fr; height: 1fr; }
    #frag-meta { width: 38%; min-width: 28; max-width: 70; height: 1fr; border-left: solid $primary-background; }
    #meta-scroll { height: 1fr; min-height: 3; }
    #meta { padding: 0 1; }
    #history { height: 40%; min-height: 4; }
    #history-detail { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", id="fragment-back"),
        *row_bindings("fragment"),
        Binding("ctrl+r", "revert", "Revert", id="fragment-revert"),
        Binding("d", "diff", "Diff", id="fragment-diff"),
        Binding("a", "mark_from", "Diff from", id="fragment-diff-from", show=False),
        Binding("m", "toggle_meta", "Details", id="fragment-meta"),
    ]

    def __init__(self, fragment_id: str) -> None:
        super().__init__()
        self.fragment_id = fragment_id
        self.fragment = None
        self.versions: list = []
        self.superseded = None
        self.node: dict | None = None
        self.served = None          # how often agents received it in the last USAGE_DAYS (curate.usage.Served)
        self.received = None        # service.received.Received: received through a subscription (read-only)
        self.diff_from: int | None = None

    def body(self) -> ComposeResult:
        with Horizontal(id="frag-main"):
            with VerticalScroll(id="frag-body"):
                yield Markdown(LOADING, id="frag-markdown")
            with Vertical(id="frag-meta"):
                with VerticalScroll(id="meta-scroll"):
                    yield Static(LOADING, id="meta")
                yield Static("History (d diff, ^r revert)", classes="pane-title")
                yield DataTable(id="history", cursor_type="row")
                yield Static("", id="history-detail", markup=False)

    def on_mount(self) -> None:
        super().on_mount()
        table = self.query_one("#history", DataTable)
        # fixed widths: the pane is narrow, and auto widths measured while the layout settles differed run to run
        for label, width in (("v", 3), ("reason", 16), ("author", 12), ("at", 10)):
            table.add_column(label, width=width)
        self.reload()
        self.query_one("#history", DataTable).focus()

    # -- loading ------------------------------------------------------------------------

    def reload(self) -> None:
        self._seen_version = self.app.data_version
        self.app.submit(load_fragment, self.wb, self.fragment_id, self.me, done=self._loaded, failed=self._gone,
                        label=f"loading {self.fragment_id}…", key=f"fragment-load-{id(self)}")

    def _gone(self, error: WorkbenchError) -> None:
        """Missing, or not visible to this principal: say so (the core's words) and go back."""
        self.app.notify(error.message, title="Not shown", severity="error", timeout=8)
        if self.is_current:
            self.dismiss()

    def _loaded(self, loaded) -> None:
        if not self.is_attached:  # left before the job came back
            return
        f, versions, superseded, self.received = loaded
        keep = self._highlighted_version()  # the version highlighted before a reload stays highlighted,
        if self.versions and keep == self.versions[-1].number:  # unless it was the latest: then the new latest is
            keep = None                                         # (after a save, d compares it with the one before)
        self.fragment, self.versions, self.superseded = f, list(versions), superseded
        self.query_one("#frag-markdown", Markdown).update(fragment_markdown(f))
        self._show_meta()
        self.refresh_bindings()   # a received fragment offers only the keys the core allows on it
        table = self.query_one("#history", DataTable)
        table.clear()
        for v in self.versions:
            table.add_row(str(v.number), "(withheld)" if v.hidden else v.reason, v.author, f"{v.created_at:%Y-%m-%d}")
        numbers = [v.number for v in self.versions]
        table.move_cursor(row=numbers.index(keep) if keep in numbers else len(numbers) - 1)
        self._show_detail()
        self.app.submit(graph_node, self.wb, self.fragment_id, self.me, done=self._graph_loaded,
                        key=f"fragment-graph-{id(self)}")
        self.app.submit(self.wb.fragment_usage, self.fragment_id, days=USAGE_DAYS, principal=self.me,
                        now=self.app.now, done=self._usage_loaded, failed=lambda _: None,
                        key=f"fragment-usage-{id(self)}")

    def _usage_loaded(self, served) -> None:
        if not self.is_attached:
            return
        self.served = served
        self._show_meta()

    def _graph_loaded(self, node: dict | None) -> None:
        if not self.is_attached:
            return
        self.node = node or {"authority": 0.0, "links_in": [], "links_out": []}
        self._show_meta()

    def _show_meta(self) -> None:
        f = self.fragment
        if f is None:
            return
        meta = Text()
        meta.append(inert(f.id), "bold")
        meta.append(f"\nv{f.version} · {f.kind} · {f.status}")
        if self.superseded:
            why = ("(archived): it was replaced, and its replacement is archived: neither is current"
                   if len(self.superseded) > 2 else ": prefer it")
            meta.append(inert(f"\nsuperseded by {self.superseded[0]}@v{self.superseded[1]} {why}".replace(" :", ":")),
                        "bold yellow")
        if self.received is not None:   # the publisher's fragment, served through a subscription
            r = self.received
            meta.append(inert(f"\nvia {r.via}" + (f" (pinned subscription: serves v{r.version})"
                                                  if r.version is not None else "") + " · read-only"), "bold")
        verified = f"{f.verified_at:%Y-%m-%d}" if f.verified_at else "-"
        lines = [f"scope: {f.scope}", f"owner: {f.owner}", f"updated: {f.updated_at:%Y-%m-%d}",
                 f"verified: {verified}",
                 f"usage: {LOADING if self.served is None else self.served.describe(USAGE_DAYS)}"]
        if self.node is None:
            lines.append(f"authority and links: {LOADING}")
        else:
            lines += [f"authority: {self.node['authority']:.4f}",
                      f"links out: {', '.join(self.node['links_out']) or '-'}",
                      f"links in: {', '.join(self.node['links_in']) or '-'}"]
        sources = ", ".join(f"{s.repo or ''}:{s.path}" for s in f.sources) or "-"
        lines += [f"sources: {sources}", f"tags: {', '.join(f.tags) or '-'}"]
        meta.append(inert("".join(f"\n{line}" for line in lines)))
        self.query_one("#meta", Static).update(meta)

    # -- history ------------------------------------------------------------------------

    def _highlighted(self):
        table = self.query_one("#history", DataTable)
        if not self.versions or not 0 <= table.cursor_row < len(self.versions):
            return None
        return self.versions[table.cursor_row]

    def _highlighted_version(self) -> int | None:
        v = self._highlighted()
        return v.number if v else None

    @on(DataTable.RowHighlighted, "#history")
    def _show_detail(self) -> None:
        v = self._highlighted()
        line = version_line(v) if v else ""
        if self.diff_from is not None:
            line += f"  [diff from v{self.diff_from}]"
        self.query_one("#history-detail", Static).update(line)

    def action_mark_from(self) -> None:
        self.diff_from = self._highlighted_version()
        if self.diff_from is not None:
            self.notify(f"diff from v{self.diff_from}: move to another version and press d")
            self._show_detail()

    def action_diff(self) -> None:
        """The coloured diff (in a large scrollable view, with a picker for both versions): from the
        version marked with ``a`` (else the one before) to the highlighted one."""
        from .diff import DiffScreen

        to = self._highlighted_version()
        if to is None:
            return
        start = self.diff_from if self.diff_from is not None else max(1, to - 1)
        self.app.push_screen(DiffScreen(self.fragment_id, self.versions, start, to))

    @on(DataTable.RowSelected, "#history")
    def _version_chosen(self) -> None:
        self.action_diff()

    # -- writes -------------------------------------------------------------------------

    def action_revert(self) -> None:
        """Ask first: the dialog names both versions, shows what the revert changes, and needs a reason."""
        target = self._highlighted()
        if self.fragment is None:
            self.notify(f"{self.fragment_id} is still loading", severity="warning")
            return
        if target is None or target.number == self.fragment.version:
            self.notify("move to an earlier version in the history first", severity="warning")
            return
        shown = self.fragment.version  # the revert is made from this version: a change saved meanwhile is not undone

        def ask(diff: str) -> None:
            from .revert import RevertScreen

            if not self.is_current:  # the user went elsewhere meanwhile: ask nothing
                return
            self.app.push_screen(self._reverting(RevertScreen(self.fragment_id, target, current=shown, diff=diff),
                                                 target.number, shown))
        self.app.submit(self.wb.diff, self.fragment_id, shown, target.number, principal=self.me, done=ask,
                        label="preparing the revert…", key=f"fragment-revert-{id(self)}")

    def _reverting(self, dialog, target: int, shown: int):
        """The revert is made while its dialog is open: a failure leaves the dialog with its reason
        (the error a notification); a change saved meanwhile voids the question (the dialog closes,
        the screen shows who changed it and the latest version)."""
        def revert(reason: str):
            return self.wb.revert(self.fragment_id, target, actor=self.me, base=shown,
                                  reason=f"revert to v{target}: {reason}")

        def done(f) -> None:
            self.app.notify(f"reverted: {f.id} is now v{f.version} (content of v{target})")
            if self.is_attached:
                self.reload()

        def moot(e: WorkbenchError) -> bool:
            if not isinstance(e, Conflict):
                return False

            def latest(loaded) -> None:  # say who changed it, and show the latest version and its history
                from .conflict import moved_on

                self.app.notify(moved_on(self.fragment_id, shown, loaded[1]), title="Not reverted",
                                severity="error", timeout=10)
                self._loaded(loaded)
            self._seen_version = self.app.data_version
            self.app.submit(load_fragment, self.wb, self.fragment_id, self.me, done=latest, failed=self._gone,
                            key=f"fragment-load-{id(self)}")
            return True
        return dialog.writing(revert, done=done, moot=moot, label="reverting…")

    def row_fragment(self) -> RowFragment | None:
        """The row keys act on the fragment shown, as the version shown (None while it loads)."""
        f = self.fragment
        return RowFragment(f.id, f.title, f.scope, f.version, self.received) if f is not None else None

    def row_focused(self) -> bool:
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "open_row":  # this is the fragment, open
            return False
        if action == "revert" and self.received is not None and "revert" not in self.received.actions:
            return False   # received: the core lets the principal write only what Received.actions says
        return super().check_action(action, parameters)

    def action_toggle_meta(self) -> None:
        pane = self.query_one("#frag-meta")
        pane.display = not pane.display
        if not pane.display:
            self.query_one("#frag-body").focus()
        else:
            self.query_one("#history", DataTable).focus()

    def action_back(self) -> None:
        self.dismiss()

    def commands(self):
        return [*((name.replace("the highlighted fragment", "this fragment"), fn) for name, fn in self.row_commands()),
                ("Diff versions", self.action_diff),
                *([("Revert to the highlighted version", self.action_revert)] if self.check_action("revert", ()) else []),
                ("Show or hide the details pane", self.action_toggle_meta)]
