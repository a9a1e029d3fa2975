"""The TUI, driven with Textual's Pilot: each workflow, then the store is checked."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from workbench import Workbench
from workbench.tui.app import WorkbenchApp
from tui_support import AppUnderTest, confirm

NOW = datetime(2026, 11, 30, 12, 0)
SIZE = (170, 48)


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def app_for(wb, principal="marco.bianchi", **kw):
    return AppUnderTest(wb, principal=principal, now=NOW, load_model=False, **kw)


async def until(pilot, condition, timeout=60.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the UI")
        await pilot.pause(0.05)


async def saved(pilot, app):
    """After ctrl+s in the editor: answer "Save anyway" when the edit-impact dialog asks (the edit
    changes golden queries), then wait for the fragment screen."""
    await until(pilot, lambda: screen_name(app) in ("FragmentScreen", "SaveAnywayScreen"))
    if screen_name(app) == "SaveAnywayScreen":
        await pilot.press("ctrl+s")
    await until(pilot, lambda: screen_name(app) == "FragmentScreen")


def screen_name(app):
    return type(app.screen).__name__


async def test_browse_tree_filters_and_open(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.pending == 0 and app.screen.items is not None)
        await pilot.pause()  # after the first paint Browse warms the search index in a job: let it finish
        await until(pilot, lambda: app.pending == 0)
        screen = app.screen
        visible = len(wb.list(principal="marco.bianchi"))
        assert screen.query_one("#fragments").row_count == visible
        labels = [str(n.label) for n in screen.query_one("#scope-tree").root.children]
        assert labels == [f"northwind ({visible})"]
        screen.query_one("#filter-kind").value = "anti-pattern"
        # the filter applies as you type (debounced, then a job): 0.4 s was not always enough at load 14
        await until(pilot, lambda: app.pending == 0 and {wb.get(i, principal="marco.bianchi").kind
                                                          for i in screen._ids} == {"anti-pattern"}, timeout=30)
        kinds = {wb.get(i, principal="marco.bianchi").kind for i in screen._ids}
        assert kinds == {"anti-pattern"} and screen.query_one("#fragments").row_count == len(screen._ids)
        await pilot.press("s")  # stale only
        await pilot.pause()
        assert all(r.stale for r in wb.browse(principal="marco.bianchi", now=NOW) if r.id in screen._ids)
        await pilot.press("enter")
        await pilot.pause()
        assert screen_name(app) == "FragmentScreen" and app.screen.fragment_id == screen._ids[0]


async def test_search_as_you_type_shows_scores_and_scope(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"charged twice on retry")
        await until(pilot, lambda: app.screen.result is not None and app.screen.result.query == "charged twice on retry"
                    and app.pending == 0)
        screen = app.screen
        visible = {f.id for f in wb.list(principal="marco.bianchi")}
        assert {h.id for h in screen.hits} <= visible
        assert "nw-rb-duplicate-charge" in [h.id for h in screen.result.hits[:5]]
        assert "stages:" in str(screen.query_one("#explain").render())
        await pilot.press("down", "enter")
        await pilot.pause()
        assert screen_name(app) == "FragmentScreen"


async def test_edit_requires_a_reason_and_saves_a_version(wb):
    fid = "nw-rb-psp-failover"
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment(fid)
        await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None and app.pending == 0)
        await pilot.press("ctrl+e")
        await until(pilot, lambda: screen_name(app) == "EditScreen" and app.screen.ready)
        app.screen.query_one("#editor").load_text("## Failover\nFlip `psp.primary` to the backup acquirer.")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "reason is required" in str(app.screen.query_one("#errors").render())
        assert len(wb.history(fid, principal="marco.bianchi")) == 1
        app.screen.query_one("#reason").value = "shorter failover steps"
        await pilot.press("ctrl+s")
        await saved(pilot, app)
    history = wb.history(fid, principal="marco.bianchi")
    assert [(v.number, v.author, v.reason) for v in history][-1] == (2, "marco.bianchi", "shorter failover steps")
    assert wb.get(fid, principal="marco.bianchi").body.startswith("## Failover")


async def test_edit_errors_show_inline(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment("nw-rb-psp-failover")
        await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None and app.pending == 0)
        await pilot.press("ctrl+e")
        await until(pilot, lambda: screen_name(app) == "EditScreen" and app.screen.ready)
        app.screen.query_one("#editor").load_text("export AWS_ACCESS_KEY_ID=AKIA" + "ABCDEFGHIJKLMNOP")
        app.screen.query_one("#reason").value = "oops"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.pending == 0)
        assert "contains a credential" in str(app.screen.query_one("#errors").render())
        assert screen_name(app) == "EditScreen"
    assert len(wb.history("nw-rb-psp-failover", principal="marco.bianchi")) == 1


async def test_history_diff_and_revert(wb):
    fid = "nw-rb-psp-failover"
    wb.edit(fid, "Version two body.", reason="v2", actor="marco.bianchi")
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment(fid)
        await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None and app.pending == 0)
        screen = app.screen
        assert screen.query_one("#history").row_count == 2
        await pilot.press("up", "a", "down", "d")  # the diff opens in its own (coloured, scrollable) view
        await until(pilot, lambda: screen_name(app) == "DiffScreen" and app.pending == 0)
        diff = app.screen.query_one("#diff").content.plain
        assert "+Version two body." in diff
        await pilot.press("escape", "up", "ctrl+r")  # revert asks first, with a reason
        await until(pilot, lambda: screen_name(app) == "RevertScreen")
        await pilot.press(*"v2 was wrong", "enter")
        await until(pilot, lambda: screen_name(app) == "FragmentScreen" and app.pending == 0)
    history = wb.history(fid, principal="marco.bianchi")
    assert [v.reason for v in history] == ["ingest nw-rb-psp-failover.md", "v2", "revert to v1: v2 was wrong"]
    assert history[2].content_hash == history[0].content_hash


async def test_pins_for_a_lead_and_a_refusal_for_a_non_lead(wb):
    app = app_for(wb, principal="marco.bianchi")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#pin-id").value = "nw-rb-psp-failover"
        screen.query_one("#pin-reason").value = "PSP outages are our worst incidents"
        screen.query_one("#pin-reason").focus()
        await pilot.press("enter")
        await until(pilot, lambda: screen.query_one("#pins").row_count == 1)
    pins = wb.pins(principal="marco.bianchi")
    assert [(p.fragment_id, str(p.scope), p.pinned_by) for p in pins] == [
        ("nw-rb-psp-failover", "org=northwind,repo=payments-api", "marco.bianchi")]
    app = app_for(wb, principal="agent.nw-coder")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert "is not a tech lead of any scope" in str(screen.query_one("#pins-who").render())
        screen.query_one("#pin-id").value = "nw-adr-0007-idempotency-keys"
        screen.query_one("#pin-reason").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert "only tech leads may pin" in str(screen.query_one("#errors").render())
    assert len(wb.pins(principal="marco.bianchi")) == 1


async def test_antipattern_form(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#ap-title").value = "Logging webhook payloads"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "Required: dont, why, instead" in str(screen.query_one("#errors").render())
        for name, value in (("dont", "Do not log raw webhook payloads"), ("why", "they carry PANs (INC-2502)"),
                            ("instead", "log the event id and type only"), ("evidence", "INC-2502"),
                            ("scope", "org=northwind,repo=payments-api")):
            screen.query_one(f"#ap-{name}").value = value
        await pilot.press("ctrl+s")
        await until(pilot, lambda: screen_name(app) == "FragmentScreen")
        await until(pilot, lambda: app.pending == 0)
        said = [n.message for n in app._notifications]
    assert "created nw-ap-logging-webhook-payloads" in said, said  # what the app said it created
    created = wb.get("nw-ap-logging-webhook-payloads", principal="marco.bianchi")
    assert created.kind == "anti-pattern" and created.content.detail("evidence") == ("INC-2502",)


async def test_inbox_verify_and_snooze(wb):
    app = app_for(wb, principal="dan.kowalski")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i")
        await until(pilot, lambda: screen_name(app) == "InboxScreen" and app.screen.items)
        screen = app.screen
        first = screen.items[0].fragment.id
        assert all(i.fragment.owner == "dan.kowalski" for i in screen.items)
        await pilot.press("ctrl+y")   # asks first
        await confirm(pilot)
        await until(pilot, lambda: first not in [i.fragment.id for i in screen.items])
        second = screen.items[0].fragment.id
        screen.query_one("#snooze-days").value = "0"
        await pilot.press("ctrl+z")   # the dialog offers the days typed, and refuses 0
        await until(pilot, lambda: screen_name(app) == "SnoozeDialog")
        assert app.screen.query_one("#snooze-dialog-days").value == "0"
        await pilot.press("enter")
        await pilot.pause()
        assert "whole number from 1" in str(app.screen.query_one("#snooze-dialog-errors").render())
        app.screen.query_one("#snooze-dialog-days").value = "30"
        await pilot.press("enter")
        await until(pilot, lambda: second not in [i.fragment.id for i in screen.items])
        assert second not in [i.fragment.id for i in screen.items]
    assert wb.get(first, principal="dan.kowalski").verified_at is not None
    assert second in wb.store.snoozes()


async def test_export_preview_and_write_in_a_worker(wb, tmp_path):
    out = tmp_path / "export"
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#export-scope").value = "org=northwind,repo=ledger"
        screen.query_one("#export-format").value = "agents-md"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "AGENTS.md" in str(screen.query_one("#export-summary").render()))
        assert "## Do not" in screen.query_one("#preview-text").text
        screen.query_one("#export-format").value = "fragment-files"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "files planned" in str(screen.query_one("#export-summary").render()))
        screen.query_one("#export-dir").value = str(out)
        screen.query_one("#export-dir").focus()
        await pilot.press("enter")
        await until(pilot, lambda: not app.job_active and out.exists())
        await pilot.pause()
    files = sorted(p.name for p in out.rglob("*.md"))
    expected = {f.id + ".md" for f in wb.list(principal="marco.bianchi", scope="org=northwind,repo=ledger",
                                               include_archived=True)}
    assert set(files) == expected


async def test_command_palette_and_help(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Nudge inbox")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await until(pilot, lambda: screen_name(app) == "InboxScreen")
        await pilot.press("escape", "question_mark")
        await pilot.pause()
        assert screen_name(app) == "HelpScreen"
    for binding in WorkbenchApp.BINDINGS:
        assert binding.id, binding


async def test_rebuild_index_runs_in_a_worker_with_progress(wb):
    import threading

    app = app_for(wb)
    release = threading.Event()
    warm = wb.warm

    def held_warm(**kwargs):  # the worker waits until the test has seen it running: no race with a fast index
        release.wait(30)
        return warm(**kwargs)

    wb.warm = held_warm
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.action_rebuild_index()
        await until(pilot, lambda: app.job_active)
        assert app.screen.query_one("#job").display  # the progress bar shows while the worker runs
        release.set()
        await until(pilot, lambda: any("index ready" in n.message for n in app._notifications))
        assert not app.job_active and not app.screen.query_one("#job").display


async def test_errors_are_notifications_not_tracebacks(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment("tw-rb-oncall-paging-escalation")  # outside marco's scope
        # the fragment screen loads off the UI thread: wait for its answer, however busy the machine
        await until(pilot, lambda: any("unknown fragment" in n.message for n in app._notifications))
        await pilot.pause()
        assert screen_name(app) == "BrowseScreen"


async def test_the_cli_can_write_while_the_tui_is_open(wb, sample_workspace, tmp_path):
    from conftest import run_cli_process

    body = tmp_path / "body.md"
    body.write_text("Edited from the CLI while the TUI was open.\n")
    app = app_for(wb)
    app.idle_release_s = 0.2
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.0)  # idle: the app lets go of the workspace
        r = await asyncio.to_thread(run_cli_process, "edit", "nw-rb-psp-failover", "--file", str(body),
                                    "--reason", "cli", "--as", "marco.bianchi", workspace=sample_workspace,
                                    env={"WORKBENCH_LOCK_TIMEOUT": "10"})
        assert r.returncode == 0, r.stderr
        app.open_fragment("nw-rb-psp-failover")
        # the fragment screen loads off the UI thread: wait for it, however busy the machine
        await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None and app.pending == 0)
        assert app.screen.fragment.version == 2 and "from the CLI" in app.screen.fragment.body


# -- lost updates: the editor saves from the version it opened, and asks before discarding ---------

CLI_BODY = "Edited from the CLI while the TUI editor was open.\n"


async def _conflict_in_the_editor(app, pilot, sample_workspace, tmp_path, fid):
    """Open the editor (v1), let priya.raman save v2 with the CLI from another process, then type
    and save in the TUI: the conflict dialog must come up and nothing of the TUI's must be stored."""
    from conftest import run_cli_process

    from workbench.tui.screens.conflict import ConflictScreen

    app.open_fragment(fid)
    await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None and app.pending == 0)
    await pilot.press("ctrl+e")
    await until(pilot, lambda: screen_name(app) == "EditScreen" and app.screen.ready)
    editor_screen = app.screen
    assert screen_name(app) == "EditScreen" and editor_screen.base == 1
    original = editor_screen.query_one("#editor").text
    await pilot.pause(1.0)  # idle: the app lets go of the workspace
    body = tmp_path / "cli-body.md"
    body.write_text(CLI_BODY)
    r = await asyncio.to_thread(run_cli_process, "edit", fid, "--file", str(body), "--reason", "cli fix",
                                "--as", "priya.raman", workspace=sample_workspace, env={"WORKBENCH_LOCK_TIMEOUT": "10"})
    assert r.returncode == 0, r.stderr
    await pilot.press(*"TUI note. ")  # typed at the start of the body
    mine = editor_screen.query_one("#editor").text
    assert mine == "TUI note. " + original
    editor_screen.query_one("#reason").value = "tui note"
    await pilot.press("ctrl+s")
    await until(pilot, lambda: isinstance(app.screen, ConflictScreen), timeout=20)
    dialog = app.screen
    assert (dialog.base, dialog.latest) == (1, 2)
    assert "changed since v1" in dialog.message and "priya.raman" in dialog.message
    diff = str(dialog.query_one("#conflict-diff").render())
    assert "+Edited from the CLI while the TUI editor was open." in diff and "@v1" in diff
    assert editor_screen.query_one("#editor").text == mine  # the user's text is still there
    footer_keys = {b.id for b in ConflictScreen.BINDINGS}
    assert {"conflict-reload", "conflict-confirm", "conflict-cancel"} <= footer_keys
    shown = {binding.description for _, binding, enabled, _ in app.active_bindings.values() if binding.show}
    assert {"Reload latest", "Keep mine, save over v2", "Cancel"} <= shown
    # the store holds the CLI's version; the TUI saved nothing
    history = wb_history(app, fid)
    assert [(v.number, v.author) for v in history] == [(1, history[0].author), (2, "priya.raman")]
    assert app.wb.get(fid, principal="marco.bianchi").body == CLI_BODY.strip()
    return editor_screen, mine


