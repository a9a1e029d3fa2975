"""`workbench serve` serves the TUI in a browser over loopback (textual-serve), and its processes
live exactly as long as their pages: the Browse screen renders in headless Chromium, a start-up
failure shows in the page, closing the tab (or the browser) ends the app, and the server stops
within 2 s on SIGTERM.

The browser tests use Debian's chromium (installed by the set-up when absent and possible, else
skipped with the reason); see tests/browser_support.py for how the page's text is read."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from browser_support import Browser, ensure_chromium, free_port, processes_mentioning, serve
from conftest import WORKBENCH_BIN

BROWSE = ("as marco.bianchi", "nw-adr-0001", "ADR-0001")  # the header, a fragment id and its title


@pytest.fixture(scope="session")
def chromium() -> str:
    path, why = ensure_chromium()
    if not path:
        pytest.skip(why)
    return path


def app_pids(workspace: Path) -> list[int]:
    return processes_mentioning(f"workbench.tui.served --workspace {workspace}")


def wait_until(condition, timeout: float) -> float | None:
    """Seconds until ``condition()`` held, or None if it did not within ``timeout``."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if condition():
            return time.monotonic() - start
        time.sleep(0.05)
    return None


@contextmanager
def served(workspace: Path, *args: str, env: dict | None = None, argv: list[str] | None = None):
    """`workbench serve --as marco.bianchi` on a free port; yields (server process, url). Cleans up
    after itself: the server and any app process it left (they run in sessions of their own)."""
    port = free_port()
    if argv is None:
        proc = serve(workspace, port, "--as", "marco.bianchi", *args, env=env, bin_=WORKBENCH_BIN)
    else:
        proc = serve(workspace, port, env=env, argv=argv)
    try:
        yield proc, f"http://127.0.0.1:{port}/"
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for pid in app_pids(workspace):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_serve_answers_on_loopback(sample_workspace):
    with served(sample_workspace) as (proc, url):
        with urllib.request.urlopen(url, timeout=5) as response:
            status, html = response.status, response.read().decode("utf-8", "replace")
        assert status == 200 and "workbench" in html and "<html" in html.lower()
        port = int(url.rsplit(":", 1)[1].strip("/"))
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only, never 0.0.0.0 or an IPv6 address


def listening_addresses(port: int) -> set[str]:
    """The local addresses (as /proc/net/tcp* writes them) listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_serve_refuses_a_missing_workspace(tmp_path, cli):
    r = cli("serve", "--port", "8123", workspace=tmp_path / "none")
    assert r.returncode == 2 and "no workspace" in r.stderr


def test_serve_refuses_an_unknown_principal_before_serving(sample_workspace, cli):
    r = cli("serve", "--port", str(free_port()), "--as", "no.body", workspace=sample_workspace, timeout=30)
    assert r.returncode == 2 and "unknown principal 'no.body'" in r.stderr


def test_serve_says_when_the_port_is_taken(sample_workspace, cli):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = cli("serve", "--port", str(s.getsockname()[1]), "--as", "marco.bianchi", workspace=sample_workspace,
                real=True, timeout=30)
    assert r.returncode == 2 and "cannot serve on 127.0.0.1:" in r.stderr and "Traceback" not in r.stderr


async def test_the_start_up_failure_app_shows_its_message():
    from workbench.tui.served import StartFailed

    app = StartFailed("workspace busy: another workbench process is using /w")
    async with app.run_test(size=(80, 24)) as pilot:
        shown = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "could not start" in shown and "workspace busy: another workbench process is using /w" in shown
        await pilot.press("q")
    assert app.return_code == 0


def test_the_browse_screen_renders_in_the_browser(sample_workspace, chromium, tmp_path):
    with served(sample_workspace) as (_, url), Browser(chromium) as browser:
        browser.open(url)
        text = browser.wait_for_text(*BROWSE)
        assert "-first-byte" in browser.body_classes()  # the splash screen is gone
        assert "69 fragments" in text or "(69)" in text
        shot = tmp_path / "browse.png"
        browser.screenshot(shot)
        png = shot.read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (1280, 800)


def test_closing_the_tab_or_the_browser_ends_the_app_process(sample_workspace, chromium):
    with served(sample_workspace) as (proc, url), Browser(chromium) as browser:
        browser.open(url)
        browser.wait_for_text(*BROWSE)
        assert len(app_pids(sample_workspace)) == 1
        browser.close_tab()
        assert wait_until(lambda: not app_pids(sample_workspace), 5) is not None, "the app outlived its tab"

        browser.open(url)
        browser.wait_for_text(*BROWSE)
        assert len(app_pids(sample_workspace)) == 1
        browser.close()  # the browser killed: no goodbye from the page
        assert wait_until(lambda: not app_pids(sample_workspace), 5) is not None, "the app outlived its browser"
        assert proc.poll() is None  # the server serves on


def test_a_reload_while_the_app_starts_shows_the_browse_screen(sample_workspace, chromium):
    """The first app, stopped while starting, lets the workspace go for the reloaded page's app."""
    with served(sample_workspace) as (_, url), Browser(chromium) as browser:
        browser.open(url)
        assert wait_until(lambda: app_pids(sample_workspace), 10) is not None
        browser.send("Page.reload")
        browser.wait_for_text(*BROWSE)
        assert wait_until(lambda: len(app_pids(sample_workspace)) == 1, 5) is not None


