"""Issue 29, forms keep work: an anti-pattern is edited in the TUI as the form it was written in
(don't / why / instead / evidence, prefilled from the latest version) and saved as a new version
through the core's edit path, read back with the CLI; lists typed into the forms are lists."""

from __future__ import annotations

import json

from tui_support import SMALL, app_for, inside_screen, save_anyway, settle, until

from workbench import Workbench

AP = "nw-ap-retry-without-idempotency-key"


def name(app) -> str:
    return type(app.screen).__name__


async def test_an_antipattern_is_edited_as_its_form_into_a_new_version(sample_workspace, cli):
    from workbench.tui.screens.edit import EditScreen

    with Workbench.open(sample_workspace) as wb:
        before = wb.get(AP, principal="marco.bianchi")
        app = app_for(wb)
        async with app.run_test(size=SMALL) as pilot:
            await settle(pilot)
            app.open_fragment(AP)
            await until(pilot, lambda: name(app) == "FragmentScreen" and app.screen.fragment is not None)
            app.push_screen(EditScreen(AP, base=before.version))   # what the edit key opens
            await until(pilot, lambda: name(app) == "EditScreen" and app.screen.ready)
            await settle(pilot)
            editor = app.screen
            # prefilled from the latest version, every field and Save on screen at 80×24
            assert editor.query_one("#ap-edit-dont").value == before.content.detail("dont")
            assert editor.query_one("#ap-edit-evidence").value == "INC-2291, INC-2745, nw-note-postmortem-inc-2291"
            for selector in ("#ap-edit-dont", "#ap-edit-why", "#ap-edit-instead", "#ap-edit-evidence", "#reason",
                             "#save"):
                assert inside_screen(app, editor.query_one(selector)), selector
            assert editor.query_one("#ap-edit-dont").has_focus
            editor.query_one("#ap-edit-instead").value = "Persist one key per operation and reuse it on every retry"
            editor.query_one("#ap-edit-evidence").focus()
            await pilot.press("end", *", INC-3001,")
            editor.query_one("#reason").focus()      # leaving the field shows it back as a list
            await settle(pilot)
            assert editor.query_one("#ap-edit-evidence").value.endswith("nw-note-postmortem-inc-2291, INC-3001")
            await pilot.press(*"cite INC-3001", "ctrl+s")
            await save_anyway(pilot)
            await until(pilot, lambda: name(app) == "FragmentScreen" and app.pending == 0)
    r = cli("show", AP, "--json", "--as", "marco.bianchi", workspace=sample_workspace)
    shown = json.loads(r.stdout)
    assert shown["version"] == before.version + 1
    assert shown["details"]["instead"] == "Persist one key per operation and reuse it on every retry"
    assert shown["details"]["evidence"] == ["INC-2291", "INC-2745", "nw-note-postmortem-inc-2291", "INC-3001"]
    assert shown["details"]["dont"] == before.content.detail("dont") and shown["body"] == before.body
    history = json.loads(cli("history", AP, "--json", "--as", "marco.bianchi", workspace=sample_workspace).stdout)
    assert history[-1]["reason"] == "cite INC-3001"


async def test_evidence_and_tags_typed_in_the_form_are_stored_as_lists(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        app = app_for(wb)
        async with app.run_test(size=SMALL) as pilot:
            await settle(pilot)
            await pilot.press("n")
            await until(pilot, lambda: name(app) == "AntiPatternScreen")
            form = app.screen
            for field, value in (("title", "Logging webhook payloads"), ("dont", "Do not log raw payloads"),
                                 ("why", "they carry PANs"), ("instead", "log the event id only")):
                form.query_one(f"#ap-{field}").value = value
            form.query_one("#ap-evidence").focus()
            await pilot.press(*"INC-3001,")
            form.query_one("#ap-tags").focus()
            await pilot.press(*"pci,logging,pci")
            form.query_one("#ap-title").focus()
            await settle(pilot)
            assert form.query_one("#ap-evidence").value == "INC-3001"            # shown back as a list
            assert form.query_one("#ap-tags").value == "pci, logging"
            await pilot.press("ctrl+s")
            await until(pilot, lambda: name(app) == "FragmentScreen")
            await settle(pilot)
        created = wb.get("nw-ap-logging-webhook-payloads", principal="marco.bianchi")
        assert created.content.detail("evidence") == ("INC-3001",) and created.tags == ("pci", "logging")
