"""How long `workbench serve` takes to stop, and its app processes to end, measured with headless
Chromium: ``python benchmarks/serve_timings.py WORKSPACE [--runs 5]``.

For each run: serve, open the page, wait for the Browse screen, then one of
- tab: close the tab; seconds until the app process is gone;
- browser: kill Chromium; seconds until the app process is gone;
- sigterm: SIGTERM the server; seconds until the server exited (and its app with it);
- frozen: SIGSTOP the app, then SIGTERM the server; seconds until the server exited;
- server-killed: SIGKILL the server; seconds until the app process is gone.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from browser_support import Browser, ensure_chromium, free_port, processes_mentioning, serve  # noqa: E402

CASES = ("tab", "browser", "sigterm", "frozen", "server-killed")


def apps(workspace: Path) -> list[int]:
    return processes_mentioning(f"workbench.tui.served --workspace {workspace}")


def gone(workspace: Path, start: float, timeout: float = 30) -> float:
    while apps(workspace) and time.monotonic() - start < timeout:
        time.sleep(0.02)
    return time.monotonic() - start if not apps(workspace) else float("inf")


def one(chromium: str, workspace: Path, case: str) -> float:
    port = free_port()
    server = serve(workspace, port, "--as", "marco.bianchi")
    browser = Browser(chromium)
    try:
        browser.open(f"http://127.0.0.1:{port}/")
        browser.wait_for_text("nw-adr-0001")
        if case == "tab":
            start = time.monotonic()
            browser.close_tab()
            return gone(workspace, start)
        if case == "browser":
            start = time.monotonic()
            browser.close()
            return gone(workspace, start)
        if case == "frozen":
            for pid in apps(workspace):
                os.kill(pid, signal.SIGSTOP)
        if case in ("sigterm", "frozen"):
            start = time.monotonic()
            os.kill(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
            stopped = time.monotonic() - start
            return max(stopped, gone(workspace, start))
        if case == "server-killed":
            start = time.monotonic()
            os.kill(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
            return gone(workspace, start)
        raise ValueError(case)
    finally:
        browser.close()
        if server.poll() is None:
            os.kill(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        for pid in apps(workspace):
            os.kill(pid, signal.SIGKILL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--case", choices=CASES, action="append")
    args = parser.parse_args()
    chromium, why = ensure_chromium()
    if not chromium:
        print(why, file=sys.stderr)
        return 1
    workspace = args.workspace.resolve()
    for case in args.case or CASES:
        times = [one(chromium, workspace, case) for _ in range(args.runs)]
        print(f"{case:14} median {statistics.median(times):.2f} s  max {max(times):.2f} s  "
              f"({', '.join(f'{t:.2f}' for t in times)})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
