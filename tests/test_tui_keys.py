"""The TUI's key grammar, driven with Pilot on the real sample workspace (issue 29):

- ordinary sentences typed into every screen with a field (capitals, digits, punctuation, space)
  change nothing but the field: the same screens stay open and nothing is written to the store;
- the write keys are ctrl+letter and act on the focused row only; verify and archive ask first
  (esc leaves the store as it was); ctrl+o lists the row's actions, each with its key;
- Search: `/` and Up on the first row and Esc on the results return to the query, Esc on the query
  goes back, and typing with the results focused goes into the query (the reported bug: Down, then
  "client retry tokens" opened the editor at the `e`);
- the palette lists each action once, with its key.
"""

from __future__ import annotations

import pytest
from textual.widgets import Input
from tui_support import NOW, SMALL, app_for, confirm, settle, until

from workbench import Workbench

ME = "marco.bianchi"
MINE = "nw-adr-0007-idempotency-keys"          # owned by marco.bianchi
OTHER_MINE = "nw-rb-psp-failover"
AGENT, SCOPE = "agent.nw-coder", "org=northwind,repo=payments-api"
SENTENCES = ("client retry tokens", "Verify the snooze window, archive it; Pin or Unpin? quit? yes 42!")


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def name(app) -> str:
    return type(app.screen).__name__


def stack(app) -> list[str]:
    return [type(s).__name__ for s in app.screen_stack]


def stored(wb) -> tuple:
    """Everything a stray key could have written: every fragment's version, status and verification,
    the pins, snoozes, proposals, and the workspace's counts of fragments, versions and events."""
    fragments = sorted((f.id, f.version, f.status, f.verified_at)
                       for f in wb.list(principal="priya.raman", include_archived=True))
    pins = sorted((p.fragment_id, str(p.scope), p.reason) for p in wb.pins(principal="priya.raman",
                                                                          include_expired=True))
    proposals = sorted((f.id, f.version, f.status) for f in wb.proposals(principal="priya.raman"))
    return fragments, pins, dict(wb.store.snoozes()), proposals, wb.stats()


async def type_into(pilot, field, text: str) -> None:
    """Type ``text`` key by key into ``field`` (which has focus): the field then holds it."""
    await pilot.press(*text)
    await pilot.pause()
    value = field.value if isinstance(field, Input) else field.text
    assert text in value, (field, value)


# -- typing changes nothing but the field ---------------------------------------------------------

async def test_sentences_typed_into_browse_and_search_change_only_their_fields(wb):
    before = stored(wb)
    app = app_for(wb, ME)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        browse = app.screen
        for selector in ("#filter-owner", "#filter-kind"):
            field = browse.query_one(selector)
            browse.set_focus(field)
            for sentence in SENTENCES:
                field.value = ""
                await type_into(pilot, field, sentence)
                assert stack(app)[-1] == "BrowseScreen" and browse.focused is field
            field.value = ""
        assert browse.query_one("#scope-tree").display and not browse.query_one("#filter-stale").value  # no t, s
        await pilot.press("escape")                   # back to the table: now / moves to Search
        await pilot.press("slash")
        await until(pilot, lambda: name(app) == "SearchScreen")
        search, depth = app.screen, len(app.screen_stack)
        query = search.query_one("#search-input")
        await type_into(pilot, query, SENTENCES[0])
        await until(pilot, lambda: search.result is not None and search.result.query == SENTENCES[0]
                    and app.pending == 0, timeout=120)
        assert search.hits
        await pilot.press("down")                    # the reported bug: Down, then type
        assert search.focused is search.query_one("#results")
        await pilot.press(*SENTENCES[1])
        await pilot.pause()
        assert query.value == SENTENCES[0] + SENTENCES[1] and search.focused is query
        assert app.screen is search and len(app.screen_stack) == depth
        await settle(pilot)
    assert stored(wb) == before


async def test_sentences_typed_into_the_editor_and_the_row_dialogs_change_only_their_fields(wb):
    wb.edit(MINE, "Version two body.", reason="v2", actor=ME)   # so the revert dialog has a version to go to
    before = stored(wb)
    app = app_for(wb, ME)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.open_fragment(MINE)
        await settle(pilot)
        fragment, depth = app.screen, len(app.screen_stack)
        await pilot.press("ctrl+e")
        await until(pilot, lambda: name(app) == "EditScreen" and app.screen.ready)
        editor = app.screen
        body, reason = editor.query_one("#editor"), editor.query_one("#reason")
        assert editor.focused is body
        await pilot.press(*SENTENCES[1])
        await pilot.pause()
        assert body.text.startswith(SENTENCES[1]) and app.screen is editor
        editor.set_focus(reason)
        await type_into(pilot, reason, SENTENCES[1])
        assert app.screen is editor
        editor.dismiss(False)                       # leave without saving (the editor's discard asks: not the point)
        await settle(pilot)
        assert app.screen is fragment
        # every dialog with a field a row key opens: the text stays in the field, esc writes nothing
        for key, dialog, selector in (("ctrl+k", "PinDialog", "#pin-dialog-reason"),
                                      ("ctrl+z", "SnoozeDialog", "#snooze-dialog-days"),
                                      ("ctrl+n", "PromptScreen", "#prompt-input"),
                                      ("up", None, None),
                                      ("ctrl+r", "RevertScreen", "#revert-reason")):
            await pilot.press(key)
            if dialog is None:
                continue
            await until(pilot, lambda d=dialog: name(app) == d)
            await settle(pilot)
            field = app.screen.query_one(selector)
            app.screen.set_focus(field)
            await type_into(pilot, field, SENTENCES[1])
            assert name(app) == dialog and len(app.screen_stack) == depth + 1, (key, stack(app))
            app.screen.dismiss(None)                # cancel (the dialogs' own keys are another branch's)
            await settle(pilot)
            assert app.screen is fragment, key
    assert stored(wb) == before


