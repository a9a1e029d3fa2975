"""Sync with a base (ingest/sync.py): files in git and edits in the workbench both stay right.

marco edits a fragment in the workbench; the unchanged folder is ingested again, as a sync job
would: the edit stays (reported "database ahead of file"), export-files writes it back, and a
file and a database that both changed are a conflict until ``--theirs`` or ``--ours`` settles
it. The same for ``ingest --git``. Every test runs on both store backends."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import write_fragment

from workbench import Workbench

SYNC = "kb.sync"        # the sync job's principal
EDITOR = "marco.bianchi"


@pytest.fixture
def ws(tmp_path, backend_config):
    root = tmp_path / "ws"
    Workbench.init(root, config=backend_config).close()
    return root


def _file(folder, fid, body, **kw):
    return write_fragment(folder, fid, body=body, **kw)


def _served(wb, fid):
    f = wb.get(fid, principal=SYNC)
    return f.version, f.content.body


def test_a_sync_never_reverts_an_edit_and_conflicts_are_settled_explicitly(ws, tmp_path, cli):
    folder = tmp_path / "kb"
    _file(folder, "nw-a", "Original text.")
    _file(folder, "nw-b", "B as written.")
    with Workbench.open(ws) as wb:
        assert wb.ingest([folder], actor=SYNC).added == ["nw-a", "nw-b"]
        wb.edit("nw-a", "Edited by marco in the workbench.", reason="fix", actor=EDITOR)

        # the unchanged folder again, as a sync job would: the edit stays, and is reported
        report = wb.ingest([folder], actor=SYNC)
        assert report.ahead == [{"id": "nw-a", "file": str(folder / "nw-a.md")}]
        assert report.updated == [] and report.conflicts == [] and report.unchanged == ["nw-b"]
        assert _served(wb, "nw-a") == (2, "Edited by marco in the workbench.")
        assert report.to_dict()["ahead"] == [{"id": "nw-a", "file": str(folder / "nw-a.md")}]

        # a file changed while the database did not: a normal update
        _file(folder, "nw-b", "B changed in git.")
        report = wb.ingest([folder], actor=SYNC)
        assert report.updated == ["nw-b"] and _served(wb, "nw-b") == (2, "B changed in git.")

    # the CLI says so too (text and --json), exit 0: being ahead is not an error
    r = cli("ingest", str(folder), "--as", SYNC, workspace=ws)
    assert r.returncode == 0, r.stderr
    assert f"database ahead of file: nw-a ({folder / 'nw-a.md'})" in r.stdout and "export-files" in r.stdout
    assert "database ahead 1" in r.stdout
    r = cli("ingest", str(folder), "--as", SYNC, "--json", workspace=ws)
    assert r.returncode == 0 and json.loads(r.stdout)["ahead"] == [{"id": "nw-a", "file": str(folder / "nw-a.md")}]

    # both changed since the base: a conflict, nothing overwritten, exit 3 with a summary
    _file(folder, "nw-a", "Changed in git meanwhile.")
    r = cli("ingest", str(folder), "--as", SYNC, workspace=ws)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "conflict: " in r.stderr and "nw-a changed both in the file and in the workbench" in r.stderr
    assert "1 conflict(s)" in r.stderr and "--theirs" in r.stderr and "Traceback" not in r.stderr
    r = cli("ingest", str(folder), "--as", SYNC, "--json", workspace=ws)
    data = json.loads(r.stdout)
    assert r.returncode == 3 and [c["id"] for c in data["conflicts"]] == ["nw-a"] and data["updated"] == 0
    assert cli("ingest", str(folder), "--as", SYNC, "--theirs", "--ours", workspace=ws).returncode == 2
    with Workbench.open(ws) as wb:
        assert _served(wb, "nw-a") == (2, "Edited by marco in the workbench.")
        # --ours: the workbench wins, nothing written; the file is the base now, so it is "ahead"
        report = wb.ingest([folder], actor=SYNC, resolve="ours")
        assert report.resolved == [{"id": "nw-a", "file": str(folder / "nw-a.md"), "winner": "database"}]
        assert wb.store.events(action="ingest")[-1]["detail"]["resolved"] == {"file": 0, "database": 1}
        assert _served(wb, "nw-a") == (2, "Edited by marco in the workbench.")
        assert [a["id"] for a in wb.ingest([folder], actor=SYNC).ahead] == ["nw-a"]

        # export-files writes it back to that very file (no second file), and the next ingest is unchanged
        wb.export_files(folder, principal=SYNC)
        assert sorted(p.name for p in folder.rglob("*.md")) == ["nw-a.md", "nw-b.md"]
        assert "Edited by marco in the workbench." in (folder / "nw-a.md").read_text()
        report = wb.ingest([folder], actor=SYNC)
        assert report.unchanged == ["nw-a", "nw-b"] and not report.ahead and not report.conflicts
        # the base moved with the export: a later workbench edit is "ahead", not a conflict
        wb.edit("nw-a", "Edited again.", reason="again", actor=EDITOR)
        assert [a["id"] for a in wb.ingest([folder], actor=SYNC).ahead] == ["nw-a"]

        # --theirs: the file wins, explicitly (a new version from the file; the base moves to it)
        _file(folder, "nw-a", "Git wins this one.")
        assert [c["id"] for c in wb.ingest([folder], actor=SYNC).conflicts] == ["nw-a"]
        report = wb.ingest([folder], actor=SYNC, resolve="theirs")
        assert report.updated == ["nw-a"] and report.resolved[0]["winner"] == "file"
        assert _served(wb, "nw-a") == (4, "Git wins this one.")
        assert wb.ingest([folder], actor=SYNC).unchanged == ["nw-a", "nw-b"]


def test_the_base_belongs_to_the_fragment_not_the_path(ws, tmp_path):
    """A sync job's checkout may sit anywhere, a file may be renamed: the base is the fragment's.
    A file deleted from the folder archives nothing (a folder ingest never does)."""
    first, elsewhere = tmp_path / "checkout-1", tmp_path / "checkout-2"
    _file(first, "nw-a", "Original text.")
    with Workbench.open(ws) as wb:
        wb.ingest([first], actor=SYNC)
        wb.edit("nw-a", "Edited by marco.", reason="fix", actor=EDITOR)
        (elsewhere / "renamed").mkdir(parents=True)
        shutil.copy(first / "nw-a.md", elsewhere / "renamed" / "a-new-name.md")
        report = wb.ingest([elsewhere], actor=SYNC)
        assert report.ahead == [{"id": "nw-a", "file": str(elsewhere / "renamed" / "a-new-name.md")}]
        assert _served(wb, "nw-a") == (2, "Edited by marco.")
        (first / "nw-a.md").unlink()
        assert wb.ingest([first], actor=SYNC).to_dict()["added"] == 0
        assert wb.get("nw-a", principal=SYNC).status == "active"
        # an archive in the workbench survives the sync too (the file still says active)
        wb.archive("nw-a", actor=EDITOR, reason="obsolete")
        assert [a["id"] for a in wb.ingest([elsewhere], actor=SYNC).ahead] == ["nw-a"]
        assert wb.get("nw-a", principal=SYNC).status == "archived"


def test_fragments_without_a_base(ws, tmp_path):
    """Existing workspaces: data written before bases were recorded takes as its base what the last
    ingest of a file took for the fragment. A fragment no file ever held (made in the workbench):
    a stale copy of it (an older version, e.g. exported before bases were kept) is reported ahead,
    any other file is taken (nothing was in step, so nothing is reverted), and export-files gives
    it its first base."""
    from workbench.ingest.files import render_fragment

    folder = tmp_path / "kb"
    _file(folder, "nw-a", "Original text.")
    with Workbench.open(ws) as wb:
        wb.ingest([folder], actor=SYNC)
        wb.store._q("DELETE FROM sync_bases")  # as a workspace ingested before migration 013
        assert wb.store.sync_bases() == {"nw-a": wb.get("nw-a", principal=SYNC).content_hash}
        wb.edit("nw-a", "Edited by marco.", reason="fix", actor=EDITOR)
        assert [a["id"] for a in wb.ingest([folder], actor=SYNC).ahead] == ["nw-a"]

        made = wb.add_fragment(kind="note", title="Made in the workbench", body="Workbench text.",
                               scope="org=northwind,repo=payments-api", owner=EDITOR, actor=EDITOR)
        stale = tmp_path / "old-export"
        stale.mkdir()
        (stale / f"{made.id}.md").write_text(render_fragment(wb.get(made.id, principal=SYNC)))
        wb.edit(made.id, "Workbench text, edited.", reason="fix", actor=EDITOR)
        report = wb.ingest([stale], actor=SYNC)
        assert [a["id"] for a in report.ahead] == [made.id] and not report.updated
        assert wb.get(made.id, principal=SYNC).content.body == "Workbench text, edited."
        hand = wb.add_fragment(kind="note", title="Made here too", body="Workbench text.",
                               scope="org=northwind,repo=payments-api", owner=EDITOR, actor=EDITOR)
        _file(tmp_path / "by-hand", hand.id, "A file written by hand.", title="Made here too")
        assert wb.ingest([tmp_path / "by-hand"], actor=SYNC).updated == [hand.id]
        assert wb.store.sync_bases([hand.id]) == {hand.id: wb.get(hand.id, principal=SYNC).content_hash}

        other = wb.add_fragment(kind="note", title="Also made here", body="Text.",
                                scope="org=northwind,repo=payments-api", owner=EDITOR, actor=EDITOR)
        out = tmp_path / "exported"
        wb.export_files(out, principal=SYNC)
        assert wb.store.sync_bases([other.id]) == {other.id: other.content_hash}
        wb.edit(other.id, "Text, edited after the export.", reason="fix", actor=EDITOR)
        assert [a["id"] for a in wb.ingest([out], actor=SYNC).ahead] == [other.id]
        assert wb.get(other.id, principal=SYNC).content.body == "Text, edited after the export."


def _repo(root, files):
    import subprocess

    root.mkdir(parents=True, exist_ok=True)
    env = {"GIT_AUTHOR_NAME": "Marco", "GIT_AUTHOR_EMAIL": "marco@example.invalid", "GIT_COMMITTER_NAME": "Marco",
           "GIT_COMMITTER_EMAIL": "marco@example.invalid", "PATH": "/usr/bin:/bin"}
    if not (root / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    for name, text in files.items():
        if text is None:
            (root / name).unlink()
        else:
            (root / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "change"], cwd=root, check=True, env=env)
    return root


def test_git_ingest_syncs_with_a_base(ws, tmp_path, cli):
    repo = _repo(tmp_path / "payments-api", {"guide.md": "# Deploys\n\nDeploy with make.\n",
                                             "other.md": "# Other\n\nSomething else.\n"})
    args = {"scope": "org=northwind,repo=payments-api", "owner": EDITOR, "actor": SYNC}
    with Workbench.open(ws) as wb:
        first = wb.ingest_git(repo, **args)
        guide, = [i for i in first.added if ".guide-md." in i]
        wb.edit(guide, "Deploy with make, then watch the dashboards.", reason="fix", actor=EDITOR)
        report = wb.ingest_git(repo, **args)  # the repository unchanged: the edit stays
        assert [a["id"] for a in report.ahead] == [guide] and report.updated == []
        assert wb.get(guide, principal=SYNC).version == 2

    _repo(repo, {"guide.md": "# Deploys\n\nDeploy with make deploy.\n"})  # changed in git too
    r = cli("ingest", "--git", str(repo), "--scope", args["scope"], "--owner", EDITOR, "--as", SYNC, "--json",
            workspace=ws)
    assert r.returncode == 3 and [c["id"] for c in json.loads(r.stdout)["conflicts"]] == [guide]
    with Workbench.open(ws) as wb:
        assert "then watch the dashboards" in wb.get(guide, principal=SYNC).content.body
        report = wb.ingest_git(repo, resolve="theirs", **args)
        assert report.updated == [guide] and "make deploy" in wb.get(guide, principal=SYNC).content.body
        assert wb.ingest_git(repo, **args).conflicts == []

        # a file removed from the repository while its chunk was edited in the workbench: not archived
        wb.edit(guide, "Edited once more.", reason="again", actor=EDITOR)
        _repo(repo, {"guide.md": None})
        report = wb.ingest_git(repo, **args)
        assert [c["id"] for c in report.conflicts] == [guide] and report.archived == []
        assert wb.get(guide, principal=SYNC).status == "active"
        report = wb.ingest_git(repo, resolve="ours", **args)  # kept: later ingests report it ahead
        assert report.resolved == [{"id": guide, "file": "guide.md", "winner": "database"}]
        report = wb.ingest_git(repo, **args)
        assert [a["id"] for a in report.ahead] == [guide] and report.archived == [] and report.conflicts == []
        # an unedited chunk whose file is removed is archived as before
        _repo(repo, {"other.md": None, "new.md": "# New\n\nNew text.\n"})
        assert len(wb.ingest_git(repo, **args).archived) == 1


def test_migration_013_takes_the_bases_of_an_existing_workspace(tmp_path, monkeypatch):
    """A DuckDB workspace at schema 012: a fragment ingested from a file (twice, from two paths) and
    a git chunk. After the upgrade, each has the base its last ingest took (PostgreSQL's 013 runs
    the same statements; the runtime fallback of ``sync_bases`` is tested on both backends above)."""
    from datetime import datetime

    from conftest import CONFIG

    from workbench.models import Content, Scope
    from workbench.store import migrations
    from workbench.store.rows import VersionWrite

    before = tmp_path / "migrations-012"
    before.mkdir()
    for path in migrations.MIGRATIONS_DIR.glob("*.sql"):
        if path.name[:3] < "013":
            shutil.copy2(path, before / path.name)
    root = tmp_path / "ws"

    def content(body):
        return Content(kind="note", title="T", body=body, scope=Scope("northwind", repo="payments-api"),
                       owner=EDITOR)

    old, new, chunk = content("old"), content("new"), content("chunk")
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS_DIR", before)
        with Workbench.init(root, config=CONFIG) as wb:
            with wb.store.transaction():
                wb.store.write_versions([
                    VersionWrite("nw-a", 1, old, SYNC, "ingest a.md", datetime(2025, 1, 1)),
                    VersionWrite("git.x", 1, chunk, SYNC, "git ingest x@0000000000", datetime(2025, 1, 1))])
                wb.store.write_versions([
                    VersionWrite("nw-a", 2, new, SYNC, "ingest a.md", datetime(2025, 1, 2)),
                    VersionWrite("git.x", 2, content("edited"), EDITOR, "fix", datetime(2025, 1, 3))])
                wb.store.put_ingested_files([("/a/a.md", "f1", "nw-a", old.content_hash())], datetime(2025, 1, 1))
                wb.store.put_ingested_files([("/b/a.md", "f2", "nw-a", new.content_hash())], datetime(2025, 1, 2))
            assert 13 not in wb.store.schema_versions()
    with Workbench.open(root) as wb:  # migrated on open
        assert 13 in wb.store.schema_versions()
        rows = wb.store._q("SELECT fragment_id, content_hash, source FROM sync_bases ORDER BY fragment_id")
        assert rows == [("git.x", chunk.content_hash(), None), ("nw-a", new.content_hash(), "/b/a.md")]
