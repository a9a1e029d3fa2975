"""`workbench serve` serves the TUI in a browser over loopback (textual-serve)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request

from conftest import WORKBENCH_BIN


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_on_loopback(sample_workspace):
    port = free_port()
    proc = subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(sample_workspace), "serve", "--port", str(port),
                             "--as", "marco.bianchi"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        page = None
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    page = (response.status, response.read().decode("utf-8", "replace"))
                    break
            except OSError:
                time.sleep(0.3)
        assert page is not None, "the server never answered"
        status, html = page
        assert status == 200 and "workbench" in html and "<html" in html.lower()
        # bound to loopback only
        with socket.socket() as s:
            s.settimeout(1)
            assert s.connect_ex(("127.0.0.1", port)) == 0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


def test_serve_refuses_a_missing_workspace(tmp_path, cli):
    r = cli("serve", "--port", "8123", workspace=tmp_path / "none")
    assert r.returncode == 2 and "no workspace" in r.stderr
