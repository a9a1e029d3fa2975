"""The table layout (workbench/tui/columns.py): which columns a table shows at a width and how
wide, and what folds away. Pure functions, checked at 60/80/100/120/200 columns with the real
column specs of Browse, Search and the Inbox and the sample corpus's longest values."""

from __future__ import annotations

import pytest

from workbench.tui.columns import (
    PADDING,
    PINNED,
    STALE,
    Column,
    age_badges,
    clip,
    fit,
    folded_detail,
    natural_widths,
    short_name,
)
from workbench.tui.screens.browse import COLUMNS as BROWSE
from workbench.tui.screens.inbox import PROPOSAL_COLUMNS
from workbench.tui.screens.search import COLUMNS as SEARCH

# the sample corpus's longest values (titles and ids are longer than any column allows)
NATURAL = {"title": 90, "kind": len("anti-pattern"), "owner": len("marco.bianchi"), "age": len("21mo ⚑ ●"),
           "id": 40, "scope": len("org=northwind,repo=payments-api"), "rank": 2, "conf": 4, "score": 4,
           "by": len("agent.nw-coder")}
WIDTHS = (60, 80, 100, 120, 200)


def keys(pairs) -> list[str]:
    return [c.key for c, _ in pairs]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("spec", [BROWSE, SEARCH, PROPOSAL_COLUMNS], ids=["browse", "search", "proposals"])
def test_a_layout_fits_its_width_and_folds_by_priority(spec, width):
    layout = fit(spec, width, NATURAL)
    widths = {c.key: w for c, w in layout.shown}
    assert layout.used() <= width                                     # nothing shown past the edge
    assert keys(layout.columns) == keys(layout.shown) + keys(layout.folded)
    assert set(keys(layout.columns)) == {c.key for c in spec}       # every column is somewhere
    assert [c.key for c in spec if c.key in widths] == keys(layout.shown)  # the declared order is kept
    # title, the whole kind, owner (or who proposed) and age are always in view at 80 columns and up
    if width >= 80:
        assert {"title", "kind", "age"} <= set(widths) and ({"owner"} <= set(widths) or {"by"} <= set(widths))
    assert widths["kind"] == NATURAL["kind"]                         # "anti-pattern", never "anti-patt"
    # strict priorities: every column shown matters at least as much as every column folded
    if layout.folded:
        assert max(c.priority for c, _ in layout.shown) <= min(c.priority for c, _ in layout.folded)
    for column, w in layout.shown:
        assert min(column.min_width, NATURAL[column.key]) <= w <= column.max_width, column.key


def test_browse_at_each_width():
    shown = {w: keys(fit(BROWSE, w, NATURAL).shown) for w in (54, *WIDTHS)}
    # 54: the table beside the scope tree at 80 columns; 80: id and scope fold away
    assert shown[54] == shown[60] == shown[80] == ["title", "kind", "owner", "age"]
    assert shown[100] == ["title", "kind", "owner", "age", "id"]
    assert shown[120] == shown[200] == ["title", "kind", "owner", "age", "id", "scope"]
    title = {w: {c.key: x for c, x in fit(BROWSE, w, NATURAL).shown}["title"] for w in (54, *WIDTHS)}
    assert title[54] >= 16 and title[200] == 64                         # the title takes what is left, up to its max
    assert title[80] >= 36 and title[100] >= 36                         # its comfort comes before the id and scope


def test_search_at_80_keeps_confidence_and_folds_scope_id_and_score():
    layout = fit(SEARCH, 80, NATURAL)
    assert keys(layout.shown) == ["rank", "title", "kind", "owner", "age", "conf"]
    assert keys(layout.folded) == ["scope", "id", "score"]
    assert keys(fit(SEARCH, 200, NATURAL).shown) == [c.key for c in SEARCH]


def test_priority_zero_never_folds_and_the_table_scrolls():
    layout = fit(BROWSE, 20, NATURAL)
    assert keys(layout.shown) == ["title", "kind"] and layout.used() > 20


def test_natural_widths_keep_short_columns_short():
    columns = [Column("kind", "kind", priority=0, whole=True, max_width=15),
               Column("title", "title", priority=0, grow=True, min_width=10, max_width=60)]
    rows = [{"kind": "note", "title": "Short"}, {"kind": "runbook", "title": "A longer title"}]
    natural = natural_widths(columns, rows)
    assert natural == {"kind": 7, "title": 14}
    layout = fit(columns, 200, natural)
    assert [w for _, w in layout.shown] == [7, 14]                      # no wider than the longest value
    assert layout.used() == 7 + 14 + 2 * PADDING


def test_compact_renderings():
    assert clip("a  long\ttitle", 8) == "a long …" and clip("short", 8) == "short" and clip("x", 0) == ""
    assert short_name("marco.bianchi", 20) == "marco.bianchi"
    assert short_name("marco.bianchi", 9) == "m.bianchi"
    assert short_name("dan.kowalski", 9) == "d.kowals…"
    assert short_name("agent-without-dot", 8) == "agent-w…"
    assert age_badges("5mo", stale=True, pinned=True) == f"5mo {STALE} {PINNED}" == "5mo ⚑ ●"
    assert age_badges("today") == "today"
    whole = Column("kind", "kind", whole=True, max_width=15)
    assert whole.render("anti-pattern", 12) == "anti-pattern"


def test_the_detail_line_names_the_folded_columns():
    layout = fit(SEARCH, 80, NATURAL)
    row = {"rank": "1", "title": "T", "kind": "note", "owner": "o", "age": "5mo", "conf": "0.9",
           "scope": "payments-api", "id": "nw-note-x", "score": "0.53"}
    assert folded_detail(layout, row) == "scope payments-api · id nw-note-x · score 0.53"
    assert folded_detail(layout, row, skip=("id",)) == "scope payments-api · score 0.53"
    assert folded_detail(fit(SEARCH, 200, NATURAL), row) == ""
