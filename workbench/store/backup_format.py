"""The backup file: a zip of JSON lines, one member per table, and a manifest with each table's row
count and SHA-256, so that any backend can write it and any backend can read it (a DuckDB backup
restored into PostgreSQL is how a workspace moves between them).

    manifest.json          {"format": "workbench-backup", "version": 1, "backend": "duckdb",
                            "created_at": ISO-8601, "workspace_id": ..., "schema": [1, 2, ..., 10],
                            "tables": {NAME: {"rows": N, "sha256": HEX, "columns": [[NAME, TYPE], ...]}},
                            "files": {NAME: {"sha256": HEX}}}
    tables/NAME.jsonl      one JSON object per row, keys the column names, in a deterministic order;
                           timestamps as "YYYY-MM-DD HH:MM:SS[.ffffff]" (UTC, no zone), lists as
                           arrays, JSON columns as their text (a string), NULL as null
    files/NAME             workspace files kept alongside (workbench.yaml)

A table's hash is the SHA-256 of its member's bytes: a restore checks every one before it writes
anything, so a damaged or edited backup is refused whole. (The hashes detect damage and edits;
they are not a signature: whoever can rewrite the file can rewrite its manifest too.) Column types
are recorded as the writing backend names them, for people; a restore uses its own schema's types.

This module reads and writes the file; it runs no SQL and decides nothing about what is backed up.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BackupInvalid

FORMAT, VERSION = "workbench-backup", 1
MANIFEST = "manifest.json"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")  # a table name a backup may carry
_FILE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class TableEntry:
    rows: int
    sha256: str
    columns: tuple[tuple[str, str], ...]  # (name, type as the writing backend names it)

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "sha256": self.sha256, "columns": [list(c) for c in self.columns]}


@dataclass(frozen=True)
class Manifest:
    backend: str
    created_at: str
    workspace_id: str | None
    schema: tuple[int, ...]
    tables: dict[str, TableEntry]
    files: dict[str, str] = field(default_factory=dict)  # name -> sha256

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "backend": self.backend, "created_at": self.created_at,
                "workspace_id": self.workspace_id, "schema": list(self.schema),
                "tables": {name: entry.to_dict() for name, entry in self.tables.items()},
                "files": {name: {"sha256": digest} for name, digest in self.files.items()}}


class Writer:
    """Write a backup to ``out`` through a temporary file beside it (0600), renamed into place by
    ``finish``: a reader never finds half a backup under the name asked for."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.tmp = self.out.with_name(f".{self.out.name}.{os.getpid()}.tmp")
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
        self.zip = zipfile.ZipFile(self.tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6)
        self.tables: dict[str, TableEntry] = {}
        self.files: dict[str, str] = {}

    def table(self, name: str, columns: Iterable[tuple[str, str]], lines: Iterable[str]) -> TableEntry:
        digest, rows = hashlib.sha256(), 0
        info = zipfile.ZipInfo(f"tables/{name}.jsonl", date_time=time.localtime()[:6])
        info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o600 << 16
        with self.zip.open(info, "w", force_zip64=True) as member:
            for line in lines:
                data = (line + "\n").encode("utf-8")
                digest.update(data)
                member.write(data)
                rows += 1
        entry = TableEntry(rows, digest.hexdigest(), tuple((str(c), str(t)) for c, t in columns))
        self.tables[name] = entry
        return entry

    def file(self, name: str, data: bytes) -> None:
        self.zip.writestr(f"files/{name}", data)
        self.files[name] = hashlib.sha256(data).hexdigest()

    def finish(self, *, backend: str, created_at: str, workspace_id: str | None, schema: Iterable[int]) -> Manifest:
        manifest = Manifest(backend, created_at, workspace_id, tuple(sorted(schema)), dict(self.tables),
                            dict(self.files))
        self.zip.writestr(MANIFEST, json.dumps(manifest.to_dict(), indent=1, sort_keys=True) + "\n")
        self.zip.close()
        with open(self.tmp, "rb") as written:
            os.fsync(written.fileno())
        os.replace(self.tmp, self.out)
        return manifest

    def abort(self) -> None:
        with contextlib.suppress(OSError, ValueError, zipfile.BadZipFile):
            self.zip.close()
        try:
            self.tmp.unlink()
        except OSError:
            pass


