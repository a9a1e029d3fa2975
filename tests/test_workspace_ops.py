"""Keeping a workspace (issue 27): explicit schema migrations (``migrate --check`` changes nothing and
exits 1 while something is pending; an upgrade takes a backup first; older code refuses a newer
schema in one line), and backup / restore-backup in the portable format (every table equal after a
round trip; a damaged or edited backup refused whole). The same with a server running is in
test_ops_server.py."""

from __future__ import annotations

import json
import shutil
import zipfile

import duckdb
import pytest
from conftest import CONFIG, run_cli, write_at_old_schema

from workbench import Workbench
from workbench.store import migrations


def _rows(db) -> dict[str, list]:
    """Every table a backup keeps, every row, in a fixed order."""
    from workbench.store import backup

    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f'SELECT * FROM "{t}" ORDER BY ALL').fetchall() for t in backup.tables(con)
                if t != "meta"} | {"meta": con.execute(
                    "SELECT * FROM meta WHERE key NOT IN ('fts_generation', 'authority_generation', "
                    "'authority_graph') ORDER BY ALL").fetchall()}
    finally:
        con.close()


@pytest.fixture(scope="module")
def lived_in(tmp_path_factory, sample_workspace_template):
    """A copy of the sample workspace with a row in every kind of table: edits (history), a trace,
    a pin, a set, a token, a proposal; backed up once with the CLI."""
    root = tmp_path_factory.mktemp("ops") / "ws"
    shutil.copytree(sample_workspace_template, root)
    with Workbench.open(root) as wb:
        first = wb.list(principal="marco.bianchi")[0]
        wb.edit(first.id, first.body + "\n\nEdited once.", actor="marco.bianchi", reason="test")
        wb.search("roll back a deploy", principal="marco.bianchi", pipeline="bm25")
        wb.pin(first.id, scope=first.scope, actor="priya.raman", reason="test")
        wb.set_create("ops-set", scope="org=northwind", actor="priya.raman", query="deploy")
        wb.token_create("marco.bianchi", note="ops test")
        wb.propose("A proposal", "Proposed text.", principal="agent.nw-coder", scope="org=northwind,repo=payments-api")
    out = root.parent / "lived-in.wbk"
    r = run_cli("backup", "--out", str(out), "--json", workspace=root)
    assert r.returncode == 0, r.stderr
    return root, out, json.loads(r.stdout)


def test_backup_then_restore_gives_every_table_back(lived_in, tmp_path):
    root, out, report = lived_in
    assert all(report["tables"][t] > 0 for t in ("fragments", "fragment_versions", "events", "traces", "pins",
                                                  "sets", "tokens", "schema_migrations"))
    assert oct(out.stat().st_mode & 0o777) == "0o600"  # token hashes and every scope's text
    target = tmp_path / "restored"
    r = run_cli("restore-backup", str(out), "--json", workspace=target)
    assert r.returncode == 0, r.stderr
    assert _rows(target / "workbench.duckdb") == _rows(root / "workbench.duckdb")
    assert (target / "workbench.yaml").read_bytes() == (root / "workbench.yaml").read_bytes()
    with Workbench.open(target) as wb:  # and it works: derived data rebuilt, the identity kept
        assert wb.search("roll back a deploy", principal="marco.bianchi", pipeline="bm25").hits
        assert wb.identity().id == report["workspace_id"]
        wb.store.add_event("after-restore")  # the events sequence continues past the restored ids
    again = run_cli("restore-backup", str(out), workspace=target)
    assert again.returncode == 2 and "already holds a workspace" in again.stderr and "--force" in again.stderr


