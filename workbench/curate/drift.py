"""Code drift: commits to a fragment's source files after it was last verified (gitpython)."""

from __future__ import annotations

from datetime import datetime, timezone

from ..models import Fragment
from .staleness import Drift, last_touched


def find_drift(fragments: list[Fragment], repos: dict[str, dict]) -> dict[str, list[Drift]]:
    """fragment id → drifts, for fragments whose sources lie in a git repository ingested here.

    ``repos`` is ``Store.git_repos()`` (repo key → row with ``name`` and ``path``). A source names its
    repository by name; when several repositories share that name, the one holding the source's
    commit is used (most recently ingested first)."""
    by_name: dict[str, list[str]] = {}
    for key, row in sorted(repos.items(), key=lambda kv: kv[1].get("ingested_at") or datetime.min, reverse=True):
        by_name.setdefault(row.get("name", key), []).append(key)
    wanted = [f for f in fragments if f.status == "active" and any(s.repo in by_name for s in f.sources)]
    if not wanted:
        return {}
    import git

    opened: dict[str, git.Repo | None] = {}

    def open_key(key: str):
        if key not in opened:
            try:
                opened[key] = git.Repo(repos[key]["path"])
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                opened[key] = None
        return opened[key]

    def holds(repo, sha: str | None) -> bool:
        try:
            return bool(sha) and repo.commit(sha) is not None
        except (ValueError, git.BadName, git.BadObject, git.GitCommandError):
            return False

    out: dict[str, list[Drift]] = {}
    for f in wanted:
        since = last_touched(f)
        for source in f.sources:
            keys = by_name.get(source.repo)
            if not keys:
                continue
            if len(keys) == 1:
                repo = open_key(keys[0])
            else:
                repo = next((r for r in map(open_key, keys) if r is not None and holds(r, source.commit)), None)
            if repo is None:
                continue
            commits = []
            try:
                for commit in repo.iter_commits(paths=source.path, max_count=50):
                    when = commit.committed_datetime.astimezone(timezone.utc).replace(tzinfo=None)
                    if when <= since:
                        break
                    commits.append(commit.hexsha[:10])
            except (git.GitCommandError, ValueError):
                continue
            if commits:
                out.setdefault(f.id, []).append(Drift(source.repo, source.path, tuple(commits), since))
    for repo in opened.values():
        if repo is not None:
            repo.close()
    return out


def utc(dt: datetime) -> datetime:
    return dt.astimezone(timezone.utc).replace(tzinfo=None) if dt.tzinfo else dt
