"""Faults: a second writer gets "workspace busy"; SIGKILL mid-ingest loses nothing committed."""

from __future__ import annotations

import os
import signal
import subprocess

from conftest import WORKBENCH_BIN, fragment_text, run_cli
from workbench import Workbench


def test_second_process_gets_workspace_busy(wb):
    with wb.store.transaction():  # this process is mid-write and holds the lock
        wb.store.add_event("test-hold")
        r = run_cli("list", workspace=wb.root, env={"WORKBENCH_LOCK_TIMEOUT": "0.3"})
    assert r.returncode == 2
    assert "workspace busy" in r.stderr and "Traceback" not in r.stderr


def _write_corpus(folder, n, body):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"nw-k{i:05d}.md").write_text(fragment_text(f"nw-k{i:05d}", body=f"{body} {i}"))


def test_sigkill_mid_ingest_keeps_every_earlier_version(workspace, tmp_path):
    src = tmp_path / "src"
    _write_corpus(src, 300, "first edition")
    with Workbench.open(workspace) as bench:
        assert len(bench.ingest([src]).added) == 300
        before = {f.id: f.content_hash for f in bench.store.fragments()}
        before_counts = bench.stats()
    _write_corpus(src, 5000, "second edition")  # 300 changed + 4700 new
    proc = subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(workspace), "ingest", str(src), "--progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed_at = None
    for line in proc.stderr:
        if line.startswith("ingest: write "):
            done, total = map(int, line.split()[2].split("/"))
            if done < total:  # a chunk is written, the transaction is still open
                os.kill(proc.pid, signal.SIGKILL)
                killed_at = done
                break
    proc.wait(timeout=60)
    assert killed_at is not None and proc.returncode == -signal.SIGKILL
    with Workbench.open(workspace) as bench:
        after = {f.id: f.content_hash for f in bench.store.fragments()}
        assert after == before
        assert bench.stats() == before_counts
        for fid in list(before)[:20]:
            assert [v.number for v in bench.store.versions(fid)] == [1]
        # and the workspace still works: the interrupted ingest can simply be run again
        report = bench.ingest([src])
        assert (len(report.added), len(report.updated)) == (4700, 300)
