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


def _dialogs():
    from workbench.models import Scope
    from workbench.tui.screens.confirm import DiscardScreen
    from workbench.tui.screens.pin_dialog import SnoozeDialog, UnpinDialog
    from workbench.tui.screens.prompt import ConfirmScreen, PromptScreen

    return {
        "discard": lambda: DiscardScreen("your changes to nw-rb-psp-failover"),
        "quit-discard": lambda: DiscardScreen("your unsaved edit of nw-rb-psp-failover", leaving="Quitting"),
        "confirm": lambda: ConfirmScreen("Overwrite the earlier export?", "out/ holds 3 files of an earlier export.",
                                         yes="Overwrite"),
        "prompt": lambda: PromptScreen("Ingest fragment files from folder:", placeholder="sample_corpus/fragments"),
        "snooze": lambda: SnoozeDialog("nw-rb-psp-failover", "PSP failover runbook"),
        "unpin": lambda: UnpinDialog("nw-rb-psp-failover", "PSP failover runbook",
                                     [Scope.parse("org=northwind,repo=payments-api")]),
    }


@pytest.mark.parametrize("dialog", sorted(_dialogs()))
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_dialog(wb, snap_compare, size, dialog):
    async def open_dialog(pilot):
        await settle(pilot)
        pilot.app.push_screen(_dialogs()[dialog]())
        await settle(pilot)
    assert snap_compare(app_for(wb), terminal_size=size, run_before=open_dialog)