class Reader:
    """An open backup file: its manifest, checked for shape, and its members."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.zip = zipfile.ZipFile(self.path)
            raw = json.loads(self.zip.read(MANIFEST).decode("utf-8"))
        except FileNotFoundError as e:
            raise BackupInvalid(f"no backup at {self.path}") from e
        except (OSError, KeyError, ValueError, zipfile.BadZipFile, UnicodeDecodeError) as e:
            raise BackupInvalid(f"{self.path} is not a workbench backup ({_why(e)})") from e
        self.manifest = _manifest(raw, self.path)

    def close(self) -> None:
        self.zip.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def verify(self) -> None:
        """Check every member against the manifest's hashes (and the table members' row counts);
        raise ``BackupInvalid`` naming the first that differs."""
        for name, entry in self.manifest.tables.items():
            digest, rows = self._hash(f"tables/{name}.jsonl", count_lines=True)
            if digest != entry.sha256 or rows != entry.rows:
                raise BackupInvalid(f"backup {self.path} is damaged or was changed: table {name}'s content does "
                                    f"not match its manifest (sha256 or row count differs); nothing was restored")
        for name, expected in self.manifest.files.items():
            if self._hash(f"files/{name}")[0] != expected:
                raise BackupInvalid(f"backup {self.path} is damaged or was changed: file {name} does not match "
                                    "its manifest; nothing was restored")

    def extract_table(self, name: str, to: Path) -> Path:
        with self.zip.open(f"tables/{name}.jsonl") as member, open(to, "wb") as out:
            while chunk := member.read(_CHUNK):
                out.write(chunk)
        return to

    def file(self, name: str) -> bytes:
        return self.zip.read(f"files/{name}")

    def _hash(self, member: str, *, count_lines: bool = False) -> tuple[str, int]:
        digest, lines = hashlib.sha256(), 0
        try:
            with self.zip.open(member) as found:
                while chunk := found.read(_CHUNK):
                    digest.update(chunk)
                    if count_lines:
                        lines += chunk.count(b"\n")
        except (KeyError, zipfile.BadZipFile, OSError, EOFError) as e:
            raise BackupInvalid(f"backup {self.path} is damaged or was changed: {member} cannot be read "
                                f"({_why(e)}); nothing was restored") from e
        return digest.hexdigest(), lines


def _manifest(raw: Any, path: Path) -> Manifest:
    def bad(why: str) -> BackupInvalid:
        return BackupInvalid(f"{path} is not a workbench backup this version can read ({why})")

    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise bad("no workbench-backup manifest")
    if raw.get("version") != VERSION:
        raise bad(f"format version {raw.get('version')!r}; this workbench reads version {VERSION}")
    tables, files = raw.get("tables"), raw.get("files", {})
    schema = raw.get("schema")
    if not isinstance(tables, dict) or not isinstance(files, dict) or not isinstance(schema, list) \
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in schema):
        raise bad("a malformed manifest")
    entries = {}
    for name, entry in tables.items():
        if not _NAME.match(str(name)) or not isinstance(entry, dict):
            raise bad(f"a malformed table entry {str(name)[:80]!r}")
        rows, digest, columns = entry.get("rows"), entry.get("sha256"), entry.get("columns")
        if not isinstance(rows, int) or not isinstance(digest, str) or not isinstance(columns, list) \
                or not all(isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c) for c in columns):
            raise bad(f"a malformed table entry {name!r}")
        entries[name] = TableEntry(rows, digest, tuple((c[0], c[1]) for c in columns))
    kept = {}
    for name, entry in files.items():
        if not _FILE.match(str(name)) or not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise bad(f"a malformed file entry {str(name)[:80]!r}")
        kept[name] = entry["sha256"]
    workspace_id = raw.get("workspace_id")
    return Manifest(str(raw.get("backend")), str(raw.get("created_at")),
                    workspace_id if isinstance(workspace_id, str) else None, tuple(sorted(schema)), entries, kept)


def _why(error: BaseException) -> str:
    return str(error) or type(error).__name__
