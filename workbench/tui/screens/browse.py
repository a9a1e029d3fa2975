"""Browse: a tree of scopes (org → repo or "(org-wide)" → persona) beside a filterable table of
fragments, with the row keys (rowactions.py: ctrl+e edit, ctrl+k pin, ctrl+y verify, ... ctrl+o the
menu) on the focused row. In the tree, enter shows a node's fragments and space folds it.

Each tree node's number is the number of rows the table shows when that node is selected
(browse.Branch): an org shows all of the org, "(org-wide)" the org's fragments without a repo,
"subscribed" the fragments received through subscriptions (a node per published context; read-only:
the row keys the core refuses on them are neither shown nor run, nor listed by ctrl+o).
Enter selects a node, space folds it; the plain letters only change the view (``t`` hides the
tree, ``s`` stale only, ``f`` the owner filter, ``r`` reloads) and never fire in a filter field.
Owner and kind filters take a prefix or the letters in order (``mar``, ``mbianchi``; ``anti``,
``ap``); a filter that matches several shows them all, under the filters (the table shows the rows
of each). Rows are read through
``app.submit`` and painted a screenful first, then in batches, so 10k fragments paint fast; the
screen reloads after any write and keeps its node, filters and cursor.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Checkbox

from ...service.browse import ORG_WIDE, SUBSCRIBED, Branch, context_tree, matching, rows, scope_tree
from ..columns import Column, age_badges, short_name
from ..format import age, scope_label
from ..plain import Input, Static, Tree
from ..table import FitTable
from .base import WbScreen
from .rowactions import RowActions, RowFragment, row_bindings

FIRST_PAGE = 120
BATCH = 400
FILTER_DEBOUNCE_S = 0.15


COLUMNS = (
    Column("title", "title", priority=0, min_width=16, max_width=64, grow=True, comfort=36),
    Column("kind", "kind", priority=0, whole=True, max_width=15),
    Column("owner", "owner", priority=1, min_width=9, max_width=20, compact=short_name),
    Column("age", "age", priority=1, whole=True, max_width=9),
    Column("id", "id", priority=2, min_width=16, max_width=32),
    Column("scope", "scope", priority=3, min_width=10, max_width=32),
)


class BrowseScreen(RowActions, WbScreen):
    """Fragments by scope, with filters and row actions."""

    DEFAULT_CSS = """
    #browse-body { height: 1fr; }
    #scope-tree { width: 30%; min-width: 20; max-width: 32; border-right: solid $primary-background; }
    #browse-main { width: 1fr; }
    #filters { height: auto; }
    #filters Input { width: 1fr; min-width: 12; }
    #filter-stale { width: auto; }
    #filter-matches { height: auto; max-height: 2; }
    #fragments { height: 1fr; }
    #browse-detail { height: auto; max-height: 2; padding: 0 1; background: $boost; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open", id="browse-open", show=False),
        *row_bindings("browse"),
        Binding("t", "toggle_tree", "Tree", id="browse-tree"),
        Binding("s", "toggle_stale", "Stale only", id="browse-stale"),
        Binding("f", "filter", "Filter by owner", id="browse-filter", show=False),
        Binding("r", "reload", "Reload", id="browse-reload", show=False),
        Binding("escape", "focus_table", "Back to the table", id="browse-table", show=False),
    ]
    LETTER_ACTIONS = frozenset({"toggle_tree", "toggle_stale", "filter", "reload"})
    ROW_TABLE = "fragments"

    def __init__(self) -> None:
        super().__init__()
        self.branch = Branch()
        self.items: list | None = None     # every visible row, as last read from the store
        self.rows: list = []               # the rows the table shows
        self._load_token: object | None = None
        self._filter_timer = None
        self.values: list[dict] = []       # the shown rows' cell values by column key (the detail line's too)
        self._painted = False

    @property
    def _ids(self) -> list[str]:
        return [r.id for r in self.rows]

    def body(self) -> ComposeResult:
        with Horizontal(id="browse-body"):
            yield Tree(Text("all scopes"), data=Branch(), id="scope-tree")
            with Vertical(id="browse-main"):
                with Horizontal(id="filters"):
                    yield Input(placeholder="owner (fuzzy)", id="filter-owner",
                                tooltip="owner: a prefix (mar) or letters in order (mbianchi)")
                    yield Input(placeholder="kind (fuzzy)", id="filter-kind",
                                tooltip="kind: a prefix (anti) or letters in order (ap)")
                    yield Checkbox("stale", id="filter-stale", tooltip="stale only (s)")
                yield Static("", id="filter-matches", classes="hint", markup=False)
                yield Static("loading…", id="browse-count", classes="hint", markup=False)
                yield FitTable(COLUMNS, fixed=1, id="fragments")
                yield Static("", id="browse-detail", markup=False)

    def on_mount(self) -> None:
        tree = self.query_one("#scope-tree", Tree)
        tree.auto_expand = False           # enter selects a node; space folds it
        tree.guide_depth = 2               # narrow guides: the counts stay in view at 80 columns
        self.query_one("#fragments", FitTable).focus()
        self.reload()

    # -- reading -------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the rows again (after a write, or `r`); node, filters and cursor are kept."""
        self.app.submit(self.wb.browse, principal=self.me, now=self.app.clock(), done=self._loaded,
                        failed=self._load_failed, key="browse", label="loading fragments…")

    def _load_failed(self, error) -> None:
        from ..messages import plain

        self.query_one("#browse-count", Static).update(f"could not read the fragments: {plain(error)}")
        self.notify(plain(error), title="Not loaded", severity="error", timeout=8)

    def _loaded(self, items: list) -> None:
        self.items = items
        self._fill_tree()
        self._show_rows(keep=True)
        if not self._painted:
            self._painted = True
            self.call_after_refresh(self.app.painted)
            self.call_after_refresh(self._warm_search)

    def _warm_search(self) -> None:
        """After the first paint: the lexical index, so the first search answers at once."""
        from .search import warm_lexical

        self.app.submit(warm_lexical, self.wb, failed=lambda _: None)

    def _fill_tree(self) -> None:
        """Rebuild the tree from the rows, keeping folded nodes folded and the cursor's node."""
        tree = self.query_one("#scope-tree", Tree)
        folded = {n.data for n in _walk(tree.root) if n.children and not n.is_expanded}
        at = tree.cursor_node.data if tree.cursor_node is not None else None
        counts = scope_tree(self.items or [])
        tree.reset(Text(f"all scopes ({len(self.items or [])})"), Branch())
        nodes = {Branch(): tree.root}
        for org, o in sorted(counts.items()):
            org_node = tree.root.add(Text(f"{org} ({o['count']})"), data=Branch(org))
            nodes[org_node.data] = org_node
            # repos by name, then the org's fragments without a repo
            for repo, r in sorted(o["repos"].items(), key=lambda kv: (kv[0] == ORG_WIDE, kv[0])):
                repo_node = org_node.add(Text(f"{repo} ({r['count']})"), data=Branch(org, repo),
                                         allow_expand=bool(r["personas"]))
                nodes[repo_node.data] = repo_node
                for persona, n in sorted(r["personas"].items()):
                    leaf = repo_node.add_leaf(Text(f"{persona} ({n})"), data=Branch(org, repo, persona))
                    nodes[leaf.data] = leaf
        contexts = context_tree(self.items or [])
        if contexts:   # received through subscriptions: their own branch, one node per context
            sub = tree.root.add(Text(f"{SUBSCRIBED} ({sum(contexts.values())})"), data=Branch(via=SUBSCRIBED))
            nodes[sub.data] = sub
            for name, n in sorted(contexts.items()):
                leaf = sub.add_leaf(Text(f"{name} ({n})"), data=Branch(via=name))
                nodes[leaf.data] = leaf
        for branch, node in nodes.items():
            if node.children and branch not in folded:
                node.expand()
        target = nodes.get(at) or nodes.get(self.branch)
        if target is not None:
            self.call_after_refresh(tree.move_cursor, target)

    # -- the table -----------------------------------------------------------------------

    def _filters(self) -> tuple[str, str, bool]:
        return (self.query_one("#filter-owner", Input).value, self.query_one("#filter-kind", Input).value,
                self.query_one("#filter-stale", Checkbox).value)

    def _show_rows(self, keep: bool = True) -> None:
        """Fill the table from the rows read last, through the node and the filters; with
        ``keep``, the cursor stays on the same fragment (or row) when it is still there."""
        if self.items is None:
            return
        table = self.query_one("#fragments", FitTable)
        before = self.rows[table.cursor_row].id if keep and self.rows and table.cursor_row < len(self.rows) else None
        row_at = table.cursor_row if keep else 0
        owner, kind, stale = self._filters()
        self.rows = shown = rows(self.items, branch=self.branch, owner=owner, kind=kind, stale=stale)
        where = {r.id: i for i, r in enumerate(shown)}
        target = where.get(before, min(row_at, len(shown) - 1)) if shown else 0
        now, orgs = self.app.clock(), self.me.orgs
        self.values = [{"title": r.title, "kind": r.kind, "owner": r.owner, "id": r.id,
                        "age": age_badges(age(r.last_touched, now), stale=r.stale, pinned=r.pinned),
                        "scope": scope_label(r.scope, orgs)} for r in shown]
        table.prepare(self.values)
        cells = [table.cells(v) for v in self.values]
        # DataTable measures every cell it is given: paint a screenful first, then the rest in
        # batches, so a 10k-fragment workspace paints fast and the UI stays responsive.
        self._load_token = token = object()
        table.clear()
        first = max(FIRST_PAGE, target + 1)
        table.add_rows(cells[:first])
        self._add_later(table, cells[first:], token)
        if shown:
            table.move_cursor(row=target, animate=False)
        self._count(owner, kind, stale)
        self._detail()

    def _add_later(self, table: FitTable, cells: list, token: object) -> None:
        if not cells or token is not self._load_token:
            return

        def add() -> None:
            if token is self._load_token:
                if not self.is_current:  # another screen is in front: do not compete with it
                    self._add_later(table, cells, token)
                    return
                table.add_rows(cells[:BATCH])
                self._add_later(table, cells[BATCH:], token)
        self.set_timer(0.02 if self.is_current else 0.25, add)

    def _count(self, owner: str, kind: str, stale: bool) -> None:
        parts = [f"{len(self.rows)} fragments · {self.branch}"]
        several = []
        for label, typed, values in (("owner", owner, {s.owner for s in self.items or []}),
                                     ("kind", kind, {s.kind for s in self.items or []})):
            if typed.strip():
                found = sorted(matching(typed, values))
                parts.append(f"{label} {found[0]}" if len(found) == 1 else
                             f"{len(found)} {label}s" if found else f"no {label} matches “{typed.strip()}”")
                if len(found) > 1:
                    several.append(candidates(label, typed, found))
        if stale:
            parts.append("stale only")
        self.query_one("#browse-count", Static).update(" · ".join(parts))
        matches = self.query_one("#filter-matches", Static)
        matches.update("\n".join(several))
        matches.display = bool(several)

    def _detail(self) -> None:
        """The highlighted row in full: id, title, scope (the table cuts them), then the columns
        folded away at this width (owner, age and badges when the table is narrow)."""
        row = self.row_fragment()
        if row is None:
            self.query_one("#browse-detail", Static).update("")
            return
        table = self.query_one("#fragments", FitTable)
        folded = table.folded_text(self.values[table.cursor_row], skip=("id", "scope", "title"))
        via = [] if row.received is None else [f"via {row.received.via}" + (
            f" (v{row.received.version})" if row.received.version is not None else "") + " · read-only"]
        self.query_one("#browse-detail", Static).update(" · ".join(
            [row.id, *via, row.title, str(row.scope), *([folded] if folded else [])]))

    def row_fragment(self) -> RowFragment | None:
        table = self.query_one("#fragments", FitTable)
        if not self.rows or not 0 <= table.cursor_row < len(self.rows):
            return None
        r = self.rows[table.cursor_row]
        return RowFragment(r.id, r.title, r.scope, received=r.received)

    @on(FitTable.Relaid, "#fragments")
    def _relaid(self) -> None:
        """The table's width changed its columns (a resize, the tree shown or hidden): repaint."""
        self._show_rows(keep=True)

    # -- events ----------------------------------------------------------------------------

    @on(Tree.NodeSelected, "#scope-tree")
    def _scope_chosen(self, event: Tree.NodeSelected) -> None:
        self.branch = event.node.data or Branch()
        self._show_rows(keep=False)

    @on(Input.Changed, "#filter-owner")
    @on(Input.Changed, "#filter-kind")
    def _typed(self) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(FILTER_DEBOUNCE_S, lambda: self._show_rows(keep=True))

    @on(Input.Submitted, "#filter-owner")
    @on(Input.Submitted, "#filter-kind")
    def _filter_done(self) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._show_rows(keep=True)
        self.action_focus_table()

    @on(Checkbox.Changed, "#filter-stale")
    def _stale_changed(self) -> None:
        self._show_rows(keep=True)

    @on(FitTable.RowHighlighted, "#fragments")
    def _highlighted(self) -> None:
        self._detail()
        self.refresh_bindings()   # a received row offers only what the core lets the principal do on it

    @on(FitTable.RowSelected, "#fragments")
    def _row_chosen(self) -> None:
        self.open_row()

    # -- actions ---------------------------------------------------------------------------

    def action_open(self) -> None:
        self.open_row()

    def action_toggle_stale(self) -> None:
        box = self.query_one("#filter-stale", Checkbox)
        box.value = not box.value

    def action_toggle_tree(self) -> None:
        tree = self.query_one("#scope-tree", Tree)
        tree.display = not tree.display
        if not tree.display and self.focused is tree:
            self.action_focus_table()   # the table re-lays out its columns for its new width (Relaid)

    def action_filter(self) -> None:
        self.query_one("#filter-owner", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one("#fragments", FitTable).focus()

    def action_reload(self) -> None:
        self.reload()

    def commands(self):
        return [("Stale only", self.action_toggle_stale), ("Show or hide the scope tree", self.action_toggle_tree),
                ("Reload", self.action_reload), *self.row_commands()]


def candidates(label: str, typed: str, found: list[str], shown: int = 8) -> str:
    """The line that lists what a filter matches when it matches several (all of them are shown
    in the table): never one of them picked silently."""
    more = f", and {len(found) - shown} more" if len(found) > shown else ""
    return (f"{label} “{typed.strip()}” matches {len(found)}: {', '.join(found[:shown])}{more} "
            "(type more to narrow)")


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)
