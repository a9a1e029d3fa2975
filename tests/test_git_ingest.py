"""Git ingestion on a small repository the test builds, with real commits dated in the past:
chunking, owners from CODEOWNERS and authors, timestamps from history, idempotent re-ingest,
archiving removed chunks, code drift, secret guard, and bad paths; repositories identified by
root commit and remote (same-named folders, include sets, dry runs, credentials, legacy rows)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import datetime

import pytest

from workbench import Workbench
from workbench.ingest.chunking import chunk_markdown, chunk_python, chunk_text

README = """# Ledger service

Posts balanced journal entries.

## Runbook: trial balance non-zero

1. Run `nwctl ledger trial-balance`.
2. Page the ledger on-call.

## Configuration

`ledger.posting.batch_size` defaults to 500.
"""

LEDGER_PY = '''"""Posting to the ledger."""

import decimal

BATCH_SIZE = 500


def check_entry_balanced(entry):
    """Every journal entry must balance to zero."""
    return sum(line.amount for line in entry.lines) == 0


class Ledger:
    def post(self, entry):
        if not check_entry_balanced(entry):
            raise ValueError("NWLED-7001 unbalanced entry")
        return entry
'''


def git(repo, *args, date="2025-01-10T10:00:00", author=("Sofia Okafor", "sofia.okafor@northwind.example")):
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_NAME": author[0],
           "GIT_AUTHOR_EMAIL": author[1], "GIT_COMMITTER_NAME": author[0], "GIT_COMMITTER_EMAIL": author[1]}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "ledger"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    git(root, "init", "-q")
    (root / "docs" / "README.md").write_text(README)
    (root / "src" / "ledger.py").write_text(LEDGER_PY)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "ledger service", date="2025-01-10T10:00:00")
    (root / "CODEOWNERS").write_text("# owners\n*.py @sofia.okafor\n/docs/ marco.bianchi@northwind.example\n")
    (root / "notes.txt").write_text("Ledger notes.\n\nNothing here is secret.\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "owners", date="2025-03-01T09:00:00",
        author=("Priya Raman", "priya.raman@northwind.example"))
    return root


def by_title(wb, principal="sofia.okafor"):
    return {f.title: f for f in wb.list(principal=principal, scope="org=northwind,repo=ledger")
            if f.id.startswith("git.")}


def test_chunkers():
    md = chunk_markdown(README, "README")
    assert [c.symbol for c in md] == ["README > Ledger service", "README > Ledger service > Runbook: trial balance "
                                      "non-zero", "README > Ledger service > Configuration"]
    py = chunk_python(LEDGER_PY)
    assert [c.symbol for c in py] == ["module", "check_entry_balanced", "Ledger"]
    assert py[1].text.startswith("def check_entry_balanced") and (py[1].start, py[1].end) == (8, 10)
    long = "\n\n".join(f"block {i}\nmore" for i in range(60))
    windows = chunk_text(long)
    assert len(windows) > 1 and windows[1].start <= windows[0].end  # consecutive windows overlap


def test_ingest_git_repository(sample_workspace, repo, cli):
    r = cli("ingest", "--git", str(repo), "--json", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["added"] == 7
    with Workbench.open(sample_workspace) as wb:
        chunks = by_title(wb)
        runbook = chunks["README > Ledger service > Runbook: trial balance non-zero"]
        assert runbook.kind == "runbook" and runbook.owner == "marco.bianchi"  # CODEOWNERS by email
        code = chunks["src/ledger.py::check_entry_balanced"]
        assert code.kind == "code" and code.owner == "sofia.okafor"            # CODEOWNERS by handle
        assert "`src/ledger.py` · `check_entry_balanced`" in code.body and "```python" in code.body
        assert code.sources[0].path == "src/ledger.py" and code.sources[0].lines == (8, 10)
        assert code.sources[0].repo == "ledger" and len(code.sources[0].commit) == 12
        assert code.created_at == datetime(2025, 1, 10, 10) and code.updated_at == datetime(2025, 1, 10, 10)
        notes = [f for t, f in chunks.items() if t.startswith("notes.txt")][0]
        assert notes.owner == "priya.raman"                                    # no rule: the last author
        assert notes.updated_at == datetime(2025, 3, 1, 9)
        hits = wb.search("nwctl ledger trial-balance", principal="sofia.okafor", trace=False).hits
        assert runbook.id in [h.id for h in hits[:3]]
    again = json.loads(cli("ingest", "--git", str(repo), "--json", workspace=sample_workspace).stdout)
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 7)


def test_code_drift_and_removed_chunks(sample_workspace, repo):
    with Workbench.open(sample_workspace) as wb:
        wb.ingest_git(repo)
        code_id = by_title(wb)["src/ledger.py::check_entry_balanced"].id
    (repo / "src" / "ledger.py").write_text(LEDGER_PY.replace("== 0", "== decimal.Decimal(0)"))
    git(repo, "commit", "-qam", "decimal zero", date="2026-10-01T12:00:00")
    sha = git(repo, "rev-parse", "--short=10", "HEAD").strip()
    with Workbench.open(sample_workspace) as wb:
        drifted = {i.fragment.id: i for i in wb.stale(days=3650)}
        assert code_id in drifted
        reason = [r for r in drifted[code_id].reasons if r.startswith("code drift")][0]
        assert "1 commit(s) to ledger:src/ledger.py" in reason and sha in reason
        wb.verify(code_id, actor="sofia.okafor")
        assert code_id not in {i.fragment.id for i in wb.stale(days=3650)}
    (repo / "notes.txt").unlink()
    git(repo, "commit", "-qam", "drop notes", date="2026-10-02T12:00:00")
    with Workbench.open(sample_workspace) as wb:
        report = wb.ingest_git(repo)
        assert len(report.archived) == 1 and len(report.updated) == 3  # every chunk of ledger.py: new commit
        gone = wb.get(report.archived[0], principal="sofia.okafor")
        assert gone.status == "archived" and len(wb.history(gone.id, principal="sofia.okafor")) == 2


def test_git_secret_guard_and_bad_paths(sample_workspace, repo, tmp_path, cli):
    (repo / "src" / "settings.py").write_text('DSN = "postgres://ledger:s3cretpassw0rd@db:5432/ledger"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "settings")
    r = cli("ingest", "--git", str(repo), "--json", workspace=sample_workspace)
    data = json.loads(r.stdout)
    assert r.returncode == 2 and data["added"] == 7
    assert "ledger/src/settings.py: contains a credential (line 1: password in a connection string)" in \
        data["errors"][0]["message"]
    (tmp_path / "plain").mkdir()
    r = cli("ingest", "--git", str(tmp_path / "plain"), workspace=sample_workspace)
    assert r.returncode == 2 and "is not a git repository" in r.stderr and "Traceback" not in r.stderr
    r = cli("ingest", "--git", str(repo), "--scope", "org=northwind,repo=nope", workspace=sample_workspace)
    assert r.returncode == 2 and "unknown repo 'nope'" in r.stderr


# -- repository identity: root commit + origin remote, never the folder name ------------------------------------

ACTOR = "priya.raman"
SAFE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")


def make_repo(root, files, *, message="first", date="2025-01-10T10:00:00"):
    root.mkdir(parents=True)
    git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-qm", message, date=date)
    return root


def git_ids(wb, *, status=None):
    """id → (status, version) of every fragment whose id says it came from git."""
    return {f.id: (f.status, f.version) for f in wb.store.fragments(status=status) if f.id.startswith("git.")}


def ids_of(report, action):
    return sorted(item["id"] for item in report["plan"][action])


def test_same_folder_name_different_repositories(workspace, tmp_path):
    a = make_repo(tmp_path / "a" / "ledger", {"docs/README.md": README, "src/ledger.py": LEDGER_PY})
    b = make_repo(tmp_path / "b" / "ledger", {"docs/README.md": README.replace("500", "250"),
                                              "src/ledger.py": LEDGER_PY.replace("500", "250")}, message="other")
    with Workbench.open(workspace) as wb:
        first = wb.ingest_git(a, actor=ACTOR)
        after_a = git_ids(wb)
        second = wb.ingest_git(b, actor=ACTOR)
        assert len(first.added) == len(second.added) == 6
        assert not set(first.added) & set(second.added)           # same paths and symbols, different ids
        assert second.archived == [] and second.updated == []      # b neither archives nor overwrites a
        now = git_ids(wb)
        assert all(now[i] == after_a[i] == ("active", 1) for i in first.added)
        assert all(SAFE_ID.match(i) and ".." not in i for i in now)
        again = wb.ingest_git(a, actor=ACTOR)                      # and a does not touch b either
        assert again.archived == [] and again.added == [] and sorted(again.unchanged) == sorted(first.added)
        assert all(git_ids(wb)[i] == ("active", 1) for i in second.added)
        rows = wb.store.git_repos()
        assert sorted(r["path"] for r in rows.values()) == sorted([str(a.resolve()), str(b.resolve())])
        assert {r["name"] for r in rows.values()} == {"ledger"} and len({r["root"] for r in rows.values()}) == 2
        code_a = next(i for i in first.added if "check-entry-balanced" in i)
        code_b = next(i for i in second.added if "check-entry-balanced" in i)
    # drift: a commit to b's src/ledger.py drifts b's chunk, not a's chunk of the same name and path
    (b / "src" / "ledger.py").write_text(LEDGER_PY.replace("== 0", "== decimal.Decimal(0)"))
    git(b, "commit", "-qam", "decimal zero", date="2026-10-01T12:00:00")
    with Workbench.open(workspace) as wb:
        drifted = {i.fragment.id for i in wb.stale(days=36500, principal=ACTOR) if i.drift}
    assert code_b in drifted and code_a not in drifted


def test_include_sets_are_archived_separately(workspace, repo):
    with Workbench.open(workspace) as wb:
        md = wb.ingest_git(repo, include=["*.md"], actor=ACTOR)
        py = wb.ingest_git(repo, include=["*.py"], actor=ACTOR)
        assert len(md.added) == 3 and len(py.added) == 3 and py.archived == []
        assert all(git_ids(wb)[i] == ("active", 1) for i in md.added)  # other include set: left alone
    (repo / "docs" / "README.md").unlink()
    (repo / "src" / "ledger.py").write_bytes(b"\xff\xfe not utf-8\n")   # fails to read: not "gone"
    git(repo, "commit", "-qam", "drop the readme, break ledger.py", date="2026-01-05T10:00:00")
    with Workbench.open(workspace) as wb:
        report = wb.ingest_git(repo, include=["*.py"], actor=ACTOR)
        assert report.archived == [] and "not UTF-8" in report.errors[0]["message"]
        assert all(git_ids(wb)[i] == ("active", 1) for i in md.added + py.added)
        report = wb.ingest_git(repo, include=["*.md"], actor=ACTOR)     # the readme's chunks are gone at HEAD
        assert sorted(report.archived) == sorted(md.added)
        assert all(git_ids(wb)[i] == ("archived", 2) for i in md.added)
        assert all(git_ids(wb)[i] == ("active", 1) for i in py.added)
        assert wb.history(md.added[0], principal=ACTOR)[-1].reason.startswith("removed from ledger at ")
        assert [r["include"] for r in wb.store.git_repos().values()] == [["*.md"]]


def test_dry_run_writes_nothing_and_lists_changes(workspace, repo, cli):
    with Workbench.open(workspace) as wb:
        before = wb.store.counts()
    r = cli("ingest", "--git", str(repo), "--dry-run", "--json", "--as", ACTOR, workspace=workspace)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    assert plan["dry_run"] is True and plan["added"] == 7 and plan["repo"]["name"] == "ledger"
    assert {item["path"] for item in plan["plan"]["add"]} == {"docs/README.md", "src/ledger.py", "notes.txt"}
    with Workbench.open(workspace) as wb:
        assert wb.store.counts() == before and wb.store.git_repos() == {}
    real = json.loads(cli("ingest", "--git", str(repo), "--json", "--as", ACTOR, workspace=workspace).stdout)
    assert real["dry_run"] is False and "plan" not in real and real["added"] == 7
    with Workbench.open(workspace) as wb:
        assert sorted(git_ids(wb)) == ids_of(plan, "add")            # the dry run named the real ids
    (repo / "notes.txt").unlink()
    (repo / "src" / "ledger.py").write_text(LEDGER_PY + "\n\ndef helper():\n    return 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "drop notes, add helper", date="2026-02-01T10:00:00")
    with Workbench.open(workspace) as wb:
        before, events = wb.store.counts(), wb.store.events()
        report = wb.ingest_git(repo, actor=ACTOR, dry_run=True)
        assert wb.store.counts() == before and wb.store.events() == events
        assert wb.store.git_repos()[report.repo["key"]]["head"] != report.repo["head"]  # the row is untouched too
    planned = report.to_dict()
    assert [i["path"] for i in planned["plan"]["archive"]] == ["notes.txt"]
    assert [i["path"] for i in planned["plan"]["add"]] == ["src/ledger.py"]
    assert "helper" in planned["plan"]["add"][0]["id"]
    assert {i["path"] for i in planned["plan"]["update"]} == {"src/ledger.py"} and len(report.updated) == 3
    text = cli("ingest", "--git", str(repo), "--dry-run", "--as", ACTOR, workspace=workspace)
    assert text.returncode == 0 and "would archive" in text.stdout and "notes.txt" in text.stdout
    assert "nothing written: would add 1, update 3, archive 1" in text.stdout
    with Workbench.open(workspace) as wb:
        done = wb.ingest_git(repo, actor=ACTOR)
        assert (sorted(done.added), sorted(done.updated), sorted(done.archived)) == \
            (sorted(report.added), sorted(report.updated), sorted(report.archived))
    r = cli("ingest", str(repo / "docs"), "--dry-run", "--json", "--as", ACTOR, workspace=workspace)
    assert r.returncode == 2 and json.loads(r.stdout)["dry_run"] is True  # file ingest dry-runs too (no front matter)


def test_remote_identity_without_credentials(workspace, repo):
    from workbench.ingest.git_identity import normalize_remote, strip_credentials

    assert strip_credentials("https://user:token@host.example/x.git") == "https://host.example/x.git"
    assert strip_credentials("https://ghp_secret@host.example/x.git?private_token=abc") == "https://host.example/x.git"
    assert strip_credentials("git@host.example:x/ledger.git") == "host.example:x/ledger.git"
    assert strip_credentials("/srv/git/ledger.git") == "/srv/git/ledger.git"
    same = {normalize_remote(u) for u in ("https://u:t@Host.example/x/ledger.git", "ssh://git@host.example:22/x/ledger",
                                          "git@host.example:x/ledger.git", "https://host.example/x/ledger/")}
    assert same == {"host.example/x/ledger"}
    with Workbench.open(workspace) as wb:
        bare = wb.ingest_git(repo, include=["*.md"], actor=ACTOR, dry_run=True)
    git(repo, "remote", "add", "origin", "https://user:token@git.example.com/x/ledger.git")
    with Workbench.open(workspace) as wb:
        report = wb.ingest_git(repo, include=["*.md"], actor=ACTOR)
        (key, row), = wb.store.git_repos().items()
        stored = json.dumps([row, wb.store.events(), report.to_dict()], default=str)
    assert row["remote"] == "https://git.example.com/x/ledger.git" and report.repo["remote"] == row["remote"]
    assert "token" not in stored and "user:" not in stored
    root = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    assert row["root"] == root and key.startswith(root[:12]) and key != bare.repo["key"] == root[:12]
    assert not set(report.added) & set(bare.added)  # the remote is part of the identity


def test_legacy_workspace_is_adopted_only_at_the_same_path(workspace, repo, tmp_path):
    from workbench.models import Content, Scope, Source
    from workbench.store.store import VersionWrite

    def legacy(fid, path):
        content = Content(kind="note", title=f"legacy {path}", body="Old chunk.",
                          scope=Scope("northwind", repo="ledger"), owner="sofia.okafor", tags=("git", "ledger"),
                          sources=(Source(path, "ledger", None, (1, 2)),))
        return VersionWrite(fid, 1, content, "sofia.okafor", "git ingest ledger@0000000000", datetime(2025, 1, 1),
                            origin=f"git:ledger:{path}")

    elsewhere = make_repo(tmp_path / "elsewhere" / "ledger", {"docs/README.md": "# Another ledger\n"}, message="x")
    old = ["git.ledger.docs-readme-md.ledger-service.0000000a", "git.ledger.src-ledger-py.module.0000000b",
           "git.ledger.gone-md.gone.0000000c"]
    with Workbench.open(workspace) as wb:
        with wb.store.transaction():   # a workspace written by the old code: legacy row + git:NAME:PATH origins
            wb.store.write_versions([legacy(old[0], "docs/README.md"), legacy(old[1], "src/ledger.py"),
                                     legacy(old[2], "gone.md")])
            wb.store.put_git_repo("ledger", "ledger", str(elsewhere.resolve()), "0" * 40, datetime(2025, 1, 1))
        report = wb.ingest_git(repo, include=["*.md"], actor=ACTOR)  # same name, another path: not its chunks
        assert report.archived == [] and all(git_ids(wb)[i] == ("active", 1) for i in old)
        assert wb.store.git_repos()["ledger"]["path"] == str(elsewhere.resolve())
    other = tmp_path / "ws2"
    Workbench.init(other, config=str(workspace / "workbench.yaml")).close()
    with Workbench.open(other) as wb:
        with wb.store.transaction():
            wb.store.write_versions([legacy(old[0], "docs/README.md"), legacy(old[1], "src/ledger.py"),
                                     legacy(old[2], "gone.md")])
            wb.store.put_git_repo("ledger", "ledger", str(repo.resolve()), "0" * 40, datetime(2025, 1, 1))
        report = wb.ingest_git(repo, include=["*.md"], actor=ACTOR)  # same path: adopted
        assert sorted(report.archived) == [old[0], old[2]] and len(report.added) == 3
        assert git_ids(wb)[old[1]] == ("active", 1)                   # outside --include: left alone
        assert "re-keyed" in wb.history(old[0], principal=ACTOR)[-1].reason
        (key, row), = wb.store.git_repos().items()
        assert row["adopted"] == ["ledger"] and row["root"] and key != "ledger"
        report = wb.ingest_git(repo, include=["*.py"], actor=ACTOR)  # the adoption is remembered
        assert report.archived == [old[1]]


def test_git_ingest_never_overwrites_foreign_fragments(workspace, repo):
    from workbench.models import Content, Scope
    from workbench.store.store import VersionWrite

    with Workbench.open(workspace) as wb:
        planned = wb.ingest_git(repo, include=["notes.txt"], actor=ACTOR, dry_run=True)
        taken = planned.added[0]
        mine = Content(kind="note", title="Mine", body="Hand written.", scope=Scope("northwind", repo="ledger"),
                       owner="marco.bianchi")
        with wb.store.transaction():
            wb.store.write_versions([VersionWrite(taken, 1, mine, "marco.bianchi", "hand", datetime(2025, 1, 1),
                                                  origin="notes/mine.md")])
        report = wb.ingest_git(repo, include=["notes.txt"], actor=ACTOR)
        assert report.updated == [] and f"id {taken!r} is not available" in \
            report.errors[0]["message"]
        assert wb.get(taken, principal=ACTOR).title == "Mine"
        key = planned.repo["key"]
        with wb.store.transaction():  # a recorded repository under this key with another root: refused
            wb.store.put_git_repo(key, "ledger", "/elsewhere", None, datetime(2025, 1, 1), root="f" * 40)
        with pytest.raises(Exception, match="already recorded for another repository"):
            wb.ingest_git(repo, actor=ACTOR)
