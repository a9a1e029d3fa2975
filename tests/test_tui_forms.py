"""The TUI's forms at 80×24 and 120×40: Export (preview, write, overwrite), Pins (picker, until,
unpin), the nudge Inbox, the anti-pattern form, the modal prompts, and messages in TUI words."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from conftest import CONFIG
from tui_support import LARGE, NOW, SIZES, SMALL, app_for, column_visible, confirm, inside_screen, settle, until

from workbench import Workbench
from workbench.errors import WorkbenchError
from workbench.tui.messages import plain


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def name(app) -> str:
    return type(app.screen).__name__


def shown(widget) -> str:
    return str(widget.render())


def visible_lines(area) -> int:
    """Lines of text a TextArea shows without scrolling."""
    return min(area.wrapped_document.height, area.scrollable_content_region.height)


# -- Export --------------------------------------------------------------------------------

async def open_export(pilot, scope="org=northwind,repo=payments-api"):
    await settle(pilot)
    await pilot.press("x")
    await settle(pilot)
    screen = pilot.app.screen
    assert name(pilot.app) == "ExportScreen"
    screen.query_one("#export-scope").value = scope
    return screen


@pytest.mark.parametrize("size", SIZES)
async def test_export_preview_fills_the_screen_and_the_write_row_stays_visible(wb, size):
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        screen = await open_export(pilot)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "planned" in shown(screen.query_one("#export-summary")))
        await settle(pilot)
        for selector in ("#export-scope", "#export-set", "#export-format", "#export-dir", "#preview-button",
                         "#write-button", "#export-file", "#preview-text"):
            assert inside_screen(app, screen.query_one(selector)), selector
        assert screen.query_one("#export-scope").border_title == "Scope"
        assert screen.query_one("#export-dir").border_title == "Write into folder"
        area = screen.query_one("#preview-text")
        assert area.text.startswith("# AGENTS.md")
        assert visible_lines(area) >= (20 if size == LARGE else 5)
        assert screen.query_one("#preview-button").region.width < 20  # buttons no longer stretch


async def test_export_preview_lists_every_planned_file_and_shows_the_one_chosen(wb):
    app = app_for(wb)
    async with app.run_test(size=LARGE) as pilot:
        screen = await open_export(pilot, "org=northwind,repo=ledger")
        screen.query_one("#export-format").value = "fragment-files"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "files planned" in shown(screen.query_one("#export-summary")))
        expected = sorted(path for path, _ in wb.preview_files(scope="org=northwind,repo=ledger",
                                                               principal="marco.bianchi"))
        files = screen.query_one("#export-file")
        assert sorted(str(label) for label, _ in files._options if label) == expected  # plain Text (tui/plain.py)
        assert f"{len(expected)} files planned" in shown(screen.query_one("#export-summary"))
        files.value = 3
        await settle(pilot)
        fid = screen.plan[3][0].rsplit("/", 1)[1].removesuffix(".md")
        assert f"id: {fid}" in screen.query_one("#preview-text").text


@pytest.mark.parametrize("size", SIZES)
async def test_export_over_an_earlier_export_asks_then_overwrites(wb, tmp_path, size):
    from workbench.tui.screens.prompt import ConfirmScreen

    out = tmp_path / "agents"
    scope = "org=northwind,repo=ledger"
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        screen = await open_export(pilot, scope)
        screen.query_one("#export-dir").value = str(out)
        await pilot.press("ctrl+s")  # a new folder: written at once, no question
        await until(pilot, lambda: (out / "AGENTS.md").exists() and app.pending == 0)
        assert name(app) == "ExportScreen"
        written = (out / "AGENTS.md").read_text()
        (out / "AGENTS.md").write_text("a hand edit\n")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        dialog = app.screen
        assert str(out) in dialog.message and inside_screen(app, dialog.query_one(".confirm-box"))
        await pilot.press("escape")  # cancel: the folder is left as it was
        await settle(pilot)
        assert app.screen is screen and (out / "AGENTS.md").read_text() == "a hand edit\n"
        assert "left as it was" in shown(screen.query_one("#export-summary"))
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("ctrl+s")  # overwrite
        await until(pilot, lambda: (out / "AGENTS.md").read_text() != "a hand edit\n" and app.pending == 0)
        assert app.screen is screen and "wrote AGENTS.md to" in shown(screen.query_one("#export-summary"))
    assert (out / "AGENTS.md").read_text() == written


async def test_a_bundle_needs_a_set_and_overwrites_only_when_confirmed(wb, tmp_path):
    from workbench.tui.screens.prompt import ConfirmScreen

    wb.set_create("ledger-set", scope="org=northwind,repo=ledger", actor="marco.bianchi")
    out = tmp_path / "bundle"
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_export(pilot, "")
        screen.query_one("#export-format").value = "bundle"
        screen.query_one("#export-dir").value = str(out)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "curated set" in shown(screen.query_one("#export-summary")) and not out.exists()
        screen.query_one("#export-set").value = "ledger-set"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: (out / "manifest.yaml").exists() and app.pending == 0)
        (out / "manifest.yaml").write_text("not a manifest\n")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("ctrl+s")  # a bundle into a folder that is not empty is written only when forced
        await until(pilot, lambda: (out / "manifest.yaml").read_text() != "not a manifest\n" and app.pending == 0)
        assert "wrote a bundle of" in shown(screen.query_one("#export-summary"))


async def test_a_refused_preview_says_why_on_the_screen(wb):
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_export(pilot, "org=nowhere")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "Not done" in shown(screen.query_one("#export-summary")))
        assert "nowhere" in shown(screen.query_one("#export-summary"))
        assert any("nowhere" in n.message for n in app._notifications)
        assert app.screen is screen


@pytest.mark.parametrize("size", SIZES)
async def test_typing_on_the_export_buttons_opens_nothing(wb, size):
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        screen = await open_export(pilot)
        depth = len(app.screen_stack)
        screen.query_one("#preview-button").focus()
        await pilot.press(*"org=tidewater")
        await settle(pilot)
        assert app.screen is screen and len(app.screen_stack) == depth
        screen.query_one("#write-button").focus()
        await pilot.press(*"inbox", "question_mark", "slash")
        await settle(pilot)
        assert app.screen is screen and len(app.screen_stack) == depth


# -- Pins ----------------------------------------------------------------------------------

async def open_pins(pilot):
    await settle(pilot)
    await pilot.press("p")
    await settle(pilot)
    await until(pilot, lambda: name(pilot.app) == "PinsScreen" and pilot.app.screen.titles)
    return pilot.app.screen


@pytest.mark.parametrize("size", SIZES)
async def test_pins_inputs_are_labelled_and_readable(wb, size):
    wb.pin("nw-rb-psp-failover", scope="org=northwind,repo=payments-api", actor="marco.bianchi", now=NOW)
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        screen = await open_pins(pilot)
        for selector, label in (("#pin-id", "Fragment"), ("#pin-until", "Until (YYYY-MM-DD)"),
                                ("#pin-reason", "Reason")):
            field = screen.query_one(selector)
            assert inside_screen(app, field) and field.region.width >= 20, (selector, field.region)
            assert field.border_title == label
        assert inside_screen(app, screen.query_one("#pin-scope")) and inside_screen(app, screen.query_one("#pin"))
        table = screen.query_one("#pins")
        assert table.ordered_columns[0].key.value == "title"
        assert column_visible(app, table, "title")
        assert "nw-rb-psp-failover" in shown(screen.query_one("#pin-detail"))


@pytest.mark.parametrize("size", SIZES)
async def test_pin_by_picking_a_title_with_an_until_date_then_the_form_clears(wb, size):
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        screen = await open_pins(pilot)
        picker = screen.query_one("#pin-id")
        assert app.focused is picker
        await pilot.press(*"PSP outage: fail", "right")  # → accepts the completion
        await settle(pilot)
        assert picker.value == "PSP outage: failing authorisations over from Corvid to Halyard"
        assert picker.border_subtitle == "nw-rb-psp-failover"
        screen.query_one("#pin-until").focus()
        await pilot.press(*"2020-01-01")
        await pilot.press("enter")
        await settle(pilot)
        assert "not in the future" in shown(screen.query_one("#errors")) and not wb.pins(principal="marco.bianchi")
        screen.query_one("#pin-until").value = ""
        await pilot.press(*"2030-01-31", "tab")
        await pilot.press(*"PSP outages are our worst incidents", "enter")
        await until(pilot, lambda: screen.query_one("#pins").row_count == 1)
        for selector in ("#pin-id", "#pin-until", "#pin-reason"):
            assert screen.query_one(selector).value == "", selector
        assert app.focused is picker and shown(screen.query_one("#errors")) == ""
        await pilot.press(*"nw-rb-ps", "right")  # ids complete too
        assert picker.value == "nw-rb-psp-failover"
    [pin] = wb.pins(principal="marco.bianchi")
    assert (pin.fragment_id, str(pin.scope), pin.until, pin.reason) == (
        "nw-rb-psp-failover", "org=northwind,repo=payments-api", datetime(2030, 1, 31),
        "PSP outages are our worst incidents")


async def test_pin_of_an_unknown_fragment_is_refused_inline(wb):
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_pins(pilot)
        await pilot.press(*"no-such-fragment")
        await settle(pilot)
        assert not screen.query_one("#pin-id").is_valid
        await pilot.press("enter")
        await settle(pilot)
        assert "not the id or title of a fragment you can see" in shown(screen.query_one("#errors"))
    assert not wb.pins(principal="marco.bianchi")


@pytest.mark.parametrize("size", SIZES)
async def test_unpin_asks_first(wb, size):
    from workbench.tui.screens.prompt import ConfirmScreen

    wb.pin("nw-rb-psp-failover", scope="org=northwind,repo=payments-api", actor="marco.bianchi", now=NOW)
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        screen = await open_pins(pilot)
        await pilot.press("u")  # typed into the picker, which has focus: not an unpin
        await settle(pilot)
        assert app.screen is screen and screen.query_one("#pin-id").value == "u"
        await pilot.press("ctrl+u")  # in a field, the field's own key (delete to the start): not an unpin
        await settle(pilot)
        assert app.screen is screen and screen.query_one("#pin-id").value == ""
        screen.query_one("#pins").focus()
        await pilot.press("u")  # a letter on the table goes to the picker too
        await settle(pilot)
        assert app.screen is screen and screen.query_one("#pin-id").value == "u"
        screen.query_one("#pins").focus()
        await pilot.press("ctrl+u")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert "nw-rb-psp-failover" in app.screen.message
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and len(wb.pins(principal="marco.bianchi")) == 1
        await pilot.press("ctrl+u")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await confirm(pilot)
        await until(pilot, lambda: screen.query_one("#pins").row_count == 0 and app.pending == 0)
    assert wb.pins(principal="marco.bianchi") == []


async def test_a_non_lead_sees_why_they_cannot_pin(wb):
    app = app_for(wb, "agent.nw-coder")
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_pins(pilot)
        assert "is not a tech lead of any scope" in shown(screen.query_one("#pins-who"))
        screen.query_one("#pin-reason").focus()
        await pilot.press("enter")
        await settle(pilot)
        assert "only tech leads may pin" in shown(screen.query_one("#errors"))


# -- Inbox ---------------------------------------------------------------------------------

async def open_inbox(pilot):
    await settle(pilot)
    await pilot.press("i")
    await until(pilot, lambda: name(pilot.app) == "InboxScreen" and pilot.app.screen.items)
    await settle(pilot)
    return pilot.app.screen


@pytest.mark.parametrize("size", SIZES)
async def test_inbox_shows_title_and_reason_with_a_labelled_snooze(wb, size):
    app = app_for(wb, "dan.kowalski")
    async with app.run_test(size=size) as pilot:
        screen = await open_inbox(pilot)
        table = screen.query_one("#inbox")
        assert table.ordered_columns[0].key.value == "title"
        assert column_visible(app, table, "title")
        if size == LARGE:
            assert column_visible(app, table, "reason", min_width=16)
        first = screen.items[0]
        detail = shown(screen.query_one("#inbox-detail"))
        assert first.fragment.id in detail and all(r in detail for r in first.reasons)
        assert shown(screen.query_one("#snooze-label")) == "Snooze days:"
        assert inside_screen(app, screen.query_one("#snooze-label"))
        assert inside_screen(app, screen.query_one("#snooze-days"))


async def test_inbox_actions_are_writes_and_enter_opens(wb):
    app = app_for(wb, "dan.kowalski")
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_inbox(pilot)
        first = screen.items[0].fragment.id
        version = app.data_version
        await pilot.press("v", "z", "e")  # plain letters never act on a row
        await settle(pilot)
        assert app.screen is screen and app.data_version == version
        await pilot.press("ctrl+y")
        await confirm(pilot)
        await until(pilot, lambda: first not in [i.fragment.id for i in screen.items])
        assert app.data_version == version + 1
        screen.query_one("#snooze-days").focus()
        await pilot.press("z", "e", "v", "ctrl+y", "ctrl+z")  # in the field (digits only): no action fires
        await settle(pilot)
        assert app.screen is screen and app.data_version == version + 1
        screen.query_one("#inbox").focus()
        second = screen.items[0].fragment.id
        await pilot.press("enter")
        await until(pilot, lambda: name(app) == "FragmentScreen")
        assert app.screen.fragment_id == second


# -- Anti-pattern --------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES)
async def test_antipattern_form_fits_and_creates_a_conventional_id(wb, size):
    app = app_for(wb)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        screen = app.screen
        assert name(app) == "AntiPatternScreen"
        for field, value in (("title", "Logging webhook payloads"), ("dont", "Do not log raw webhook payloads"),
                             ("why", "they carry PANs (INC-2502)"), ("instead", "log the event id and type only"),
                             ("evidence", "INC-2502")):
            widget = screen.query_one(f"#ap-{field}")
            widget.focus()
            await settle(pilot)
            assert inside_screen(app, widget) and widget.border_title, field
            widget.value = value
        create = screen.query_one("#create")
        create.focus()
        await settle(pilot)
        assert inside_screen(app, create)
        assert screen.query_one("#ap-scope").value == "org=northwind,repo=payments-api"
        version = app.data_version
        await pilot.press("enter")
        await until(pilot, lambda: name(app) == "FragmentScreen")
        assert app.screen.fragment_id == "nw-ap-logging-webhook-payloads" and app.data_version == version + 1
    created = wb.get("nw-ap-logging-webhook-payloads", principal="marco.bianchi")
    assert created.kind == "anti-pattern" and created.content.detail("evidence") == ("INC-2502",)


async def test_antipattern_errors_show_in_tui_words(wb):
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        screen = app.screen
        for field in ("title", "dont", "why", "instead"):
            screen.query_one(f"#ap-{field}").value = "x"
        screen.query_one("#ap-scope").value = "org=tidewater"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: shown(screen.query_one("#errors")) != "")
        assert app.screen is screen and "--" not in shown(screen.query_one("#errors"))


# -- the modal prompts ---------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES)
async def test_prompt_and_confirm_fit_the_terminal(wb, size):
    from workbench.tui.screens.prompt import ConfirmScreen, PromptScreen

    app = app_for(wb)
    answers = []
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        app.push_screen(PromptScreen("Ingest fragment files from folder:", placeholder="sample_corpus/fragments"),
                        answers.append)
        await settle(pilot)
        box = app.screen.query_one(".prompt-box")
        assert inside_screen(app, box) and box.region.width <= min(70, int(size[0] * 0.9))
        assert inside_screen(app, app.screen.query_one("#prompt-input"))
        assert "Ingest fragment files" in shown(app.screen.query_one("#prompt-label"))
        await pilot.press(*"some/folder", "enter")
        await settle(pilot)
        app.push_screen(ConfirmScreen("Overwrite?", "a long explanation " * 8, yes="Overwrite"), answers.append)
        await settle(pilot)
        box = app.screen.query_one(".confirm-box")
        assert inside_screen(app, box) and inside_screen(app, app.screen.query_one("#confirm-yes-button"))
        await pilot.press("enter")  # enter confirms, as in every dialog
        await settle(pilot)
    assert answers == ["some/folder", True]


# -- messages in the TUI's words -----------------------------------------------------------

def refused(fn, *args, **kwargs) -> WorkbenchError:
    try:
        fn(*args, **kwargs)
    except WorkbenchError as e:
        return e
    raise AssertionError(f"{fn.__name__} was not refused")


FLAGS = re.compile(r"--[a-z]|`workbench ")


def test_plain_rewrites_every_cli_flag_the_core_names(sample_workspace, tmp_path, monkeypatch):
    from workbench.curate.staleness import digest

    cases: dict[str, tuple[str, str]] = {}  # name → (core message, TUI words expected)
    with Workbench.open(sample_workspace) as wb:
        me = "marco.bianchi"
        scope = "org=northwind,repo=ledger"
        out = tmp_path / "agents"
        wb.export_agents("agents-md", out, scope=scope, principal=me)
        (out / "AGENTS.md").write_text("a hand edit\n")
        cases["overwrite"] = (refused(wb.export_agents, "agents-md", out, scope=scope, principal=me),
                              "confirm overwrite in the dialog to replace it")
        files = tmp_path / "files"
        wb.export_files(files, scope=scope, principal=me)
        changed = next(files.rglob("*.md"))
        changed.write_text("changed by hand\n")
        cases["prune"] = (refused(wb.export_files, files, scope="org=northwind,repo=payments-api", principal=me),
                          "confirm overwrite in the dialog to")
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "x.txt").write_text("x")
        wb.set_create("ledger-set", scope=scope, actor=me)
        cases["not empty"] = (refused(wb.export_bundle, "ledger-set", tmp_path / "full", principal=me),
                              "confirm overwrite in the dialog to write into it")
        bad = tmp_path / "bad"
        bad.mkdir()
        (bad / ".workbench-export.json").write_text("{}")
        cases["manifest"] = (refused(wb.export_agents, "agents-md", bad, scope=scope, principal=me),
                             "remove it, or confirm overwrite in the dialog to replace it")
        fid = "nw-rb-psp-failover"
        cases["reason"] = (refused(wb.edit, fid, "new body", reason=" ", actor=me),
                           "a reason is required for every change: type it in the reason field")
        cases["base"] = (refused(wb.edit, fid, "new body", reason="r", actor=me, base="one"),
                         "the version an edit starts from must be a version number")
        wb.edit(fid, "second body", reason="v2", actor="priya.raman")
        cases["conflict"] = (refused(wb.edit, fid, "third body", reason="r", actor=me, base=1),
                             "Compare v1 with v2 in the fragment's history")
        cases["secret"] = (refused(wb.edit, fid, "export AWS_ACCESS_KEY_ID=AKIA" + "ABCDEFGHIJKLMNOP", reason="r",
                                   actor=me), "remove it before saving")
        owner = "dan.kowalski"
        stale = wb.stale(principal=owner, now=NOW)[0].fragment.id
        cases["days"] = (refused(wb.snooze, stale, days=0, actor=owner, now=NOW), "snooze days must be between")
        cases["days type"] = (refused(wb.snooze, stale, days="x", actor=owner, now=NOW),
                              "snooze days must be a whole number")
        cases["cooldown"] = (refused(wb.nudge, cooldown_days=-1, now=NOW), "the nudge cooldown must")
        cases["until"] = (refused(wb.pin, fid, scope="org=northwind,repo=payments-api", actor=me, until="soon"),
                          "bad until date 'soon'")
        cases["until past"] = (refused(wb.pin, fid, scope="org=northwind,repo=payments-api", actor=me,
                                       until="2020-01-01"), "the until date 2020-01-01 is in the past")
        cases["id taken"] = (refused(wb.add_antipattern, title="t", dont="d", why="w", instead="i",
                                     scope="org=northwind,repo=payments-api", actor=me,
                                     fragment_id="nw-ap-float-for-money"), "(change the title to get another id)")
        cases["id hidden"] = (refused(wb.add_antipattern, title="t", dont="d", why="w", instead="i",
                                      scope="org=northwind,repo=payments-api", actor=me,
                                      fragment_id="tw-ap-flag-without-expiry"), "(change the title to get another id)")
        cases["base url"] = (refused(wb.render_agents, "agents-md", scope=scope, principal=me,
                                     base_url="https://example.com/"), "a base URL applies to llms-txt only")
        cases["bad url"] = (refused(wb.render_agents, "llms-txt", scope=scope, principal=me, base_url="ftp://x"),
                            "bad base URL 'ftp://x'")
        cases["budget"] = (refused(wb.agent_selection, scope=scope, principal=me, budget=0),
                           "the token budget must be a positive number")
        cases["query"] = (refused(wb.set_create, "q-set", scope=scope, actor=me, query=" "),
                          "the set's query must be non-empty")
        items = wb.stale(principal=owner, now=NOW)
        cases["digest"] = (digest(owner, items, now=NOW, workspace="sample"),
                           "Answer each in the nudge inbox: verify (still true), snooze, or edit.")
    monkeypatch.delenv("WORKBENCH_PRINCIPAL", raising=False)
    config = tmp_path / "no-default.yaml"
    config.write_text(re.sub(r"(?m)^default_principal:.*$", "", CONFIG.read_text()))
    with Workbench.init(tmp_path / "fresh", config=config) as fresh:
        cases["as"] = (refused(fresh.principal, None), "start the TUI as a named principal")
    cases["init"] = (refused(Workbench.init, sample_workspace, config=CONFIG),
                     "(confirm overwrite in the dialog to replace it)")
    cases["open"] = (refused(Workbench.open, tmp_path / "nowhere"), "create one first")
    for case, (error, words) in cases.items():
        rewritten = plain(error)   # the error (its parameter gives the TUI's hint) or a plain message
        assert words in rewritten, (case, rewritten)
        assert not FLAGS.search(rewritten), (case, rewritten)


def test_plain_leaves_other_messages_alone_and_never_shows_a_flag():
    assert plain("unknown fragment 'x'") == "unknown fragment 'x'"
    assert plain("workspace busy: another workbench process is using /w") == \
        "workspace busy: another workbench process is using /w"
    assert plain("use --some-new-flag, see `workbench frobnicate --x 1`") == \
        "use some new flag, see the frobnicate command"


def test_the_pin_pickers_matches_ignore_case_and_keep_the_stored_case():
    from workbench.tui.screens.picker import matches

    titles = {"nw-rb-psp-failover": "PSP outage: failing over", "nw-adr-0001-psp": "Choosing a PSP",
              "nw-note-pspx": "Other", "nw-rb-db": "Database failover"}
    found = matches("psp", titles)
    assert [(m.id, m.completion) for m in found] == [
        ("nw-rb-psp-failover", "PSP outage: failing over"),  # starts with it (the title)
        ("nw-adr-0001-psp", "nw-adr-0001-psp"), ("nw-note-pspx", "nw-note-pspx")]  # hold it
    assert [m.id for m in matches("FAILOVER", titles)] == ["nw-rb-psp-failover", "nw-rb-db"]  # ids first
    assert matches("  ", titles) == [] and matches("zzz", titles) == []


async def test_the_pin_picker_lists_every_match_in_its_stored_case(wb):
    app = app_for(wb)
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_pins(pilot)
        picker, listed = screen.query_one("#pin-id"), screen.query_one("#pin-matches")
        await pilot.press(*"psp")
        await settle(pilot)
        expected = {fid for fid, title in screen.titles.items() if "psp" in fid.lower() or "psp" in title.lower()}
        assert len(expected) > 1
        shown_ids = {listed.get_option_at_index(i).id for i in range(listed.option_count)}
        assert listed.display and shown_ids == expected  # every match, not one
        prompts = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        assert f"nw-rb-psp-failover · {screen.titles['nw-rb-psp-failover']}" in prompts  # as stored
        assert picker.value == "psp" and not picker._suggestion  # no ghost mixing "psp" with "PSP…"
        assert inside_screen(app, listed) and "matches" in str(picker.border_subtitle)
        first = listed.get_option_at_index(0).id
        await pilot.press("right")  # completes to the first match (its id or title, whichever matched), as stored
        assert picker.value in (first, screen.titles[first]) and screen._resolve(picker.value) == first
        picker.value = "psp"
        await settle(pilot)
        await pilot.press("down")
        assert app.focused is listed
        await pilot.press("down")
        chosen = listed.get_option_at_index(1).id
        await pilot.press("enter")
        await settle(pilot)
        assert picker.value == chosen and app.focused is picker and not listed.display
        assert picker.border_subtitle is not None and screen.titles[chosen][:20] in str(picker.border_subtitle)
        picker.value = "psp"
        await settle(pilot)
        await pilot.press("down", "-")  # typed in the list: it goes to the field
        assert app.focused is picker and picker.value == "psp-"