def wb_history(app, fid):
    return app.call(app.wb.history, fid, principal="marco.bianchi")


def spy_on_edits(app):
    """Record the ``base`` of every edit the TUI checks (its impact, computed before a save: where a
    conflict shows) and of every edit it saves (the real calls still run)."""
    checked, saved, real_check, real_edit = [], [], app.wb.edit_impact, app.wb.edit

    def edit_impact(*args, **kwargs):
        checked.append(kwargs.get("base"))
        return real_check(*args, **kwargs)

    def edit(*args, **kwargs):
        saved.append(kwargs.get("base"))
        return real_edit(*args, **kwargs)
    app.wb.edit_impact, app.wb.edit = edit_impact, edit
    return checked, saved


async def test_a_cli_edit_while_the_editor_is_open_is_not_overwritten_reload(wb, sample_workspace, tmp_path):
    fid = "nw-rb-psp-failover"
    app = app_for(wb)
    app.idle_release_s = 0.2
    bases, saves = spy_on_edits(app)
    async with app.run_test(size=SIZE) as pilot:
        editor_screen, mine = await _conflict_in_the_editor(app, pilot, sample_workspace, tmp_path, fid)
        assert bases == [1] and saves == []
        await pilot.press("escape")  # cancel: back to editing, nothing lost, nothing saved
        await pilot.pause()
        assert app.screen is editor_screen and editor_screen.query_one("#editor").text == mine
        assert "still editing from v1" in str(editor_screen.query_one("#errors").render())
        await pilot.press("ctrl+s")  # still from v1: the conflict again, not an overwrite
        await until(pilot, lambda: screen_name(app) == "ConflictScreen")
        assert bases == [1, 1] and len(wb_history(app, fid)) == 2
        await pilot.press("ctrl+r")  # reload latest: the editor holds v2, the user's text is kept beside it
        await pilot.pause()
        assert app.screen is editor_screen and editor_screen.base == 2
        assert editor_screen.query_one("#editor").text == CLI_BODY.strip()
        assert editor_screen.query_one("#mine").text == mine and editor_screen.query_one("#mine-pane").display
        editor_screen.query_one("#editor").load_text("TUI note. " + CLI_BODY.strip())  # the change, reapplied
        await pilot.press("ctrl+s")
        await saved(pilot, app)
        assert bases == [1, 1, 2] and saves == [2]
    history = wb.history(fid, principal="marco.bianchi")
    assert [(v.number, v.author, v.reason) for v in history][1:] == [(2, "priya.raman", "cli fix"),
                                                                     (3, "marco.bianchi", "tui note")]
    assert wb.get(fid, principal="marco.bianchi").body == "TUI note. " + CLI_BODY.strip()


