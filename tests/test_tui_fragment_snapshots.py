"""Snapshots of the Fragment screen, its diff view, the revert dialog and the editor, at 80×24 and
120×40 (pytest-textual-snapshot, fixed clock; writes made here are stamped with a fixed time).

Regenerate after an intended change with:
.venv/bin/python -m pytest tests/test_tui_fragment_snapshots.py --snapshot-update
"""

from __future__ import annotations

from datetime import datetime

import pytest
from tui_support import SIZES, app_for, settle, until

from workbench import Workbench

ANTI_PATTERN = "nw-ap-retry-without-idempotency-key"   # has don't / why / instead and evidence
RUNBOOK = "nw-rb-psp-failover"
WRITTEN_AT = datetime(2026, 11, 30, 11, 0)


@pytest.fixture
def wb(sample_workspace, monkeypatch):
    monkeypatch.setattr("workbench.service.fragments.utcnow", lambda: WRITTEN_AT)
    with Workbench.open(sample_workspace) as bench:
        yield bench


def opened(fid, *keys):
    async def run_before(pilot):
        await settle(pilot)
        pilot.app.open_fragment(fid)
        # the screen loads its fragment off the UI thread: wait for it, not only for the jobs counted so far
        await until(pilot, lambda: getattr(pilot.app.screen, "fragment", None) is not None)
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_fragment(wb, snap_compare, size):
    assert snap_compare(app_for(wb), terminal_size=size, run_before=opened(ANTI_PATTERN))


@pytest.mark.parametrize("size", SIZES)
def test_fragment_details_folded(wb, snap_compare, size):
    assert snap_compare(app_for(wb), terminal_size=size, run_before=opened(ANTI_PATTERN, "m"))


@pytest.mark.parametrize("size", SIZES)
def test_diff(wb, snap_compare, size):
    wb.edit(RUNBOOK, "Version two body.\n\nShorter steps.", reason="shorter steps", actor="marco.bianchi")
    assert snap_compare(app_for(wb), terminal_size=size, run_before=opened(RUNBOOK, "d"))


@pytest.mark.parametrize("size", SIZES)
def test_revert_dialog(wb, snap_compare, size):
    wb.edit(RUNBOOK, "Version two body.\n\nShorter steps.", reason="shorter steps", actor="marco.bianchi")
    assert snap_compare(app_for(wb), terminal_size=size, run_before=opened(RUNBOOK, "up", "ctrl+r"))


@pytest.mark.parametrize("size", SIZES)
def test_editor(wb, snap_compare, size):
    assert snap_compare(app_for(wb), terminal_size=size, run_before=opened(RUNBOOK, "ctrl+e"))


@pytest.mark.parametrize("size", SIZES)
def test_conflict_dialog(wb, snap_compare, size):
    async def run_before(pilot):
        await opened(RUNBOOK, "ctrl+e")(pilot)
        with pilot.app.lock:  # saved by someone else while the editor is open
            wb.edit(RUNBOOK, "Saved by priya meanwhile.", reason="priya's fix", actor="priya.raman")
        await pilot.press(*"TUI note. ")
        pilot.app.screen.query_one("#reason").value = "tui note"
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert snap_compare(app_for(wb), terminal_size=size, run_before=run_before)
