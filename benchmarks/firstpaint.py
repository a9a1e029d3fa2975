"""TUI latency probes for the benchmark, run headless in a fresh process so imports count.

`python benchmarks/firstpaint.py WORKSPACE PRINCIPAL` prints "painted ROWS" once the browse
screen is mounted and rendered; the parent (bench.py) measures from spawning the process.

With `--full QUERY FRAGMENT_ID` it goes on as a user would, with the model loading in the
background as in `workbench tui`, and prints one JSON line of seconds:
- ``first_search_s``: from process start (``WORKBENCH_PROBE_T0``, the parent's wall clock at spawn)
  to the first result row of QUERY, pasted into the search screen right after the first paint;
- ``open_after_idle_s``: opening FRAGMENT_ID after 10 s without any action, until its body, metadata
  and history are in the screen's widgets (``..._settled_s``: until the app is idle again);
- ``quit_at``: the wall-clock time quit was pressed (the parent measures until the process ends).

A script of the benchmark, not of the package: it imports ``workbench`` as an installed package.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

IDLE_S = float(os.environ.get("WORKBENCH_PROBE_IDLE_S", "10"))  # bench.py sets it


async def _wait(condition, what: str, step: float = 0.01, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        await asyncio.sleep(step)


async def _paint(workspace: str, principal: str, full: tuple[str, str] | None = None) -> None:
    from workbench.service import Workbench
    from workbench.tui.app import WorkbenchApp, close_quickly

    t0 = float(os.environ.get("WORKBENCH_PROBE_T0", time.time()))
    wb = Workbench.open(workspace)
    app = WorkbenchApp(wb, principal=principal, load_model=full is not None)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.first_paint_at is None:
            await asyncio.sleep(0.005)
        rows = app.screen.query_one("#fragments").row_count
        print(f"painted {rows}", flush=True)
        if full is None:
            app.action_quit()
            close_quickly(app, wb)
            return
        query, fragment_id = full
        out: dict[str, float | str] = {"model_at_first_search": app.model_state,
                                       "painted_s": round(time.time() - t0, 3)}
        await pilot.press("slash")
        app.screen.query_one("#search-input").insert_text_at_cursor(query)  # pasted, as typing speed is the user's
        out["typed_s"] = round(time.time() - t0, 3)
        def results() -> int:
            found = app.screen.query("#results")
            return found.first().row_count if len(found) else 0
        await _wait(results, "a search result")
        out["first_search_s"] = round(time.time() - t0, 3)
        await _wait(lambda: app.model_ready, "the model")  # let the background load finish: the idle spell is idle
        await pilot.press("escape")
        await asyncio.sleep(IDLE_S)
        t = time.perf_counter()
        app.open_fragment(fragment_id)
        await _wait(lambda: getattr(app.screen, "fragment", None) is not None, f"fragment {fragment_id}", 0.002)
        out["open_after_idle_s"] = round(time.perf_counter() - t, 4)
        await pilot.pause()                                   # and laid out, with nothing left pending
        out["open_after_idle_settled_s"] = round(time.perf_counter() - t, 4)
        out["quit_at"] = time.time()
        print(json.dumps(out), flush=True)
        app.action_quit()
    close_quickly(app, wb)


if __name__ == "__main__":
    args = sys.argv[1:]
    full = (args[args.index("--full") + 1], args[args.index("--full") + 2]) if "--full" in args else None
    asyncio.run(_paint(args[0], args[1], full))
    from workbench.tui.app import end_process

    end_process(0)  # as `workbench tui` ends
