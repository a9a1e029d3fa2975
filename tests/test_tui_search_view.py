"""How the Search screen shows its results, on the real sample workspace: the explain pane stays as
the user left it (across searches, screen switches and restarts, per principal), and the anti-patterns
to avoid for the query are seen first, above the hits."""

from __future__ import annotations

import json

import pytest
from tui_support import app_for, cell, settle, until

from workbench import Workbench
from workbench.tui.prefs import FILE_NAME


@pytest.fixture(scope="module")
def module_bench(sample_workspace_template, tmp_path_factory):
    """One copy of the sample for the module (its searches store traces), opened once: the model loads once."""
    import shutil

    target = tmp_path_factory.mktemp("search-view") / "ws"
    shutil.copytree(sample_workspace_template, target)
    with Workbench.open(target) as wb:
        yield wb


@pytest.fixture
def bench(module_bench):
    (module_bench.root / FILE_NAME).unlink(missing_ok=True)  # each test starts from the defaults
    return module_bench


@pytest.fixture
def sample_workspace(bench):
    return bench.root


async def open_search(pilot, query: str = ""):
    await settle(pilot)
    pilot.app.action_search()  # whatever key opens it: what it shows is the point here
    await until(pilot, lambda: type(pilot.app.screen).__name__ == "SearchScreen" and pilot.app.screen.is_mounted)
    await settle(pilot)
    screen = pilot.app.screen
    if query:
        screen.run_search(query)
        await settle(pilot)
        await until(pilot, lambda: screen.result is not None)
    await settle(pilot)
    return screen


def explain_shown(screen) -> bool:
    return bool(screen.query_one("#explain").display)


async def test_hiding_the_explain_pane_sticks_across_searches_screens_and_restarts(bench, sample_workspace):
    app = app_for(bench)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_search(pilot, "payment retries")
        assert explain_shown(screen)
        await pilot.press("f2")
        assert not explain_shown(screen)
        screen.run_search("idempotency keys")  # another search
        await settle(pilot)
        assert not explain_shown(screen)
        await pilot.press("escape")            # another screen, then Search again
        await settle(pilot)
        assert not explain_shown(await open_search(pilot, "failover"))
    saved = json.loads((sample_workspace / FILE_NAME).read_text())
    assert saved["principals"]["marco.bianchi"] == {"search.explain": False}

    async with app_for(bench).run_test(size=(80, 24)) as pilot:   # a restart
        screen = await open_search(pilot, "failover")
        assert not explain_shown(screen)
        await pilot.press("f2")
        assert explain_shown(screen)
    async with app_for(bench, principal="priya.raman").run_test(size=(80, 24)) as pilot:  # her own choice
        assert explain_shown(await open_search(pilot))
    async with app_for(bench).run_test(size=(80, 24)) as pilot:   # shown again, as he left it
        assert explain_shown(await open_search(pilot))


async def test_an_unreadable_preferences_file_means_the_defaults(bench, sample_workspace):
    (sample_workspace / FILE_NAME).write_text('{"principals": {"marco.bianchi": ["not", "a", "mapping"]}}')
    async with app_for(bench).run_test(size=(80, 24)) as pilot:
        screen = await open_search(pilot)
        assert explain_shown(screen)
        await pilot.press("f2")
        assert not explain_shown(screen)
    assert json.loads((sample_workspace / FILE_NAME).read_text())["principals"]["marco.bianchi"] == {
        "search.explain": False}
    assert (sample_workspace / FILE_NAME).stat().st_mode & 0o077 == 0  # the user's alone, like the workspace


async def test_the_anti_patterns_to_avoid_are_seen_first_above_the_hits(bench):
    app = app_for(bench)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_search(pilot, "retry a payment after a timeout")
        result, table = screen.result, screen.query_one("#results")
        assert result.avoid and len(result.hits) >= 10   # a full page of hits, and some to avoid
        n = len(result.avoid)
        assert [h.id for h in screen.hits] == [h.id for h in result.avoid] + [h.id for h in result.hits]
        for row in range(n):  # at the top, on screen without scrolling, marked as what to avoid
            assert cell(table, row, "rank") == "!" and cell(table, row, "kind") == "avoid"
            assert cell(table, row, "title").startswith("avoid: ")
        assert cell(table, n, "rank") == "1" and table.scroll_y == 0
        assert n < table.region.height - 1   # the header and the avoid rows fit in the table's height
        table.focus()
        table.move_cursor(row=0)
        await settle(pilot)
        assert result.avoid[0].id in str(screen.query_one("#explain").render())
        assert screen.row_fragment().id == result.avoid[0].id  # the row actions act on the row shown
