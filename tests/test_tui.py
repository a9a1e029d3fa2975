"""The TUI, driven with Textual's Pilot: each workflow, then the store is checked."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from workbench import Workbench
from workbench.tui.app import WorkbenchApp

NOW = datetime(2026, 11, 30, 12, 0)
SIZE = (170, 48)


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def app_for(wb, principal="marco.bianchi", **kw):
    return WorkbenchApp(wb, principal=principal, now=NOW, load_model=False, **kw)


async def until(pilot, condition, timeout=60.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the UI")
        await pilot.pause(0.05)


def screen_name(app):
    return type(app.screen).__name__


async def test_browse_tree_filters_and_open(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        visible = len(wb.list(principal="marco.bianchi"))
        assert screen.query_one("#fragments").row_count == visible
        labels = [str(n.label) for n in screen.query_one("#scope-tree").root.children]
        assert labels == [f"northwind ({visible})"]
        screen.query_one("#filter-kind").value = "anti-pattern"
        await pilot.pause()
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
        await until(pilot, lambda: app.screen.query_one("#results").row_count > 0)
        screen = app.screen
        visible = {f.id for f in wb.list(principal="marco.bianchi")}
        assert {h.id for h in screen.hits} <= visible
        assert "nw-rb-duplicate-charge" in [h.id for h in screen.hits[:5]]
        assert "stages:" in str(screen.query_one("#explain").render())
        await pilot.press("down", "enter")
        await pilot.pause()
        assert screen_name(app) == "FragmentScreen"


async def test_edit_requires_a_reason_and_saves_a_version(wb):
    fid = "nw-rb-psp-failover"
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment(fid)
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert screen_name(app) == "EditScreen"
        app.screen.query_one("#editor").load_text("## Failover\nFlip `psp.primary` to the backup acquirer.")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "reason is required" in str(app.screen.query_one("#errors").render())
        assert len(wb.history(fid, principal="marco.bianchi")) == 1
        app.screen.query_one("#reason").value = "shorter failover steps"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert screen_name(app) == "FragmentScreen"
    history = wb.history(fid, principal="marco.bianchi")
    assert [(v.number, v.author, v.reason) for v in history][-1] == (2, "marco.bianchi", "shorter failover steps")
    assert wb.get(fid, principal="marco.bianchi").body.startswith("## Failover")


async def test_edit_errors_show_inline(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment("nw-rb-psp-failover")
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#editor").load_text("export AWS_ACCESS_KEY_ID=AKIA" + "ABCDEFGHIJKLMNOP")
        app.screen.query_one("#reason").value = "oops"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "contains a credential" in str(app.screen.query_one("#errors").render())
        assert screen_name(app) == "EditScreen"
    assert len(wb.history("nw-rb-psp-failover", principal="marco.bianchi")) == 1


async def test_history_diff_and_revert(wb):
    fid = "nw-rb-psp-failover"
    wb.edit(fid, "Version two body.", reason="v2", actor="marco.bianchi")
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment(fid)
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#history").row_count == 2
        await pilot.press("up", "a", "down", "d")
        await pilot.pause()
        diff = str(screen.query_one("#diff").render())
        assert "+Version two body." in diff
        await pilot.press("up", "R")
        await pilot.pause()
    history = wb.history(fid, principal="marco.bianchi")
    assert [v.reason for v in history] == ["ingest nw-rb-psp-failover.md", "v2", "revert to v1"]
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
        await pilot.pause()
        assert screen.query_one("#pins").row_count == 1
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
        await pilot.pause()
        assert screen_name(app) == "FragmentScreen"
    created = wb.get("northwind-ap-logging-webhook-payloads", principal="marco.bianchi")
    assert created.kind == "anti-pattern" and created.content.detail("evidence") == ("INC-2502",)


async def test_inbox_verify_and_snooze(wb):
    app = app_for(wb, principal="dan.kowalski")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i")
        await pilot.pause()
        screen = app.screen
        first = screen.items[0].fragment.id
        assert all(i.fragment.owner == "dan.kowalski" for i in screen.items)
        await pilot.press("v")
        await pilot.pause()
        assert first not in [i.fragment.id for i in screen.items]
        second = screen.items[0].fragment.id
        screen.query_one("#snooze-days").value = "0"
        await pilot.press("z")
        await pilot.pause()
        assert second in [i.fragment.id for i in screen.items]  # refused: shown as a notification
        screen.query_one("#snooze-days").value = "30"
        await pilot.press("z")
        await pilot.pause()
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
        await pilot.pause()
        assert "AGENTS.md" in str(screen.query_one("#export-summary").render())
        assert "## Do not" in screen.query_one("#preview").text
        screen.query_one("#export-format").value = "fragment-files"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert "files" in str(screen.query_one("#export-summary").render())
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
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.action_rebuild_index()
        await until(pilot, lambda: app.job_active)
        assert app.screen.query_one("#job").display  # the progress bar shows while the worker runs
        await until(pilot, lambda: any("index ready" in n.message for n in app._notifications))
        assert not app.job_active and not app.screen.query_one("#job").display


async def test_errors_are_notifications_not_tracebacks(wb):
    app = app_for(wb)
    async with app.run_test(size=SIZE) as pilot:
        app.open_fragment("tw-rb-oncall-paging-escalation")  # outside marco's scope
        await pilot.pause()
        assert screen_name(app) == "BrowseScreen"
        assert any("unknown fragment" in n.message for n in app._notifications)


async def test_the_cli_can_write_while_the_tui_is_open(wb, sample_workspace, tmp_path):
    from conftest import run_cli

    body = tmp_path / "body.md"
    body.write_text("Edited from the CLI while the TUI was open.\n")
    app = app_for(wb)
    app.idle_release_s = 0.2
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(1.0)  # idle: the app lets go of the workspace
        r = await asyncio.to_thread(run_cli, "edit", "nw-rb-psp-failover", "--file", str(body), "--reason", "cli",
                                    "--as", "marco.bianchi", workspace=sample_workspace,
                                    env={"WORKBENCH_LOCK_TIMEOUT": "10"})
        assert r.returncode == 0, r.stderr
        app.open_fragment("nw-rb-psp-failover")
        await pilot.pause()
        assert app.screen.fragment.version == 2 and "from the CLI" in app.screen.fragment.body
