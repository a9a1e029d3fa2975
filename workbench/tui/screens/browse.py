"""Browse: a tree of org → repo → persona with counts, and a filterable table of fragments."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Checkbox, DataTable, Input, Select, Static, Tree

from ...browse import age, scope_tree
from ...models import KINDS, Scope
from .base import WbScreen


FIRST_PAGE = 120
BATCH = 400


class BrowseScreen(WbScreen):

    DEFAULT_CSS = """
    #browse-body { height: 1fr; }
    #scope-tree { width: 34; border-right: solid $primary-background; }
    #filters { height: auto; padding: 0 1; }
    #filters Input { width: 24; }
    #filters Select { width: 22; }
    #fragments { height: 1fr; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open", id="browse-open", show=False),
        Binding("s", "toggle_stale", "Stale only", id="browse-stale"),
        Binding("r", "reload", "Reload", id="browse-reload"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.scope: Scope | None = None
        self._load_token: object | None = None

    def body(self) -> ComposeResult:
        with Horizontal(id="browse-body"):
            yield Tree("Scopes", id="scope-tree")
            with Vertical():
                with Horizontal(id="filters"):
                    yield Input(placeholder="owner", id="filter-owner")
                    yield Select([(k, k) for k in KINDS], prompt="any kind", id="filter-kind")
                    yield Checkbox("stale only", id="filter-stale")
                yield Static("", id="browse-count", classes="hint")
                yield DataTable(id="fragments", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one("#fragments", DataTable)
        table.add_columns("id", "kind", "owner", "age", "badges", "title", "scope")
        self.reload(rebuild_tree=True)
        table.focus()
        self.call_after_refresh(self.app.painted)

    def reload(self, rebuild_tree: bool = False) -> None:
        owner = self.query_one("#filter-owner", Input).value.strip() or None
        kind = self.query_one("#filter-kind", Select).value
        kind = None if kind is Select.NULL else kind
        stale = self.query_one("#filter-stale", Checkbox).value
        everything = self.app.attempt(self.wb.browse, principal=self.me, now=self.app.clock())
        if everything is None:
            return
        if rebuild_tree:
            self._fill_tree(everything)
        rows = [r for r in everything if (owner is None or r.owner == owner) and (kind is None or r.kind == kind)
                and (self.scope is None or self.scope.contains(r.scope)) and (not stale or r.stale)]
        now = self.app.clock()
        table = self.query_one("#fragments", DataTable)
        table.clear()
        cells = [(r.id, r.kind, r.owner, age(r.last_touched, now),
                  " ".join(b for b in ("stale" if r.stale else "", "📌 pinned" if r.pinned else "") if b),
                  r.title if len(r.title) <= 56 else r.title[:55] + "…", str(r.scope)) for r in rows]
        # DataTable measures every cell it is given: paint a screenful first, then the rest in
        # batches, so a 10k-fragment workspace paints fast and the UI stays responsive.
        self._load_token = token = object()
        table.add_rows(cells[:FIRST_PAGE])
        self._add_later(table, cells[FIRST_PAGE:], token)
        self._ids = [r.id for r in rows]
        where = str(self.scope) if self.scope else "all scopes"
        self.query_one("#browse-count", Static).update(f"{len(rows)} fragments · {where}")

    def _add_later(self, table: DataTable, cells: list, token: object) -> None:
        if not cells or token is not self._load_token:
            return

        def add() -> None:
            if token is self._load_token:
                table.add_rows(cells[:BATCH])
                self._add_later(table, cells[BATCH:], token)
        self.set_timer(0.02, add)

    def _fill_tree(self, rows) -> None:
        tree = self.query_one("#scope-tree", Tree)
        tree.clear()
        tree.root.data = None
        tree.root.expand()
        for org, o in sorted(scope_tree(rows).items()):
            org_node = tree.root.add(f"{org} ({o['count']})", data=Scope(org), expand=True)
            for repo, r in sorted(o["repos"].items()):
                repo_scope = Scope(org, None if repo == "(org-wide)" else repo)
                repo_node = org_node.add(f"{repo} ({r['count']})", data=repo_scope, expand=True)
                for persona, n in sorted(r["personas"].items()):
                    repo_node.add_leaf(f"{persona} ({n})", data=Scope(org, repo_scope.repo, persona))

    @on(Tree.NodeSelected, "#scope-tree")
    def _scope_chosen(self, event: Tree.NodeSelected) -> None:
        self.scope = event.node.data
        self.reload()

    @on(Input.Submitted, "#filter-owner")
    @on(Select.Changed, "#filter-kind")
    @on(Checkbox.Changed, "#filter-stale")
    def _filters_changed(self) -> None:
        self.reload()

    @on(DataTable.RowSelected, "#fragments")
    def _row_chosen(self, event: DataTable.RowSelected) -> None:
        self.app.open_fragment(self._ids[event.cursor_row])

    def action_open(self) -> None:
        table = self.query_one("#fragments", DataTable)
        if self._ids:
            self.app.open_fragment(self._ids[table.cursor_row])

    def action_toggle_stale(self) -> None:
        box = self.query_one("#filter-stale", Checkbox)
        box.value = not box.value

    def action_reload(self) -> None:
        self.reload(rebuild_tree=True)

    def commands(self):
        return [("Stale only", self.action_toggle_stale), ("Reload", self.action_reload)]
