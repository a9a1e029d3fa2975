"""Busy-loop processes for `workbench bench --busy N`: latency measured while N other processes
each keep a core busy, as on a workstation where other work always runs (issue 13: one busy
process made a single query 10–30× slower through torch's thread pool).

The loops must never outlive the benchmark. ``busy(n)`` kills and reaps them in a ``finally``
(a normal end, an error, Ctrl-C), and each loop also ends by itself within a fraction of a second
once its parent is gone (the benchmark killed by SIGKILL or an unhandled SIGTERM, where no
``finally`` runs). Loaded by path from bench.py (no package, no relative imports).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

MARK = "workbench-bench-busy-loop"  # in each loop's command line, so a test can find leftovers
# A pure-Python spin; every 2**20 turns (~0.1 s) it checks that its parent is still the one that
# started it (the pid comes in argv: a parent killed while the loop was starting must count as gone).
LOOP = (f"# {MARK}\nimport os, sys\nparent = int(sys.argv[1])\ni = 0\nwhile True:\n    i += 1\n"
        "    if not i & 0xFFFFF and os.getppid() != parent:\n        break\n")


@contextmanager
def busy(n: int) -> Iterator[list[int]]:
    """``n`` busy-loop processes for the duration of the block; yields their pids."""
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, "-c", LOOP, str(os.getpid())],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL))
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
