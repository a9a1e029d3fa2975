"""The discovery run: ``WORKBENCH_TEST_STORE=postgresql`` puts every workspace the tests make on
PostgreSQL, without the tests (or the product) knowing (``make test-pg``).

Test-only plumbing, installed for the whole session by tests/conftest.py when the switch is on:

- ``Workbench.init`` (the API and the in-process CLI's ``init``) appends ``store: "<url>"`` naming a
  fresh database to the workbench.yaml it has just written, before it opens the workspace; a
  re-``init --force`` keeps the database the workspace had. A yaml copied from another switched
  workspace gets a fresh database too (the test meant a new workspace); a yaml naming any other
  store, or a folder that already holds a DuckDB file, is left alone.
- ``shutil.copytree`` of a workspace folder whose yaml names a test database gives the copy a
  database of its own (``CREATE DATABASE ... TEMPLATE``): the tests copy the sample workspace's
  folder to get a private workspace, and a copy must not share its original's data. A copy that
  leaves the DuckDB file out (``ignore=``) is the config without the data: it gets an empty database.

Workspaces made by a real ``workbench init`` process, and tests about DuckDB itself (its file,
locks, WAL, read-only mounts, the duckdb-fts index; marked ``duckdb_only``), stay on DuckDB or are
skipped. The product never sees any of this.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from pathlib import Path

import pg_support

ENV = "WORKBENCH_TEST_STORE"


def enabled() -> bool:
    value = os.environ.get(ENV, "duckdb").strip().lower()
    if value not in ("duckdb", "postgresql", ""):
        raise ValueError(f"{ENV} must be duckdb or postgresql, not {value!r}")
    return value == "postgresql"


class Switch:
    """The patches and the databases they made (``made``: (workspace folder, url))."""

    def __init__(self, admin: str):
        self.admin = admin
        self.made: list[tuple[Path, str]] = []
        self.local = threading.local()

    def new_database(self, root: Path) -> str:
        url = pg_support.fresh_database(self.admin)
        self.made.append((root, url))
        return url

    def owner(self, url: str) -> Path | None:
        """The workspace folder a database was made for here (None: not made here)."""
        return next((root for root, made in self.made if made == url), None)

    def ours(self, url: str | None) -> bool:
        if not url:
            return False
        name = url.split("?", 1)[0].rsplit("/", 1)[-1]
        return name.startswith("t_") and pg_support.with_database(self.admin, name) == url

    def install(self, mp) -> None:
        from workbench import Workbench
        from workbench.config import CONFIG_NAME, DB_NAME, resolve_workspace

        original_init, original_open = Workbench.init.__func__, Workbench.open.__func__
        original_copytree = shutil.copytree
        switch = self

        def init(cls, path=None, *, config=None, force=False):
            root = resolve_workspace(path)
            kept = pg_support.store_of(root / CONFIG_NAME) if (root / CONFIG_NAME).is_file() else None
            switch.local.pending = (root, kept)
            try:
                return original_init(cls, path, config=config, force=force)
            finally:
                switch.local.pending = None

        def open_(cls, path=None, *, lock_timeout=None):
            pending = getattr(switch.local, "pending", None)
            if pending is not None and resolve_workspace(path) == pending[0]:
                switch.local.pending = None
                root, kept = pending
                config = root / CONFIG_NAME
                named = pg_support.store_of(config) if config.is_file() else None
                if config.is_file() and not named and not (root / DB_NAME).exists():
                    url = kept or switch.new_database(root)
                    text = config.read_text(encoding="utf-8").rstrip("\n")
                    config.write_text(f"{text}\nstore: \"{url}\"\n", encoding="utf-8")
                elif named and named != kept and switch.owner(named) not in (None, root):
                    # initialised from another switched workspace's yaml: a new workspace, not a share
                    text = config.read_text(encoding="utf-8")
                    config.write_text(text.replace(named, switch.new_database(root)), encoding="utf-8")
            return original_open(cls, path, lock_timeout=lock_timeout)

        def copytree(src, dst, *args, **kwargs):
            out = original_copytree(src, dst, *args, **kwargs)
            config = Path(dst) / CONFIG_NAME
            url = pg_support.store_of(config) if config.is_file() else None
            if switch.ours(url):
                ignore = kwargs.get("ignore")
                if ignore is not None and DB_NAME in ignore(str(src), [DB_NAME]):
                    copy = switch.new_database(Path(dst))  # the folder without its data: a new workspace
                else:
                    copy = pg_support.clone_database(switch.admin, url)
                    switch.made.append((Path(dst), copy))
                config.write_text(config.read_text(encoding="utf-8").replace(url, copy), encoding="utf-8")
            return out

        mp.setattr(Workbench, "init", classmethod(init))
        mp.setattr(Workbench, "open", classmethod(open_))
        mp.setattr(shutil, "copytree", copytree)

    def drop(self) -> None:
        """Drop the databases made here, except a template other workers may still copy."""
        for root, url in self.made:
            if root.parent.name == "sample-template":
                continue
            with contextlib.suppress(Exception):  # best effort at the end of a run
                pg_support.drop_database(self.admin, url)