def test_a_changed_backup_is_refused_whole(lived_in, tmp_path):
    _, out, _ = lived_in
    tampered = tmp_path / "tampered.wbk"
    with zipfile.ZipFile(out) as src, zipfile.ZipFile(tampered, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "tables/tokens.jsonl":
                data = data.replace(b"marco.bianchi", b"priya.raman")  # an attacker's own token, made admin
            dst.writestr(item, data)
    target = tmp_path / "restored"
    r = run_cli("restore-backup", str(tampered), workspace=target)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "damaged or was changed" in r.stderr and "tokens" in r.stderr
    assert not (target / "workbench.duckdb").exists()
    junk = tmp_path / "junk.wbk"
    junk.write_bytes(b"not a zip")
    r = run_cli("restore-backup", str(junk), workspace=target)
    assert r.returncode == 2 and "not a workbench backup" in r.stderr


def test_a_backup_is_for_admins(lived_in, tmp_path):
    root, _, _ = lived_in
    r = run_cli("backup", "--out", str(tmp_path / "x.wbk"), "--as", "marco.bianchi", workspace=root)
    assert r.returncode == 2 and "only an admin" in r.stderr
    assert not (tmp_path / "x.wbk").exists()


def _older_workspace(tmp_path, monkeypatch, below: str = "010"):
    """A workspace made by a workbench whose newest migration is the one before ``below``."""
    before = tmp_path / "old-migrations"
    before.mkdir()
    for path in migrations.MIGRATIONS_DIR.glob("*.sql"):
        if path.name[:3] < below:
            shutil.copy2(path, before / path.name)
    root = tmp_path / "old"
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS_DIR", before)
        with Workbench.init(root, config=CONFIG) as wb:
            write_at_old_schema(wb, tmp_path / "in", "nw-old")
    return root


def test_migrate_check_says_what_would_change_and_changes_nothing(tmp_path, monkeypatch):
    root = _older_workspace(tmp_path, monkeypatch)
    db = root / "workbench.duckdb"
    stamp = db.stat().st_mtime_ns
    r = run_cli("migrate", "--check", workspace=root)
    assert r.returncode == 1, r.stderr
    assert "pending 010_workspace_id (read-compatible)" in r.stdout
    r = run_cli("migrate", "--check", "--json", workspace=root)
    data = json.loads(r.stdout)
    assert (r.returncode, data["version"], [p["number"] for p in data["pending"]]) == (
        1, 9, [n for n, _, _ in migrations.available() if n >= 10])   # numbers are unique, not contiguous
    assert db.stat().st_mtime_ns == stamp and not (root / "backups").exists()
    r = run_cli("migrate", workspace=root)
    assert r.returncode == 0 and "applied 010_workspace_id" in r.stdout
    backups = list((root / "backups").glob("*.wbk"))
    assert len(backups) == 1 and str(backups[0]) in r.stdout
    assert run_cli("migrate", "--check", workspace=root).returncode == 0
    restored = tmp_path / "as-it-was"  # the backup is the workspace at schema 009, and restores (then upgrades)
    r = run_cli("restore-backup", str(backups[0]), "--json", workspace=restored)
    assert r.returncode == 0, r.stderr
    assert (json.loads(r.stdout)["schema_from"], json.loads(r.stdout)["schema_to"]) == (9, migrations.newest())


def test_opening_an_older_workspace_upgrades_it_after_a_backup_said_once(tmp_path, monkeypatch):
    root = _older_workspace(tmp_path, monkeypatch)
    r = run_cli("list", "--as", "marco.bianchi", workspace=root)
    assert r.returncode == 0
    assert r.stderr.count("upgrading the schema") == 1 and "backed up in" in r.stderr
    assert len(list((root / "backups").glob("*.wbk"))) == 1
    r = run_cli("list", "--as", "marco.bianchi", workspace=root)
    assert "upgrading" not in r.stderr and len(list((root / "backups").glob("*.wbk"))) == 1


def test_older_code_refuses_a_newer_schema_in_one_line(tmp_path):
    with Workbench.init(tmp_path / "ws", config=CONFIG):
        pass
    con = duckdb.connect(str(tmp_path / "ws" / "workbench.duckdb"))
    con.execute("INSERT INTO schema_migrations VALUES (999, 'from_the_future', now())")
    con.close()
    for args in (("list", "--as", "marco.bianchi"), ("info",), ("migrate", "--check"), ("migrate",),
                 ("backup", "--out", str(tmp_path / "b.wbk"))):
        r = run_cli(*args, workspace=tmp_path / "ws")
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.stderr, (args, r.stderr)
        assert str(tmp_path / "ws") in lines[0] and "999" in lines[0] and "upgrade workbench" in lines[0]
        assert f"up to {migrations.newest():03d}" in lines[0]
    (tmp_path / "ws" / "workbench.duckdb").chmod(0o444)  # read-only opens refuse it too
    r = run_cli("list", "--as", "marco.bianchi", workspace=tmp_path / "ws")
    assert r.returncode == 2 and "upgrade workbench" in r.stderr
