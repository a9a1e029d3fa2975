"""The README's tour runs as written from a fresh clone: every command of its marked block
(``<!-- tour:begin ... -->`` to ``<!-- tour:end -->``), in order, in a real bash with ``set -e``, on a
fresh copy of the sample workspace (what ``make demo`` builds). Only two things are the test's:
``workbench`` runs in this process (tests/tour_client.py hands each call over; one model load for
the whole tour), and ``/tmp/`` in the tour is this test's own folder. ``$EDITOR`` appends a line."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

BEGIN, END = "<!-- tour:begin", "<!-- tour:end -->"


def tour_block(readme: str) -> str:
    """The shell of the marked tour block: the one ```sh fence between the markers."""
    start, end = readme.index(BEGIN), readme.index(END)
    fences = re.findall(r"^```sh\n(.*?)^```$", readme[start:end], flags=re.DOTALL | re.MULTILINE)
    assert len(fences) == 1, "the tour markers must hold exactly one ```sh block"
    return fences[0]


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _serve(listener: socket.socket, calls: list) -> None:
    """Run each handed-over command in this process, one at a time, in its caller's folder."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            request = json.loads(_read_all(conn).decode())
            calls.append(request["argv"])
            saved = os.getcwd()
            os.chdir(request["cwd"])
            try:
                done = run_cli(*request["argv"], env=request["env"], input=request["stdin"])
                answer = {"stdout": done.stdout, "stderr": done.stderr, "code": done.returncode}
            except Exception as e:  # noqa: BLE001 -- the tour must see any failure, never hang
                answer = {"stdout": "", "stderr": f"tour harness: {e!r}\n", "code": 99}
            finally:
                os.chdir(saved)
            conn.sendall(json.dumps(answer).encode())


@pytest.mark.slow  # about a minute on 2 busy cores: ~55 commands, each opening the workspace
@pytest.mark.skipif(not (shutil.which("jq") and shutil.which("git")), reason="the tour uses jq and git")
def test_the_readme_tour_runs_as_written(sample_workspace_template, tmp_path):
    script = tour_block((ROOT / "README.md").read_text(encoding="utf-8"))
    clone, out = tmp_path / "clone", tmp_path / "out"
    clone.mkdir()
    out.mkdir()
    for name in (".venv", "sample_corpus", "examples"):
        (clone / name).symlink_to(ROOT / name)
    shutil.copytree(sample_workspace_template, clone / ".workbench")
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "\\nKeys are kept for 24 hours.\\n" >> "$1"\n')
    editor.chmod(0o755)
    prelude = (f'workbench() {{ "{sys.executable}" "{Path(__file__).parent / "tour_client.py"}" "$@"; }}\n'
               "set -eo pipefail\n"
               "trap 'echo \"tour failed (exit $?) at: $BASH_COMMAND\" >&2' ERR\n")
    (tmp_path / "tour.sh").write_text(prelude + script.replace("/tmp/", f"{out}/"))
    sock_path = str(tmp_path / "wb.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(1)
    calls: list = []
    threading.Thread(target=_serve, args=(listener, calls), daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBENCH_")}
    env.update(TOUR_SOCKET=sock_path, EDITOR=str(editor), HOME=str(tmp_path))
    try:
        done = subprocess.run(["bash", str(tmp_path / "tour.sh")], cwd=clone, env=env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=600, check=False)
    finally:
        listener.close()
    assert done.returncode == 0, f"{done.stderr[-3000:]}\n--- stdout ---\n{done.stdout[-2000:]}"
    assert "workbench:" not in done.stderr, done.stderr[-3000:]  # no command complained
    commands = [argv[0] for argv in calls if argv]
    expected = re.findall(r"^(?:\S+=\$\()?workbench ([a-z-]+)", script, flags=re.MULTILINE)
    assert commands == expected, (commands, expected)
    assert "Keys are kept for 24 hours." in done.stdout        # the edit was saved and shown in the diff
    assert re.search(r"^trace tr_\d{14}_[0-9a-f]{8} \(context\)", done.stdout, flags=re.MULTILINE)
    assert "added 6," in done.stdout                            # the git repository's chunks
