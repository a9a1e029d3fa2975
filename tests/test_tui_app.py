"""The app frame: keys that never fire into forms, quit that asks only when work would be lost,
help generated from the bindings, the footer, jobs that never block the UI, and a workspace
connection kept while in use and let go when another process asks."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from conftest import run_cli_process
from tui_support import SIZES, app_for, settle, until

from workbench import Workbench
from workbench.errors import UserError
from workbench.tui.screens.help import help_markdown, own_bindings, screen_classes


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def name(app) -> str:
    return type(app.screen).__name__


@pytest.mark.parametrize("size", SIZES)
async def test_letter_keys_never_fire_from_a_focused_button_or_table_on_a_form(wb, size):
    app = app_for(wb, "priya.raman")
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        assert name(app) == "PinsScreen"
        depth = len(app.screen_stack)
        app.screen.query_one("DataTable").focus()  # the app's letters never fire: they go to the picker
        await pilot.press("b", "i", "x", "n", "q", "slash", "question_mark")
        await settle(pilot)
        assert name(app) == "PinsScreen" and len(app.screen_stack) == depth and app.is_running
        assert app.screen.query_one("#pin-id").value == "bixnq/?" and app.screen.focused.id == "pin-id"
        app.screen.query("Button").first().focus()  # nothing at all fires from a button
        await pilot.press(*"org=tidewater", *"inbox", "question_mark", "slash")
        await settle(pilot)
        assert name(app) == "PinsScreen" and len(app.screen_stack) == depth
        await pilot.press("escape")   # the picker holds typed text: leaving asks first
        await settle(pilot)
        assert name(app) == "DiscardScreen"
        await pilot.press("ctrl+d")
        await settle(pilot)
        assert name(app) == "BrowseScreen"


async def test_letter_keys_navigate_from_a_list_but_not_from_a_text_field(wb):
    app = app_for(wb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.query_one("#fragments").focus()
        await pilot.press("i")
        await settle(pilot)
        assert name(app) == "InboxScreen"
        await pilot.press("b")
        await settle(pilot)
        assert name(app) == "BrowseScreen"
        field = app.screen.query("Input").first()
        field.focus()
        await pilot.press(*"pix")
        await settle(pilot)
        assert name(app) == "BrowseScreen" and field.value.endswith("pix")


async def test_quit_with_an_unsaved_edit_asks_first(wb):
    app = app_for(wb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.open_fragment("nw-rb-psp-failover")
        await settle(pilot)
        await pilot.press("ctrl+e")
        await settle(pilot)
        assert name(app) == "EditScreen"
        await pilot.press(*"draft ")
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert name(app) == "DiscardScreen" and app.is_running
        assert "Quitting" in " ".join(str(label.render()) for label in app.screen.query("Label"))
        await pilot.press("escape")  # keep editing
        await pilot.pause()
        assert name(app) == "EditScreen" and app.screen.query_one("#editor").text.startswith("draft ")
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.press("ctrl+d")  # discard (ctrl+s would keep editing)
        await until(pilot, lambda: not app.is_running or app._exit_renderables is not None or app.closing)
        assert app.closing
    assert wb.get("nw-rb-psp-failover", principal="marco.bianchi").version == 1  # nothing saved


async def test_quit_without_unsaved_work_is_immediate_even_while_a_job_holds_the_workspace(wb):
    app = app_for(wb)
    app.wait_jobs_at_exit = False  # the point: the app's own exit does not wait for the job
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        release = threading.Event()
        app.submit(lambda: release.wait(30))  # a long job holding the workspace lock
        await pilot.pause()
        t = time.perf_counter()
        await pilot.press("q")
        await until(pilot, lambda: app.closing)
    elapsed = time.perf_counter() - t
    assert not app.wait_for_jobs(0.05)  # the job is still inside the workspace after the app has gone
    release.set()
    assert elapsed < 1.0, elapsed
    assert app.wait_for_jobs(30)  # and the job, once released, ends: nothing is left inside the workspace


async def test_a_job_holding_the_workspace_never_freezes_the_ui(wb):
    app = app_for(wb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        release = threading.Event()
        app.submit(lambda: release.wait(30))
        await pilot.pause()
        app.screen.query_one("#fragments").focus()
        t = time.perf_counter()
        await pilot.press("question_mark")  # the UI answers while the lock is held
        await pilot.pause()
        # the job holds the lock up to 30 s: a frozen UI would answer after it, a busy machine well before
        assert name(app) == "HelpScreen" and time.perf_counter() - t < 10
        await pilot.press("escape", "i")  # the inbox must wait for the workspace: it shows, then fills
        await pilot.pause()
        assert name(app) == "InboxScreen" and app.pending >= 1
        release.set()
        await settle(pilot)
        assert app.pending == 0


async def test_submit_delivers_only_the_newest_of_a_key_and_counts_writes(wb):
    app = app_for(wb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        got = []
        gate = threading.Event()
        app.submit(lambda: (gate.wait(10), "old")[1], done=got.append, key="k")
        app.submit(lambda: "new", done=got.append, key="k")
        gate.set()
        await settle(pilot)
        assert got == ["new"]
        before = app.data_version
        app.submit(lambda: None, write=True)
        await settle(pilot)
        assert app.data_version == before + 1

        def refuse():
            raise UserError("unknown fragment 'x'")
        app.submit(refuse, write=True)
        await settle(pilot)
        assert app.data_version == before + 1
        assert any("unknown fragment 'x'" in n.message for n in app._notifications)


def test_help_lists_every_binding_of_every_screen_with_human_key_names(wb):
    from workbench.tui.app import WorkbenchApp

    app = WorkbenchApp(wb, principal="marco.bianchi", load_model=False)
    text = help_markdown(app)
    classes = screen_classes()
    names = {c.__name__ for c in classes}
    assert {"BrowseScreen", "SearchScreen", "FragmentScreen", "EditScreen", "PinsScreen", "InboxScreen",
            "ExportScreen", "AntiPatternScreen", "ConflictScreen", "DiscardScreen"} <= names
    ids = [b.id for c in [WorkbenchApp, *classes] for b in own_bindings(c)]
    assert ids and all(ids), "every binding has an id"
    for binding_id in ids:
        assert f"`{binding_id}`" in text, binding_id
    assert "| **/** | Search |" in text and "| **?** | Help |" in text and "| **^s** | Save |" in text
    assert "slash" not in text and "question_mark" not in text


@pytest.mark.parametrize("size", SIZES)
async def test_the_footer_shows_the_screens_keys_first_and_help_fits(wb, size):
    from textual.widgets._footer import FooterKey

    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.open_fragment("nw-adr-0007-idempotency-keys")
        await settle(pilot)
        keys = [k for k in app.screen.query(FooterKey)]
        screen_ids = {b.action for b in type(app.screen)._merge_bindings().key_to_bindings.get("ctrl+e", [])}
        assert keys and keys[0].action in {b.action for bs in type(app.screen)._merge_bindings().key_to_bindings.values()
                                           for b in bs}, [k.action for k in keys[:3]]
        assert "edit_row" in screen_ids
        shown = [k for k in keys if k.region.right <= size[0] and k.region.width > 0]
        assert "help" in {k.action for k in shown}, "the help key is on screen"


async def test_the_workspace_is_kept_while_in_use_and_let_go_when_another_process_asks(wb, sample_workspace,
                                                                                       tmp_path):
    app = app_for(wb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.pause(1.2)  # more than two ticks of the release timer: still connected
        assert wb.store._con is not None
        body = tmp_path / "body.md"
        body.write_text("Edited from the CLI while the TUI was open.\n")
        # the CLI gives up after 10 s without the lock: it succeeds only if the app let go when asked
        # (no wall-clock assertion: a cold CLI on a loaded machine takes seconds of its own)
        r = await asyncio.to_thread(run_cli_process, "edit", "nw-rb-psp-failover", "--file", str(body),
                                    "--reason", "cli", "--as", "marco.bianchi", workspace=sample_workspace,
                                    env={"WORKBENCH_LOCK_TIMEOUT": "10"})
        assert r.returncode == 0, r.stderr
        assert not (sample_workspace / "workbench.duckdb.release-request").exists()
        app.open_fragment("nw-rb-psp-failover")
        await until(pilot, lambda: getattr(app.screen, "fragment", None) is not None)
        assert app.screen.fragment.version == 2 and "from the CLI" in app.screen.fragment.body


async def test_an_ingest_shows_its_progress_bar_and_the_new_rows(wb, tmp_path):
    from conftest import write_fragment

    folder = tmp_path / "new"
    for i in range(40):
        write_fragment(folder, f"nw-note-progress-{i:02d}", title=f"Progress note {i}", owner="marco.bianchi")
    app = app_for(wb)
    seen = []
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        real = app.job_progress

        def progress(stage, done, total):  # the bar is updated from the ingest job as it goes
            seen.append((stage, done, total))
            real(stage, done, total)
        app.job_progress = progress
        app.ingest_folder(str(folder))
        assert app.screen.query_one("#job").display  # shown from the start, not only once progress arrives
        await until(pilot, lambda: any("ingest:" in n.message or n.severity == "error" for n in app._notifications))
        assert not [n.message for n in app._notifications if n.severity == "error"]
        await settle(pilot)
        assert seen and seen[-1][1] == seen[-1][2] and seen[-1][2] >= 40
        assert not app.screen.query_one("#job").display
        message = next(n.message for n in app._notifications if "ingest:" in n.message)
        assert "40 added" in message
        assert sum(1 for f in wb.list(principal="marco.bianchi") if f.id.startswith("nw-note-progress-")) == 40
        assert type(app.screen).__name__ == "BrowseScreen"  # and Browse shows the new rows
        assert "nw-note-progress-00" in {r.id for r in app.screen.items}


async def test_an_ingest_notification_names_what_the_workbench_is_ahead_on_and_conflicts(wb, tmp_path):
    from conftest import write_fragment

    folder = tmp_path / "kb"
    for fid in ("nw-sync-a", "nw-sync-b"):
        write_fragment(folder, fid, body="As in git.", owner="marco.bianchi")
    wb.ingest([folder], actor="marco.bianchi")
    for fid in ("nw-sync-a", "nw-sync-b"):
        wb.edit(fid, "Edited in the workbench.", reason="fix", actor="marco.bianchi")
    write_fragment(folder, "nw-sync-b", body="Changed in git too.", owner="marco.bianchi")
    app = app_for(wb)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.ingest_folder(str(folder))
        await until(pilot, lambda: any("ingest:" in n.message or n.severity == "error" for n in app._notifications))
        message = next(n.message for n in app._notifications if "ingest:" in n.message)
        assert "1 where the workbench is ahead" in message and "1 conflicts" in message and "--theirs" in message
    assert wb.get("nw-sync-b", principal="marco.bianchi").content.body == "Edited in the workbench."


def test_the_lexical_preview_uses_the_persisted_fts_index_when_current(wb):
    import shutil

    from workbench.retrieval import snapshot
    from workbench.tui.screens.search import lexical_preview

    assert wb.quick_lexical() == "bm25"  # the persisted bm25 base loads without a build
    shutil.rmtree(snapshot.folder(wb.store.path))
    wb.index.invalidate()
    assert wb.quick_lexical() == "duckdb-fts"  # no snapshot, FTS current (`workbench index` keeps it)
    again = lexical_preview(wb, "customer charged twice", principal="marco.bianchi", trace=False)
    assert again.settings["lexical"] == "duckdb-fts" and again.hits
    assert all(h.confidence is None for h in again.hits)
    assert "nw-rb-duplicate-charge" in [h.id for h in again.hits[:3]]


def test_graph_node_is_graphs_row_for_that_fragment(wb):
    rows = {r["id"]: r for r in wb.graph(top=0, principal="marco.bianchi")}
    for fid in ("nw-adr-0007-idempotency-keys", "nw-rb-psp-failover", "nw-adr-0003-client-retry-tokens"):
        node = wb.graph_node(fid, principal="marco.bianchi")
        assert node is not None and rows[fid]["links_out"] == node["links_out"]
        assert sorted(rows[fid]["links_in"]) == sorted(node["links_in"])
        assert {k: v for k, v in node.items() if k not in ("links_in", "links_out")} == \
            {k: v for k, v in rows[fid].items() if k not in ("links_in", "links_out")}
    assert wb.graph_node("tw-rb-oncall-paging-escalation", principal="marco.bianchi") is None  # not visible
