"""Ingest markdown and code from a git repository (gitpython).

Files at HEAD are chunked (see chunking.py); each chunk becomes a fragment whose id is
stable across edits (the repository's identity, path, symbol: see git_identity.py), whose
owner comes from CODEOWNERS or else the file's last author, and whose timestamps come from
the history. This module only reads: deciding what to write or archive is the service's (service/ingest_git.py).
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from ..config import WorkspaceConfig
from ..errors import UserError
from ..models import Content, Scope, Source
from .chunking import CHUNKER_VERSION, Chunk, chunk_file
from .git_identity import RepoIdentity, identify

DEFAULT_INCLUDE = ("*.md", "*.markdown", "*.py", "*.txt", "*.rst", "*.go", "*.ts", "*.js", "*.sql", "*.sh",
                   "*.yaml", "*.yml", "*.toml", "*.tf")
MAX_BYTES = 256_000
_LANG = {".py": "python", ".go": "go", ".ts": "typescript", ".js": "javascript", ".sql": "sql", ".sh": "bash",
         ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".tf": "hcl"}


@dataclass(frozen=True)
class GitChunk:
    id: str
    content: Content
    created: datetime
    updated: datetime
    file: str          # path in the repository
    line: int          # first line of the chunk (for error messages)
    raw: str = ""      # the chunk as it is in the file (scanned for secrets)
    verified: datetime | None = None


def open_repo(path: str | Path):
    import git

    try:
        return git.Repo(str(path))
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as e:
        raise UserError(f"{path} is not a git repository") from e


def _utc(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, tz=timezone.utc).replace(tzinfo=None)


def history(repo) -> dict[str, dict]:
    """path → {"first": (sha, ts), "last": (sha, ts, email, name)} in one pass over the log."""
    out: dict[str, dict] = {}
    try:
        log = repo.git.log("--format=\x1e%H\x1f%ct\x1f%ae\x1f%an", "--name-only", "--no-renames")
    except Exception:  # noqa: BLE001 - an empty repository has no log
        return out
    for record in log.split("\x1e"):
        if not record.strip():
            continue
        head, _, names = record.partition("\n")
        sha, ts, email, name = head.split("\x1f")
        for path in filter(None, (n.strip() for n in names.splitlines())):
            entry = out.setdefault(path, {"last": (sha, int(ts), email, name)})
            entry["first"] = (sha, int(ts))  # the log runs newest first: the last seen is the first commit
    return out


def codeowners(repo_root: Path) -> list[tuple[str, list[str]]]:
    for place in ("CODEOWNERS", ".github/CODEOWNERS", "docs/CODEOWNERS"):
        path = repo_root / place
        if path.is_file():
            rules = []
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                line = line.split("#", 1)[0].strip()
                if line:
                    pattern, *owners = line.split()
                    rules.append((pattern, owners))
            return rules
    return []


def _matches(pattern: str, path: str) -> bool:
    anchored = pattern.startswith("/")
    pat = pattern.lstrip("/")
    if pat.endswith("/"):
        pat += "**"
    if "/" not in pat.rstrip("*") and not anchored:
        return fnmatch.fnmatch(PurePosixPath(path).name, pat) or fnmatch.fnmatch(path, f"*/{pat}") or \
            fnmatch.fnmatch(path, pat)
    return fnmatch.fnmatch(path, pat.replace("**", "*"))


def owner_for(path: str, rules: list[tuple[str, list[str]]], last_author: tuple[str, str] | None,
              config: WorkspaceConfig) -> str | None:
    """CODEOWNERS (last matching rule wins) mapped to a principal, else the last author."""
    by_email = {p.email.lower(): p.name for p in config.principals.values() if p.email}

    def principal(handle: str) -> str | None:
        handle = handle.strip()
        if "@" in handle and not handle.startswith("@"):
            return by_email.get(handle.lower())
        name = handle.lstrip("@").split("/")[-1].lower()
        return name if name in config.principals else None

    for pattern, owners in reversed(rules):
        if _matches(pattern, path):
            for handle in owners:
                found = principal(handle)
                if found:
                    return found
            break
    if last_author:
        email, name = last_author
        return by_email.get(email.lower()) or principal(".".join(name.lower().split()))
    return None


def _slug(text: str, limit: int) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:limit] or "x"


def chunk_id(repo: RepoIdentity, path: str, symbol: str) -> str:
    """``git.NAME.PATH.SYMBOL.DIGEST`` (at most 123 chars of ``[a-z0-9.-]``, no ``..``): the readable
    part is slugged, the digest is over the repository's identity (root commit and remote), the
    path and the symbol, so same-named folders holding different repositories never share ids."""
    material = f"{repo.root}\0{repo.remote_key}\0{path}\0{symbol}"
    digest = hashlib.sha1(material.encode("utf-8")).hexdigest()[:12]
    return f"git.{_slug(repo.name, 24)}.{_slug(path, 48)}.{_slug(symbol, 32)}.{digest}"


def included(path: str, patterns: list[str] | tuple[str, ...]) -> bool:
    """True when a repository path matches an --include glob (by full path or by file name)."""
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatch(path, p) or fnmatch.fnmatch(name, p) for p in patterns)


def _kind(path: str, chunk: Chunk) -> str:
    lower = f"{path} {chunk.symbol}".lower()
    if not path.lower().endswith((".md", ".markdown", ".rst", ".txt")):
        return "code"
    if "runbook" in lower or "playbook" in lower:
        return "runbook"
    if re.search(r"\badr\b|decision", lower):
        return "decision"
    return "note"


@dataclass(frozen=True)
class RepoRead:
    """What one read of a repository at HEAD found."""

    identity: RepoIdentity
    patterns: tuple[str, ...]            # the --include globs in effect
    chunks: list[GitChunk]
    errors: list[dict[str, str]]         # files that could not be read this run (they are not "gone")
    warnings: list[dict[str, str]]


def read_repo(path: str | Path, config: WorkspaceConfig, *, scope: Scope | None, include: list[str] | None,
              fallback_owner: str | None = None) -> RepoRead:
    """The repository's identity and the chunks of the files at HEAD matching ``include``."""
    repo = open_repo(path)
    try:
        root = Path(repo.working_tree_dir or path)
        name = (scope.repo if scope and scope.repo else root.name)
        if scope is None:
            orgs = [o.name for o in config.orgs.values() if name in o.repos]
            if len(orgs) != 1:
                raise UserError(f"repository {name!r} is not declared under exactly one org in workbench.yaml: "
                                "pass --scope org=ORG,repo=REPO")
            scope = Scope(orgs[0], repo=name)
        try:
            head = repo.head.commit
        except ValueError as e:
            raise UserError(f"{path} has no commits") from e
        identity = identify(repo, name=name, path=str(root.resolve()), head=head.hexsha)
        warnings = [{"file": identity.path, "message": "shallow clone: its root commit is the shallow boundary, so "
                                                   "chunk ids change if the history is deepened"}] \
            if identity.shallow else []
        patterns = tuple(include or DEFAULT_INCLUDE)
        log = history(repo)
        rules = codeowners(root)
        chunks: list[GitChunk] = []
        errors: list[dict[str, str]] = []
        seen: set[str] = set()
        for blob in head.tree.traverse():
            if blob.type != "blob" or not included(blob.path, patterns):
                continue
            if blob.size > MAX_BYTES:
                errors.append({"file": blob.path, "message": f"{blob.path}: skipped, larger than {MAX_BYTES} bytes"})
                continue
            try:
                text = blob.data_stream.read().decode("utf-8")
            except UnicodeDecodeError:
                errors.append({"file": blob.path, "message": f"{blob.path}: skipped, not UTF-8 text"})
                continue
            # a file only a merge commit touched has no log entry: date it by HEAD rather than drop it
            info = log.get(blob.path) or {"first": (head.hexsha, head.committed_date),
                                          "last": (head.hexsha, head.committed_date, head.author.email or "",
                                                   head.author.name or "")}
            last_sha, last_ts, email, author = info["last"]
            owner = owner_for(blob.path, rules, (email, author), config) or fallback_owner
            if owner is None:
                errors.append({"file": blob.path, "message": f"{blob.path}: no owner: no CODEOWNERS rule or author "
                                                             f"({email}) maps to a principal (pass --owner)"})
                continue
            suffix = PurePosixPath(blob.path).suffix.lower()
            for chunk in chunk_file(blob.path, text):
                if suffix in (".md", ".markdown"):
                    title, body = chunk.symbol, chunk.text
                else:
                    title = f"{blob.path}::{chunk.symbol}"
                    body = f"`{blob.path}` · `{chunk.symbol}` · lines {chunk.start}-{chunk.end}\n\n" \
                           f"```{_LANG.get(suffix, '')}\n{chunk.text}\n```"
                content = Content(kind=_kind(blob.path, chunk), title=title[:200], body=body, scope=scope, owner=owner,
                                  tags=("git", name), sources=(Source(blob.path, name, last_sha[:12],
                                                                      (chunk.start, chunk.end)),))
                fid = chunk_id(identity, blob.path, chunk.symbol)
                n = 2
                while fid in seen:
                    fid, n = chunk_id(identity, blob.path, f"{chunk.symbol} #{n}"), n + 1
                seen.add(fid)
                chunks.append(GitChunk(fid, content, _utc(info["first"][1]), _utc(last_ts), blob.path, chunk.start,
                                       chunk.text))
        return RepoRead(identity, patterns, chunks, errors, warnings)
    finally:
        repo.close()


__all__ = ["CHUNKER_VERSION", "GitChunk", "RepoRead", "included", "open_repo", "read_repo"]
