"""The advert: how clients on this machine find the server that holds a workspace.

``server.json`` in the workspace folder names the server's address, its process id and host; it
is written when the server starts listening and removed when it exits. A record whose process is
gone (a server killed with -9) is stale and ignored. Both files are mode 0600 (in a workspace
folder made 0700): ``server.token`` beside it, which only the user who started the server can
read, holds the owner token: a command run by that user on
this machine acts as the local command line always has (``--as`` honoured). Everyone else needs a
token of their own (``workbench token create``).

The record also names the identity of the workspace the server holds (``workbench.identity``: its
id, and where its database lives). A folder copied while the server runs carries the advert and
its owner token along; the copy's database is another file, so its identity differs from the
advert's, and ``read_advert`` reports the advert as ``foreign``: a client runs on the copy itself
and never relays to the server of the original (and the copied advert and token are removed).
An advert without an identity (a server older than this check) is taken at its word.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ..identity import Identity, peek

ADVERT, TOKEN = "server.json", "server.token"


@dataclass(frozen=True)
class Advert:
    url: str
    pid: int
    host: str
    path: Path
    token: str | None  # the owner token, when this user may read it
    workspace: Identity | None = None  # the identity of the workspace the server holds
    foreign: str | None = None  # why this advert is not this folder's workspace's (a copy's inherited advert)


def write_advert(root: Path, url: str, owner_token: str, workspace: Identity | None = None) -> Path:
    """Publish the server (atomically: a reader sees the old record or the new one, never half)."""
    record = {"url": url, "pid": os.getpid(), "host": socket.gethostname()}
    if workspace is not None:
        record["workspace"] = workspace.to_dict()
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
    """The live server of the workspace at ``root``, or None (none, or its process is gone). An
    advert whose identity is not the folder's workspace's comes back with ``foreign`` set."""
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
    held = Identity.from_dict(record.get("workspace"))
    return Advert(url, pid, str(host), root / ADVERT, token, held, _foreign(root, held, host == socket.gethostname()))


def _foreign(root: Path, held: Identity | None, same_host: bool) -> str | None:
    if held is None:
        return None  # an older server's advert: no identity to compare
    here = peek(root)
    if here is None:
        return "the folder holds no workspace database"
    if not here.same_workspace(held, same_host=same_host):
        return "its workspace is another one (this folder is a copy, or was replaced, while that server ran)"
    return None


def drop_foreign(advert: Advert) -> bool:
    """Remove a foreign advert and the owner token copied with it (another server's secret, in a
    folder it does not serve). Returns whether they are gone; a folder this user may not change
    keeps them (clients go on ignoring them)."""
    if advert.foreign is None:
        return False
    root = advert.path.parent
    gone = True
    for name in (ADVERT, TOKEN):
        try:
            (root / name).unlink()
        except FileNotFoundError:
            pass
        except OSError:
            gone = False
    return gone


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
