"""Operations with a real team server running (issue 27): a folder copied with ``cp -a`` while the
server runs never relays to it; ``backup`` works while the server holds the file (read in the
server, from one snapshot); SIGHUP reloads workbench.yaml (a new hire gets a token and is served
without a restart; a bad file is logged and the old configuration kept)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time

import pytest
from server_support import start_server, stop_server

from conftest import run_cli_process

NEW_HIRE = """
  - name: nina.new
    full_name: Nina New
    orgs: [northwind]
    repos: [northwind/payments-api]
    personas: []
"""


@pytest.fixture(scope="module")
def running(tmp_path_factory, sample_workspace_template):
    root = tmp_path_factory.mktemp("ops-server") / "ws"
    shutil.copytree(sample_workspace_template, root)
    server = start_server(root)
    yield server
    stop_server(server)


def _wait_for_log(server, event: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in server.log.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("event") == event:
                return record
        time.sleep(0.1)
    raise AssertionError(f"no {event} in the server's log: {server.log.read_text()[-2000:]}")


def test_the_advert_names_the_workspace(running):
    advert = json.loads((running.root / "server.json").read_text())
    held = json.loads((running.root / "workspace.id").read_text())
    assert advert["workspace"]["id"] == held["id"] and advert["workspace"]["location"].startswith("file:")
    r = run_cli_process("migrate", "--check", workspace=running.root)  # answered by the server, which holds it
    assert r.returncode == 0 and "nothing to migrate" in r.stdout, r.stderr


def test_a_copied_folder_never_relays_to_the_original_server(running, tmp_path):
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(running.root), str(copy)], check=True)
    assert (copy / "server.json").exists() and (copy / "server.token").exists()  # what made the edit go to production
    new = tmp_path / "new.md"
    new.write_text("---\nid: nw-note-made-on-the-copy\nkind: note\ntitle: Made on the copy\nscope: {org: northwind, "
                   "repo: payments-api}\nowner: marco.bianchi\n---\nOnly the copy should have this.\n")
    r = run_cli_process("ingest", str(new), "--as", "marco.bianchi", workspace=copy)
    assert r.returncode == 0, r.stderr
    assert "another one" in r.stderr and "removed it" in r.stderr and str(copy) in r.stderr
    assert not (copy / "server.json").exists() and not (copy / "server.token").exists()
    original = run_cli_process("show", "nw-note-made-on-the-copy", "--as", "marco.bianchi", workspace=running.root)
    assert original.returncode == 2  # production (served) never got it
    on_copy = run_cli_process("show", "nw-note-made-on-the-copy", "--as", "marco.bianchi", workspace=copy)
    assert on_copy.returncode == 0 and "Only the copy" in on_copy.stdout and "note:" not in on_copy.stderr


def test_backup_while_the_server_holds_the_workspace(running, tmp_path):
    out = tmp_path / "served.wbk"
    r = run_cli_process("backup", "--out", str(out), "--json", workspace=running.root)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["tables"]["fragments"] > 100 and out.exists()
    target = tmp_path / "restored"
    r = run_cli_process("restore-backup", str(out), workspace=target)
    assert r.returncode == 0, r.stderr
    r = run_cli_process("info", "--json", workspace=target)
    assert json.loads(r.stdout)["fragments"] == report["tables"]["fragments"]


def test_sighup_reloads_workbench_yaml(running):
    config = running.root / "workbench.yaml"
    before = config.read_text()
    r = run_cli_process("token", "create", "--for", "nina.new", workspace=running.root)
    assert r.returncode == 2 and "nina.new" in r.stderr  # unknown before the reload
    try:
        config.write_text(before.replace("principals:\n", "principals:" + NEW_HIRE, 1))
        running.process.send_signal(signal.SIGHUP)
        assert "nina.new" in _wait_for_log(running, "config_reloaded")["added"]
        r = run_cli_process("token", "create", "--for", "nina.new", workspace=running.root)
        assert r.returncode == 0, r.stderr
        token = r.stdout.strip()
        status, body, _ = running.call("GET", "/api/v1/list?limit=3", token=token)
        assert status == 200, body
        config.write_text("principals: [this is: not valid")  # a bad file: logged, the old one kept
        running.process.send_signal(signal.SIGHUP)
        assert "workbench.yaml" in _wait_for_log(running, "config_reload_failed")["error"]
        assert running.call("GET", "/api/v1/list?limit=3", token=token)[0] == 200
        assert running.process.poll() is None
    finally:
        config.write_text(before)
