"""The Fragment screen, the editor and their dialogs, driven with Pilot at 80×24 and 120×40 on the
real sample workspace: the body keeps most of the width, the details pane folds away, the diff is
coloured, scrolls and compares any two versions, a revert asks first (with a reason), an unsaved
edit is never dropped silently, a conflicting edit asks, and every store call runs off the UI thread."""

from __future__ import annotations

import threading

import pytest
from rich.text import Text
from tui_support import NOW, SIZES, app_for, confirm, inside_screen, save_anyway, settle, until

from workbench import Workbench
from workbench.tui.screens.conflict import ConflictScreen

FID = "nw-rb-psp-failover"
ME = "marco.bianchi"
MINE = "nw-adr-0007-idempotency-keys"  # owned by marco.bianchi


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def name(app) -> str:
    return type(app.screen).__name__


def ui_thread_calls(app) -> list[str]:
    """Record every store call the app makes that runs on the UI thread (there must be none)."""
    seen, real = [], app.call

    def call(fn, *args, **kwargs):
        if threading.current_thread() is threading.main_thread():
            seen.append(getattr(fn, "__name__", repr(fn)))
        return real(fn, *args, **kwargs)
    app.call = call
    return seen


def spy(wb, method: str) -> list[dict]:
    """Record the keyword arguments of every call to ``wb.<method>`` (the real method still runs)."""
    calls, real = [], getattr(wb, method)

    def wrapper(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)
    setattr(wb, method, wrapper)
    return calls


def write_behind(app, wb, fid, body, reason, actor="priya.raman"):
    """A write made outside the screen under test (as another Workbench user would), behind the lock."""
    with app.lock:
        return wb.edit(fid, body, reason=reason, actor=actor)


async def open_fragment(app, pilot, fid=FID):
    app.open_fragment(fid)
    await settle(pilot)
    assert name(app) == "FragmentScreen" and app.screen.fragment is not None
    return app.screen


def colours(text: Text) -> set[str]:
    return {str(span.style) for span in text.spans}


# -- layout ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES)
async def test_body_gets_the_width_and_the_details_pane_folds(wb, size):
    app = app_for(wb)
    calls = ui_thread_calls(app)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        with app.lock:  # the load waits for the workspace: the screen says it is loading meanwhile
            app.open_fragment(FID)
            await pilot.pause(0.2)
            screen = app.screen
            assert "loading" in screen.query_one("#frag-markdown").source
            assert "loading" in str(screen.query_one("#meta").render())
        await settle(pilot)
        assert screen.fragment.id == FID and screen.fragment.title in screen.query_one("#frag-markdown").source
        body, meta, history = (screen.query_one(s) for s in ("#frag-body", "#frag-meta", "#history"))
        assert body.region.width >= 45 and body.region.width > meta.region.width
        assert 0.3 * size[0] <= meta.region.width <= 0.45 * size[0]
        assert all(inside_screen(app, w) for w in (body, meta, history, screen.query_one("#history-detail")))
        assert history.row_count == 1 and history.region.height >= 3
        assert "authority:" in str(screen.query_one("#meta").render())  # the graph arrived in its own job
        await pilot.press("m")
        await pilot.pause()
        assert not meta.display and body.region.width >= size[0] - 2 and screen.focused is body
        await pilot.press("m")
        await pilot.pause()
        assert meta.display and inside_screen(app, meta) and screen.focused is history
    assert calls == []


@pytest.mark.parametrize("size", SIZES)
async def test_a_fragment_the_principal_cannot_see_goes_back_with_the_cores_message(wb, size):
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.open_fragment("tw-rb-oncall-paging-escalation")  # tidewater: outside marco's scope
        await settle(pilot)
        assert name(app) == "BrowseScreen"
        assert any("unknown fragment" in n.message for n in app._notifications)


