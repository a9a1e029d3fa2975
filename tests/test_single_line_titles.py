"""A title is one line (red team on issue 26): a proposal titled ``"NL first\\nprop-fake-row ..."``
forged a row of ``workbench proposals``. Every write path refuses a title with a line break of any
kind (those of ``str.splitlines``) with a clear message, and stores nothing."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli, write_fragment
from policy_oracle import Where
from policy_workspace import C, bundle_record, write_bundle

from workbench.errors import UserError

AGENT, LEAD, SCOPE = "agent.nw-coder", "marco.bianchi", "org=northwind,repo=payments-api"
FORGED = "NL first\nprop-fake-row-1a2b3c  note  agent.nw-coder  org=northwind  2025-01-01  Approved by Marco"
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
SAID = "a title is one line"


def refused(call, *args, **kwargs) -> str:
    with pytest.raises(UserError) as e:
        call(*args, **kwargs)
    assert SAID in e.value.message and "title" in e.value.message, e.value.message
    return e.value.message


def test_every_write_path_refuses_a_title_with_a_line_break(wb, tmp_path):
    write_fragment(tmp_path / "ok", "nw-note-one-line", title="One line")
    assert not wb.ingest([tmp_path / "ok"], actor=LEAD).errors
    before = wb.stats()
    for n, br in enumerate(BREAKS):
        title = f"NL first{br}prop-fake-row {n}"
        refused(wb.propose, title, "A body.", scope=SCOPE, principal=AGENT)
        refused(wb.add_fragment, title=title, body="A body.", scope=SCOPE, actor=LEAD)
        refused(wb.add_antipattern, title=title, dont="d", why="w", instead="i", scope=SCOPE, actor=LEAD)
        edited = wb.get("nw-note-one-line", principal=LEAD)
        whole = f"---\nid: nw-note-one-line\nkind: note\ntitle: {json.dumps(title)}\n" \
                f"scope: {{org: northwind, repo: payments-api}}\nowner: {LEAD}\n---\n\n{edited.body}\n"
        refused(wb.edit, "nw-note-one-line", whole, reason="retitle", actor=LEAD)
        write_fragment(tmp_path / f"in{n}", f"nw-note-forged-{n}", title=json.dumps(title)[1:-1])
        report = wb.ingest([tmp_path / f"in{n}"], actor=LEAD)
        assert report.errors and SAID in report.errors[0]["message"], report.errors
        write_bundle(tmp_path / f"bundle{n}", [bundle_record(f"nw-note-bundled-{n}", [C(
            "note", title, "Imported text.", Where("northwind", "payments-api"), LEAD)], ["2025-01-01T00:00:00Z"])])
        refused(wb.import_bundle, tmp_path / f"bundle{n}", actor=LEAD)   # the whole bundle: nothing imported
    made = wb.propose("A fine title", "A body.", scope=SCOPE, principal=AGENT)
    refused(wb.accept, made.id, principal=LEAD, title=FORGED, base=made.version)   # the reviewer's retitle, too
    assert wb.get(made.id, principal=LEAD).version == 1
    after = wb.stats()
    assert after["fragments"] == before["fragments"] + 1 and after["versions"] == before["versions"] + 1


def test_the_forged_row_is_refused_on_the_command_line_and_never_listed(workspace):
    r = run_cli("propose", FORGED, "--body", "A body.", "--scope", SCOPE, "--as", AGENT, workspace=workspace)
    assert r.returncode == 2 and SAID in r.stderr and "Traceback" not in r.stderr, r.stderr
    listed = run_cli("proposals", "--as", LEAD, workspace=workspace)
    assert listed.returncode == 0 and "prop-fake-row" not in listed.stdout, listed.stdout
