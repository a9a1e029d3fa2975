"""Code drift: commits to a fragment's source files after it was last verified (gitpython)."""

from __future__ import annotations

from datetime import datetime, timezone

from ..models import Fragment
from .staleness import Drift, last_touched


def find_drift(fragments: list[Fragment], repos: dict[str, dict]) -> dict[str, list[Drift]]:
    """fragment id → drifts, for fragments whose sources lie in a git repository ingested here."""
    wanted = [f for f in fragments if f.status == "active" and any(s.repo in repos for s in f.sources)]
    if not wanted:
        return {}
    import git

    opened: dict[str, git.Repo | None] = {}
    out: dict[str, list[Drift]] = {}
    for f in wanted:
        since = last_touched(f)
        for source in f.sources:
            if source.repo not in repos:
                continue
            if source.repo not in opened:
                try:
                    opened[source.repo] = git.Repo(repos[source.repo]["path"])
                except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                    opened[source.repo] = None
            repo = opened[source.repo]
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
