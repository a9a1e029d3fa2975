"""The discovery run's switch (tests/pg_switch.py, ``make test-pg``) does what it says: workspaces
made through ``Workbench.init`` live in PostgreSQL, a copied folder gets its own copy of the data, a
folder copied without its data gets an empty database, and a yaml copied from another workspace
makes a new workspace. Checked here with the switch installed for one test, so ``make test`` keeps
the discovery run honest."""

from __future__ import annotations

import shutil

import pg_support
import pg_switch
import pytest
from conftest import CONFIG, write_fragment

from workbench import Workbench
from workbench.store.pg import PgStore


@pytest.fixture
def switched(pg_admin):
    switch = pg_switch.Switch(pg_admin)
    with pytest.MonkeyPatch.context() as mp:
        switch.install(mp)
        yield switch
    switch.drop()


def test_the_switch_puts_every_workspace_on_postgresql(switched, tmp_path):
    root = tmp_path / "ws"
    with Workbench.init(root, config=CONFIG) as wb:
        assert isinstance(wb.store, PgStore)
        assert not wb.ingest([write_fragment(tmp_path / "in", "nw-one")], actor="marco.bianchi").errors
    assert not (root / "workbench.duckdb").exists()
    url = pg_support.store_of(root / "workbench.yaml")
    assert switched.ours(url)

    copy = tmp_path / "copy"
    shutil.copytree(root, copy)  # a copy of the folder: a copy of the data, apart from the original's
    assert pg_support.store_of(copy / "workbench.yaml") not in (None, url)
    with Workbench.open(copy) as wb:
        assert [f.id for f in wb.list(principal="marco.bianchi")] == ["nw-one"]
        wb.edit("nw-one", "Changed in the copy.", reason="r", actor="marco.bianchi")
    with Workbench.open(root) as wb, Workbench.open(copy):
        assert wb.get("nw-one", principal="marco.bianchi").version == 1
        shutil.copytree(copy, tmp_path / "copy-of-open")  # the original is open: copied table by table
    with Workbench.open(tmp_path / "copy-of-open") as wb:
        assert wb.get("nw-one", principal="marco.bianchi").version == 2

    bare = tmp_path / "bare"
    shutil.copytree(root, bare, ignore=shutil.ignore_patterns("workbench.duckdb*"))  # the config, not the data
    with Workbench.open(bare) as wb:
        assert wb.list(principal="marco.bianchi") == []

    again = tmp_path / "again"
    with Workbench.init(again, config=root / "workbench.yaml") as wb:  # another workspace from its yaml
        assert wb.list(principal="marco.bianchi") == []
    with Workbench.init(root, config=CONFIG, force=True) as wb:  # re-init keeps the data
        assert [f.id for f in wb.list(principal="marco.bianchi")] == ["nw-one"]
