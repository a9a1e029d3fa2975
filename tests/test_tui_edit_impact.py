"""The editor's edit-impact check, driven with Pilot on the real sample workspace: saving an edit
that breaks a golden answer first shows a dialog naming the query and the fragment's rank before →
after; Cancel saves nothing and keeps the text, Save anyway saves; an edit that changes no golden
query saves at once. The impact is computed off the UI thread."""

from __future__ import annotations

import threading

import pytest
from tui_support import SIZES, app_for, inside_screen, settle

from workbench import Workbench
from workbench.tui.screens.confirm import SaveAnywayScreen

FAILOVER = "nw-rb-psp-failover"   # the answer to dan.kowalski's golden query nw-q003, at rank 3
DAN = "dan.kowalski"
BROKEN = "Nothing useful here."


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def spy(wb, method: str) -> list[tuple]:
    """Record each call of ``wb.<method>`` and the thread it ran on (the real method still runs)."""
    calls, real = [], getattr(wb, method)

    def wrapper(*args, **kwargs):
        calls.append((args, kwargs, threading.current_thread() is threading.main_thread()))
        return real(*args, **kwargs)
    setattr(wb, method, wrapper)
    return calls


async def edit_and_save(app, pilot, fid: str, text: str, reason: str):
    app.open_fragment(fid)
    await settle(pilot)
    await pilot.press("ctrl+e")
    await settle(pilot)
    editor = app.screen
    assert type(editor).__name__ == "EditScreen" and editor.ready
    editor.query_one("#editor").load_text(text)
    editor.query_one("#reason").value = reason
    await pilot.press("ctrl+s")
    await settle(pilot)
    return editor


def dialog_text(dialog) -> str:
    return "\n".join(str(label.render()) for label in dialog.query("Label"))


@pytest.mark.parametrize("size", SIZES)
async def test_an_edit_breaking_a_golden_answer_asks_first_and_cancel_saves_nothing(wb, size):
    impacts, edits = spy(wb, "edit_impact"), spy(wb, "edit")
    app = app_for(wb, principal=DAN)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        editor = await edit_and_save(app, pilot, FAILOVER, BROKEN, "shorten the runbook")
        assert isinstance(app.screen, SaveAnywayScreen)
        dialog = app.screen
        shown = dialog_text(dialog)
        assert "main acquirer is down" in shown and "nw-q003" in shown          # the query, named
        assert "#3 → out of top 10" in shown and "loses its answer" in shown     # and the rank before → after
        for selector in ("#impact-save-button", "#impact-cancel-button"):
            assert inside_screen(app, dialog.query_one(selector)), selector
        assert dialog.focused.id == "impact-save-button"          # enter confirms, as in every dialog
        await pilot.press("escape")                                                # cancel
        await settle(pilot)
        assert app.screen is editor and editor.query_one("#editor").text == BROKEN   # the text is kept
        assert "Not saved" in str(editor.query_one("#errors").render())
    assert edits == [] and [v.number for v in wb.history(FAILOVER, principal=DAN)] == [1]
    assert wb.get(FAILOVER, principal=DAN).body != BROKEN
    assert impacts and not any(on_ui for _, _, on_ui in impacts)                   # computed in a job
    assert impacts[0][1]["base"] == 1 and getattr(impacts[0][1]["actor"], "name", None) == DAN


async def test_save_anyway_saves_the_edit(wb):
    app = app_for(wb, principal=DAN)
    async with app.run_test(size=SIZES[0]) as pilot:
        await settle(pilot)
        await edit_and_save(app, pilot, FAILOVER, BROKEN, "shorten the runbook")
        assert isinstance(app.screen, SaveAnywayScreen)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert type(app.screen).__name__ == "FragmentScreen" and app.screen.fragment.version == 2
    assert wb.get(FAILOVER, principal=DAN).body == BROKEN


async def test_an_edit_that_changes_no_golden_query_saves_without_asking(wb):
    fid, marco = "nw-adr-0007-idempotency-keys", "marco.bianchi"
    body = wb.get(fid, principal=marco).body + "\n\nReviewed."
    impacts = spy(wb, "edit_impact")
    app = app_for(wb, principal=marco)
    async with app.run_test(size=SIZES[0]) as pilot:
        await settle(pilot)
        await edit_and_save(app, pilot, fid, body, "reviewed")
        assert type(app.screen).__name__ == "FragmentScreen" and app.screen.fragment.version == 2
    assert len(impacts) == 1 and wb.get(fid, principal=marco).version == 2