@pytest.mark.parametrize("size", SIZES)
async def test_an_anti_patterns_evidence_shows_as_a_list(wb, size):
    ap = wb.add_antipattern(title="Paging on cause metrics at night", dont="Don't page on CPU alone.",
                            why="It woke people for nothing.", instead="Page on customer-facing symptoms.",
                            scope="org=northwind,repo=payments-api", actor="priya.raman",
                            evidence=["INC-9001", "nw-rb-psp-failover"])
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await open_fragment(app, pilot, ap.id)
        source = screen.query_one("#frag-markdown").source
        assert "**Evidence:**" in source and "- INC-9001\n- nw-rb-psp-failover" in source
        first_list = screen.query_one("#frag-markdown").query("MarkdownBulletList").first()
        assert [str(p.render()) for p in first_list.query("MarkdownParagraph")] == ["INC-9001", "nw-rb-psp-failover"]
        assert "Don't page on CPU alone." in source and "Page on customer-facing symptoms." in source


# -- diff and version picker -----------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES)
async def test_the_diff_is_coloured_and_scrolls(wb, size):
    long_body = "\n".join(f"Step {i}: check the dashboard panel {i}." for i in range(80))
    wb.edit(FID, long_body, reason="long", actor=ME)
    app = app_for(wb)
    calls = ui_thread_calls(app)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await open_fragment(app, pilot)
        await pilot.press("d")  # from the version before the highlighted (latest) one
        await settle(pilot)
        dialog = app.screen
        assert name(app) == "DiffScreen" and (dialog.a, dialog.b) == (1, 2)
        shown = dialog.query_one("#diff").content
        assert isinstance(shown, Text) and {"green", "red", "cyan"} <= colours(shown)
        assert any(str(span.style) == "green" and shown.plain[span.start:span.end].startswith("+Step 0")
                   for span in shown.spans)
        scroll = dialog.query_one("#diff-scroll")
        assert inside_screen(app, scroll) and scroll.region.height >= 10 and scroll.max_scroll_y > 0
        assert app.screen.focused is scroll
        await pilot.press("pagedown")
        await pilot.pause()
        assert scroll.scroll_y > 0
        await pilot.press("escape")
        await pilot.pause()
        assert name(app) == "FragmentScreen"
    assert calls == []


@pytest.mark.parametrize("size", SIZES)
async def test_the_version_picker_compares_any_two_versions(wb, size):
    for n in (2, 3, 4):
        wb.edit(FID, f"Body of version {n}.", reason=f"v{n}", actor=ME)
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await open_fragment(app, pilot)
        await pilot.press("up", "up", "a", "down", "d")  # a marks v2, d diffs it to the highlighted v3
        await settle(pilot)
        dialog = app.screen
        assert (dialog.a, dialog.b) == (2, 3)
        assert dialog.query_one("#diff").content.plain == wb.diff(FID, 2, 3, principal=ME)
        pickers = [dialog.query_one(s) for s in ("#diff-from", "#diff-to")]
        assert all(inside_screen(app, p) for p in pickers)
        await pilot.press("f")  # the from picker lists every version (author, time, reason)
        await pilot.pause()
        assert dialog.query_one("#diff-from").expanded
        await pilot.press("up", "enter")  # v2 -> v1
        await settle(pilot)
        await pilot.press("t")
        await pilot.pause()
        await pilot.press("down", "enter")  # v3 -> v4
        await settle(pilot)
        assert (dialog.a, dialog.b) == (1, 4)
        assert dialog.query_one("#diff").content.plain == wb.diff(FID, 1, 4, principal=ME)
        await pilot.press("s")  # swap
        await settle(pilot)
        assert (dialog.a, dialog.b) == (4, 1)
        assert dialog.query_one("#diff").content.plain == wb.diff(FID, 4, 1, principal=ME)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen


# -- revert asks first ---------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES)
async def test_revert_asks_first_and_needs_a_reason(wb, size):
    wb.edit(FID, "Version two body.", reason="v2", actor=ME)
    reverts = spy(wb, "revert")
    app = app_for(wb)
    calls = ui_thread_calls(app)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await open_fragment(app, pilot)
        await pilot.press("up", "ctrl+r")  # revert to v1: a question, not a write
        await settle(pilot)
        assert name(app) == "RevertScreen"
        dialog = app.screen
        text = " ".join(str(w.render()) for w in dialog.query("Label, Static"))
        assert f"Revert {FID} to v1?" in text and "replaces v2" in text and "v3" in text
        diff = dialog.query_one("#revert-diff").content
        assert "-Version two body." in diff.plain and {"green", "red"} <= colours(diff)
        reason = dialog.query_one("#revert-reason")
        buttons = [dialog.query_one(s) for s in ("#revert-confirm-button", "#revert-cancel-button")]
        assert app.screen.focused is reason and all(inside_screen(app, w) for w in (reason, *buttons))
        assert inside_screen(app, dialog.query_one("#revert-diff-scroll"))
        await pilot.press(*"oops", "escape")  # cancel: asks first (a reason was typed), then nothing written
        await settle(pilot)
        assert name(app) == "DiscardScreen"
        await pilot.press("ctrl+d")
        await settle(pilot)
        assert app.screen is screen and reverts == []
        assert [v.reason for v in wb.history(FID, principal=ME)] == ["ingest nw-rb-psp-failover.md", "v2"]
        await pilot.press("ctrl+r")
        await settle(pilot)
        await pilot.press("enter")  # no reason: refused in the dialog
        await pilot.pause()
        assert name(app) == "RevertScreen" and "reason is required" in str(app.screen.query_one("#revert-error").render())
        await pilot.press(*"v2 broke the failover", "enter")
        await settle(pilot)
        assert app.screen is screen and screen.fragment.version == 3 and screen.query_one("#history").row_count == 3
    assert [r["base"] for r in reverts] == [2]
    history = wb.history(FID, principal=ME)
    assert "v2 broke the failover" in history[2].reason and "v1" in history[2].reason
    assert history[2].content_hash == history[0].content_hash and history[2].author == ME
    assert calls == []


@pytest.mark.parametrize("size", SIZES)
async def test_a_revert_from_a_stale_screen_is_refused_and_reloads(wb, size):
    wb.edit(FID, "Version two body.", reason="v2", actor=ME)
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await open_fragment(app, pilot)
        await pilot.press("up", "ctrl+r")
        await settle(pilot)
        write_behind(app, wb, FID, "Version three, saved elsewhere.", "v3")
        await pilot.press(*"back to one", "enter")
        await settle(pilot)
        assert any("changed since v2" in n.message and "priya.raman" in n.message for n in app._notifications)
        assert screen.fragment.version == 3 and screen.query_one("#history").row_count == 3  # reloaded
    assert [v.reason for v in wb.history(FID, principal=ME)][1:] == ["v2", "v3"]


async def test_a_revert_that_fails_keeps_its_dialog_and_its_reason(wb, monkeypatch):
    """The server unreachable, the store refusing: the dialog stays, with what was typed; the
    error is a notification. The next try, once the write goes through, reverts."""
    from workbench.errors import WorkbenchError

    wb.edit(FID, "Version two body.", reason="v2", actor=ME)
    real = wb.revert

    def unreachable(*args, **kwargs):
        raise WorkbenchError("cannot reach the workbench server at http://127.0.0.1:1")
    monkeypatch.setattr(wb, "revert", unreachable)
    app = app_for(wb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_fragment(app, pilot)
        await pilot.press("up", "ctrl+r")
        await until(pilot, lambda: name(app) == "RevertScreen")
        dialog = app.screen
        await pilot.press(*"v2 broke the failover", "ctrl+s")
        await settle(pilot)
        assert app.screen is dialog and dialog.query_one("#revert-reason").value == "v2 broke the failover"
        assert any("cannot reach" in n.message for n in app._notifications)
        monkeypatch.setattr(wb, "revert", real)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.screen is screen and app.pending == 0)
    assert [v.reason for v in wb.history(FID, principal=ME)][2] == "revert to v1: v2 broke the failover"


@pytest.mark.parametrize("size", SIZES)
async def test_verify_runs_as_a_write_job(wb, size):
    app = app_for(wb)
    calls = ui_thread_calls(app)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await open_fragment(app, pilot)  # dan.kowalski's: the core refuses, the screen says so
        await pilot.press("v")           # a plain letter never writes
        await settle(pilot)
        assert name(app) == "FragmentScreen" and app.data_version == 0
        await pilot.press("ctrl+y")
        await confirm(pilot)
        assert app.data_version == 0 and any("only the owner" in n.message for n in app._notifications)
        await pilot.press("escape")
        screen = await open_fragment(app, pilot, MINE)
        await pilot.press("ctrl+y")      # asks first: esc writes nothing
        await until(pilot, lambda: name(app) == "ConfirmScreen")
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and app.data_version == 0
        await pilot.press("ctrl+y")
        await confirm(pilot)
        assert app.data_version == 1
        assert screen.fragment.verified_at == NOW and "verified: 2026-11-30" in str(screen.query_one("#meta").render())
    assert wb.get(MINE, principal=ME).verified_at == NOW and wb.get(FID, principal=ME).verified_at is None
    assert calls == []


