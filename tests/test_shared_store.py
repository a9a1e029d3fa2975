"""The store as the team server holds it (``Workbench.share``): what readers must never wait for.

Real DuckDB files, the real model. Each test fails when its rule is broken: a reader that takes
the index build lock (pins did), a checkpoint left to DuckDB's commit (it stalls every query).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from workbench import Workbench
from workbench.store import connect as connect_module
from workbench.store import retrieval as retrieval_store


def _edit(wb, fid: str, principal: str, note: str) -> None:
    f = wb.get(fid, principal=principal)
    wb.edit(fid, f.body + f"\n\n{note}", reason=note, actor=principal, base=f.version)


def test_a_search_never_waits_for_the_next_generations_build(sample_workspace: Path):
    with Workbench.open(sample_workspace) as wb:
        wb.share()
        wb.warm()
        before = wb.search("deploy rollback", principal="dan.kowalski", k=3, trace=False)
        fid = before.hits[0].id
        _edit(wb, fid, "priya.raman", "a new generation")
        held = threading.Event()
        release = threading.Event()

        def builder():  # another thread holds the build lock, as an edit's refresh does
            with wb.index._lock:
                held.set()
                release.wait(30)

        t = threading.Thread(target=builder)
        t.start()
        try:
            assert held.wait(10)
            done: dict = {}
            reader = threading.Thread(target=lambda: done.setdefault(
                "found", wb.search("deploy rollback", principal="dan.kowalski", k=3, trace=False)))
            reader.start()
            reader.join(10)
            assert not reader.is_alive(), "a search waited for the build lock"
            assert [h.id for h in done["found"].hits] == [h.id for h in before.hits]  # the previous generation
        finally:
            release.set()
            t.join()
        wb.index.settle()


@pytest.mark.duckdb_only("DuckDB's write-ahead log and checkpoints")
def test_a_shared_store_checkpoints_itself_and_duckdb_does_not(sample_workspace: Path, monkeypatch):
    monkeypatch.setattr(connect_module, "CHECKPOINT_BYTES", 50_000)
    monkeypatch.setattr(connect_module, "CHECKPOINT_BUSY_BYTES", 10**12)
    monkeypatch.setattr(retrieval_store, "CHECKPOINT_CHECK_S", 0.2)
    wal = sample_workspace / "workbench.duckdb.wal"
    with Workbench.open(sample_workspace) as wb:
        wb.share()
        assert not wal.exists() or wal.stat().st_size <= 50_000  # share() checkpointed what it found
        wb.warm()
        fid = wb.search("deploy rollback", principal="dan.kowalski", k=1, trace=False).hits[0].id
        for i in range(6):  # writes well past DuckDB's own 4 MB threshold would checkpoint at a commit
            _edit(wb, fid, "priya.raman", f"grow the log {i} " + "x" * 20_000)
        assert wal.stat().st_size > 50_000, "the log should have grown: DuckDB checkpointed at a commit"
        wb.search("deploy rollback", principal="dan.kowalski", k=1)  # starts the trace writer
        deadline = time.monotonic() + 20
        while wal.exists() and wal.stat().st_size > 50_000 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not wal.exists() or wal.stat().st_size <= 50_000, "the idle trace writer did not checkpoint"
        assert wb.get(fid, principal="priya.raman").body.endswith("x" * 20_000)


@pytest.mark.duckdb_only("DuckDB's checkpoints")
@pytest.mark.parametrize("busy", [False, True])
def test_checkpoint_threshold_depends_on_load(sample_workspace: Path, monkeypatch, busy: bool):
    monkeypatch.setattr(connect_module, "CHECKPOINT_BYTES", 1)
    monkeypatch.setattr(connect_module, "CHECKPOINT_BUSY_BYTES", 10**12)
    with Workbench.open(sample_workspace) as wb:
        wb.share()
        fid = wb.list(principal="priya.raman")[0].id
        _edit(wb, fid, "priya.raman", "one edit")
        assert wb.store.checkpoint_if_due(idle=not busy) is (not busy)


def test_background_threads_run_below_the_readers(sample_workspace: Path):
    import os
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("per-thread nice values are Linux's")
    seen: dict = {}
    with Workbench.open(sample_workspace) as wb:
        wb.share()
        wb.search("deploy rollback", principal="dan.kowalski", k=1)  # starts the trace writer
        writer = next(t for t in threading.enumerate() if t.name == "workbench-traces")
        deadline = time.monotonic() + 5  # the writer lowers its own priority first thing, once it runs
        while os.getpriority(os.PRIO_PROCESS, writer.native_id) == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        seen["traces"] = os.getpriority(os.PRIO_PROCESS, writer.native_id)
        original = wb.index.refresh

        def spy(wait=None):
            if wait is None:  # the build itself, on its own thread (the caller's asks with wait=)
                seen["build"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
            return original(wait)

        wb.index.refresh = spy
        fid = wb.search("deploy rollback", principal="dan.kowalski", k=1, trace=False).hits[0].id
        _edit(wb, fid, "priya.raman", "a build behind")
        wb.refresh_index()
        wb.index.settle()
        seen["main"] = os.getpriority(os.PRIO_PROCESS, 0)
    assert seen == {"traces": 10, "build": 10, "main": 0}


@pytest.mark.duckdb_only("DuckDB's write-ahead log")
def test_closing_a_shared_store_leaves_a_short_log(sample_workspace: Path, monkeypatch):
    monkeypatch.setattr(connect_module, "CHECKPOINT_BYTES", 50_000)
    monkeypatch.setattr(connect_module, "CHECKPOINT_BUSY_BYTES", 10**12)
    monkeypatch.setattr(retrieval_store, "CHECKPOINT_CHECK_S", 3600)  # the writer never idles here
    wal = sample_workspace / "workbench.duckdb.wal"
    with Workbench.open(sample_workspace) as wb:
        wb.share()
        fid = wb.list(principal="priya.raman")[0].id
        for i in range(4):
            _edit(wb, fid, "priya.raman", f"grow {i} " + "y" * 20_000)
        assert wal.stat().st_size > 50_000
    assert not wal.exists() or wal.stat().st_size <= 50_000
    with Workbench.open(sample_workspace) as wb:  # and nothing was lost
        assert wb.get(fid, principal="priya.raman").body.endswith("y" * 20_000)


@pytest.mark.duckdb_only("DuckDB's thread pool")
def test_a_shared_store_runs_duckdb_on_one_thread(sample_workspace: Path):
    """The server's queries are small: DuckDB's own pool (a thread per core) competed with the
    threads answering requests (benchmarks/load.py: ~10 % more CPU for the same load). A CLI
    process keeps DuckDB's default."""
    with Workbench.open(sample_workspace) as wb:
        default = wb.store.con.execute("SELECT current_setting('threads')").fetchone()[0]
        wb.share()
        assert wb.store.con.execute("SELECT current_setting('threads')").fetchone()[0] == 1
        other = []  # another thread's cursor answers with the same setting
        t = threading.Thread(target=lambda: other.append(
            wb.store.con.execute("SELECT current_setting('threads')").fetchone()[0]))
        t.start()
        t.join()
        assert other == [1]
    with Workbench.open(sample_workspace) as wb:
        assert wb.store.con.execute("SELECT current_setting('threads')").fetchone()[0] == default


