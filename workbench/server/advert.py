"""The advert: how clients on this machine find the server that holds a workspace.

``server.json`` in the workspace folder names the server's address, its process id and host; it
is written when the server starts listening and removed when it exits. A record whose process is
gone (a server killed with -9) is stale and ignored. Both files are mode 0600 (in a workspace
folder made 0700): ``server.token`` beside it, which only the user who started the server can
read, holds the owner token: a command run by that user on
this machine acts as the local command line always has (``--as`` honoured). Everyone else needs a
token of their own (``workbench token create``).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

ADVERT, TOKEN = "server.json", "server.token"


@dataclass(frozen=True)
class Advert:
    url: str
    pid: int
    host: str
    path: Path
    token: str | None  # the owner token, when this user may read it


def write_advert(root: Path, url: str, owner_token: str) -> Path:
    """Publish the server (atomically: a reader sees the old record or the new one, never half)."""
    record = {"url": url, "pid": os.getpid(), "host": socket.gethostname()}
    _write(root / TOKEN, owner_token + "\n", 0o600)
    _write(root / ADVERT, json.dumps(record) + "\n", 0o600)
    return root / ADVERT


def _write(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def remove_advert(root: Path) -> None:
    """Remove this process's record (never another server's)."""
    found = _read(root)
    if found is not None and found.get("pid") == os.getpid():
        for name in (ADVERT, TOKEN):
            try:
                (root / name).unlink()
            except OSError:
                pass


def read_advert(root: Path) -> Advert | None:
    """The live server of the workspace at ``root``, or None (none, or its process is gone)."""
    record = _read(root)
    if record is None:
        return None
    url, pid, host = record.get("url"), record.get("pid"), record.get("host")
    if not isinstance(url, str) or not isinstance(pid, int):
        return None
    if host == socket.gethostname() and not _alive(pid):
        return None
    try:
        token = (root / TOKEN).read_text(encoding="utf-8").strip() or None
    except OSError:
        token = None
    return Advert(url, pid, str(host), root / ADVERT, token)


def _read(root: Path) -> dict | None:
    try:
        record = json.loads((root / ADVERT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