# -- the editor ------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES)
async def test_the_editor_keeps_reason_and_save_on_screen(wb, size):
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await open_fragment(app, pilot)
        await pilot.press("ctrl+e")
        await settle(pilot)
        editor = app.screen
        assert name(app) == "EditScreen" and type(editor).FORM
        area, reason, save = (editor.query_one(s) for s in ("#editor", "#reason", "#save"))
        label = editor.query_one("#reason-row Label")
        assert all(inside_screen(app, w) for w in (area, reason, save, label))
        assert str(label.render()) == "Reason" and label.region.right <= reason.region.x
        assert area.region.height >= 10 and editor.focused is area and area.text == wb.get(FID).body
        await pilot.press(*"bix")  # letters are text here: no app key fires
        await pilot.pause()
        assert app.screen is editor and area.text.startswith("bix")


@pytest.mark.parametrize("size", SIZES)
async def test_escape_with_unsaved_text_asks_keep_then_discard(wb, size):
    app = app_for(wb)
    edits = spy(wb, "edit")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await open_fragment(app, pilot)
        await pilot.press("ctrl+e")
        await settle(pilot)
        await pilot.press("escape")  # nothing typed: leaves at once
        await settle(pilot)
        assert app.screen is screen
        await pilot.press("ctrl+e")
        await settle(pilot)
        editor = app.screen
        await pilot.press(*"draft ")
        typed = editor.query_one("#editor").text
        await pilot.press("escape")
        await pilot.pause()
        assert name(app) == "DiscardScreen"
        assert all(inside_screen(app, app.screen.query_one(s)) for s in ("#discard-yes-button", "#discard-keep-button"))
        await pilot.press("escape")  # keep editing: the text is intact
        await pilot.pause()
        assert app.screen is editor and editor.query_one("#editor").text == typed and editor.unsaved_text()
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+d")  # discard (ctrl+s would keep editing)
        await settle(pilot)
        assert app.screen is screen
    assert edits == [] and wb.get(FID, principal=ME).version == 1


@pytest.mark.parametrize("size", SIZES)
async def test_saving_runs_as_a_job_from_the_version_the_editor_opened(wb, size):
    edits = spy(wb, "edit")
    app = app_for(wb)
    calls = ui_thread_calls(app)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        screen = await open_fragment(app, pilot)
        await pilot.press("ctrl+e")
        await settle(pilot)
        editor = app.screen
        editor.query_one("#editor").load_text("## Failover\nFlip the flag.")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "reason is required" in str(editor.query_one("#errors").render()) and edits == []
        await pilot.press(*"shorter steps", "ctrl+s")  # the reason field has focus now
        await settle(pilot)
        assert await save_anyway(pilot)  # the runbook of nw-q003 shrinks: its golden answer is lost
        assert app.screen is screen and screen.fragment.version == 2 and screen.query_one("#history").row_count == 2
    assert [e["base"] for e in edits] == [1]
    assert wb.history(FID, principal=ME)[-1].reason == "shorter steps"
    assert calls == []


async def _conflict(app, pilot, wb):
    """Open the editor on v1, let priya.raman save v2 meanwhile, type and save: the dialog comes up."""
    await settle(pilot)
    await open_fragment(app, pilot)
    await pilot.press("ctrl+e")
    await settle(pilot)
    editor = app.screen
    original = editor.query_one("#editor").text
    write_behind(app, wb, FID, "Saved by priya meanwhile.", "priya's fix")
    await pilot.press(*"TUI note. ")
    mine = editor.query_one("#editor").text
    assert mine == "TUI note. " + original
    editor.query_one("#reason").value = "tui note"
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert isinstance(app.screen, ConflictScreen)
    dialog = app.screen
    assert (dialog.base, dialog.latest) == (1, 2) and "priya.raman" in dialog.message
    diff = dialog.query_one("#conflict-diff").content
    assert "+Saved by priya meanwhile." in diff.plain and {"green", "red"} <= colours(diff)
    for selector in ("#conflict-reload-button", "#conflict-keep-button", "#conflict-cancel-button"):
        assert inside_screen(app, dialog.query_one(selector)), selector
    assert [v.number for v in wb.history(FID, principal=ME)] == [1, 2]  # the TUI saved nothing
    return editor, mine


