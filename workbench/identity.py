"""Which workspace a folder holds, told without opening its database.

A workspace has a random id, stored in its database (``meta`` row ``workspace_id``, migration 010)
and mirrored in ``workspace.id`` in its folder by every writable open. The team server's advert
(``server.json``) names the identity of the workspace it holds, and a client relays a command only
when the folder it was pointed at holds that same workspace.

The id alone cannot tell a copy: a folder copied with ``cp -a`` while a server runs carries the
database, its id file and the advert, all alike. What differs is where the database lives: for a
file (DuckDB), the device and inode of the file the server holds; a copy is another file. So an
identity is (id, location), and two identities are the same workspace when their locations match
and, where both ids are known, their ids too. A backend whose data is not a file names its own
location in the id file (e.g. a PostgreSQL DSN's host, port and database: every copy of such a
folder points at the same database, so relaying from a copy is right there).

This module reads and writes that small file and stats a path; it must not open a database (a
running server holds its lock) and must not import anything above ``errors``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

ID_FILE = "workspace.id"
DEFAULT_DATABASE = "workbench.duckdb"


@dataclass(frozen=True)
class Identity:
    id: str | None    # the random id stored in the database (None: not known, e.g. an old read-only file)
    location: str     # where the database lives, as its backend names it ("file:DEV:INODE" for DuckDB)

    def to_dict(self) -> dict[str, str | None]:
        return {"id": self.id, "location": self.location}

    @classmethod
    def from_dict(cls, record: object) -> Identity | None:
        if not isinstance(record, dict) or not isinstance(record.get("location"), str):
            return None
        found = record.get("id")
        return cls(found if isinstance(found, str) and found else None, record["location"])

    def same_workspace(self, other: Identity, *, same_host: bool = True) -> bool:
        """Whether ``other`` names this workspace: the same location (compared only on the same
        host: a file's device and inode mean nothing on another machine) and, when both are known,
        the same id."""
        if same_host and self.location != other.location:
            return False
        return self.id is None or other.id is None or self.id == other.id


def file_location(database: Path) -> str | None:
    """The location of a database file: its device and inode (None when it does not exist)."""
    try:
        found = os.stat(database)
    except OSError:
        return None
    return f"file:{found.st_dev}:{found.st_ino}"


def peek(root: Path) -> Identity | None:
    """The identity of the workspace in folder ``root``, from ``workspace.id`` and a stat of its
    database file, without opening the database. None when there is no database to name."""
    record = _read(root)
    database = record.get("database") if isinstance(record.get("database"), str) else DEFAULT_DATABASE
    if isinstance(record.get("location"), str):  # a backend that names its own location
        location: str | None = record["location"]
    else:
        location = file_location(root / Path(database).name)
    if location is None:
        return None
    found = record.get("id")
    return Identity(found if isinstance(found, str) and found else None, location)


def remember(root: Path, workspace_id: str, *, database: str | None = None, location: str | None = None) -> None:
    """Write ``workspace.id`` (0600, atomically) unless it already says this. ``database``: the
    file's name in the folder (file backends); ``location``: a backend's own location instead.
    A folder this user may not write keeps what it has (the id is then known from the advert's
    location alone)."""
    record: dict[str, str] = {"id": workspace_id}
    if database is not None:
        record["database"] = database
    if location is not None:
        record["location"] = location
    if _read(root) == record:
        return
    target = root / ID_FILE
    tmp = target.with_name(f".{ID_FILE}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, (json.dumps(record) + "\n").encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass


def _read(root: Path) -> dict:
    try:
        record = json.loads((root / ID_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
