"""A read-only workspace (file 0444, folder 0555, read-only filesystem) still serves every
read; writes fail with one clear ``workspace is read-only`` error (exit 2) and leave the
file's bytes alone. Also: workspace and TMPDIR paths with quotes and non-ASCII characters.

Tests run as root in CI, and root ignores permission bits: the workspace is read-only
because of the mode bits, which is exactly what these tests check.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from conftest import CONFIG, WORKBENCH_BIN, run_cli, write_fragment

pytestmark = pytest.mark.duckdb_only("read-only DuckDB files, folders and mounts")

FRAGMENTS = {
    "ro-retry": {"title": "Retry tokens for payment creation",
                 "body": "Clients send an idempotency retry token with every charge, so a retried request "
                         "never double charges the customer."},
    "ro-ledger": {"title": "The ledger is append-only",
                  "body": "Ledger entries are never updated in place; corrections are reversing entries.",
                  "extra": "links: [ro-retry]\n"},
    "ro-oncall": {"title": "Paging rules for the on-call rotation",
                  "body": "Page a human only for symptoms customers feel, such as failed checkouts.",
                  "extra": "links: [ro-retry, ro-ledger]\ncreated: 2024-01-10\nupdated: 2024-02-01\n"},
}
LATE = ("ro-cache", {"title": "Cache invalidation on deploy",
                     "body": "Every deploy bumps the cache namespace so stale pricing is never served.",
                     "extra": "links: [ro-retry]\n"})
EDITED_BODY = "Ledger entries are immutable: a correction is a new reversing entry, never an update."
QUERY = "retry token so a charge is never double charged"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(root: Path) -> dict[str, str]:
    """name → sha256 of every file in the workspace folder (a new .wal file shows up too)."""
    return {p.name: sha256(p) for p in sorted(root.iterdir()) if p.is_file()}


@contextmanager
def read_only(root: Path, what: str):
    """Make the database file (``file``: 0444) or the workspace folder (``folder``: 0555)
    read-only; restore the modes afterwards so tmp cleanup works."""
    target = root / "workbench.duckdb" if what == "file" else root
    before = stat.S_IMODE(target.stat().st_mode)
    target.chmod(0o444 if what == "file" else 0o555)
    try:
        yield target
    finally:
        target.chmod(before)


@pytest.fixture(scope="module")
def ro_template(tmp_path_factory) -> tuple[Path, str]:
    """A small workspace: three fragments, a stored search trace, then a fourth fragment and an
    edit, so the stored PageRank and the edited text's embedding are out of date (a read-only
    search must compute both in memory). Returns (root, the stored trace id)."""
    from workbench import Workbench

    base = tmp_path_factory.mktemp("readonly")
    src = base / "src"
    for fid, kw in FRAGMENTS.items():
        write_fragment(src, fid, **kw)
    root = base / "ws"
    with Workbench.init(root, config=CONFIG) as wb:
        assert not wb.ingest([src]).errors
        trace_id = wb.search(QUERY, principal="marco.bianchi").trace_id
        late = base / "late"
        write_fragment(late, LATE[0], **LATE[1])
        assert not wb.ingest([late]).errors
        wb.edit("ro-ledger", EDITED_BODY, reason="clarify corrections", actor="marco.bianchi")
    return root, trace_id


@pytest.fixture
def ro_ws(ro_template, tmp_path) -> tuple[Path, str]:
    root, trace_id = ro_template
    target = tmp_path / "ws"
    shutil.copytree(root, target)
    return target, trace_id


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def refused(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.stderr.startswith("workbench: workspace is read-only: "), proc.stderr
    return proc.stderr


# -- the CLI on a read-only file or folder -----------------------------------------------


@pytest.mark.parametrize("what", ["file", pytest.param("folder", marks=pytest.mark.slow)])
def test_every_read_works_and_nothing_changes(ro_ws, tmp_path, what):
    root, trace_id = ro_ws
    before = snapshot(root)
    with read_only(root, what):
        cli = lambda *a: run_cli(*a, workspace=root)
        listed = json.loads(ok(cli("list", "--json", "--as", "marco.bianchi")))
        assert sorted(f["id"] for f in listed) == ["ro-cache", "ro-ledger", "ro-oncall", "ro-retry"]

        shown = json.loads(ok(cli("show", "ro-ledger", "--json", "--as", "marco.bianchi")))
        assert shown["version"] == 2 and EDITED_BODY in json.dumps(shown)
        history = json.loads(ok(cli("history", "ro-ledger", "--json", "--as", "marco.bianchi")))
        assert [v["version"] for v in history] == [1, 2]
        diff = ok(cli("diff", "ro-ledger", "1", "2", "--as", "marco.bianchi"))
        assert "+" + EDITED_BODY in diff

        # search embeds the edited and the late text in memory (nothing stored) and finds them
        found = json.loads(ok(cli("search", QUERY, "--json", "--as", "marco.bianchi", "-k", "4")))
        assert found["hits"][0]["id"] == "ro-retry"
        assert all(isinstance(h["scores"]["dense"], float) for h in found["hits"]) and len(found["hits"]) == 4
        context = ok(cli("context", QUERY, "--as", "marco.bianchi", "--budget", "400"))
        assert "Retry tokens for payment creation" in context

        # PageRank of the current graph, computed in memory: ro-cache joined after it was last stored
        graph = {r["id"]: r for r in json.loads(ok(cli("graph", "--json", "--top", "0", "--as", "marco.bianchi")))}
        assert graph["ro-retry"]["in_links"] == 3 and graph["ro-cache"]["authority"] > 0
        assert max(graph.values(), key=lambda r: r["authority"])["id"] == "ro-retry"

        stale = json.loads(ok(cli("stale", "--json")))
        assert [r["id"] for r in stale] == ["ro-oncall"]
        traced = json.loads(ok(cli("trace", trace_id, "--json", "--as", "marco.bianchi")))
        assert traced["query"] == QUERY and traced["served"][0]["id"] == "ro-retry"
        info = json.loads(ok(cli("info", "--json")))
        assert info["fragments"] == 4 and 1 in info["schema_versions"]

        out = tmp_path / "exported"
        ok(cli("export-files", str(out)))
        assert (out / "northwind" / "payments-api" / "ro-ledger.md").read_text(encoding="utf-8").count(EDITED_BODY)
        ok(cli("index"))  # derived data only: computed, not stored
    assert snapshot(root) == before  # same bytes, and no .wal or other file appeared


@pytest.mark.parametrize("what", ["file", "folder"])
def test_writes_fail_with_the_read_only_message(ro_ws, tmp_path, what):
    root, _ = ro_ws
    before = snapshot(root)
    body = tmp_path / "body.md"
    body.write_text("A new body that must not be stored.\n", encoding="utf-8")
    src = tmp_path / "new"
    write_fragment(src, "ro-new")
    with read_only(root, what):
        cli = lambda *a: run_cli(*a, workspace=root)
        message = refused(cli("edit", "ro-ledger", "--file", str(body), "--reason", "r", "--as", "marco.bianchi"))
        blamed = root / "workbench.duckdb" if what == "file" else root
        assert f"read-only: {blamed} (" in message
        assert ("mode 0444" if what == "file" else "mode 0555") in message
        refused(cli("ingest", str(src)))
        refused(cli("pin", "ro-retry", "--scope", "org=northwind", "--as", "priya.raman"))
        refused(cli("archive", "ro-cache", "--reason", "r", "--as", "marco.bianchi"))
        # the duckdb-fts index lives in the file: it cannot be built, and says so
        fts = refused(cli("search", QUERY, "--lexical", "duckdb-fts"))
        assert "duckdb-fts" in fts and "the bm25 lexical backend needs none" in fts
        history = json.loads(ok(cli("history", "ro-ledger", "--json", "--as", "marco.bianchi")))
        assert [v["version"] for v in history] == [1, 2]
        if what == "folder":  # reads that compute derived data create no .wal either (the slow test has them all)
            assert json.loads(ok(cli("search", QUERY, "--json", "--as", "marco.bianchi")))["hits"][0]["id"] \
                == "ro-retry"
    assert snapshot(root) == before


def test_search_says_its_trace_was_not_stored(ro_ws):
    from workbench import Workbench

    root, _ = ro_ws
    with read_only(root, "file"), Workbench.open(root) as wb:
        found = wb.search(QUERY, principal="marco.bianchi")
        context = wb.context(QUERY, principal="marco.bianchi", budget=400)
    assert found.hits[0].id == "ro-retry" and context.fragments
    searched, composed = found.to_dict(), context.to_dict()
    assert searched["trace_id"] is None and "trace not stored (read-only workspace)" == searched["trace_note"]
    assert composed["trace_id"] is None and "trace not stored" in composed["note"]


def test_a_stored_fts_index_still_serves(ro_ws):
    """The duckdb-fts index built while writable, for the current generation, is used as is."""
    from workbench import Workbench

    root, _ = ro_ws
    with Workbench.open(root) as wb:
        wb.search(QUERY, principal="marco.bianchi", pipeline="bm25", lexical="duckdb-fts", trace=False)
    before = snapshot(root)
    with read_only(root, "file"), Workbench.open(root) as wb:
        assert wb.store.read_only
        found = wb.search(QUERY, principal="marco.bianchi", pipeline="bm25", lexical="duckdb-fts", trace=False)
    assert found.hits[0].id == "ro-retry"
    assert snapshot(root) == before


def test_dedupe_computes_simhashes_in_memory(ro_ws):
    from workbench import Workbench

    root, _ = ro_ws  # ro-ledger was edited after its last dedupe: its SimHash is not cached
    with read_only(root, "file"), Workbench.open(root) as wb:
        assert wb.dedupe(principal="marco.bianchi") == []


# -- the Store API ------------------------------------------------------------------------


def test_store_read_only_api(ro_ws):
    from workbench.errors import UserError
    from workbench.store import Store

    root, _ = ro_ws
    db = root / "workbench.duckdb"
    before = sha256(db)
    with read_only(root, "file"):
        store = Store(db)
        try:
            assert store.read_only and "mode 0444" in store.read_only_reason
            assert not store.can_store_derived()
            with pytest.raises(UserError) as err:
                store.require_writable("pin")
            assert err.value.exit_code == 2
            assert str(err.value) == f"workspace is read-only: {db} (the database file has mode 0444, " \
                                     "no write permission; cannot pin)"
            with pytest.raises(UserError, match="^workspace is read-only: "), store.transaction():
                pytest.fail("a user write on a read-only workspace must not start")
            with pytest.raises(UserError, match="^workspace is read-only: "):
                store.add_event("probe")  # a write outside any transaction: DuckDB refuses, we say why
            # derived data: not stored, and the caller is told
            assert store.put_trace({"id": "tr_x", "created_at": None, "kind": "search", "query": "q",
                                    "principal": "p", "settings": {}, "served": []}) is False
            assert store.trace("tr_x") is None
            assert store.put_embeddings("m", ["h"], np.ones((1, 384), dtype=np.float32)) is False
            assert store.embeddings("m") == {}
            assert store.put_authority({"ro-retry": (0.5, 3, 0)}, 999) is False
            assert store.authority() == (999, {"ro-retry": (0.5, 3, 0)})  # kept in memory for this process
            assert store.touch_authority(1000) is False and store.authority()[0] == 1000
            assert store.counts()["fragments"] == 4
            store.release()
            assert store.counts()["fragments"] == 4 and store.read_only  # reconnects read-only
        finally:
            store.close()
        with pytest.raises(UserError, match="^workspace is read-only: "):
            Store(db, read_only=False)  # insisting on writes
    assert sha256(db) == before
    forced = Store(db, read_only=True)
    try:
        assert forced.read_only and forced.read_only_reason == "opened read-only"
    finally:
        forced.close()
    writable = Store(db)
    try:
        assert not writable.read_only and writable.can_store_derived()
        assert writable.put_trace({"id": "tr_y", "created_at": datetime(2026, 1, 1), "kind": "search", "query": "q",
                                   "principal": "p", "settings": {}, "served": []}) is True
    finally:
        writable.close()


def test_pending_wal_is_read_in_a_read_only_folder(ro_ws):
    """A writer that died before its checkpoint leaves workbench.duckdb.wal; a read-only open
    replays it in memory (nothing written), so the last committed edit is visible."""
    root, _ = ro_ws
    script = ("import os, sys\nfrom workbench import Workbench\nwb = Workbench.open(sys.argv[1])\n"
              "wb.store.con.execute('PRAGMA disable_checkpoint_on_shutdown')\n"
              "wb.edit('ro-retry', 'Committed just before the crash.', reason='r', actor='marco.bianchi')\n"
              "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", script, str(root)], check=True, timeout=120)
    assert (root / "workbench.duckdb.wal").is_file()
    before = snapshot(root)
    (root / "workbench.duckdb").chmod(0o644)
    with read_only(root, "folder"):
        shown = json.loads(ok(run_cli("show", "ro-retry", "--json", "--as", "marco.bianchi", workspace=root)))
        assert shown["version"] == 2 and "Committed just before the crash." in json.dumps(shown)
        body = root.parent / "body.md"
        body.write_text("again\n", encoding="utf-8")
        refused(run_cli("edit", "ro-retry", "--file", str(body), "--reason", "r", "--as", "marco.bianchi",
                        workspace=root))
    assert snapshot(root) == before


def test_missing_database_in_a_read_only_folder(tmp_path):
    from workbench import Workbench
    from workbench.errors import UserError

    root = tmp_path / "ws"
    root.mkdir()
    shutil.copyfile(CONFIG, root / "workbench.yaml")
    with read_only(root, "folder"), \
            pytest.raises(UserError, match=r"^workspace is read-only: .*cannot create the database\)$"):
        Workbench.open(root)
    assert not (root / "workbench.duckdb").exists()


# -- schema: no migrations in read-only mode ----------------------------------------------


@pytest.mark.parametrize("compatible", [False, True])
def test_older_schema(ro_ws, tmp_path, monkeypatch, compatible):
    from workbench.errors import UserError
    from workbench.store import Store, migrations

    root, _ = ro_ws
    db = root / "workbench.duckdb"
    folder = tmp_path / "migrations"
    shutil.copytree(migrations.MIGRATIONS_DIR, folder)
    header = "-- read-compatible: only writes use this table\n" if compatible else ""
    (folder / "999_future.sql").write_text(f"-- A later release's table.\n{header}CREATE TABLE future_thing "
                                           "(x INTEGER);\n", encoding="utf-8")
    monkeypatch.setattr(migrations, "MIGRATIONS_DIR", folder)
    with read_only(root, "file"):
        if not compatible:
            with pytest.raises(UserError) as err:
                Store(db)
            assert "schema is older" in str(err.value) and "999_future" in str(err.value)
            assert "open it once with write access" in str(err.value)
        else:
            store = Store(db)
            try:
                assert store.counts()["fragments"] == 4 and store.schema_pending == [(999, "future")]
                assert 999 not in store.schema_versions()
                with pytest.raises(UserError, match="schema is older.*999_future.*cannot edit"):
                    store.require_writable("edit")
            finally:
                store.close()
    upgraded = Store(db)  # writable again: migrated on open
    try:
        assert 999 in upgraded.schema_versions()
    finally:
        upgraded.close()


# -- a read-only filesystem (a read-only bind mount in a private mount namespace) ---------


def _ro_mount_available() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1"',
                            "sh", str(Path(__file__).parent)], capture_output=True, timeout=30, check=False)
    return probe.returncode == 0


def in_ro_mount(folder: Path, *cmd: str) -> subprocess.CompletedProcess:
    """Run ``cmd`` where ``folder`` is a read-only bind mount (gone when the command exits)."""
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(folder), *cmd],
                          capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.skipif(not _ro_mount_available(), reason="needs root and mount namespaces (unshare -m)")
def test_read_only_filesystem(ro_ws, tmp_path):
    root, _ = ro_ws
    before = snapshot(root)
    wb = [str(WORKBENCH_BIN), "--workspace", str(root)]
    listed = json.loads(ok(in_ro_mount(root, *wb, "list", "--json", "--as", "marco.bianchi")))
    assert len(listed) == 4
    found = json.loads(ok(in_ro_mount(root, *wb, "search", QUERY, "--json", "--as", "marco.bianchi")))
    assert found["hits"][0]["id"] == "ro-retry"
    body = tmp_path / "body.md"
    body.write_text("nope\n", encoding="utf-8")
    message = refused(in_ro_mount(root, *wb, "edit", "ro-retry", "--file", str(body), "--reason", "r",
                                  "--as", "marco.bianchi"))
    assert "read-only file system" in message
    # the last resort: the mode bits say writable, DuckDB's read-write open fails, we reopen read-only
    script = ("import sys\nfrom pathlib import Path\nimport workbench.store.connect as c\n"
              "c.writable_problem = lambda path: None\nfrom workbench.store import Store\n"
              "s = Store(Path(sys.argv[1]))\nprint(s.read_only, s.read_only_reason, s.counts()['fragments'])\n")
    fallback = ok(in_ro_mount(root, sys.executable, "-c", script, str(root / "workbench.duckdb")))
    assert fallback.strip() == "True read-only file system 4"
    assert snapshot(root) == before


# -- paths with quotes, spaces and non-ASCII characters -----------------------------------


def test_quoted_workspace_path(tmp_path):
    from workbench import Workbench

    root = tmp_path / "it's \"x\" ø"
    src = tmp_path / "src"
    for fid, kw in FRAGMENTS.items():
        write_fragment(src, fid, **kw)
    with Workbench.init(root, config=CONFIG) as wb:
        assert not wb.ingest([src]).errors
        wb.edit("ro-ledger", EDITED_BODY, reason="clarify", actor="marco.bianchi")
        assert wb.get("ro-ledger").version == 2
        assert wb.search(QUERY, principal="marco.bianchi").hits[0].id == "ro-retry"
        fts = wb.search(QUERY, principal="marco.bianchi", pipeline="bm25", lexical="duckdb-fts")
        assert fts.hits[0].id == "ro-retry"
    assert (root / "workbench.duckdb").is_file()


def test_quoted_workspace_and_tmpdir_through_the_cli(tmp_path):
    """The ingest batch file and the FTS documents file are written under TMPDIR and read by
    DuckDB: a quote in either path must never reach SQL text."""
    root = tmp_path / "work space 'ø\" x"
    tmpdir = tmp_path / "tmp 'q\" ø"
    tmpdir.mkdir()
    src = tmp_path / "src"
    for fid, kw in FRAGMENTS.items():
        write_fragment(src, fid, **kw)
    env = {"TMPDIR": str(tmpdir)}
    cli = lambda *a: run_cli(*a, workspace=root, env=env)
    ok(cli("init", "--config", str(CONFIG)))
    ok(cli("ingest", str(src)))
    body = tmp_path / "body.md"
    body.write_text(EDITED_BODY + "\n", encoding="utf-8")
    ok(cli("edit", "ro-ledger", "--file", str(body), "--reason", "clarify", "--as", "marco.bianchi"))
    assert [v["version"] for v in json.loads(ok(cli("history", "ro-ledger", "--json", "--as", "marco.bianchi")))] \
        == [1, 2]
    found = json.loads(ok(cli("search", QUERY, "--json", "--as", "marco.bianchi", "--lexical", "duckdb-fts")))
    assert found["hits"][0]["id"] == "ro-retry"
    assert not list(tmpdir.glob("workbench-*"))  # the batch folders were made there and cleaned up


def test_a_path_word_is_not_a_lock_error(tmp_path):
    """DuckDB's error names the file; a folder called "blocks" must not read as a lock conflict
    (that used to wait out the lock timeout and then report "workspace busy")."""
    from workbench.errors import StoreError, WorkspaceBusy
    from workbench.store import Store

    bad = tmp_path / "blocks" / "workbench.duckdb"
    bad.mkdir(parents=True)  # a folder where the database file should be
    with pytest.raises(StoreError) as err:
        Store(bad, lock_timeout=5)
    assert not isinstance(err.value, WorkspaceBusy)


def test_closing_after_a_write_leaves_it_in_the_log_for_the_next_open(sample_workspace):
    """A writable connection does not checkpoint on close (at 100k fragments that checkpoint cost
    1.3 s and 850 MB per CLI edit): the edit stays in workbench.duckdb.wal, and the next open sees
    it (a read-only open replays the log too: test_pending_wal_is_read_in_a_read_only_folder)."""
    from workbench import Workbench

    root = sample_workspace
    with Workbench.open(root) as wb:
        wb.store.con.execute("CHECKPOINT")
        wb.edit("nw-rb-deploy-rollback", "Logged, not checkpointed.", reason="r", actor="dan.kowalski")
    wal = root / "workbench.duckdb.wal"
    assert wal.is_file() and wal.stat().st_size > 0
    with Workbench.open(root) as wb:
        assert wb.get("nw-rb-deploy-rollback", principal="dan.kowalski").body == "Logged, not checkpointed."


def test_a_rebuilt_fts_index_in_the_log_replays_on_the_next_open(sample_workspace):
    """The FTS index rebuilt for a new generation and left in the write-ahead log (no checkpoint
    on close, or a kill -9) replays: DuckDB cannot replay create_fts_index(overwrite=1)'s DROP
    SCHEMA, so the store drops the index's objects one by one."""
    from workbench import Workbench

    with Workbench.open(sample_workspace) as wb:
        wb.warm(lexical="duckdb-fts")
        wb.store.con.execute("CHECKPOINT")
        wb.edit("nw-rb-deploy-rollback", "Roll back with zebrafinch, page NWPAY-4091.", reason="r", actor="dan.kowalski")
        wb.warm(lexical="duckdb-fts")  # rebuilt for the new generation: only in the log
        assert wb.store.fts_generation() == wb.store.generation()
    assert (sample_workspace / "workbench.duckdb.wal").stat().st_size > 0
    with Workbench.open(sample_workspace) as wb:
        hits = wb.search("zebrafinch", principal="dan.kowalski", lexical="duckdb-fts", pipeline="bm25",
                         calibrate=False, trace=False).hits
        assert hits and hits[0].id == "nw-rb-deploy-rollback"