async def test_a_cli_edit_while_the_editor_is_open_keep_mine_saves_over_latest(wb, sample_workspace, tmp_path):
    fid = "nw-rb-psp-failover"
    app = app_for(wb)
    app.idle_release_s = 0.2
    bases, saves = spy_on_edits(app)
    async with app.run_test(size=SIZE) as pilot:
        _, mine = await _conflict_in_the_editor(app, pilot, sample_workspace, tmp_path, fid)
        await pilot.press("ctrl+s")  # explicit: keep my text and save it over v2
        await saved(pilot, app)
        assert bases == [1, 2] and saves == [2]
    history = wb.history(fid, principal="marco.bianchi")
    assert [(v.number, v.author) for v in history][1:] == [(2, "priya.raman"), (3, "marco.bianchi")]
    assert wb.get(fid, principal="marco.bianchi").body == mine.strip()


async def test_the_editor_opens_on_the_latest_when_the_fragment_moved_on(wb):
    fid = "nw-rb-psp-failover"
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment(fid)
        await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None and app.pending == 0)
        assert app.screen.fragment.version == 1
        app.call(wb.edit, fid, "Changed behind the fragment screen.", reason="elsewhere", actor="priya.raman")
        await pilot.press("ctrl+e")
        await until(pilot, lambda: screen_name(app) == "EditScreen" and app.screen.ready)
        assert app.screen.base == 2 and app.screen.query_one("#editor").text == "Changed behind the fragment screen."
        assert any("changed since you viewed v1" in n.message for n in app._notifications)


