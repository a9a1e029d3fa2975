"""Shared helpers for the TUI tests: wait for background jobs, and check what a user can see."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from datetime import datetime

from workbench.tui.app import WorkbenchApp

NOW = datetime(2026, 11, 30, 12, 0)
SMALL = (80, 24)      # a plain terminal
LARGE = (120, 40)     # a roomy one
SIZES = [SMALL, LARGE]


class AppUnderTest(WorkbenchApp):
    """The app, whose ``run_test`` returns only when no job of it is still inside the workspace: quit
    does not wait for jobs in flight, and a test that reads the workspace after the app (or closes it)
    would otherwise race the job's use of the one DuckDB connection."""

    wait_jobs_at_exit = True

    def location(self) -> str:
        """A local workspace as its last folder (``local …/sample-ws``): snapshots show the same
        header wherever the test's folder is (tests/test_tui_connection.py checks the real one)."""
        from workbench.tui.connection import shortened

        return shortened(super().location())

    @asynccontextmanager
    async def run_test(self, *args, **kwargs):
        async with super().run_test(*args, **kwargs) as pilot:
            yield pilot
        if self.wait_jobs_at_exit:
            assert await asyncio.to_thread(self.wait_for_jobs, 60), "a job still holds the workspace"


def app_for(wb, principal="marco.bianchi", **kw) -> WorkbenchApp:
    return AppUnderTest(wb, principal=principal, now=NOW, load_model=False, **kw)


async def until(pilot, condition, timeout=60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError("timed out waiting for the UI")
        await pilot.pause(0.05)


async def settle(pilot, timeout=60.0) -> None:
    """Wait until every job submitted to the app has been delivered, then let the UI repaint."""
    await pilot.pause()
    # a screen that loads its fragment off the UI thread submits the load when it mounts, which a loaded
    # machine may not have done yet when the count of jobs is first read: wait for the fragment too
    await until(pilot, lambda: pilot.app.pending == 0 and getattr(pilot.app.screen, "fragment", True) is not None,
                timeout)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.05)  # widgets that mount their content in steps (Markdown) finish on a loaded machine
    for widget in pilot.app.screen.query("Input, TextArea"):
        widget.cursor_blink = False  # a snapshot on a busy machine must not catch a cursor in its off phase
    await pilot.pause()


def inside_screen(app, widget) -> bool:
    """Whether the widget is displayed and its whole region lies inside the terminal."""
    region = widget.region
    width, height = app.size
    return (widget.display and region.width > 0 and region.height > 0 and region.x >= 0 and region.y >= 0
            and region.right <= width and region.bottom <= height)


def column_visible(app, table, label: str, min_width: int = 12) -> bool:
    """Whether the DataTable column ``label`` is on screen without scrolling, at least ``min_width`` wide."""
    x = table.region.x - int(table.scroll_x)
    for column in table.ordered_columns:
        width = column.get_render_width(table)
        if str(column.label) == label:
            shown = min(x + width, table.region.right) - max(x, table.region.x)
            return shown >= min(min_width, width) and x >= table.region.x
        x += width
    raise AssertionError(f"no column {label!r} in {[str(c.label) for c in table.ordered_columns]}")


def cell(table, row: int, key: str) -> str:
    """The text of one cell, by column key (the columns a FitTable shows depend on its width)."""
    return str(table.get_cell_at((row, table.get_column_index(key))))


def visible_columns(table) -> list[str]:
    """The keys of the columns wholly inside a table's visible region, left to right: its fixed
    columns, then those the horizontal scroll leaves in view (the vertical scrollbar excluded)."""
    view = table.scrollable_content_region.width
    x, fixed_w, out = 0, 0, []
    for j, column in enumerate(table.ordered_columns):
        width = column.get_render_width(table)
        fixed = j < table.fixed_columns
        left = x if fixed else x - int(table.scroll_x)
        fixed_w += width if fixed else 0
        if (fixed or left >= fixed_w) and left + width <= view:
            out.append(column.key.value)
        x += width
    return out


async def scrolls_by_column(pilot, table) -> None:
    """→ on a table wider than its region scrolls one whole column (the first scrolling column
    leaves, the rest move left by its width), repeated → reach the last column in fewer presses
    than there are columns, and ← comes back the same way."""
    table.focus()
    await pilot.pause()
    assert table.scroll_x == 0 and table.max_scroll_x > 0, "the table does not overflow"
    before = visible_columns(table)
    first = table.ordered_columns[table.fixed_columns]
    await pilot.press("right")
    await pilot.pause()
    assert table.scroll_x == min(first.get_render_width(table), table.max_scroll_x)
    after = visible_columns(table)
    assert first.key.value not in after and [k for k in before if k != first.key.value] == after[:len(before) - 1]
    presses = 1
    while table.scroll_x < table.max_scroll_x:
        await pilot.press("right")
        await pilot.pause()
        presses += 1
        assert presses < len(table.ordered_columns), "→ did not reach the last column a column at a time"
    assert visible_columns(table)[-1] == table.ordered_columns[-1].key.value
    for _ in range(presses):
        await pilot.press("left")
    await pilot.pause()
    assert table.scroll_x == 0 and visible_columns(table) == before


async def save_anyway(pilot) -> bool:
    """After ctrl+s in the editor: when the edit-impact dialog asks (the edit changes golden queries),
    answer "Save anyway" and wait for the save; whether it asked."""
    await settle(pilot)
    if type(pilot.app.screen).__name__ != "SaveAnywayScreen":
        return False
    await pilot.press("ctrl+s")
    await settle(pilot)
    return True


async def confirm(pilot) -> None:
    """Answer yes to the confirmation dialog on top (verify, unpin, ... ask first), with its confirm key."""
    await until(pilot, lambda: type(pilot.app.screen).__name__ == "ConfirmScreen")
    await pilot.press("ctrl+s" if "ctrl+s" in pilot.app.active_bindings else "y")
    await settle(pilot)
