"""Headless Chromium for the `workbench serve` tests: find (or install) Debian's chromium, drive it
over the Chrome DevTools Protocol on a pipe (``--remote-debugging-pipe``: no port, no websocket
client needed), and read what xterm.js shows.

textual-serve draws the terminal on a canvas, so the page's DOM holds no text. A script injected
before the page loads keeps a handle on the xterm.js ``Terminal`` (textual.js stores it as
``this.terminal``), and ``screen_text()`` reads its buffer: the very cells xterm paints.

Also a script: ``python tests/browser_support.py WORKSPACE OUT.png [--as USER]`` serves the
workspace, opens it at 1280×800 and saves a screenshot of the Browse screen.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WIDTH, HEIGHT = 1280, 800

# keeps the first xterm.js Terminal assigned to `.terminal` as window.__wbTerminal
_HOOK = """
Object.defineProperty(Object.prototype, 'terminal', {configurable: true, set(v) {
  Object.defineProperty(this, 'terminal', {value: v, writable: true, configurable: true, enumerable: true});
  if (!window.__wbTerminal && v && v.buffer && v.buffer.active && typeof v.onData === 'function') {
    window.__wbTerminal = v;
  }
}});
"""

_SCREEN = """(() => {
  const t = window.__wbTerminal;
  if (!t) return null;
  const b = t.buffer.active, rows = [];
  for (let i = 0; i < t.rows; i++) {
    const line = b.getLine(b.viewportY + i);
    rows.push(line ? line.translateToString(true) : '');
  }
  return rows.join('\\n');
})()"""


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def ensure_chromium() -> tuple[str | None, str]:
    """The path of a Chromium, installing Debian's package when absent and possible; else
    (None, why not)."""
    found = find_chromium()
    if found:
        return found, ""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None, "chromium is not installed and cannot be installed here (needs root and apt-get)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "install", "-y", "-q", "chromium"],
                ["sh", "-c", "apt-get update -q && apt-get install -y -q chromium"]):
        try:
            r = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"installing chromium failed: {e}"
        found = find_chromium()
        if r.returncode == 0 and found:
            return found, ""
    return None, f"`apt-get install -y chromium` failed: {(r.stderr or r.stdout).strip()[-300:]}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One headless Chromium, spoken to over the DevTools pipe (fd 3 in, fd 4 out)."""

    def __init__(self, chromium: str, *, extra_args: tuple[str, ...] = ()):
        self.profile = tempfile.mkdtemp(prefix="wb-chromium-")
        self.events: list[dict] = []   # every DevTools event read (Network.* once ``record_network``)
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:  # the child's fd 3 reads commands, fd 4 writes answers
            read, write = os.dup(to_chrome_r), os.dup(from_chrome_w)  # clear of 3 and 4 first
            os.dup2(read, 3)
            os.dup2(write, 4)

        args = [chromium, "--headless", "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
                f"--window-size={WIDTH},{HEIGHT}", "--no-first-run", "--no-default-browser-check",
                "--disable-gpu", "--disable-extensions", "--disable-background-networking",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", *extra_args, "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        self.proc = subprocess.Popen(args, preexec_fn=fds, pass_fds=(3, 4),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next = 0
        self.session: str | None = None

    # -- the protocol -----------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_chrome], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise ConnectionError("chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict | None = None, *, session: bool = True, timeout: float = 30) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if "method" in answer:
                self.events.append(answer)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    # -- pages --------------------------------------------------------------------------------

    def open(self, url: str, *, record_network: bool = False) -> None:
        """Open ``url`` in a new 1280×800 tab that keeps a handle on the page's terminal; with
        ``record_network``, every request the tab makes is recorded from the first (``requested``)."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.target = target
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
        self.send("Page.addScriptToEvaluateOnNewDocument", {"source": _HOOK})
        if record_network:
            self.send("Network.enable")
        self.send("Page.navigate", {"url": url})

    def requested(self) -> list[str]:
        """Every URL the tab asked for so far: documents, scripts, styles, fonts, images, fetches, websockets."""
        self.evaluate("1")  # read the events waiting on the pipe
        return [e["params"]["request"]["url"] if e["method"] == "Network.requestWillBeSent" else e["params"]["url"]
                for e in self.events if e["method"] in ("Network.requestWillBeSent", "Network.webSocketCreated")]

    def type_text(self, text: str) -> None:
        """Type into the page's terminal, as a user at the keyboard would."""
        self.evaluate("window.__wbTerminal && window.__wbTerminal.focus()")
        for ch in text:
            self.send("Input.insertText", {"text": ch})
            time.sleep(0.02)

    def close_tab(self) -> None:
        self.send("Target.closeTarget", {"targetId": self.target}, session=False)
        self.session = None

    def evaluate(self, expression: str):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    def screen_text(self) -> str | None:
        """The terminal's visible rows as text (None before the page made its terminal)."""
        return self.evaluate(_SCREEN)

    def body_classes(self) -> str:
        return self.evaluate("document.body ? document.body.className : ''") or ""

    def wait_for_text(self, *needles: str, timeout: float = 90) -> str:
        """Wait until every needle shows in the terminal; returns the screen text."""
        deadline = time.monotonic() + timeout
        text = None
        while time.monotonic() < deadline:
            text = self.screen_text() or ""
            if all(n in text for n in needles):
                return text
            time.sleep(0.3)
        raise AssertionError(f"the page never showed {needles!r}; it showed:\n{text}\n"
                             f"(body classes: {self.body_classes()!r})")

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        Path(path).write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """Kill the browser (as closing its window would) and wait for it."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def processes_mentioning(text: str, *, without: str | None = None) -> list[int]:
    """Pids of live processes whose command line contains ``text`` (and not ``without``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = next((line for line in (entry / "status").read_text().splitlines()
                          if line.startswith("State:")), "")
        except OSError:
            continue
        if text in cmdline and (without is None or without not in cmdline) and "zombie" not in state:
            found.append(int(entry.name))
    return found


def serve(workspace: Path, port: int, *args: str, env: dict | None = None, bin_: Path | None = None,
          argv: list[str] | None = None) -> subprocess.Popen:
    """Start `workbench serve` on ``port`` (its own process group) and wait until it answers.
    ``argv``: run this instead, with the workspace and the port as its last two arguments."""
    import urllib.request

    bin_ = bin_ or Path(sys.executable).parent / "workbench"
    cmd = ([*argv, str(workspace), str(port)] if argv else
           [str(bin_), "--workspace", str(workspace), "serve", "--port", str(port), *args])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            env={**os.environ, **(env or {})})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"workbench serve exited {proc.returncode}: {proc.stdout.read()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2):
                return proc
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("workbench serve never answered")


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Screenshot the Browse screen served by `workbench serve`.")
    parser.add_argument("workspace", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--as", dest="principal", default="marco.bianchi")
    args = parser.parse_args(argv)
    chromium, why = ensure_chromium()
    if not chromium:
        print(why, file=sys.stderr)
        return 1
    port = free_port()
    server = serve(args.workspace, port, "--as", args.principal)
    try:
        with Browser(chromium) as browser:
            browser.open(f"http://127.0.0.1:{port}/")
            browser.wait_for_text("nw-adr-0001", "ADR-0001")
            time.sleep(2.0)  # the header says "model loading…" just after the first paint
            deadline = time.monotonic() + 60
            while "loading" in (browser.screen_text() or "") and time.monotonic() < deadline:
                time.sleep(0.3)  # the model indicator and the job line settle
            time.sleep(0.5)
            browser.screenshot(args.out)
            print(browser.screen_text())
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    print(f"saved {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
