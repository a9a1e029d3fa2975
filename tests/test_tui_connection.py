"""The connection is visible: the header says ``local <folder>`` or ``server <url>``; over a team
server it says when the server stops answering, retries in the background, and reconnects by itself
when the server is back, here on another port (found through its advert, as the launcher found
it). An action that cannot reach the server says so and leaves its dialog as it was, text and all;
nothing is queued: the same confirm succeeds once the header says reconnected."""

from __future__ import annotations

import shutil

import pytest
from server_support import start_server, stop_server
from tui_support import LARGE, NOW, SMALL, settle, until

from workbench.tui.app import WorkbenchApp
from workbench.tui.connection import header_line, home_relative

MARCO, FID = "marco.bianchi", "nw-adr-0007-idempotency-keys"


def test_the_header_line_keeps_the_connection_when_narrow():
    who, floor, where = "sample · as marco.bianchi", "floor 0.04 (prior)", "local /srv/teams/kb/workspace"
    assert header_line(who, floor, "", where, "", 120) == f"{who} · {floor} · {where}"
    assert header_line(who, floor, "", where, "", 80) == f"{who} · {where}"           # the floor goes first
    assert header_line(who, floor, "", where, "", 60) == f"{who} · local …/workspace"  # then the folder's path
    url = "server http://127.0.0.1:8765"
    assert header_line(who, floor, "", url, " · unreachable, retrying", 80).endswith(f"{url} · unreachable, retrying")


async def test_a_local_app_says_local_and_its_folder(sample_wb):
    app = WorkbenchApp(sample_wb, principal=MARCO, now=NOW, load_model=False)
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        assert app.sub_title.endswith(f" · local {home_relative(sample_wb.root)}") or \
            app.sub_title.endswith(f" · local …/{sample_wb.root.name}")
        assert not app.connection.remote
    app.wait_for_jobs(30)


@pytest.mark.slow  # two server starts
async def test_an_unreachable_server_keeps_the_dialog_and_the_app_reconnects_to_its_new_port(
        sample_workspace_template, tmp_path, monkeypatch):
    from tui_support import app_for

    from workbench import Workbench
    from workbench.cli.tui_client import remote_workbench
    from workbench.tui.screens.pin_dialog import PinDialog

    root = tmp_path / "ws"
    shutil.copytree(sample_workspace_template, root)
    with Workbench.open(root) as wb:
        token = wb.token_create(MARCO).token
    monkeypatch.delenv("WORKBENCH_URL", raising=False)
    monkeypatch.setenv("WORKBENCH_TOKEN", token)
    running = start_server(root)
    restarted = None
    try:
        remote = remote_workbench(str(root))  # as `workbench tui` finds it: through the advert
        app = app_for(remote, principal=MARCO)
        async with app.run_test(size=SMALL) as pilot:
            await settle(pilot)
            assert f"server {running.url}" in app.sub_title and "unreachable" not in app.sub_title
            browse = app.screen
            rows = [i for i, r in enumerate(browse.rows) if r.id == FID]
            browse.query_one("#fragments").move_cursor(row=rows[0])
            browse.action_pin_row()
            await until(pilot, lambda: isinstance(app.screen, PinDialog))
            dialog = app.screen
            await pilot.pause()
            dialog.query_one("#pin-dialog-reason").focus()
            await pilot.pause()
            await pilot.press(*"retries need it")

            assert stop_server(running) == 0
            await pilot.press("ctrl+s")
            await settle(pilot)
            assert app.screen is dialog and dialog.query_one("#pin-dialog-reason").value == "retries need it"
            assert any("cannot reach the workbench server" in n.message for n in app._notifications)
            assert "unreachable, retrying" in app.sub_title

            restarted = start_server(root)  # port 0: another port, named by the new advert
            assert restarted.url != running.url
            await until(pilot, lambda: f"server {restarted.url} · reconnected" in app.sub_title, timeout=30)
            await pilot.press("ctrl+s")  # the same dialog, confirmed again: now it is done
            await until(pilot, lambda: not isinstance(app.screen, PinDialog) and app.pending == 0)
            await settle(pilot)
        pins = [p for p in remote.pins(principal=MARCO) if p.fragment_id == FID]
        assert pins and pins[0].reason == "retries need it"
    finally:
        for server in (running, restarted):
            if server is not None and server.process.poll() is None:
                stop_server(server)
