"""Time to first paint, for the benchmark: `python -m workbench.tui.firstpaint WORKSPACE PRINCIPAL`
opens the workspace, runs the app headless and prints "painted" once the browse screen is
mounted and rendered. The parent measures from spawning the process (imports included)."""

from __future__ import annotations

import asyncio
import sys


async def _paint(workspace: str, principal: str) -> None:
    from ..service import Workbench
    from .app import WorkbenchApp

    with Workbench.open(workspace) as wb:
        app = WorkbenchApp(wb, principal=principal, load_model=False)
        async with app.run_test(size=(160, 45)):
            while app.first_paint_at is None:
                await asyncio.sleep(0.005)
            rows = app.screen.query_one("#fragments").row_count
            print(f"painted {rows}", flush=True)


if __name__ == "__main__":
    asyncio.run(_paint(sys.argv[1], sys.argv[2]))
