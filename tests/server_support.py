"""A real team server for tests: ``workbench server --port 0`` as a subprocess on a workspace,
found through its advert, stopped with SIGTERM (and checked to have removed its advert)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from conftest import WORKBENCH_BIN

START_S = 90


@dataclass
class Running:
    root: Path
    url: str
    owner: str
    process: subprocess.Popen
    log: Path

    def call(self, method: str, path: str, body=None, *, token: str | None = None, raw: bytes | None = None,
             headers: dict | None = None):
        """(status, parsed JSON or text, headers) of one HTTP request."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        head = {"Content-Type": "application/json", **(headers or {})}
        if token:
            head["Authorization"] = f"Bearer {token}"
        req = urllib.request.Request(self.url + path, data=data, headers=head, method=method)
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                status, text, got = resp.status, resp.read().decode(), dict(resp.headers)
        except urllib.error.HTTPError as e:
            status, text, got = e.code, e.read().decode(), dict(e.headers)
        try:
            return status, json.loads(text), got
        except ValueError:
            return status, text, got


def start_server(root: Path, *, env: dict | None = None, port: int = 0, args: tuple[str, ...] = ()) -> Running:
    log = root.parent / f"server-{time.monotonic_ns()}.log"
    with open(log, "w") as err:
        process = subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(root), "server", "--port", str(port),
                                    *args], stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + START_S
    advert = root / "server.json"
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}: {log.read_text()}")
        if advert.exists():
            try:
                record = json.loads(advert.read_text())
                if record["pid"] == process.pid:  # not a stale record of a server killed earlier
                    owner = (root / "server.token").read_text().strip()
                    return Running(root, record["url"], owner, process, log)
            except (ValueError, KeyError, OSError):
                pass
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"the server did not start in {START_S} s: {log.read_text()}")


def stop_server(running: Running, sig: int = signal.SIGTERM) -> int:
    running.process.send_signal(sig)
    code = running.process.wait(timeout=60)
    return code


@contextmanager
def server(root: Path, *, env: dict | None = None, args: tuple[str, ...] = ()):
    running = start_server(root, env=env, args=args)
    try:
        yield running
    finally:
        if running.process.poll() is None:
            code = stop_server(running)
            assert code == 0, running.log.read_text()
            assert not (root / "server.json").exists(), "the advert outlived the server"