def test_sigterm_stops_the_server_within_2s_and_ends_its_apps(sample_workspace, chromium):
    with served(sample_workspace) as (proc, url), Browser(chromium) as browser:
        browser.open(url)
        browser.wait_for_text(*BROWSE)
        assert app_pids(sample_workspace)
        start = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)  # the server alone, not its process group
        proc.wait(timeout=30)
        stopped = time.monotonic() - start
        assert stopped < 2.0, f"the server took {stopped:.2f} s to stop"
        assert not app_pids(sample_workspace)
        assert wait_until(lambda: "-closed" in browser.body_classes(), 5) is not None  # "Session ended"


def test_an_app_that_does_not_answer_is_killed(sample_workspace, chromium):
    """A frozen app (SIGSTOP: as one stuck in a long call) is killed when its tab closes, and when
    the server stops, which still takes under 2 s."""
    with served(sample_workspace) as (proc, url), Browser(chromium) as browser:
        browser.open(url)
        browser.wait_for_text(*BROWSE)
        [pid] = app_pids(sample_workspace)
        os.kill(pid, signal.SIGSTOP)
        browser.close_tab()
        assert wait_until(lambda: not app_pids(sample_workspace), 6) is not None, "a frozen app outlived its tab"

        browser.open(url)
        browser.wait_for_text(*BROWSE)
        [pid] = app_pids(sample_workspace)
        os.kill(pid, signal.SIGSTOP)
        start = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        stopped = time.monotonic() - start
        assert stopped < 2.0, f"the server took {stopped:.2f} s to stop"
        assert wait_until(lambda: not app_pids(sample_workspace), 1) is not None


def test_an_app_whose_server_died_ends(sample_workspace, chromium):
    with served(sample_workspace) as (proc, url), Browser(chromium) as browser:
        browser.open(url)
        browser.wait_for_text(*BROWSE)
        assert app_pids(sample_workspace)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_until(lambda: not app_pids(sample_workspace), 5) is not None, "the app outlived its server"


def test_a_busy_workspace_shows_its_message_in_the_page(sample_workspace, chromium):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time, duckdb\n"
        f"con = duckdb.connect({str(sample_workspace / 'workbench.duckdb')!r})\n"
        "print('holding', flush=True)\n"
        "time.sleep(300)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with served(sample_workspace, env={"WORKBENCH_LOCK_TIMEOUT": "1"}) as (proc, url), \
                Browser(chromium) as browser:
            browser.open(url)
            text = browser.wait_for_text("could not start", "workspace busy", timeout=60)
            assert str(sample_workspace) in text.replace("\n", "").replace("┃", "").replace(" ", "") \
                or "another workbench process" in text
            browser.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
            browser.send("Input.insertText", {"text": "q"})  # q closes it: the page says the session ended
            assert wait_until(lambda: "-closed" in browser.body_classes(), 10) is not None
            assert wait_until(lambda: not app_pids(sample_workspace), 5) is not None
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_an_app_that_dies_before_starting_leaves_its_last_words_in_the_page(sample_workspace, chromium):
    crash = [sys.executable, "-c", "import sys; sys.stderr.write('boom: the app could not import\\n'); sys.exit(3)"]
    server = [sys.executable, "-c", (
        "import sys\nfrom pathlib import Path\nfrom workbench.tui.serve import WorkbenchServer\n"
        "s = WorkbenchServer(Path(sys.argv[1]), port=int(sys.argv[2]))\n"
        f"s.argv = {crash!r}\n"
        "s.serve()\n")]
    with served(sample_workspace, argv=server) as (_, url), Browser(chromium) as browser:
        browser.open(url)
        browser.wait_for_text("ended before it started", "boom: the app could not import", timeout=30)


# every host name resolves to nothing, except loopback: a request for an outside address cannot be answered
NO_NETWORK = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",)


def test_the_page_makes_no_request_beyond_loopback_and_renders_browse_and_search(sample_workspace, chromium):
    from urllib.parse import urlsplit

    with served(sample_workspace) as (_, url), Browser(chromium, extra_args=NO_NETWORK) as browser:
        browser.open(url, record_network=True)
        browser.wait_for_text(*BROWSE)
        browser.type_text("/")   # Search, from Browse
        browser.wait_for_text("search as you type")
        browser.type_text("kafka consumer lag")
        browser.wait_for_text("nw-rb-kafka", "to avoid for")
        requested = browser.requested()
        outside = [u for u in requested if urlsplit(u).scheme not in ("data", "blob")
                   and urlsplit(u).hostname != "127.0.0.1"]
        assert outside == [], outside
        assert any(u.endswith("/static/js/textual.js") for u in requested)
        assert any(u.endswith(".ttf") for u in requested)   # Roboto Mono, from textual-serve's static folder
        assert any(u.startswith("ws://127.0.0.1:") for u in requested)
        page = urllib.request.urlopen(url, timeout=10).read().decode()
        assert "googleapis" not in page and "//fonts." not in page
