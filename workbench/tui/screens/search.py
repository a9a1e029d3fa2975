"""Search: results as you type (rank, title, id, confidence, score, kind, scope; the anti-patterns
to avoid for the query first, marked ``!`` and "avoid:", then the hits), with an explain
pane for the highlighted hit (its full id, scope and title, the score breakdown, the settings
and stage timings; f2 shows or hides it, and the choice is remembered per principal, tui/prefs.py)
and pin, unpin, verify, snooze and edit on any result.

Never blocked by the model: until the embedding model has loaded (``app.model_ready``), a query
is answered lexically (BM25, without the model, so without a calibrated confidence: "…"),
labelled so in the status line, and asked again as hybrid as soon as the model is ready.
Every search runs through ``app.submit`` (key "search": only the newest answer is shown).
"""

from __future__ import annotations

from functools import partial

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding

from ..format import clip, scope_label
from ..messages import plain
from ..plain import DataTable, Input, Static
from ..prefs import prefs_of
from .base import WbScreen
from .rowactions import RowActions, RowFragment, row_bindings

DEBOUNCE_S = 0.15
MODEL_POLL_S = 0.25
PREVIEW_NOTE = "lexical results while the model loads"
EXPLAIN_PREF = "search.explain"   # the explain pane shown (True) or hidden, remembered per principal (tui/prefs.py)


def column_widths(width: int) -> dict[str, int]:
    """Characters shown of the clipped columns at a terminal ``width``: the title takes what the
    others leave (the explain pane has everything in full)."""
    small = width < 100
    widths = {"id": 10 if small else 20, "kind": 8 if small else 15, "scope": 16 if small else 24}
    fixed = 7 * 2 + 2 + 4 + 4 + 2 + sum(widths.values())   # padding, rank, conf, score, scrollbar
    return {"title": max(16, min(60, width - fixed)), **widths}


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
        *row_bindings("search"),
    ]

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.initial = query
        self.query_text = ""
        self.hits: list = []
        self.result = None
        self.preview = False          # the hits shown are the lexical preview
        self._timer = None
        self._poll = None

    def body(self) -> ComposeResult:
        yield Input(value=self.initial, placeholder="search as you type…", id="search-input")
        yield Static("type to search", id="search-status", classes="hint", markup=False)
        yield DataTable(id="results", cursor_type="row", zebra_stripes=True)
        yield Static("", id="explain", markup=False)

    def on_mount(self) -> None:
        self.query_one("#results", DataTable).add_columns("#", "title", "id", "conf", "score", "kind", "scope")
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
        self.app.submit(partial(lexical_preview, self.wb) if preview else self.wb.search, query, principal=self.me,
                        k=20, trace=False, now=self.app.now, done=lambda result: self.show(result, preview=preview),
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

    def show(self, result, preview: bool = False) -> None:
        table = self.query_one("#results", DataTable)
        before = self.hits[table.cursor_row].id if self.hits and table.cursor_row < len(self.hits) else None
        self.result, self.preview = result, preview
        if preview:  # the first answer is on screen: now the model may take the CPU
            self.app.ensure_model()
        self.hits = list(result.avoid) + list(result.hits)   # what to avoid is seen first, above the hits
        widths = column_widths(self.app.size.width)
        orgs = self.me.orgs
        table.clear()
        for h in self.hits:
            f = h.fragment
            avoided = h in result.avoid
            kind = "avoid" if avoided else f.kind
            title = ("(old) " if h.superseded_by else "") + ("avoid: " if avoided else "") + f.title
            conf = "…" if h.confidence is None else f"{h.confidence:.2f}"
            warn = "bold red" if avoided else ""
            table.add_row(Text("!" if avoided else str(h.rank), warn), Text(clip(title, widths["title"]), warn),
                          Text(clip(h.id, widths["id"])), Text(conf), Text(f"{h.score:.2f}"),
                          Text(clip(kind, widths["kind"]), warn), Text(clip(scope_label(f.scope, orgs), widths["scope"])))
        ids = [h.id for h in self.hits]
        if before in ids:
            table.move_cursor(row=ids.index(before), animate=False)
        note = ""
        if preview:
            note = " · " + (PREVIEW_NOTE if self.app.model_state != "failed" else
                            "lexical results (the model is unavailable)")
            self._watch_model()
        self._status(f"{len(result.hits)} hits, {len(result.avoid)} to avoid for “{result.query}”{note}")
        self._explain()

    def _explain(self) -> None:
        if self.result is None:
            return
        r, lines = self.result, []
        table = self.query_one("#results", DataTable)
        if self.hits and table.cursor_row < len(self.hits):
            h = self.hits[table.cursor_row]
            f, s = h.fragment, h.scores
            conf = "… (lexical preview: no model yet)" if h.confidence is None else f"{h.confidence:.2f}"
            lines += [f"{h.id} v{f.version} · {f.scope} · owner {f.owner}",
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
        table = self.query_one("#results", DataTable)
        if not self.hits or not 0 <= table.cursor_row < len(self.hits):
            return None
        f = self.hits[table.cursor_row].fragment
        return RowFragment(f.id, f.title, f.scope, f.version)

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

    @on(DataTable.RowHighlighted, "#results")
    def _highlighted(self) -> None:
        self._explain()

    @on(DataTable.RowSelected, "#results")
    def _chosen(self) -> None:
        self.open_row()

    def action_toggle_explain(self) -> None:
        pane = self.query_one("#explain")
        pane.display = not pane.display
        prefs_of(self.app).set(EXPLAIN_PREF, bool(pane.display))  # it stays so: other searches, restarts

    def action_focus_results(self) -> None:
        table = self.query_one("#results", DataTable)
        if self.focused is not table:
            table.focus()
        else:
            table.action_cursor_down()

    def commands(self):
        return [("Show or hide the explain pane", self.action_toggle_explain), *self.row_commands()]

    def action_back(self) -> None:
        self.app.pop_screen()