async def test_sentences_typed_into_the_inbox_pins_antipattern_and_export_forms_change_only_their_fields(wb):
    wb.propose("Webhook retries", "Five retries, then the DLQ.", scope=SCOPE, principal=AGENT)
    before = stored(wb)
    app = app_for(wb, ME)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("i")
        await until(pilot, lambda: name(app) == "InboxScreen" and app.screen.proposals)
        await settle(pilot)
        inbox = app.screen
        days = inbox.query_one("#snooze-days")
        inbox.set_focus(days)
        await pilot.press(*SENTENCES[1])            # digits only: the letters are refused, nothing fires
        await pilot.pause()
        assert app.screen is inbox and days.value.isdigit()
        inbox.set_focus(inbox.query_one("#proposals"))
        for key, dialog, selector in (("ctrl+a", "AcceptDialog", "#accept-dialog-reason"),
                                      ("ctrl+r", "RejectDialog", "#reject-dialog-reason")):
            await pilot.press(key)
            await until(pilot, lambda d=dialog: name(app) == d)
            field = app.screen.query_one(selector)
            app.screen.set_focus(field)
            await type_into(pilot, field, SENTENCES[1])
            assert name(app) == dialog, key
            app.screen.dismiss(None)
            await settle(pilot)
            assert app.screen is inbox
        await pilot.press("escape", "p")
        await until(pilot, lambda: name(app) == "PinsScreen" and app.screen.titles)
        pins = app.screen
        picker = pins.query_one("#pin-id")
        assert pins.focused is picker
        await type_into(pilot, picker, SENTENCES[0])
        pins.set_focus(pins.query_one("#pins"))     # typed on the table: into the picker, appended
        await pilot.press(*SENTENCES[1])
        await pilot.pause()
        assert picker.value == SENTENCES[0] + SENTENCES[1] and pins.focused is picker and app.screen is pins
        for selector in ("#pin-until", "#pin-reason"):
            field = pins.query_one(selector)
            pins.set_focus(field)
            await pilot.press(*SENTENCES[1])
            await pilot.pause()
            assert app.screen is pins and field.value and SENTENCES[1].startswith(field.value), field.value
        await pilot.press("escape")
        await settle(pilot)
        app.action_new_antipattern()
        await until(pilot, lambda: name(app) == "AntiPatternScreen")
        await settle(pilot)
        form = app.screen
        for field in form.query("Input, TextArea"):
            if field.disabled or not field.display:
                continue
            form.set_focus(field)
            await type_into(pilot, field, SENTENCES[1])
            assert app.screen is form
        form.dismiss()
        await settle(pilot)
        app.action_export()
        await until(pilot, lambda: name(app) == "ExportScreen")
        await settle(pilot)
        export = app.screen
        folder = export.query_one("#export-dir")
        export.set_focus(folder)
        folder.value = ""
        await type_into(pilot, folder, SENTENCES[1])
        assert app.screen is export
        await settle(pilot)
    assert stored(wb) == before


# -- the ctrl keys act on the focused row only, and the destructive ones ask first -------------------

async def browse_row(pilot, fid: str | None = None):
    """Focus Browse's table on the row of ``fid`` (None: the first row)."""
    screen = pilot.app.screen
    await until(pilot, lambda: screen.items is not None)
    await until(pilot, lambda: screen.query_one("#fragments").row_count == len(screen.rows))
    table = screen.query_one("#fragments")
    screen.set_focus(table)
    table.move_cursor(row=screen._ids.index(fid) if fid else 0)
    await pilot.pause()
    return screen


async def test_verify_asks_first_and_writes_the_focused_row_only(wb):
    before = stored(wb)
    app = app_for(wb, ME)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        screen = await browse_row(pilot, MINE)
        await pilot.press("v")                         # a plain letter never writes
        await pilot.press("ctrl+y")
        await until(pilot, lambda: name(app) == "ConfirmScreen")
        assert MINE in app.screen.message and "still true" in app.screen.message
        await pilot.press("escape")                    # asked, answered no: nothing written
        await settle(pilot)
        assert app.screen is screen
        assert app.call(stored, wb) == before
        screen.set_focus(screen.query_one("#filter-owner"))
        await pilot.press("ctrl+y")                    # no row focused: the key does nothing
        await settle(pilot)
        assert app.screen is screen
        screen.set_focus(screen.query_one("#fragments"))
        await pilot.press("ctrl+y")
        await confirm(pilot)
    verified = {f.id for f in wb.list(principal="priya.raman", include_archived=True) if f.verified_at == NOW}
    assert verified == {MINE}


