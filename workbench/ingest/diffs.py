"""The files a piece of work touches: from a git range (``git diff --name-only``) or a unified diff.

``diff_paths`` reads a unified diff (``git diff``, ``diff -u``): the ``--- a/PATH`` and
``+++ b/PATH`` lines, ``rename from`` / ``rename to``, deletions (``+++ /dev/null``: the old path
counts: the rules governing a deleted file still apply to deleting it). ``changed_paths`` asks git
for the files a range changed in a repository (renames give both names). ``owners_of`` maps paths
to the principals CODEOWNERS names for them. Paths come back as the diff spells them; the
ranking normalises and checks them (rank/paths.py). Reading only: nothing here writes.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from ..config import WorkspaceConfig
from ..errors import UserError

MAX_DIFF_CHARS = 8 * 1024 * 1024
_RANGE = re.compile(r"^[A-Za-z0-9_./~^@{}:+-]{1,200}$")
_HEADER = re.compile(r"^(---|\+\+\+) (\S.*?)(\t.*)?$")


def _strip_prefix(name: str) -> str | None:
    name = name.strip()
    if name.startswith('"') and name.endswith('"') and len(name) >= 2:
        name = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode(
            "latin-1", "replace").decode("utf-8", "replace")
    if name == "/dev/null":
        return None
    if name[:2] in ("a/", "b/"):
        name = name[2:]
    return name


def diff_paths(text: str) -> list[str]:
    """The paths a unified diff touches, in order of appearance (each once)."""
    if not isinstance(text, str):
        raise UserError("the diff must be text", param="diff")
    if len(text) > MAX_DIFF_CHARS:
        raise UserError(f"the diff is too long ({len(text)} characters; at most {MAX_DIFF_CHARS})", param="diff")
    out: dict[str, None] = {}
    old = new = 0   # lines of the current hunk still to come (a '--- x' line inside a hunk is content)
    for line in text.splitlines():
        if old > 0 or new > 0:
            mark = line[:1]
            if mark == "\\":
                continue
            old -= mark in (" ", "-", "")
            new -= mark in (" ", "+", "")
            if mark in (" ", "-", "+", ""):
                continue
            old = new = 0
        m = re.match(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@", line)
        if m:
            old, new = int(m.group(1) or 1), int(m.group(2) or 1)
            continue
        header = _HEADER.match(line)
        if header:
            name = _strip_prefix(header.group(2))
            if name:
                out[name] = None
            continue
        for prefix in ("rename from ", "rename to ", "copy to "):
            if line.startswith(prefix):
                out[line[len(prefix):].strip()] = None
    if not out:
        raise UserError("the diff names no files (expected unified diff lines like '+++ b/PATH')", param="diff")
    return list(out)


def changed_paths(range_: str, repo: str | Path | None = None) -> list[str]:
    """The files ``git diff --name-status`` lists for ``range_`` (e.g. ``HEAD~1..HEAD``) in ``repo``
    (default: the working folder); renames and copies give both names."""
    if not isinstance(range_, str) or not _RANGE.match(range_) or range_.startswith("-"):
        raise UserError(f"bad git range {range_!r} (expected something like HEAD~1..HEAD or main...feature)",
                        param="diff")
    where = Path(repo) if repo else Path.cwd()
    if not where.is_dir():
        raise UserError(f"{where} is not a folder", param="repo")
    try:
        done = subprocess.run(["git", "diff", "--name-status", "-z", "--no-color", range_, "--"], cwd=where,
                              capture_output=True, timeout=60, check=False)
    except FileNotFoundError as e:
        raise UserError("git is not installed (needed for --diff RANGE; or pipe a diff: --diff -)") from e
    except subprocess.TimeoutExpired as e:
        raise UserError(f"git diff {range_} took too long") from e
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UserError(f"git diff {range_} failed in {where}: {message[0] if message else 'exit ' + str(done.returncode)}",
                        param="diff")
    fields = done.stdout.decode("utf-8", "replace").split("\0")
    out: dict[str, None] = {}
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        count = 2 if status[:1] in ("R", "C") else 1
        for name in fields[i + 1:i + 1 + count]:
            out[name] = None
        i += 1 + count
    return list(out)


def owners_of(paths: list[str], repo: str | Path | None, config: WorkspaceConfig) -> dict[str, list[str]]:
    """Path → the principals CODEOWNERS (of ``repo``, default the working folder) names for it
    (the last matching rule, as git hosts read it); {} without a CODEOWNERS file."""
    from .git import _matches, codeowners

    root = Path(repo) if repo else Path.cwd()
    rules = codeowners(root) if root.is_dir() else []
    if not rules:
        return {}
    by_email = {p.email.lower(): p.name for p in config.principals.values() if p.email}
    out: dict[str, list[str]] = {}
    for path in paths:
        for pattern, handles in reversed(rules):
            if _matches(pattern, path):
                names = []
                for handle in handles:
                    name = by_email.get(handle.lower()) if "@" in handle and not handle.startswith("@") else \
                        handle.lstrip("@").split("/")[-1].lower()
                    if name and name in config.principals:
                        names.append(name)
                if names:
                    out[path] = names
                break
    return out
