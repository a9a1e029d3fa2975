"""benchmarks/load.py, the team server's load benchmark, run small as a real subprocess (it starts
a real ``workbench server``): it must keep working, count what it claims to count, and end when
the run ends. A benchmark asserts nothing about speed; this test asserts only what the benchmark
reports as correctness (errors, lost updates, a clean SIGTERM) and the span it measures over."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_load_benchmark_runs_end_to_end_and_ends_on_time(tmp_path: Path):
    seconds = 6
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "load.py"), "--fragments", "300",
                           "--workspace", str(tmp_path / "ws"), "--agents", "4", "--curators", "2",
                           "--seconds", str(seconds), "--warmup", "1", "--rate", "4", "--curator-pause", "3",
                           "--busy", "1", "--attack", "600", "--json"], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["errors"] == 0, report["error_examples"]
    assert report["lost_updates"] == 0 and not report["version_count_mismatches"]
    assert report["acknowledged_edits"] >= 1
    assert {"search", "context"} <= set(report["operations_with_warmup"])
    # the clients stop at the end of the run: a curator asleep for up to 1.5 x its pause (or an
    # agent for its next arrival) would stretch the span and understate the rate served
    assert seconds <= report["seconds"] < seconds + 2
    assert report["server_exit_on_sigterm"] == 0 and report["advert_removed"]
    # the busy neighbour ran beside the server for the run, and is gone with it
    assert report["busy_neighbours"] == 1
    # ~60 bad tokens from 127.0.0.1 beside the good clients: braked past 20, and no good client was
    # refused (errors above counts only theirs)
    answers = report["attack_answers"]
    assert answers.get("401") == 20 and answers.get("429", 0) >= 20 and set(answers) == {"401", "429"}, answers
    assert not _spinning(), "a busy neighbour outlived the benchmark"


def _spinning() -> list[int]:
    """Processes running load.py's busy-neighbour loop."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and b"while True: pass" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            pass
    return found