async def test_revert_from_a_stale_history_is_refused(wb):
    fid = "nw-rb-psp-failover"
    wb.edit(fid, "Version two body.", reason="v2", actor="marco.bianchi")
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment(fid)
        await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None and app.pending == 0)
        screen = app.screen
        assert screen.fragment.version == 2
        app.call(wb.edit, fid, "Version three, saved elsewhere.", reason="v3", actor="priya.raman")
        await pilot.press("up", "ctrl+r")  # revert to v1, from the v2 the screen shows
        await until(pilot, lambda: screen_name(app) == "RevertScreen")
        await pilot.press(*"back to one", "enter")
        await until(pilot, lambda: app.pending == 0 and screen.fragment.version == 3)
        assert any("changed since v2" in n.message and "priya.raman" in n.message for n in app._notifications)
        assert screen.fragment.version == 3 and screen.query_one("#history").row_count == 3  # reloaded
    assert [v.reason for v in wb.history(fid, principal="marco.bianchi")][1:] == ["v2", "v3"]


async def test_escape_with_unsaved_changes_asks_before_discarding(wb):
    fid = "nw-rb-psp-failover"
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment(fid)
        await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None and app.pending == 0)
        await pilot.press("ctrl+e")
        await until(pilot, lambda: screen_name(app) == "EditScreen" and app.screen.ready)
        await pilot.press("escape")  # nothing changed: leaves at once
        await pilot.pause()
        assert screen_name(app) == "FragmentScreen"
        await pilot.press("ctrl+e")
        await until(pilot, lambda: screen_name(app) == "EditScreen" and app.screen.ready)
        editor_screen = app.screen
        await pilot.press(*"draft ")
        typed = editor_screen.query_one("#editor").text
        await pilot.press("escape")
        await pilot.pause()
        assert screen_name(app) == "DiscardScreen"
        assert "Discard changes?" in str(app.screen.query_one(".pane-title").render())
        shown = {binding.description for _, binding, enabled, _ in app.active_bindings.values() if binding.show}
        assert {"Discard", "Keep editing"} <= shown
        await pilot.press("escape")  # keep editing: the text is intact
        await pilot.pause()
        assert app.screen is editor_screen and editor_screen.query_one("#editor").text == typed
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("escape")  # escape in the question is "keep editing" too
        await pilot.pause()
        assert app.screen is editor_screen
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+d")  # discard (ctrl+s would keep editing)
        await pilot.pause()
        assert screen_name(app) == "FragmentScreen"
    assert len(wb.history(fid, principal="marco.bianchi")) == 1