def test_traces_are_committed_in_batches_and_every_count_includes_the_queued(sample_workspace: Path, monkeypatch):
    """The trace writer lingers to batch commits (one commit per request was ~5 ms of DuckDB work
    each at 20 requests/s); a query over many traces first commits what is queued."""
    monkeypatch.setattr(retrieval_store, "TRACE_LINGER_S", 0.5)
    commits = []
    real = retrieval_store._TraceWriter._commit
    monkeypatch.setattr(retrieval_store._TraceWriter, "_commit",
                        lambda self, rows: (commits.append(len(rows)), real(self, rows)))
    with Workbench.open(sample_workspace) as wb:
        wb.share()
        wb.warm()
        before = wb.store.trace_total()
        ids = [wb.search(f"deploy rollback {i}", principal="dan.kowalski", k=3).trace_id for i in range(10)]
        assert wb.store.trace_total() == before + 10  # counted at once, not 0.5 s later
        assert sum(commits) == 10 and len(commits) <= 3, commits
        assert all(wb.store.trace(t) is not None for t in ids)


def test_closing_stops_an_index_build_behind_at_its_next_batch(sample_workspace: Path, tmp_path: Path, monkeypatch):
    """A server stopping right after a large ingest must not first embed all of it: the build behind
    runs at low priority, and on a busy machine SIGTERM took over 60 s (seen in CI). Closing stops the
    build at its next batch of embeddings; what it embedded is stored, and the next build embeds the
    rest. Nothing is reported as a crash."""
    from conftest import write_fragment

    folder = tmp_path / "many"
    for i in range(600):  # three batches of 256 texts to embed
        write_fragment(folder, f"nw-bulk-{i:04d}", body=f"Bulk note {i} about invoices and ledgers, entry {i}.")
    crashes: list = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)
    with Workbench.open(sample_workspace) as wb:
        wb.share()
        wb.warm()
        model = wb.index.embedder.name
        stored_before = wb.store.embedding_count(model)
        batches: list[int] = []
        embedding, go_on = threading.Event(), threading.Event()
        encode = wb.index.embedder.encode

        def held_encode(texts):  # the first batch waits until the workspace has begun to close
            batches.append(len(texts))
            embedding.set()
            go_on.wait(60)
            return encode(texts)

        monkeypatch.setattr(wb.index.embedder, "encode", held_encode)
        report = wb.ingest([folder], actor="marco.bianchi")
        assert len(report.added) == 600
        assert wb.index.refresh(wait=0) is None  # the build runs behind
        assert embedding.wait(60)
        stopper = threading.Thread(target=wb.index.settle, kwargs={"stop": True})
        stopper.start()
        deadline = time.monotonic() + 60
        while not wb.index._stopping.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        go_on.set()
        stopper.join(120)
        assert not stopper.is_alive()
        assert batches == [256], "the build went on embedding after the workspace began to close"
        assert wb.index._index.generation != wb.store.generation()  # the stopped build was not installed
        assert wb.store.embedding_count(model) == stored_before + 256  # its one batch is kept
        # the next build embeds the rest, and the new fragments are found
        index = wb.index.refresh()
        assert index.generation == wb.store.generation() and len(batches) == 3
        hits = wb.search("Bulk note 599 about invoices and ledgers, entry 599", principal="marco.bianchi",
                         k=5, trace=False).hits
        assert "nw-bulk-0599" in [h.id for h in hits]
    assert not crashes, crashes
