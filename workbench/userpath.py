"""``~`` in a path a user typed, expanded as a shell does: ``~`` and ``~name`` become the home
folder when there is one; a ``~name`` naming no user (or a home that cannot be found) stays as
typed, a relative name like any other, instead of raising."""

from __future__ import annotations

from pathlib import Path


def expand_user(path: str | Path) -> Path:
    path = Path(path)
    try:
        return path.expanduser()
    except RuntimeError:  # "Could not determine home directory": no such user, or no HOME
        return path
