"""A workspace is its user's alone: ``init`` makes the folder 0700 and the store keeps the database,
its write-ahead log (recreated after every checkpoint) and the index snapshot 0600, whatever the
umask; an older workspace's files are narrowed on its next writable open (its folder keeps the
modes its owner chose); a read-only open changes nothing. (The server's advert and owner token:
tests/test_server.py.)"""

from __future__ import annotations

import os
import stat

import pytest
from conftest import CONFIG, SAMPLE

from workbench import Workbench


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)  # the common default: DuckDB's files would be 0644
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.duckdb_only("the modes of DuckDB's files")
def test_init_and_every_later_file_are_private(tmp_path, umask_022):
    root = tmp_path / "ws"
    with Workbench.init(root, config=CONFIG) as wb:
        assert not wb.ingest([SAMPLE / "fragments" / "northwind"], actor="kb.sync").errors
        wb.warm()  # writes the index snapshot next to the database
        wb.store._q("CHECKPOINT")  # DuckDB removes the log ...
        assert not (root / "workbench.duckdb.wal").exists()
        wb.token_create("marco.bianchi")  # ... and the next commit makes a new one
        assert mode(root / "workbench.duckdb.wal") == 0o600
    assert mode(root) == 0o700
    assert mode(root / "workbench.duckdb") == 0o600
    index = root / "workbench.duckdb.index"
    assert mode(index) == 0o700
    assert {mode(p) for p in index.rglob("*") if p.is_file()} == {0o600}
    assert {mode(p) for p in index.rglob("*") if p.is_dir()} == {0o700}


@pytest.mark.duckdb_only("the modes of DuckDB's files")
def test_an_older_workspace_is_narrowed_on_a_writable_open_only(tmp_path, umask_022):
    root = tmp_path / "ws"
    Workbench.init(root, config=CONFIG).close()
    db, wal = root / "workbench.duckdb", root / "workbench.duckdb.wal"
    os.chmod(root, 0o755)
    os.chmod(db, 0o444)
    with Workbench.open(root) as wb:  # read-only (no write bit): nothing is changed
        assert wb.store.read_only
    assert mode(db) == 0o444
    os.chmod(db, 0o644)
    with Workbench.open(root) as wb:
        wb.token_create("marco.bianchi")
    assert mode(db) == 0o600 and mode(wal) == 0o600
    assert mode(root) == 0o755  # the folder: its owner's choice, left alone


@pytest.mark.duckdb_only("the modes of DuckDB's files")
def test_init_in_an_existing_folder_leaves_its_mode(tmp_path, umask_022):
    root = tmp_path / "mine"
    root.mkdir(mode=0o750)
    Workbench.init(root, config=CONFIG).close()
    assert mode(root) == 0o750 and mode(root / "workbench.duckdb") == 0o600
