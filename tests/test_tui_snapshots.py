"""Snapshot of the Help screen at both sizes (pytest-textual-snapshot), with a fixed clock.

Every other screen has its snapshots beside its Pilot tests: test_tui_browse_search_snapshots.py,
test_tui_fragment_snapshots.py and test_tui_forms_snapshots.py (each at 80×24 and 120×40).
Regenerate after an intended change with: .venv/bin/python -m pytest tests/test_tui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import pytest
from tui_support import SIZES, app_for, settle

from workbench import Workbench


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help(wb, snap_compare, size):
    async def open_help(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
    assert snap_compare(app_for(wb), terminal_size=size, run_before=open_help)
