"""Search: results as you type (rank, title, kind, owner, age and badges, confidence, scope, id,
score: the last fold away on a narrow terminal, → scrolls to them; the anti-patterns to avoid for
the query first, marked ``!`` and "avoid:", then the hits), with an explain pane for the
highlighted hit (its full id, scope and title, the score breakdown, the settings and stage
timings; f2 shows or hides it, and the choice is remembered per principal, tui/prefs.py) and the
row keys (rowactions.py: ctrl+e edit, ctrl+k pin, ... ctrl+o the menu) on the focused result. A
hit received through a subscription (its ``via``) carries the core's ``Received`` for it, asked
with the search (``search_rows``): as on Browse, it offers only the keys the policy allows there.

A typing screen: `/` focuses the query from anywhere on it, Up on the first result and Esc on the
results return to the query, Esc on the query goes back, and a printable key typed while the
results have focus is typed into the query (it never acts on a row).

Never blocked by the model: until the embedding model has loaded (``app.model_ready``), a query
is answered lexically (BM25, without the model, so without a calibrated confidence: "…"),
labelled so in the status line, and asked again as hybrid as soon as the model is ready.
Every search runs through ``app.submit`` (key "search": only the newest answer is shown).
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding

from ...service.browse import STALE_DAYS
from ..columns import Column, age_badges, short_name
from ..format import age, scope_label
from ..messages import plain
from ..plain import DataTable, Input, Static
from ..prefs import prefs_of
from ..table import FitTable
from .base import WbScreen
from .rowactions import RowActions, RowFragment, row_bindings

DEBOUNCE_S = 0.15
MODEL_POLL_S = 0.25
PREVIEW_NOTE = "lexical results while the model loads"
EXPLAIN_PREF = "search.explain"   # the explain pane shown (True) or hidden, remembered per principal (tui/prefs.py)


COLUMNS = (
    Column("rank", "#", priority=0, whole=True, max_width=3, justify="right"),
    Column("title", "title", priority=0, min_width=24, max_width=60, grow=True, comfort=32),
    Column("kind", "kind", priority=0, whole=True, max_width=15),
    Column("owner", "owner", priority=1, min_width=9, max_width=20, compact=short_name),
    Column("age", "age", priority=1, whole=True, max_width=9),
    Column("conf", "conf", priority=1, whole=True, max_width=4, justify="right"),
    Column("scope", "scope", priority=3, min_width=10, max_width=28),
    Column("id", "id", priority=4, min_width=16, max_width=32),
    Column("score", "score", priority=5, whole=True, max_width=6, justify="right"),
)


def hit_values(hit, kind: str, now, orgs) -> dict[str, str]:
    """A hit's cells by column key (the table shortens them to the width it has)."""
    f = hit.fragment
    touched = max(f.updated_at, f.verified_at or f.updated_at)      # as Browse's rows (service.browse)
    stale = f.status == "active" and touched < now - timedelta(days=STALE_DAYS)
    return {"rank": str(hit.rank), "title": ("(old) " if hit.superseded_by else "") + f.title, "kind": kind,
            "owner": f.owner, "age": age_badges(age(touched, now), stale=stale, pinned=bool(hit.scores.get("pinned"))),
            "conf": "…" if hit.confidence is None else f"{hit.confidence:.2f}", "scope": scope_label(f.scope, orgs),
            "id": hit.id, "score": f"{hit.score:.2f}"}


def warm_lexical(wb) -> int:
    """Build the search index and, unless the workspace's persisted FTS index is current (then
    the lexical preview uses it), the BM25 backend: run as a job after the first paint, so the
    first search is answered at once. Returns the number of fragments indexed."""
    index = wb.search_index()
    if wb.quick_lexical() == "bm25":
        index.lexical("bm25")
    return len(index.ids)


def lexical_preview(wb, query: str, **options):
    """A search that needs no model: lexical only, uncalibrated, on the quickest lexical backend."""
    return wb.search(query, pipeline="bm25", calibrate=False, lexical=wb.quick_lexical(), **options)


def search_rows(wb, search, query: str, *, principal, **options):
    """``search``'s answer, and for each hit ``principal`` receives through a subscription (the ones
    with ``via``) how it receives it: ``wb.received`` (the writes the policy lets it take there).
    The screen asks; it never decides which keys a received hit offers."""
    result = search(query, principal=principal, **options)
    received = {h.id: wb.received(h.id, principal=principal) for h in (*result.avoid, *result.hits) if h.via}
    return result, received


def _num(value) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


