"""Faults: a second writer gets "workspace busy"; SIGKILL mid-ingest loses nothing committed."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from conftest import WORKBENCH_BIN, fragment_text, run_cli, run_cli_process
from workbench import Workbench


@pytest.mark.duckdb_only("DuckDB's file lock (PostgreSQL takes many processes)")
def test_second_process_gets_workspace_busy(wb):
    with wb.store.transaction():  # this process is mid-write and holds the lock
        wb.store.add_event("test-hold")
        r = run_cli_process("list", workspace=wb.root, env={"WORKBENCH_LOCK_TIMEOUT": "0.3"})
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


# -- exports and bundle imports killed mid-write ---------------------------------------------------


def _files(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_sigkill_mid_export_leaves_no_folder_and_the_rerun_needs_no_force(workspace, tmp_path):
    from workbench.export.writer import STAGING_MARK

    src = tmp_path / "src"
    _write_corpus(src, 3000, "export me")
    with Workbench.open(workspace) as bench:
        assert len(bench.ingest([src]).added) == 3000
    reference = tmp_path / "reference"
    r = run_cli("export-files", str(reference), workspace=workspace)
    assert r.returncode == 0, r.stderr
    parent = tmp_path / "exports"
    parent.mkdir()
    out = parent / "out"
    proc = subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(workspace), "export-files", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    killed_with, deadline = None, time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        staging = [p for p in parent.iterdir() if STAGING_MARK in p.name]
        written = staging[0] / "northwind" / "payments-api" if staging else None
        try:
            count = len(os.listdir(written)) if written else 0
        except FileNotFoundError:
            count = 0
        if 200 <= count < 3000:  # part of the files are written, the folder is not in place yet
            os.kill(proc.pid, signal.SIGKILL)
            killed_with = count
            break
        time.sleep(0.002)
    proc.wait(timeout=60)
    assert killed_with is not None and proc.returncode == -signal.SIGKILL, "the export ended before the kill"
    assert not out.exists()  # never a half-written folder
    assert [p.name for p in parent.iterdir()] and all(STAGING_MARK in p.name for p in parent.iterdir())
    r = run_cli("export-files", str(out), workspace=workspace)  # the same command, no --force
    assert r.returncode == 0, r.stderr
    assert [p.name for p in parent.iterdir()] == ["out"]  # the abandoned staging folder is gone
    assert _files(out) == _files(reference)


def _store_state(bench):
    store = bench.store
    fragments = sorted((f.to_dict() for f in store.fragments()), key=lambda d: d["id"])
    versions = {f["id"]: [(v.number, v.author, v.reason, v.content_hash, v.created_at, v.content.to_dict())
                          for v in store.versions(f["id"])] for f in fragments}
    return store.counts(), fragments, versions, store.events()


@pytest.mark.slow
@pytest.mark.duckdb_only("its kill is timed by the batch files DuckDB's write_versions stages")
def test_sigkill_mid_import_bundle_leaves_the_store_as_it_was(workspace, tmp_path):
    from conftest import CONFIG

    src = tmp_path / "src"
    _write_corpus(src, 400, "bundled")
    with Workbench.open(workspace) as bench:
        assert len(bench.ingest([src]).added) == 400
    r = run_cli("set", "create", "everything", "--scope", "org=northwind", "--as", "priya.raman", workspace=workspace)
    assert r.returncode == 0, r.stderr
    bundle = tmp_path / "bundle"
    r = run_cli("export", "bundle", "--set", "everything", "--out", str(bundle), "--as", "priya.raman",
                workspace=workspace)
    assert r.returncode == 0, r.stderr
    target = tmp_path / "target"
    Workbench.init(target, config=CONFIG).close()
    other = tmp_path / "other"
    other.mkdir()
    for i in range(20):  # the target already holds other fragments, which must survive untouched
        (other / f"nw-other-{i:02d}.md").write_text(fragment_text(f"nw-other-{i:02d}", body=f"mine {i}"))
    with Workbench.open(target) as bench:
        assert len(bench.ingest([other]).added) == 20
        before = _store_state(bench)
    scratch = tmp_path / "scratch-tmp"  # write_versions stages each batch here, inside the open transaction
    scratch.mkdir()
    proc = subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(target), "import-bundle", str(bundle),
                             "--as", "priya.raman"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "TMPDIR": str(scratch)})
    batches, deadline = set(), time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        for p in scratch.glob("workbench-*/batch.jsonl"):
            batches.add(p.parent.name)
        if len(batches) >= 5:  # several fragments written, the import transaction still open
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.001)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the import ended before the kill: {proc.stderr.read()!r}"
    with Workbench.open(target) as bench:
        assert _store_state(bench) == before
    r = run_cli("import-bundle", str(bundle), "--as", "priya.raman", "--json", workspace=target)
    assert r.returncode == 0, r.stderr
    with Workbench.open(target) as bench:
        counts = bench.store.counts()
        assert counts["fragments"] == 420 and counts["versions"] == 420
        assert bench.store.get("nw-k00399").body.startswith("bundled 399")


@pytest.mark.slow
@pytest.mark.parametrize("fractions", [
    pytest.param((0.8, 0.95, 0.99, 1.02), id="around-the-end"),
    pytest.param((0.5, 0.8, 0.9, 0.95, 0.97, 0.99, 1.0, 1.02), id="many", marks=pytest.mark.deep)])
def test_sigkill_at_any_point_of_export_bundle_leaves_a_whole_bundle_or_none(workspace, tmp_path, fractions):
    """export bundle's write window is a few milliseconds, too short to aim at; so the command is
    killed at many points around its end instead, and each time the folder is either absent (a re-run
    without --force then succeeds) or a complete, byte-identical bundle: never half of one."""
    from workbench.export.writer import STAGING_MARK

    src = tmp_path / "src"
    _write_corpus(src, 1500, "bundle me")
    with Workbench.open(workspace) as bench:
        assert len(bench.ingest([src]).added) == 1500
    assert run_cli("set", "create", "all", "--scope", "org=northwind", "--as", "priya.raman",
                   workspace=workspace).returncode == 0
    command = [str(WORKBENCH_BIN), "--workspace", str(workspace), "export", "bundle", "--set", "all",
               "--as", "priya.raman", "--out"]
    reference = tmp_path / "reference"
    started = time.monotonic()
    assert subprocess.run(command + [str(reference)], capture_output=True).returncode == 0
    full = time.monotonic() - started
    parent = tmp_path / "exports"
    parent.mkdir()
    for n, fraction in enumerate(fractions):
        out = parent / f"out{n}"
        proc = subprocess.Popen(command + [str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(full * fraction)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        if out.exists():
            assert _files(out) == _files(reference), f"a partial bundle after a kill at {fraction:.2f}"
        else:
            r = subprocess.run(command + [str(out)], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr  # nothing left behind that a re-run would refuse
            assert _files(out) == _files(reference)
    assert not [p for p in parent.iterdir() if STAGING_MARK in p.name]


HOLD = """
import sys, time
from workbench import Workbench
with Workbench.open(sys.argv[1]) as wb, wb.store.transaction():
    wb.store.add_event("test-hold")
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_concurrent_cli_readers_wait_for_each_other(sample_workspace):
    """Without a server, readers queue for the workspace (LOCK_WAIT_S, 30 s by default) instead of
    failing "workspace busy" after 2 s: a third process holds it for 3.5 s, two reads started while
    it does both answer."""
    import sys

    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_LOCK_TIMEOUT"}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(sample_workspace), "3.5"], stdout=subprocess.PIPE,
                              text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        readers = [subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(sample_workspace), *args],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                   for args in (("list", "--as", "marco.bianchi"), ("show", "nw-adr-0001-double-entry-ledger",
                                                                    "--as", "marco.bianchi"))]
        answers = [r.communicate(timeout=60) for r in readers]
        outcomes = [(r.returncode, out, err) for r, (out, err) in zip(readers, answers)]
    finally:
        holder.wait(timeout=30)
    assert time.monotonic() - started > 2.5  # they did wait for the holder
    for code, out, err in outcomes:
        assert code == 0 and "workspace busy" not in err, err
        assert out.strip()