@pytest.mark.parametrize("size", SIZES)
async def test_a_conflicting_edit_reload_keeps_the_users_text(wb, size):
    edits, checks = spy(wb, "edit"), spy(wb, "edit_impact")
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        editor, mine = await _conflict(app, pilot, wb)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.screen is editor and editor.base == 2
        assert editor.query_one("#editor").text == "Saved by priya meanwhile."
        assert editor.query_one("#mine").text == mine and editor.query_one("#mine-pane").display
        assert inside_screen(app, editor.query_one("#reason")) and inside_screen(app, editor.query_one("#save"))
        editor.query_one("#editor").load_text("TUI note. Saved by priya meanwhile.")
        await pilot.press("ctrl+s")
        await save_anyway(pilot)
        assert name(app) == "FragmentScreen"
    assert [c["base"] for c in checks] == [1, 2] and [e["base"] for e in edits if "base" in e] == [2]
    history = wb.history(FID, principal=ME)
    assert [(v.number, v.author, v.reason) for v in history][1:] == [(2, "priya.raman", "priya's fix"),
                                                                     (3, ME, "tui note")]
    assert wb.get(FID, principal=ME).body == "TUI note. Saved by priya meanwhile."


@pytest.mark.parametrize("size", SIZES)
async def test_a_conflicting_edit_keep_mine_saves_over_the_latest(wb, size):
    edits, checks = spy(wb, "edit"), spy(wb, "edit_impact")
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        _, mine = await _conflict(app, pilot, wb)
        await pilot.press("ctrl+s")
        await save_anyway(pilot)  # saving over the latest is checked against the latest
        assert name(app) == "FragmentScreen" and app.screen.fragment.version == 3
    assert [c["base"] for c in checks] == [1, 2] and [e["base"] for e in edits if "base" in e] == [2]
    assert [(v.number, v.author) for v in wb.history(FID, principal=ME)][1:] == [(2, "priya.raman"), (3, ME)]
    assert wb.get(FID, principal=ME).body == mine.strip()


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")  # a callback that raised
@pytest.mark.parametrize("size", SIZES)
async def test_leaving_before_the_load_arrives_is_safe(wb, size):
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        with app.lock:  # the workspace is busy: leave the fragment, then the editor, before they load
            app.open_fragment(FID)
            await pilot.pause(0.2)
            await pilot.press("escape")
            await pilot.pause(0.2)
        await settle(pilot)
        assert name(app) == "BrowseScreen" and app.is_running
        screen = await open_fragment(app, pilot)
        with app.lock:
            await pilot.press("ctrl+e")
            await pilot.pause(0.2)
            assert name(app) == "EditScreen" and app.screen.query_one("#editor").read_only
            await pilot.press(*"typed too early", "escape")
            await pilot.pause(0.2)
        await settle(pilot)
        assert app.screen is screen and app.is_running and app.return_code is None


async def test_after_a_save_the_history_shows_the_new_latest_and_diff_compares_it_with_the_one_before(wb):
    app = app_for(wb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = await open_fragment(app, pilot)
        assert screen._highlighted_version() == 1  # the only version: the latest
        screen.action_edit_row()  # whatever key edits: the save is what this test is about
        await settle(pilot)
        app.screen.query_one("#editor").load_text("## Failover\nFlip the flag, then page the on-call.")
        app.screen.query_one("#reason").value = "page the on-call"
        await pilot.press("ctrl+s")
        await save_anyway(pilot)
        await settle(pilot)
        assert app.screen is screen and screen.fragment.version == 2
        assert screen._highlighted_version() == 2  # not back on v1
        await pilot.press("d")
        await settle(pilot)
        diff = app.screen
        assert (diff.a, diff.b) == (1, 2) and "no difference" not in diff.text.plain
        assert "+Flip the flag, then page the on-call." in diff.text.plain