async def test_archive_asks_first_with_a_reason_and_archives_the_focused_row_only(wb):
    before = {f.id: f.status for f in wb.list(principal=ME, include_archived=True)}
    app = app_for(wb, ME)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await browse_row(pilot, OTHER_MINE)
        await pilot.press("ctrl+n")
        await until(pilot, lambda: name(app) == "PromptScreen")
        assert OTHER_MINE in str(app.screen.question)
        await pilot.press(*"replaced", "escape")        # esc: asks before the typed reason goes
        await until(pilot, lambda: name(app) == "DiscardScreen")
        await pilot.press("ctrl+d")                     # discard it: nothing written
        await settle(pilot)
        assert {f.id: f.status for f in app.call(wb.list, principal=ME, include_archived=True)} == before
        await pilot.press("ctrl+n")
        await until(pilot, lambda: name(app) == "PromptScreen")
        await pilot.press(*"replaced by the failover ADR", "enter")
        await until(pilot, lambda: name(app) == "BrowseScreen" and app.pending == 0)
        await settle(pilot)
    after = {f.id: f.status for f in wb.list(principal=ME, include_archived=True)}
    assert {fid for fid in after if after[fid] != before[fid]} == {OTHER_MINE} and after[OTHER_MINE] == "archived"
    assert wb.history(OTHER_MINE, principal=ME)[-1].reason == "replaced by the failover ADR"


async def test_the_actions_menu_lists_what_the_principal_may_do_with_keys_and_runs_the_pick(wb):
    verified = wb.get(MINE, principal=ME).verified_at
    app = app_for(wb, ME)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        screen = await browse_row(pilot, MINE)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: name(app) == "ActionsMenu")
        menu = app.screen
        assert [(e.action, e.key) for e in menu.entries] == [
            ("open_row", "enter"), ("edit_row", "^e"), ("pin_row", "^k"), ("unpin_row", "^u"),
            ("verify_row", "^y"), ("snooze_row", "^z"), ("archive_row", "^n")]
        assert MINE in str(menu.query_one("#actions-menu-subject").render())
        await pilot.press("escape")                    # closes, does nothing
        await settle(pilot)
        assert app.screen is screen
        await pilot.press("ctrl+o")
        await until(pilot, lambda: name(app) == "ActionsMenu")
        await pilot.press("down", "down", "down", "down", "enter")   # open, edit, pin, unpin, verify
        await until(pilot, lambda: name(app) == "ConfirmScreen")     # verify asks first, as its key does
        await pilot.press("escape")
        await settle(pilot)
    assert wb.get(MINE, principal=ME).verified_at == verified

    agent = app_for(wb, AGENT)                        # an agent may take no write: open is all it is offered
    async with agent.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await browse_row(pilot)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: name(agent) == "ActionsMenu")
        assert [e.action for e in agent.screen.entries] == ["open_row"]
        await pilot.press("enter")
        await until(pilot, lambda: name(agent) == "FragmentScreen")


# -- Search: the query is never far -------------------------------------------------------------------

async def test_search_slash_up_and_escape_return_to_the_query(wb):
    app = app_for(wb, ME)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("slash")
        await until(pilot, lambda: name(app) == "SearchScreen")
        search = app.screen
        query, results = search.query_one("#search-input"), search.query_one("#results")
        await pilot.press(*"retry/backoff")             # `/` is typed while the query has focus
        await until(pilot, lambda: search.result is not None and app.pending == 0, timeout=120)
        assert query.value == "retry/backoff" and len(search.hits) > 2
        await pilot.press("down", "down", "down")      # into the results, two rows down
        assert search.focused is results and results.cursor_row == 2
        await pilot.press("slash")                     # from the results: back to the query
        assert search.focused is query and query.value == "retry/backoff"
        await pilot.press("down", "up")                # Up leaves only from the first row
        assert search.focused is results
        results.move_cursor(row=1)
        await pilot.press("up")
        assert search.focused is results and results.cursor_row == 0
        await pilot.press("up")
        assert search.focused is query
        await pilot.press("down", "escape")            # Esc on the results: the query
        assert search.focused is query and app.screen is search
        await pilot.press("escape")                    # Esc on the query: back
        await settle(pilot)
        assert name(app) == "BrowseScreen"


# -- the palette ------------------------------------------------------------------------------------

async def test_the_palette_lists_each_action_once_with_its_key(wb):
    app = app_for(wb, ME)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert len(titles) == len(set(titles))
        assert not [t for t in titles if "this screen" in t]
        for expected in ("Snooze the highlighted fragment  ^z", "Verify the highlighted fragment  ^y",
                         "Archive the highlighted fragment  ^n", "Browse  b", "Search  /", "Help  ?", "Quit  q"):
            assert expected in titles, titles
        assert len([t for t in titles if t.startswith("Snooze")]) == 1
