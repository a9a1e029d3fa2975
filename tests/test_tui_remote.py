"""The TUI as a client of a running team server: a real `workbench server` process on a copy of the
sample workspace holds it (the TUI could not open it), and the app runs on the remote facade
(workbench/remote/client.py), driven with Pilot. Searches show the server's hits, an edit saved in
the TUI lands on the server, a non-admin token acts as its own principal whatever the app was
started as, and the core's errors come back as the usual dialog and notifications. `workbench
serve` beside a server runs every browser tab on it; an unreachable server is one plain line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

import pytest
from tui_support import LARGE, SMALL, app_for, confirm, save_anyway, settle, until

from browser_support import Browser, ensure_chromium, free_port, processes_mentioning, serve
from conftest import WORKBENCH_BIN, run_cli_process
from server_support import server
from workbench.rank.calibration import PRIOR
from workbench.remote.client import RemoteWorkbench
from workbench.tui.screens.conflict import ConflictScreen

MARCO = "marco.bianchi"
MINE = "nw-adr-0007-idempotency-keys"        # marco's
ALSO_MINE = "nw-rb-webhook-backlog"          # marco's (priya, an org lead, may write it too)
SHARED = "nw-rb-psp-failover"                # dan.kowalski's: marco and priya may edit, only dan verifies


@pytest.fixture(scope="module")
def team(sample_workspace_template, tmp_path_factory):
    """A running server and tokens: marco (non-admin), the agent (non-admin), priya (admin)."""
    from workbench import Workbench

    root = tmp_path_factory.mktemp("tui-remote") / "ws"
    shutil.copytree(sample_workspace_template, root)
    with Workbench.open(root) as wb:
        tokens = {"marco": wb.token_create(MARCO).token, "agent": wb.token_create("agent.nw-coder").token,
                  "admin": wb.token_create("priya.raman").token}
    with server(root) as running:
        yield running, tokens


def latest(running, token, fid):
    """(version, body, the last version's author and reason) as the server's JSON API tells it."""
    status, shown, _ = running.call("GET", f"/api/v1/show?id={fid}", token=token)
    assert status == 200, shown
    status, history, _ = running.call("GET", f"/api/v1/history?id={fid}", token=token)
    assert status == 200, history
    last = history["versions"][-1] if isinstance(history, dict) else history[-1]
    return shown["version"], shown["body"], last["author"], last["reason"]


async def edit_in_the_tui(app, pilot, fid, text, reason):
    app.open_fragment(fid)
    await settle(pilot)
    await pilot.press("ctrl+e")
    await settle(pilot)
    editor = app.screen
    assert type(editor).__name__ == "EditScreen" and editor.ready
    editor.query_one("#editor").load_text(text)
    editor.query_one("#reason").value = reason
    await pilot.press("ctrl+s")
    await save_anyway(pilot)  # the edit-impact dialog, when the edit changes golden queries
    return editor


# -- the TUI on the server ----------------------------------------------------------------------------


async def test_the_tui_opens_as_a_client_and_a_search_shows_the_servers_hits(team, monkeypatch):
    from workbench.cli.tui_client import remote_workbench
    from workbench.errors import WorkspaceBusy
    from workbench import Workbench

    running, tokens = team
    with pytest.raises(WorkspaceBusy):  # the server holds the workspace: the TUI cannot open it itself
        Workbench.open(running.root, lock_timeout=0.2).browse()
    monkeypatch.delenv("WORKBENCH_URL", raising=False)
    monkeypatch.setenv("WORKBENCH_TOKEN", tokens["marco"])
    wb = remote_workbench(str(running.root))  # what `workbench tui` does: found through the advert
    assert isinstance(wb, RemoteWorkbench) and wb.url == running.url
    app = app_for(wb, principal=MARCO)
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        assert app.sub_title == f"sample · as {MARCO} · floor {PRIOR.floor:.2f} (prior) · server {running.url}"
        assert app.screen.query_one("#fragments").row_count == 69  # what marco sees of the sample
        await pilot.press("slash")
        await pilot.press(*"customer charged twice", "enter")
        await settle(pilot)
        screen = app.screen
        await until(pilot, lambda: screen.result is not None)
        assert screen.query_one("#results").row_count == len(screen.hits) > 0
        assert screen.hits[0].fragment.scope.org == "northwind" and screen.result.query == "customer charged twice"
    metrics = running.call("GET", "/metrics", token=tokens["admin"])[1]  # (workspace-wide: admin tokens only)
    assert 'workbench_requests_total{endpoint="rpc search",status="200"}' in metrics
    assert 'workbench_requests_total{endpoint="rpc browse",status="200"}' in metrics


async def test_an_edit_saved_in_the_tui_lands_on_the_server(team):
    running, tokens = team
    version, _, _, _ = latest(running, tokens["marco"], MINE)
    app = app_for(RemoteWorkbench(running.url, tokens["marco"]), principal=MARCO)
    async with app.run_test(size=SMALL) as pilot:
        await edit_in_the_tui(app, pilot, MINE, "Keys live 72 hours now.", "note the TTL")
        assert type(app.screen).__name__ == "FragmentScreen" and app.screen.fragment.version == version + 1
    assert latest(running, tokens["admin"], MINE) == (version + 1, "Keys live 72 hours now.", MARCO, "note the TTL")


async def test_a_non_admin_token_cannot_act_as_someone_else_from_the_tui(team):
    from workbench.cli.tui_client import ignored_as

    running, tokens = team
    wb = RemoteWorkbench(running.url, tokens["marco"])
    app = app_for(wb, principal="priya.raman")  # started as priya, with marco's token
    assert app.principal.name == MARCO and f"as {MARCO} · floor" in app.sub_title
    assert ignored_as(wb, "priya.raman") == f"workbench: --as priya.raman ignored: this token acts as {MARCO}"
    # even a client that sends priya as the actor of every call acts as marco: the server decides
    app.principal = RemoteWorkbench(running.url, tokens["admin"]).principal("priya.raman")
    assert app.principal.name == "priya.raman" and app.principal.admin
    version, _, _, _ = latest(running, tokens["marco"], ALSO_MINE)
    async with app.run_test(size=SMALL) as pilot:
        await edit_in_the_tui(app, pilot, ALSO_MINE, "Drain the backlog oldest first.", "as whom?")
    assert latest(running, tokens["admin"], ALSO_MINE) == (version + 1, "Drain the backlog oldest first.", MARCO,
                                                          "as whom?")
    # an admin token's choice is honoured (its own principal by default)
    admin = RemoteWorkbench(running.url, tokens["admin"])
    assert admin.principal(MARCO).name == MARCO and admin.principal(None).name == "priya.raman"
    assert ignored_as(admin, MARCO) is None


async def test_core_errors_from_the_server_show_as_the_usual_dialog_and_notification(team):
    running, tokens = team
    version, _, _, _ = latest(running, tokens["marco"], SHARED)
    app = app_for(RemoteWorkbench(running.url, tokens["marco"]), principal=MARCO)
    async with app.run_test(size=LARGE) as pilot:
        app.open_fragment(SHARED)
        await settle(pilot)
        await pilot.press("ctrl+y")  # dan's fragment: the core refuses marco's verify, the screen says so
        await confirm(pilot)
        assert app.data_version == 0 and any("only the owner" in n.message for n in app._notifications)
        await pilot.press("ctrl+e")
        await settle(pilot)
        editor = app.screen
        RemoteWorkbench(running.url, tokens["admin"]).edit(SHARED, "Saved by priya meanwhile.", reason="priya's fix")
        editor.query_one("#editor").load_text("Marco's take.")
        editor.query_one("#reason").value = "tui note"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, ConflictScreen)  # the server's Conflict, as the same class
        dialog = app.screen
        assert (dialog.base, dialog.latest) == (version, version + 1) and "priya.raman" in dialog.message
        assert "+Saved by priya meanwhile." in dialog.query_one("#conflict-diff").content.plain
        await pilot.press("escape")
        await settle(pilot)
    assert latest(running, tokens["admin"], SHARED) == (version + 1, "Saved by priya meanwhile.", "priya.raman",
                                                       "priya's fix")


def test_the_server_refuses_what_a_client_may_not_do(team, tmp_path):
    """The rules are the server's: a hand-made request gets no further than the TUI's client."""
    from workbench.errors import NotFound, PermissionDenied, UserError

    running, tokens = team
    marco = RemoteWorkbench(running.url, tokens["marco"])
    with pytest.raises(PermissionDenied, match="admin token"):
        marco.export_files(str(tmp_path / "out"))
    with pytest.raises(PermissionDenied, match="admin token"):
        marco.search("deploy", reranker=str(tmp_path))
    assert not (tmp_path / "out").exists()
    with pytest.raises(NotFound, match="unknown method 'close'"):
        marco.call("close")
    with pytest.raises(NotFound, match="unknown method 'token_create'"):
        marco.call("token_create", MARCO)
    status, body, _ = running.call("POST", "/api/v1/rpc/get", {"args": [{"$class": "os:system", "fields": {}}]},
                                   token=tokens["marco"])
    assert status == 400 and body["error"]["type"] == "CodecError" and "not accepted" in body["error"]["message"]
    forged = {"$class": "workbench.models:Principal", "fields": {"name": "root", "orgs": {"$tuple": ["tidewater"]}}}
    status, body, _ = running.call("POST", "/api/v1/rpc/browse", {"kwargs": {"principal": forged}},
                                   token=tokens["admin"])
    assert status == 400, body  # a principal crosses by name, never as an object its sender made up
    with pytest.raises(UserError, match="HTTP 401"):
        RemoteWorkbench(running.url, "wbt_ffffffffffff_" + "y" * 43).get(MINE)
    assert marco.principals() and all(p.email is None for p in marco.principals() if p.name != MARCO)
    admin = RemoteWorkbench(running.url, tokens["admin"])
    written = admin.export_files(str(tmp_path / "out"), scope="org=northwind,repo=payments-api")
    assert written and all(p.is_file() for p in written)


# -- the launchers ------------------------------------------------------------------------------------


def test_tui_and_serve_say_plainly_when_the_server_cannot_be_reached(team, tmp_path):
    running, tokens = team
    port = free_port()
    env = {"WORKBENCH_URL": f"http://127.0.0.1:{port}", "WORKBENCH_TOKEN": tokens["marco"]}
    for args in (("tui",), ("serve", "--port", str(free_port()))):
        r = run_cli_process(*args, env=env, timeout=60)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "cannot reach the workbench server" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = run_cli_process("serve", "--port", str(free_port()), env={"WORKBENCH_URL": running.url,
                                                                   "WORKBENCH_TOKEN": "not-a-token"}, timeout=60)
    assert r.returncode == 2 and "HTTP 401" in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.fixture(scope="module")
def chromium() -> str:
    path, why = ensure_chromium()
    if not path:
        pytest.skip(why)
    return path


def test_serve_beside_a_server_runs_each_tab_on_it(team, chromium):
    running, tokens = team
    port = free_port()
    proc = serve(running.root, port, "--as", MARCO, env={"WORKBENCH_TOKEN": tokens["agent"]}, bin_=WORKBENCH_BIN)
    tabs = f"workbench.cli.tui_client --workspace {running.root}"
    try:
        with Browser(chromium) as browser:
            browser.open(f"http://127.0.0.1:{port}/")
            text = browser.wait_for_text("as agent.nw-coder", "fragments")  # the token's principal, not --as
            assert "as marco.bianchi" not in text
            assert processes_mentioning(tabs)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        for pid in processes_mentioning(tabs):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert "--as marco.bianchi ignored: this token acts as agent.nw-coder" in proc.stdout.read()
