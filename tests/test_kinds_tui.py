"""The TUI face of principal kinds, driven with Pilot: the write keys an agent may not use are
neither shown nor run (the core says which, ``Workbench.actions``); one with a write grant edits
inside it and reads the core's refusal outside it; nothing is stored by a key that was refused.
(The other faces are in test_kinds_faces.py.)"""

from __future__ import annotations

import shutil

import pytest
from test_kinds_faces import ADR, prepare
from tui_support import LARGE, app_for, save_anyway, settle, until

from workbench import Workbench

ORG_LEVEL = "nw-adr-0002-amounts-as-integer-minor-units"   # org=northwind: outside agent.pay's grant
WRITE_KEYS = {"edit", "revert", "verify", "snooze", "accept", "reject", "pin_row", "unpin_row", "verify_row",
              "snooze_row", "edit_row", "archive_row", "draft"}


@pytest.fixture
def wb(sample_workspace_template, tmp_path):
    root = tmp_path / "ws"
    shutil.copytree(sample_workspace_template, root)
    prepare(root)
    with Workbench.open(root) as bench:
        yield bench


def name(app) -> str:
    return type(app.screen).__name__


def enabled(app) -> set[str]:
    return {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}


async def test_an_agent_is_offered_no_write_and_its_keys_write_nothing(wb):
    before = wb.stats()
    app = app_for(wb, "agent.nw-coder")
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        assert app.offered == frozenset()
        titles = {c.title.split("  ")[0] for c in app.get_system_commands(app.screen)}  # "Browse  b": name, key
        assert "Browse" in titles and not {"New anti-pattern", "Ingest folder"} & titles
        await pilot.press("n")   # the new anti-pattern form: not for an agent
        await settle(pilot)
        assert name(app) != "AntiPatternScreen"

        app.open_fragment(ADR)
        await settle(pilot)
        assert name(app) == "FragmentScreen" and "diff" in enabled(app) and not WRITE_KEYS & enabled(app)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert not [t for t in titles if t.startswith(("Edit this fragment", "Verify this fragment"))], titles
        for key in ("ctrl+e", "ctrl+r", "ctrl+y", "ctrl+k", "ctrl+n", "e", "R", "v"):
            await pilot.press(key)
            await settle(pilot)
            assert name(app) == "FragmentScreen", key

        app.action_browse()
        await until(pilot, lambda: name(app) == "BrowseScreen")
        await settle(pilot)
        app.screen.query_one("DataTable").focus()
        assert not WRITE_KEYS & enabled(app)
        for key in ("ctrl+e", "ctrl+y", "ctrl+k", "ctrl+z", "ctrl+n", "e", "v", "P", "z"):
            await pilot.press(key)
            await settle(pilot)
            assert name(app) == "BrowseScreen", key
    assert wb.stats() == before


async def test_a_granted_agent_edits_inside_its_grant_and_is_told_why_not_outside_it(wb):
    app = app_for(wb, "agent.pay")
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        assert {"edit", "create"} <= app.offered and not {"pin", "review", "nudge"} & app.offered
        app.open_fragment(ADR)
        await settle(pilot)
        assert {"edit_row", "revert", "verify_row"} <= enabled(app)
        await pilot.press("ctrl+e")
        await until(pilot, lambda: name(app) == "EditScreen" and app.screen.ready)
        app.screen.query_one("#editor").load_text("Idempotency keys live 72 hours (checked by agent.pay).")
        app.screen.query_one("#reason").value = "the TTL"
        await pilot.press("ctrl+s")
        await save_anyway(pilot)
        await until(pilot, lambda: name(app) == "FragmentScreen")

        app.open_fragment(ORG_LEVEL)   # visible to it, outside its grant: the core's refusal, shown
        await until(pilot, lambda: name(app) == "FragmentScreen" and getattr(app.screen.fragment, "id", "") == ORG_LEVEL)
        await settle(pilot)
        await pilot.press("ctrl+e")
        await until(pilot, lambda: name(app) == "EditScreen" and app.screen.ready)
        app.screen.query_one("#editor").load_text("Amounts are floats now.")
        app.screen.query_one("#reason").value = "simpler"
        await pilot.press("ctrl+s")
        await settle(pilot)
        shown = str(app.screen.query_one("#errors").render())
        assert "agent.pay is an agent" in shown and "do not cover org=northwind" in shown, shown
    assert [v.author for v in wb.history(ADR, principal="agent.pay")][-1] == "agent.pay"
    assert all(v.author != "agent.pay" for v in wb.history(ORG_LEVEL, principal="agent.pay"))


async def test_a_person_and_a_service_keep_their_keys(wb):
    app = app_for(wb, "marco.bianchi")
    async with app.run_test(size=LARGE) as pilot:
        await settle(pilot)
        app.open_fragment(ADR)
        await settle(pilot)
        assert {"edit_row", "revert", "verify_row", "pin_row", "archive_row"} <= enabled(app)
        assert "New anti-pattern" in {c.title.split("  ")[0] for c in app.get_system_commands(app.screen)}
    service = app_for(wb, "kb.sync")
    async with service.run_test(size=LARGE) as pilot:
        await settle(pilot)
        assert {"edit", "pin"} <= service.offered and "review" not in service.offered
        assert service.offers("pin_row") and not service.offers("accept") and not service.offers("reject")
