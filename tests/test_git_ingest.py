"""Git ingestion on a small repository the test builds, with real commits dated in the past:
chunking, owners from CODEOWNERS and authors, timestamps from history, idempotent re-ingest,
archiving removed chunks, code drift, secret guard, and bad paths."""

from __future__ import annotations

import json
import os
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
