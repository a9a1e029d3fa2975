"""Snapshots of the form screens (Export, Pins, Inbox with its fragments or its proposals focused,
New anti-pattern) at 80×24 and 120×40.

Regenerate after an intended change with:
.venv/bin/python -m pytest tests/test_tui_forms_snapshots.py --snapshot-update
"""

from __future__ import annotations

from datetime import datetime

import pytest
from tui_support import NOW, SIZES, app_for, settle, until

from workbench import Workbench


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def sized(size) -> str:
    return f"{size[0]}x{size[1]}"


async def steady(pilot) -> None:
    """A text cursor that does not blink: a snapshot taken on a busy machine must not catch it in
    its off phase (the cursor is drawn as when it is on)."""
    for widget in pilot.app.screen.query("Input"):
        widget.cursor_blink = False
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES, ids=sized)
def test_export(wb, snap_compare, size):
    async def preview(pilot):
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        pilot.app.screen.query_one("#export-scope").value = "org=northwind,repo=ledger"
        pilot.app.screen.query_one("#export-dir").value = "out/ledger-agents"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "planned" in str(pilot.app.screen.query_one("#export-summary").render()))
        await settle(pilot)
        await steady(pilot)
    assert snap_compare(app_for(wb), terminal_size=size, run_before=preview)


@pytest.mark.parametrize("size", SIZES, ids=sized)
def test_pins(wb, snap_compare, size):
    wb.pin("nw-rb-psp-failover", scope="org=northwind,repo=payments-api", actor="marco.bianchi",
           reason="PSP outages are our worst incidents", until=datetime(2030, 1, 31), now=NOW)

    async def open_pins(pilot):
        await settle(pilot)
        await pilot.press("p")
        await until(pilot, lambda: getattr(pilot.app.screen, "titles", None))
        await settle(pilot)
    assert snap_compare(app_for(wb), terminal_size=size, run_before=open_pins)


@pytest.mark.parametrize("size", SIZES, ids=sized)
def test_inbox(wb, snap_compare, size):
    async def open_inbox(pilot):
        await settle(pilot)
        await pilot.press("i")
        await until(pilot, lambda: getattr(pilot.app.screen, "items", None))
        await settle(pilot)
    assert snap_compare(app_for(wb, "dan.kowalski"), terminal_size=size, run_before=open_inbox)


@pytest.mark.parametrize("size", SIZES, ids=sized)
def test_inbox_proposals(wb, snap_compare, size, monkeypatch):
    """A lead's inbox with the proposals table focused (its title is the first column at 80×24)."""
    monkeypatch.setattr("workbench.service.proposals.secrets.token_hex", lambda n: "c0ffee")  # a fixed id
    wb.propose("Webhook retries: five, then the dead-letter queue", "Five retries, then the DLQ.",
               scope="org=northwind,repo=payments-api", principal="agent.nw-coder", now=NOW)

    async def open_proposals(pilot):
        await settle(pilot)
        await pilot.press("i")
        await until(pilot, lambda: getattr(pilot.app.screen, "proposals", None))
        await settle(pilot)
        pilot.app.screen.query_one("#proposals").focus()
        await settle(pilot)
    assert snap_compare(app_for(wb, "priya.raman"), terminal_size=size, run_before=open_proposals)


@pytest.mark.parametrize("size", SIZES, ids=sized)
def test_antipattern(wb, snap_compare, size):
    async def open_form(pilot):
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await pilot.press(*"Logging webhook payloads")
        await settle(pilot)
        await steady(pilot)
    assert snap_compare(app_for(wb), terminal_size=size, run_before=open_form)
