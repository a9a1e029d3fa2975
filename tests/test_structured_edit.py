"""Issue 29, forms keep work (the core): lists are entered as lists (evidence, tags: ``INC-3001,``
stores ``["INC-3001"]``), and an anti-pattern is edited as the form it was written in (don't / why /
instead / evidence) through the one edit path: base version, reason, a new version, the rest kept.
On DuckDB and PostgreSQL; through the CLI's ``antipattern edit`` read back with ``show --json``."""

from __future__ import annotations

import json

import pytest
from conftest import fragment_text

from workbench import Workbench
from workbench.errors import Conflict, UserError
from workbench.service.lists import split_list

AP = "nw-ap-retries"
AP_TEXT = fragment_text(AP, kind="anti-pattern", title="Retrying without a key", body="The incident story.",
                        extra="tags: [retries]\ndont: \"Retry a POST without a key\"\nwhy: \"double charges\"\n"
                              "instead: \"Send one Idempotency-Key per operation\"\nevidence: [INC-2291]\n")


@pytest.fixture
def bench(backend_config, tmp_path):
    root, src = tmp_path / "ws", tmp_path / "in"
    src.mkdir()
    (src / f"{AP}.md").write_text(AP_TEXT, encoding="utf-8")
    (src / "nw-note-ledger.md").write_text(fragment_text("nw-note-ledger", body="The ledger is double-entry."),
                                           encoding="utf-8")
    with Workbench.init(root, config=backend_config) as wb:
        assert not wb.ingest([src], actor="kb.sync").errors
        yield wb


def test_a_typed_list_is_split_trimmed_deduplicated():
    assert split_list("INC-3001,") == ["INC-3001"]
    assert split_list(" INC-1 , INC-2,,INC-1\tnw-x \n") == ["INC-1", "INC-2", "nw-x"]
    assert split_list(["INC-1,", "INC-2 INC-1", ""]) == ["INC-1", "INC-2"]
    assert split_list("  ,, ") == [] and split_list(None) == []


def test_evidence_and_tags_typed_as_text_are_stored_as_lists(bench):
    f = bench.add_antipattern(title="Logging payloads", dont="log raw payloads", why="PANs (INC-3001)",
                              instead="log ids", scope="org=northwind,repo=payments-api", actor="marco.bianchi",
                              evidence="INC-3001,", tags=["pci, logging", "pci"])
    assert f.content.detail("evidence") == ("INC-3001",) and f.tags == ("pci", "logging")
    note = bench.add_fragment(title="Ledger close", body="Close at 02:00.", scope="org=northwind,repo=ledger",
                              actor="sofia.okafor", tags="ledger, close , ledger")
    assert note.tags == ("ledger", "close")
    # an item the core has a rule for is checked, naming it; nothing is stored
    with pytest.raises(UserError, match="tag 'Ops' is not a tag.*did you mean 'ops'"):
        bench.add_fragment(title="Ops", body="b", scope="org=northwind", actor="priya.raman", tags="Ops")
    with pytest.raises(UserError, match="evidence item .* too long"):
        bench.add_antipattern(title="Long", dont="d", why="w", instead="i", scope="org=northwind",
                              actor="priya.raman", evidence="x" * 501)
    assert [f.id for f in bench.list(principal="priya.raman") if f.title in ("Ops", "Long")] == []


def test_an_antipattern_is_edited_field_by_field_into_a_new_version(bench):
    before = bench.get(AP, principal="marco.bianchi")
    saved = bench.edit(AP, fields={"why": "  double charges and refunds (INC-2745)  ", "evidence": "INC-2291, INC-2745,"},
                       reason="cite the refund incident", actor="marco.bianchi", base=before.version)
    assert saved.version == before.version + 1
    assert saved.content.detail("why") == "double charges and refunds (INC-2745)"
    assert saved.content.detail("evidence") == ("INC-2291", "INC-2745")
    # the rest is kept: the other fields, the body, tags, scope, owner
    assert saved.content.detail("dont") == before.content.detail("dont") and saved.body == before.body
    assert (saved.tags, saved.scope, saved.owner) == (before.tags, before.scope, before.owner)
    assert bench.history(AP, principal="marco.bianchi")[-1].reason == "cite the refund incident"
    # the base version rule: an edit made from the old version is refused, nothing saved
    with pytest.raises(Conflict, match=f"changed since v{before.version}"):
        bench.edit(AP, fields={"dont": "something else"}, reason="r", actor="marco.bianchi", base=before.version)
    # with a body too; evidence emptied
    again = bench.edit(AP, "A shorter story.", fields={"evidence": ""}, reason="trim", actor="marco.bianchi",
                       base=saved.version)
    assert again.body == "A shorter story." and again.content.detail("evidence") is None
    # what the fields must be: said, nothing saved
    for fields, message in (({"dont": "  "}, "Don't cannot be empty"), ({"owner": "x"}, "not a field an edit"),
                            ({}, "name the fields")):
        with pytest.raises(UserError, match=message):
            bench.edit(AP, fields=fields, reason="r", actor="marco.bianchi")
    with pytest.raises(UserError, match="belong to anti-patterns only"):
        bench.edit("nw-note-ledger", fields={"dont": "x"}, reason="r", actor="marco.bianchi")
    with pytest.raises(UserError, match="no change"):
        bench.edit(AP, fields={"dont": again.content.detail("dont")}, reason="r", actor="marco.bianchi")
    assert bench.get(AP, principal="marco.bianchi").version == again.version
    # the impact check takes the same fields, and writes nothing
    report = bench.edit_impact(AP, fields={"why": "a new why"}, actor="marco.bianchi", base=again.version)
    assert report.fragment_id == AP and bench.get(AP, principal="marco.bianchi").version == again.version


def test_antipattern_edit_on_the_command_line(tmp_path, cli):
    root, src = tmp_path / "ws", tmp_path / "in"
    src.mkdir()
    (src / f"{AP}.md").write_text(AP_TEXT, encoding="utf-8")
    from conftest import CONFIG

    Workbench.init(root, config=CONFIG).close()
    assert cli("ingest", str(src), "--as", "kb.sync", workspace=root).returncode == 0
    r = cli("antipattern", "edit", AP, "--instead", "Reuse the key on every retry", "--evidence", "INC-2291,",
            "INC-3001", "--reason", "clearer", "--base", "1", "--as", "marco.bianchi", "--json", workspace=root)
    assert r.returncode == 0, r.stderr
    shown = json.loads(cli("show", AP, "--json", "--as", "marco.bianchi", workspace=root).stdout)
    assert shown["version"] == 2 and shown["details"]["instead"] == "Reuse the key on every retry"
    assert shown["details"]["evidence"] == ["INC-2291", "INC-3001"] and shown["details"]["why"] == "double charges"
    stale = cli("antipattern", "edit", AP, "--why", "x", "--reason", "r", "--base", "1", "--as", "marco.bianchi",
                workspace=root)
    assert stale.returncode == 2 and "changed since v1" in stale.stderr and "Traceback" not in stale.stderr
    nothing = cli("antipattern", "edit", AP, "--reason", "r", "--as", "marco.bianchi", workspace=root)
    assert nothing.returncode == 2 and "nothing to change" in nothing.stderr
