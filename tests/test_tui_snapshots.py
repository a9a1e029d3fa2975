"""Snapshot tests of the main TUI screens (pytest-textual-snapshot), with a fixed clock.

Regenerate after an intended change with: .venv/bin/python -m pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from workbench import Workbench
from workbench.tui.app import WorkbenchApp

NOW = datetime(2026, 11, 30, 12, 0)
SIZE = (160, 44)


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def app(wb, principal="marco.bianchi"):
    return WorkbenchApp(wb, principal=principal, now=NOW, load_model=False)


def test_browse(wb, snap_compare):
    assert snap_compare(app(wb), terminal_size=SIZE)


def test_fragment(wb, snap_compare):
    async def open_it(pilot):
        pilot.app.open_fragment("nw-adr-0007-idempotency-keys")
        await pilot.pause()
    assert snap_compare(app(wb), terminal_size=SIZE, run_before=open_it)


def test_search(wb, snap_compare):
    async def search(pilot):
        await pilot.press("slash")
        await pilot.pause()
        pilot.app.screen.run_search("customer charged twice when the client retries")
        for _ in range(600):
            if pilot.app.screen.query_one("#results").row_count:
                break
            await asyncio.sleep(0.05)
        await pilot.press("f2")  # the explain pane shows stage timings, which vary run to run
        await pilot.pause()
    assert snap_compare(app(wb), terminal_size=SIZE, run_before=search)


def test_help(wb, snap_compare):
    assert snap_compare(app(wb), terminal_size=SIZE, press=["question_mark"])