class SearchScreen(RowActions, WbScreen):
    """Search as you type; act on any result."""

    FORM = True
    DEFAULT_CSS = """
    #search-input { margin: 0 1; }
    #search-status { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #results { height: 1fr; }
    #explain { height: auto; max-height: 8; padding: 0 1; border-top: solid $primary-background; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", id="search-back"),
        Binding("f2", "toggle_explain", "Explain", id="search-explain"),
        Binding("down", "focus_results", "Results", id="search-results", show=False),
        Binding("slash", "focus_query", "Query", id="search-query", show=False),
        Binding("up", "query_from_top", "Query", id="search-query-up", show=False, priority=True),
        *row_bindings("search"),
    ]
    ROW_TABLE = "results"

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.initial = query
        self.query_text = ""
        self.hits: list = []
        self.received: dict = {}      # hit id -> service.received.Received, for the hits received (via)
        self.result = None
        self.preview = False          # the hits shown are the lexical preview
        self._timer = None
        self._poll = None

    def body(self) -> ComposeResult:
        yield Input(value=self.initial, placeholder="search as you type…", id="search-input")
        yield Static("type to search", id="search-status", classes="hint", markup=False)
        yield FitTable(COLUMNS, fixed=2, id="results")
        yield Static("", id="explain", markup=False)

    def on_mount(self) -> None:
        self.query_one("#search-input", Input).focus()
        self.query_one("#explain").display = prefs_of(self.app).get(EXPLAIN_PREF, True)  # as last left
        if self.initial:
            self.run_search(self.initial)

    # -- searching -----------------------------------------------------------------------

    def _lexical_only(self) -> bool:
        """Answer lexically: the app is loading the model (or could not), so a hybrid search
        would wait for it. An app that does not warm the model ("off") loads it on first use."""
        return not self.app.model_ready and self.app.model_state in ("not loaded", "loading", "failed")

    def run_search(self, query: str) -> None:
        if not query.strip():
            return
        self.query_text = query
        preview = self._lexical_only()

        self._status("searching (lexical while the model loads)…" if preview else
                     "searching…" if self.wb.index.model_loaded() else "searching (loading the model the first time)…")
        search = partial(lexical_preview, self.wb) if preview else self.wb.search
        self.app.submit(partial(search_rows, self.wb, search), query, principal=self.me, k=20, trace=False,
                        now=self.app.now, done=lambda answer: self.show(*answer, preview=preview),
                        failed=self._failed, key="search", label="searching…")

    def reload(self) -> None:
        """After a write (here or elsewhere): ask the same query again."""
        if self.query_text:
            self.run_search(self.query_text)

    def _failed(self, error) -> None:
        self._status(plain(error))

    def _status(self, text: str) -> None:
        self.query_one("#search-status", Static).update(text)

    def _watch_model(self) -> None:
        """While a preview is shown: ask again as hybrid once the model is ready."""
        if self._poll is None and self.app.model_state != "failed":
            self._poll = self.set_interval(MODEL_POLL_S, self._model_check)

    def _model_check(self) -> None:
        if not self.app.model_ready and self.app.model_state != "failed":
            return
        self._poll.stop()
        self._poll = None
        if self.preview and self.query_text and self.app.screen is self:
            self.run_search(self.query_text)

    def on_screen_resume(self) -> None:
        if self.preview and self.app.model_ready and self.query_text:
            self.run_search(self.query_text)

    # -- showing -------------------------------------------------------------------------

    def show(self, result, received: dict | None = None, preview: bool = False) -> None:
        table = self.query_one("#results", FitTable)
        before = self.hits[table.cursor_row].id if self.hits and table.cursor_row < len(self.hits) else None
        self.result, self.preview, self.received = result, preview, dict(received or {})
        if preview:  # the first answer is on screen: now the model may take the CPU
            self.app.ensure_model()
        self.hits = list(result.avoid) + list(result.hits)   # what to avoid is seen first, above the hits
        self._paint(before)
        note = ""
        if preview:
            note = " · " + (PREVIEW_NOTE if self.app.model_state != "failed" else
                            "lexical results (the model is unavailable)")
            self._watch_model()
        self._status(f"{len(result.hits)} hits, {len(result.avoid)} to avoid for “{result.query}”{note}")
        self._explain()

    def _paint(self, keep: str | None = None) -> None:
        """Fill the table from the hits, laid out for its width; the cursor stays on ``keep``."""
        if self.result is None:
            return
        table = self.query_one("#results", FitTable)
        now, orgs, avoided = self.app.clock(), self.me.orgs, len(self.result.avoid)
        values = [hit_values(h, "avoid" if i < avoided else h.fragment.kind, now, orgs)   # the avoid rows come first
                  for i, h in enumerate(self.hits)]
        for v in values[:avoided]:
            v.update(rank="!", title="avoid: " + v["title"])
        table.prepare(values)
        table.clear()
        table.add_rows([table.cells(v, style="bold red" if i < avoided else "") for i, v in enumerate(values)])
        ids = [h.id for h in self.hits]
        if keep in ids:
            table.move_cursor(row=ids.index(keep), animate=False)

    @on(FitTable.Relaid, "#results")
    def _relaid(self) -> None:
        table = self.query_one("#results", FitTable)
        self._paint(self.hits[table.cursor_row].id if self.hits and table.cursor_row < len(self.hits) else None)

    def _explain(self) -> None:
        if self.result is None:
            return
        r, lines = self.result, []
        table = self.query_one("#results", FitTable)
        if self.hits and table.cursor_row < len(self.hits):
            h = self.hits[table.cursor_row]
            f, s = h.fragment, h.scores
            conf = "… (lexical preview: no model yet)" if h.confidence is None else f"{h.confidence:.2f}"
            got = self.received.get(h.id)
            via = [] if got is None else [f"via {got.via}" + (f" (v{got.version})" if got.version is not None
                                                               else "") + " · read-only"]
            lines += [" · ".join([f"{h.id} v{f.version}", *via, str(f.scope), f"owner {f.owner}"]),
                      f.title,
                      (f"score {h.score:.3f} · confidence {conf} · lexical {_num(s['lexical'])} · "
                       f"dense {_num(s['dense'])} · fresh {_num(s['freshness'])} · auth {_num(s['authority'])} · "
                       f"pin {'yes' if s['pinned'] else 'no'} · fused {_num(s['fused'])}")]
            if h.superseded_by:
                lines.append(f"{h.id} is {h.superseded_label()}: prefer it")
        st = r.settings
        lines.append(f"pipeline {st['pipeline']} · fusion {st['fusion']} · lexical {st['lexical']} · "
                     f"dense {st['dense']} · freshness weight {st['freshness_weight']} · "
                     f"authority weight {st['authority_weight']}")
        lines.append("stages: " + ", ".join(f"{k} {v:.1f} ms" for k, v in r.stages_ms.items()))
        self.query_one("#explain", Static).update("\n".join(lines))

    def row_fragment(self) -> RowFragment | None:
        table = self.query_one("#results", FitTable)
        if not self.hits or not 0 <= table.cursor_row < len(self.hits):
            return None
        f = self.hits[table.cursor_row].fragment
        return RowFragment(f.id, f.title, f.scope, f.version, self.received.get(f.id))

    # -- events --------------------------------------------------------------------------

    @on(Input.Changed, "#search-input")
    def _typed(self, event: Input.Changed) -> None:
        if self._timer is not None:
            self._timer.stop()
        query = event.value
        self._timer = self.set_timer(DEBOUNCE_S, lambda: self.run_search(query))

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        if self._timer is not None:
            self._timer.stop()
        self.run_search(event.value)

    @on(FitTable.RowHighlighted, "#results")
    def _highlighted(self) -> None:
        self._explain()

    @on(FitTable.RowSelected, "#results")
    def _chosen(self) -> None:
        self.open_row()

    def action_toggle_explain(self) -> None:
        pane = self.query_one("#explain")
        pane.display = not pane.display
        prefs_of(self.app).set(EXPLAIN_PREF, bool(pane.display))  # it stays so: other searches, restarts

    def typing_field(self):
        return self.query_one("#search-input", Input)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`/` is typed into the query while it has focus; Up leaves the results only from the first row."""
        if action == "focus_query":
            return self.focused is not self.query_one("#search-input", Input)
        if action == "query_from_top":
            table = self.query_one("#results", DataTable)
            return self.focused is table and table.cursor_row <= 0
        return super().check_action(action, parameters)

    def action_focus_query(self) -> None:
        self.set_focus(self.query_one("#search-input", Input))

    def action_query_from_top(self) -> None:
        self.action_focus_query()

    def action_focus_results(self) -> None:
        table = self.query_one("#results", FitTable)
        if self.focused is not table:
            self.set_focus(table)  # at once: a key typed next is the table's
        else:
            table.action_cursor_down()

    def commands(self):
        return [("Show or hide the explain pane", self.action_toggle_explain), *self.row_commands()]

    def action_back(self) -> None:
        """Esc on the results returns to the query; on the query, leaves the screen."""
        if self.focused is self.query_one("#results", DataTable):
            self.action_focus_query()
            return
        self.app.pop_screen()
