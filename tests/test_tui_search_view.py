"""How the Search screen shows its results, on the real sample workspace: the explain pane stays as
the user left it (across searches, screen switches and restarts, per principal), and the anti-patterns
to avoid for the query are seen first, above the hits."""

from __future__ import annotations

import json

import pytest
from tui_support import app_for, settle, until

from workbench import Workbench
from workbench.tui.prefs import FILE_NAME


@pytest.fixture
def bench(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        yield wb


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
