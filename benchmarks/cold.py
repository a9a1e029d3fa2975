"""The cold CLI: `workbench search QUERY --as PRINCIPAL --workspace W` as a fresh process, timed
from spawn to exit, with the child's own CPU time and peak RSS (``os.wait4`` gives one child's
resource usage; ``RUSAGE_CHILDREN`` would mix in every child the benchmark ever waited for), measured
by a small timer process (see TIMER).

Most uses of a CLI are cold: an agent or a script that shells out once per task pays the imports,
the model load and every derived-data rebuild on every call (issue 13). ``benchmarks/cold.sh``
times the same thing from a shell. Loaded by path from bench.py (no package, no relative imports).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

QUERY = "customer charged twice on retry"


def workbench_command() -> list[str]:
    """The installed entry point next to this interpreter (as a user runs it), else on PATH."""
    here = Path(sys.executable).parent / "workbench"
    if here.is_file():
        return [str(here)]
    found = shutil.which("workbench")
    script = "import sys; from workbench.cli.main import main; sys.exit(main())"
    return [found] if found else [sys.executable, "-c", script]


# The timer: a small Python process that spawns the command and waits for it. The benchmark does not
# spawn the command itself because a child's peak RSS starts at its parent's RSS at fork/exec (Linux
# keeps the larger), and the benchmark's process holds gigabytes; this one holds megabytes.
TIMER = """import json, os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
start = time.perf_counter()
pid = os.posix_spawnp(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
with open(out, "w") as f:
    json.dump({"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
               "code": os.waitstatus_to_exitcode(status)}, f)
"""


def run_once(argv: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> dict[str, Any]:
    """One process, spawned by the timer (see TIMER): wall seconds, CPU seconds (user + system),
    peak RSS in MB, exit code, stderr's last line. A timeout or Ctrl-C kills it with its timer."""
    with tempfile.TemporaryDirectory(prefix="workbench-cold-") as tmp, open(Path(tmp) / "stderr", "w+b") as err:
        report = Path(tmp) / "usage.json"
        proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", TIMER, str(report), *argv],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                env={**os.environ, **(env or {})}, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except BaseException:  # a timeout, Ctrl-C: the timer and the command go together
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        err.seek(0)
        tail = err.read().decode("utf-8", "replace").strip().splitlines()[-1:]
        if not report.is_file():
            return {"code": proc.returncode or 1, "stderr": tail}
        return {**json.loads(report.read_text()), "stderr": tail}


def cold_cli(workspace: Path, principal: str, runs: int = 5, *, query: str = QUERY,
             env: dict[str, str] | None = None) -> dict[str, Any]:
    """``runs`` timed cold searches after one untimed first run (reported apart as ``first_s``: a
    first process may build and persist derived data the later ones load); median, min, max wall
    seconds, median CPU seconds, and the largest peak RSS."""
    argv = workbench_command() + ["search", query, "--as", principal, "--workspace", str(workspace)]
    shown = f'workbench search "{query}" --as {principal}'
    first = run_once(argv, env)
    if first["code"] != 0:
        return {"command": shown, "error": first["stderr"]}
    done = []
    for _ in range(runs):
        one = run_once(argv, env)
        if one["code"] != 0:
            return {"command": shown, "error": one["stderr"]}
        done.append(one)
    walls = [d["wall_s"] for d in done]
    return {"command": shown, "runs": runs, "first_s": round(first["wall_s"], 3),
            "median_s": round(float(np.median(walls)), 3), "min_s": round(min(walls), 3),
            "max_s": round(max(walls), 3), "cpu_median_s": round(float(np.median([d["cpu_s"] for d in done])), 3),
            "peak_rss_mb": round(max(d["rss_mb"] for d in [first, *done]), 1)}
