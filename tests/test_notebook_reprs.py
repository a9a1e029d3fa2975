"""Notebook renderings escape what fragment authors and callers wrote: a title, query, id or
reason holding HTML never renders live, in the HTML form or in the markdown form (which
Jupyter renders with raw HTML passed through), and table breakers (``|``, newlines) stay inside
their cell. The markdown is rendered with a real renderer (markdown-it-py, html enabled)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from conftest import write_fragment
from workbench.retrieval.results import _HIT_HEADERS, EvalReport

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"
HOSTILE_QUERY = f"payments retry {SCRIPT} {IMG} | a | b"
# the only tags a rendering may contain: its own layout (HTML form; markdown rendered to HTML)
LAYOUT = {"p", "b", "strong", "em", "code", "table", "thead", "tbody", "tr", "th", "td"}


class Tags(HTMLParser):
    """Every start tag and attribute the browser would build from the text."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def rows(self) -> list[int]:
        """Cells per table row, in order (a broken row shows as a wrong count)."""
        counts: list[int] = []
        for tag, _ in self.tags:
            if tag == "tr":
                counts.append(0)
            elif tag in ("td", "th") and counts:
                counts[-1] += 1
        return counts


def markdown(text: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def assert_inert(rendered: str, *, shown: list[str]) -> Tags:
    """No tag but layout, no attribute at all, and each hostile text visible as text."""
    parsed = Tags(rendered)
    assert {t for t, _ in parsed.tags} <= LAYOUT, sorted({t for t, _ in parsed.tags} - LAYOUT)
    assert all(not attrs for _, attrs in parsed.tags), [a for _, a in parsed.tags if a]
    low = rendered.lower()
    assert "<script" not in low and "<img" not in low
    import html

    text = html.unescape(rendered)  # what the reader sees: the hostile strings, as text
    for needle in shown:
        assert needle in text, (needle, rendered[:500])
    return parsed


def test_the_renderer_passes_raw_html_so_these_tests_can_fail():
    rendered = markdown(f"title {SCRIPT}\n\n| a | b |\n|---|---|\n| {IMG} | x |")
    assert "<script>" in rendered and "<img src=" in rendered
    with pytest.raises(AssertionError):
        assert_inert(rendered, shown=[])


@pytest.fixture
def hostile(wb, tmp_path):
    """Fragments whose titles are HTML, a history with a hostile reason, and a pin, as marco.bianchi."""
    folder = tmp_path / "in"
    write_fragment(folder, "nw-note-script", title=f"Retry {SCRIPT} payments",
                   body="Payments retry with idempotency keys.")
    write_fragment(folder, "nw-note-img", title=f"{IMG} | pipe | title", body="Payments retry: back off.")
    write_fragment(folder, "nw-note-plain", title="Plain retry note", body="Payments retry budget.")
    assert not wb.ingest([folder], actor="marco.bianchi").errors
    wb.edit("nw-note-script", "Payments retry with idempotency keys, v2.", actor="marco.bianchi",
            reason=f"line one\n| broken | row |\n{SCRIPT} & {IMG}")
    wb.pin("nw-note-img", scope="org=northwind,repo=payments-api", actor="marco.bianchi", reason="pinned")
    return wb


def test_search_result_reprs_escape_titles_and_the_query(hostile):
    result = hostile.search(HOSTILE_QUERY, principal="marco.bianchi", pipeline="bm25", trace=False)
    titles = {h.fragment.title for h in result.hits}
    assert f"Retry {SCRIPT} payments" in titles and f"{IMG} | pipe | title" in titles
    html_form = result._repr_html_()
    assert_inert(html_form, shown=[HOSTILE_QUERY, SCRIPT, IMG])
    md = result._repr_markdown_()
    assert SCRIPT not in md and IMG not in md
    parsed = assert_inert(markdown(md), shown=[HOSTILE_QUERY, f"Retry {SCRIPT} payments",
                                               f"{IMG} | pipe | title"])
    width = parsed.rows()[0]
    # the pipes in a title stay in its cell: every row has every column
    assert width == len(_HIT_HEADERS) and parsed.rows() == [width] * (len(result.hits) + 1)


def test_context_reprs_escape_titles_and_the_query(hostile):
    result = hostile.context(HOSTILE_QUERY, principal="marco.bianchi", pipeline="bm25", budget=4000)
    assert any(i.hit.id == "nw-note-img" for i in result.fragments)  # the pin is always there
    assert_inert(result._repr_html_(), shown=[HOSTILE_QUERY, f"{IMG} | pipe | title"])
    parsed = assert_inert(markdown(result._repr_markdown_()), shown=[HOSTILE_QUERY, f"{IMG} | pipe | title"])
    assert parsed.rows() == [5] * (len(result.fragments) + len(result.avoid) + 1)


def test_history_reprs_escape_reasons_and_keep_one_row_per_version(hostile):
    history = hostile.history("nw-note-script", principal="marco.bianchi")
    assert len(history) == 2
    reason = f"line one | broken | row | {SCRIPT} & {IMG}"  # newlines become spaces, on one row
    assert_inert(history._repr_html_(), shown=[SCRIPT, IMG])
    parsed = assert_inert(markdown(history._repr_markdown_()), shown=[reason, "nw-note-script"])
    assert parsed.rows() == [6, 6, 6]


def test_eval_report_reprs_escape_pipeline_names():
    report = EvalReport({f"bm25 {SCRIPT}": {"ndcg@10": 0.5, "recall@10": 0.6, "recall@100": 0.9,
                                            "mrr@10": 0.4, "queries": 3},
                         f"{IMG}|x": {"ndcg@10": 0.1, "queries": 3}})
    assert_inert(report._repr_html_(), shown=[SCRIPT, IMG])
    parsed = assert_inert(markdown(report._repr_markdown_()), shown=[f"bm25 {SCRIPT}", f"{IMG}|x"])
    assert parsed.rows() == [6, 6, 6]


def test_markdown_markup_in_values_stays_text():
    """Links (javascript: URLs), emphasis and code in a value do not become markup."""
    from workbench.retrieval.results import _md, _table_md

    cell = "[click](javascript:alert(1)) **bold** `code` ~~gone~~ $x$ \\| <b>b</b>"
    rendered = markdown(_table_md(["h"], [[cell]]))
    parsed = Tags(rendered)
    assert {t for t, _ in parsed.tags} == {"table", "thead", "tbody", "tr", "th", "td"}
    import html

    assert cell in html.unescape(rendered)
    assert "&amp;lt;" in _md("&lt;") and _md("a\r\nb\u2028c") == "a b c"
