"""Search: hybrid results update as you type, with the score breakdown, the calibrated
confidence, each hit's scope, superseded fragments marked, and an explain pane (settings and
stage timings)."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Input, Static

from ...errors import WorkbenchError
from .base import WbScreen

DEBOUNCE_S = 0.25


class SearchScreen(WbScreen):

    DEFAULT_CSS = """
    #search-input { margin: 0 1; }
    #results { height: 1fr; }
    #explain { height: auto; max-height: 12; padding: 0 1; border-top: solid $primary-background; }
    """
    BINDINGS = [
        Binding("escape", "back", "Back", id="search-back"),
        Binding("f2", "toggle_explain", "Explain", id="search-explain"),
        Binding("down", "focus_results", "Results", id="search-results", show=False),
    ]

    def __init__(self, query: str = "") -> None:
        super().__init__()
        self.initial = query
        self.hits = []
        self.result = None
        self._timer = None

    def body(self) -> ComposeResult:
        yield Input(value=self.initial, placeholder="search as you type…", id="search-input")
        yield Static("type to search", id="search-status", classes="hint")
        yield DataTable(id="results", cursor_type="row", zebra_stripes=True)
        yield Static("", id="explain")

    def on_mount(self) -> None:
        self.query_one("#results", DataTable).add_columns(
            "#", "id", "kind", "score", "conf", "lexical", "dense", "fresh", "auth", "pin", "scope", "title")
        self.query_one("#search-input", Input).focus()
        if self.initial:
            self.run_search(self.initial)

    @on(Input.Changed, "#search-input")
    def _typed(self, event: Input.Changed) -> None:
        if self._timer is not None:
            self._timer.stop()
        query = event.value
        self._timer = self.set_timer(DEBOUNCE_S, lambda: self.run_search(query))

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        self.run_search(event.value)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, query: str) -> None:
        if not query.strip():
            return
        self.app.call_from_thread(self._status, "searching…" if self.app.model_ready else
                                  "searching (loading the model the first time)…")
        try:
            result = self.app.call(self.wb.search, query, principal=self.me, k=20, trace=False, now=self.app.now)
        except WorkbenchError as e:
            self.app.call_from_thread(self._status, e.message)
            return
        self.app.model_ready = True
        self.app.call_from_thread(self.show, result)

    def _status(self, text: str) -> None:
        self.query_one("#search-status", Static).update(text)

    def show(self, result) -> None:
        self.result = result
        self.hits = list(result.hits) + list(result.avoid)
        table = self.query_one("#results", DataTable)
        table.clear()
        fmt = lambda v: "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))  # noqa: E731
        for h in self.hits:
            s = h.scores
            kind = h.fragment.kind + (" (avoid)" if h in result.avoid else "") + (
                " (superseded)" if h.superseded_by else "")
            title = h.fragment.title if len(h.fragment.title) <= 48 else h.fragment.title[:47] + "…"
            table.add_row(str(h.rank), h.id, kind, fmt(h.score), f"{h.confidence:.2f}", fmt(s["lexical"]),
                          fmt(s["dense"]), fmt(s["freshness"]), fmt(s["authority"]), "📌" if s["pinned"] else "",
                          str(h.fragment.scope), title)
        self._status(f"{len(result.hits)} hits, {len(result.avoid)} to avoid for “{result.query}”")
        self._explain()

    def _explain(self) -> None:
        if self.result is None:
            return
        r = self.result
        stages = ", ".join(f"{k} {v:.1f} ms" for k, v in r.stages_ms.items())
        s = r.settings
        text = (f"pipeline {s['pipeline']} · fusion {s['fusion']} · lexical {s['lexical']} · dense {s['dense']} · "
                f"freshness weight {s['freshness_weight']} · authority weight {s['authority_weight']}\n"
                f"stages: {stages}")
        table = self.query_one("#results", DataTable)
        if self.hits and table.cursor_row < len(self.hits):
            h = self.hits[table.cursor_row]
            fused = h.scores["fused"]
            text += (f"\n{h.id}: fused {fused if fused is None else round(fused, 3)} × freshness/authority priors "
                     f"→ {h.score:.3f} (of the best); confidence {h.confidence:.2f}; "
                     f"scope {h.fragment.scope}; owner {h.fragment.owner}")
            if h.superseded_by:
                text += f"\n{h.id} is {h.superseded_label()}: prefer it"
        self.query_one("#explain", Static).update(text)

    @on(DataTable.RowHighlighted, "#results")
    def _highlighted(self) -> None:
        self._explain()

    @on(DataTable.RowSelected, "#results")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        self.app.open_fragment(self.hits[event.cursor_row].id)

    def action_toggle_explain(self) -> None:
        pane = self.query_one("#explain")
        pane.display = not pane.display

    def action_focus_results(self) -> None:
        table = self.query_one("#results", DataTable)
        if self.focused is not table:
            table.focus()
        else:
            table.action_cursor_down()

    def action_back(self) -> None:
        self.app.pop_screen()
