"""Tables that fit (columns.py, table.FitTable), driven with Pilot: at 80 columns every table of
fragments or proposals shows the title, the whole kind, the owner (or who proposed it) and the
age/badge column in its visible region; the columns folded away are named in the detail line;
→ / ← scroll one whole column; a resize lays the table out again. (Gaps: test_tui_gaps.py.)"""

from __future__ import annotations

import pytest
from tui_support import SMALL, app_for, cell, scrolls_by_column, settle, until, visible_columns

from workbench import Workbench

AGENT, SCOPE = "agent.nw-coder", "org=northwind,repo=payments-api"


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def screen_name(app) -> str:
    return type(app.screen).__name__


async def browse_ready(pilot):
    await until(pilot, lambda: pilot.app.first_paint_at is not None)
    await settle(pilot)
    screen = pilot.app.screen
    await until(pilot, lambda: screen.query_one("#fragments").row_count == len(screen.rows))
    return screen


def kinds_whole(table, kinds: list[str]) -> None:
    assert [cell(table, i, "kind") for i in range(table.row_count)] == kinds


async def test_browse_at_80_columns_shows_kind_owner_and_age_then_scrolls_by_column(wb):
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        screen = await browse_ready(pilot)
        table = screen.query_one("#fragments")
        assert screen.query_one("#scope-tree").display                  # beside the tree, at 80×24
        assert visible_columns(table) == ["title", "kind", "owner", "age"]
        kinds_whole(table, [r.kind for r in screen.rows])
        assert "anti-pattern" in {r.kind for r in screen.rows}
        stale = next(i for i, r in enumerate(screen.rows) if r.stale)
        assert cell(table, stale, "age").endswith("⚑")
        # the folded id and scope are in the detail line, whole
        row = screen.row_fragment()
        assert str(screen.query_one("#browse-detail").render()).startswith(f"{row.id} · {row.title} · {row.scope}")
        await scrolls_by_column(pilot, table)
        # hiding the tree gives the table the width: it is laid out again, the title wider
        title_before = table.fitted.shown[0][1]
        shown_before = len(cell(table, 0, "title"))
        await pilot.press("t")
        await settle(pilot)
        assert table.fitted.shown[0][1] > title_before and len(cell(table, 0, "title")) > shown_before
        assert {"title", "kind", "owner", "age"} <= set(visible_columns(table))


async def test_browse_lays_out_again_on_resize(wb):
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        screen = await browse_ready(pilot)
        table = screen.query_one("#fragments")
        assert "id" in table.fitted.folded_keys
        cursor = screen.row_fragment().id
        await pilot.resize_terminal(160, 40)
        await settle(pilot)
        assert {"title", "kind", "owner", "age", "id"} <= set(visible_columns(table))
        assert table.row_count == len(screen.rows) and screen.row_fragment().id == cursor
        i = table.cursor_row
        assert screen.rows[i].id.startswith(cell(table, i, "id").rstrip("…"))


async def test_search_at_80_columns_shows_kind_owner_and_age_then_scrolls_by_column(wb):
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("slash")
        await until(pilot, lambda: screen_name(app) == "SearchScreen")
        screen = app.screen
        screen.query_one("#search-input").value = "charged twice on retry"
        await until(pilot, lambda: screen.result is not None and app.pending == 0, timeout=120)
        table = screen.query_one("#results")
        assert {"rank", "title", "kind", "owner", "age", "conf"} <= set(visible_columns(table))
        avoided = len(screen.result.avoid)   # the anti-patterns to avoid come first
        kinds_whole(table, ["avoid" if i < avoided else h.fragment.kind for i, h in enumerate(screen.hits)])
        assert set(table.fitted.folded_keys) >= {"id", "score"}
        await pilot.press("down")
        await scrolls_by_column(pilot, table)
        assert screen.focused is table


async def test_inbox_tables_at_80_columns_then_scroll_by_column(wb):
    pid = wb.propose("Webhook retries: five, then the dead-letter queue", "Five retries, then the DLQ.",
                     scope=SCOPE, principal=AGENT).id
    app = app_for(wb, principal="priya.raman")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("i")
        await until(pilot, lambda: screen_name(app) == "InboxScreen" and app.screen.items and app.screen.proposals)
        await settle(pilot)
        screen = app.screen
        stale = screen.query_one("#inbox")
        assert {"title", "kind", "owner", "age"} <= set(visible_columns(stale))
        kinds_whole(stale, [i.fragment.kind for i in screen.items])
        assert cell(stale, 0, "age").endswith("⚑")
        await scrolls_by_column(pilot, stale)
        proposals = screen.query_one("#proposals")
        proposals.focus()
        await settle(pilot)
        assert {"title", "kind", "by", "age"} <= set(visible_columns(proposals))
        assert cell(proposals, 0, "title").startswith("Webhook retries") and cell(proposals, 0, "by") == AGENT
        assert "id" in proposals.fitted.folded_keys
        assert str(screen.query_one("#proposal-detail").render()).startswith(f"{pid} · Webhook retries")
        await scrolls_by_column(pilot, proposals)


async def test_pins_at_80_columns_then_scroll_by_column(wb):
    wb.pin("nw-rb-psp-failover", scope=SCOPE, actor="marco.bianchi", reason="PSP outages are our worst incidents",
           now=app_for(wb).clock())
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await until(pilot, lambda: screen_name(app) == "PinsScreen" and app.screen.pins)
        await settle(pilot)
        screen = app.screen
        table = screen.query_one("#pins")
        assert {"title", "kind", "owner", "age"} <= set(visible_columns(table))
        assert cell(table, 0, "kind") == "runbook" and cell(table, 0, "age").endswith("●")   # pinned
        detail = str(screen.query_one("#pin-detail").render())
        assert "nw-rb-psp-failover" in detail and "pinned by marco.bianchi" in detail       # folded: named there
        await scrolls_by_column(pilot, table)
