"""Which repository a git checkout is: its root commit and ``origin`` remote, not its folder name.

Two checkouts named ``api`` can be different repositories, so a folder name must never
decide which fragments a git ingest may change. A repository is identified by the
sorted-first parentless commit reachable from HEAD plus its ``origin`` URL (when there is
one). The repo *key* derived from both is what chunk ids and fragment origins carry
(``git:KEY:PATH``). Credentials are stripped from the remote URL before it goes anywhere.
This module reads the repository only; it never touches the store.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP = re.compile(r"^(?:[^@/]*@)?([^/:]+):(.*)$")  # user@host:path (no slash before the colon)


def strip_credentials(url: str | None) -> str | None:
    """The URL without user, password, token, query or fragment: ``https://u:t@h/x.git`` → ``https://h/x.git``.

    The user part is dropped too (a token can be the whole user part, ``https://TOKEN@host``);
    scp-like ``git@host:x.git`` becomes ``host:x.git``, which git still understands."""
    if not url:
        return None
    url = url.strip()
    if _URL.match(url):
        parts = urlsplit(url)
        return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
    if "@" in url and not url.startswith(("/", ".", "~")):
        match = _SCP.match(url)
        if match:
            return f"{match.group(1)}:{match.group(2)}"
    return url


def normalize_remote(url: str | None) -> str:
    """A comparison form of a remote: ``https://h/x.git``, ``ssh://git@h:22/x`` and ``git@h:x`` are all
    ``h/x``; '' when there is no remote."""
    url = strip_credentials(url)
    if not url:
        return ""
    if _URL.match(url):
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        path = parts.path
        text = f"{host}/{path.lstrip('/')}" if host else path
    else:
        match = _SCP.match(url) if not url.startswith(("/", ".", "~")) else None
        text = f"{match.group(1).lower()}/{match.group(2).lstrip('/')}" if match else url
    return text.rstrip("/").removesuffix(".git")


@dataclass(frozen=True)
class RepoIdentity:
    """A repository as git ingestion knows it."""

    root: str             # full sha of the root commit (sorted-first parentless commit reachable from HEAD)
    remote: str | None    # the ``origin`` URL, credentials stripped
    name: str             # folder name, or the repo of --scope: the scope and tags of its fragments
    path: str             # resolved working tree
    head: str             # full sha of HEAD
    shallow: bool = False

    @property
    def remote_key(self) -> str:
        return normalize_remote(self.remote)

    @property
    def key(self) -> str:
        """``ROOT12`` or ``ROOT12-REMOTE8``: what ``git:KEY:PATH`` origins carry (no ':' in it)."""
        if not self.remote_key:
            return self.root[:12]
        return f"{self.root[:12]}-{hashlib.sha1(self.remote_key.encode('utf-8')).hexdigest()[:8]}"

    @property
    def origin_prefix(self) -> str:
        return f"git:{self.key}:"

    def origin(self, path: str) -> str:
        return f"{self.origin_prefix}{path}"

    def same_as(self, root: str | None, remote: str | None) -> bool:
        """True when a recorded (root, remote) is this repository."""
        return root == self.root and normalize_remote(remote) == self.remote_key

    def to_dict(self) -> dict[str, object]:
        return {"key": self.key, "name": self.name, "root": self.root, "remote": self.remote, "path": self.path,
                "head": self.head, "shallow": self.shallow}


def root_commit(repo) -> str:
    """The sorted-first parentless commit reachable from HEAD (a repository can have several roots)."""
    return min(repo.git.rev_list("--max-parents=0", "HEAD").split())


def origin_url(repo) -> str | None:
    """The ``origin`` remote's URL with credentials stripped, or None."""
    import git

    try:
        url = repo.git.config("--get", "remote.origin.url")
    except git.GitCommandError:
        return None
    return strip_credentials(url)


def is_shallow(repo) -> bool:
    import git

    try:
        return repo.git.rev_parse("--is-shallow-repository").strip() == "true"
    except git.GitCommandError:
        return False


def identify(repo, *, name: str, path: str, head: str) -> RepoIdentity:
    return RepoIdentity(root=root_commit(repo), remote=origin_url(repo), name=name, path=path, head=head,
                        shallow=is_shallow(repo))


__all__ = ["RepoIdentity", "identify", "normalize_remote", "strip_credentials"]
