"""Snapshots of Browse, Search and the pin dialog at 80×24 and 120×40 (pytest-textual-snapshot),
with a fixed clock and fixed stage timings.

Regenerate after an intended change with:
.venv/bin/python -m pytest tests/test_tui_browse_search_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest
from tui_support import SIZES, app_for, settle, until

from workbench import Workbench

IDS = ["80x24", "120x40"]


@pytest.fixture
def bench(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        yield wb


async def browse_loaded(pilot):
    await until(pilot, lambda: pilot.app.first_paint_at is not None)
    await settle(pilot)
    screen = pilot.app.screen
    await until(pilot, lambda: screen.query_one("#fragments").row_count == len(screen.rows))
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_browse(bench, snap_compare, size):
    assert snap_compare(app_for(bench), terminal_size=size, run_before=browse_loaded)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_browse_org_wide_filtered(bench, snap_compare, size):
    async def choose(pilot):
        await browse_loaded(pilot)
        screen = pilot.app.screen
        tree = screen.query_one("#scope-tree")
        tree.focus()
        tree.move_cursor(next(n for n in tree.root.children[0].children if str(n.label).startswith("(org-wide)")))
        await pilot.press("enter")
        screen.query_one("#filter-kind").value = "pol"
        await until(pilot, lambda: {r.kind for r in screen.rows} == {"policy"})
        await pilot.pause()
    assert snap_compare(app_for(bench, principal="priya.raman"), terminal_size=size, run_before=choose)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_search(bench, snap_compare, size):
    async def search(pilot):
        await browse_loaded(pilot)
        await pilot.press("slash")
        screen = pilot.app.screen
        query = "customer charged twice when the client retries"
        screen.query_one("#search-input").value = query
        await until(pilot, lambda: screen.result is not None and screen.result.query == query
                    and pilot.app.pending == 0, timeout=120)
        screen.result.stages_ms = {k: 1.0 for k in screen.result.stages_ms}   # timings vary run to run
        await pilot.press("down", "down")
        await pilot.pause()
    assert snap_compare(app_for(bench), terminal_size=size, run_before=search)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
def test_pin_dialog(bench, snap_compare, size):
    async def pin(pilot):
        await browse_loaded(pilot)
        screen = pilot.app.screen
        table = screen.query_one("#fragments")
        table.move_cursor(row=screen._ids.index("nw-note-slo-catalog"))
        await pilot.press("ctrl+k")
        await until(pilot, lambda: type(pilot.app.screen).__name__ == "PinDialog")
        await pilot.pause()
    assert snap_compare(app_for(bench, principal="dan.kowalski"), terminal_size=size, run_before=pin)
