"""Exports: curated sets, reproducible bundles (byte-identical, checksummed, round trip), agent
context files in each format's convention, and scope on every path."""

from __future__ import annotations

import json

import pytest
import yaml

from conftest import CONFIG
from workbench import Workbench
from workbench.errors import NotFound, PermissionDenied, UserError


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        bench.set_create("payments-core", scope="org=northwind,repo=payments-api", actor="marco.bianchi")
        yield bench


def test_sets_by_scope_query_and_hand(wb, sample_workspace, cli):
    members = {f["id"] for f in wb.set_show("payments-core")["fragments"]}
    assert "nw-adr-0007-idempotency-keys" in members and "nw-pol-pii-logging" in members  # org-wide applies
    assert not any(m.startswith("tw-") for m in members) and "nw-rb-ledger-imbalance" not in members
    wb.set_change("payments-core", "nw-rb-ledger-imbalance", include=True, actor="marco.bianchi")
    wb.set_change("payments-core", "nw-pol-pii-logging", include=False, actor="marco.bianchi")
    members = {f["id"] for f in wb.set_show("payments-core")["fragments"]}
    assert "nw-rb-ledger-imbalance" in members and "nw-pol-pii-logging" not in members
    with pytest.raises(NotFound, match="unknown set 'payments-core'"):  # hannah cannot see the set's scope
        wb.set_change("payments-core", "nw-pol-pci-scope", include=True, actor="hannah.lee")
    with pytest.raises(PermissionDenied, match="only the owner"):  # sofia sees it, but neither owns nor leads it
        wb.set_change("payments-core", "nw-pol-pci-scope", include=True, actor="sofia.okafor")
    queried = wb.set_create("idempotency", scope="org=northwind", query="idempotency keys", actor="priya.raman")
    assert "nw-adr-0007-idempotency-keys" in [f["id"] for f in queried["fragments"]]
    wb.close()
    r = cli("set", "show", "nope", workspace=sample_workspace)
    assert r.returncode == 2 and "unknown set 'nope' (known: idempotency, payments-core, platform)" in r.stderr
    r = cli("set", "show", "payments-core", "--as", "raj.patel", "--json", workspace=sample_workspace)
    assert r.returncode == 2 and "unknown set 'payments-core' (known: none yet)" in r.stderr  # not even its name
    r = cli("set", "show", "payments-core", "--as", "agent.nw-coder", "--json", workspace=sample_workspace)
    shown = json.loads(r.stdout)["fragments"]  # a reader of the set gets only what they can see
    assert shown and all(f["id"].startswith("nw-") for f in shown)


def test_bundle_is_byte_identical_and_round_trips(wb, tmp_path):
    wb.edit("nw-adr-0007-idempotency-keys", "A second version.", reason="v2", actor="marco.bianchi")
    a, b = tmp_path / "a", tmp_path / "b"
    wb.export_bundle("payments-core", a)
    wb.export_bundle("payments-core", b)
    for name in ("fragments.jsonl", "manifest.yaml"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    manifest = yaml.safe_load((a / "manifest.yaml").read_text())
    assert manifest["set"]["name"] == "payments-core" and manifest["model"] == "all-MiniLM-L6-v2"
    assert manifest["chunker"] and manifest["checksum"]["algorithm"] == "sha256"
    record = json.loads((a / "fragments.jsonl").read_text().splitlines()[0])
    assert {"id", "version", "content_hash", "owner", "scope", "sources", "text"} <= set(record)
    with pytest.raises(UserError, match="not empty"):
        wb.export_bundle("payments-core", a)
    # round trip into a fresh workspace: fragments and whole histories
    with Workbench.init(tmp_path / "fresh", config=CONFIG) as fresh:
        report = fresh.import_bundle(a)
        assert len(report.added) == manifest["fragments"]
        for fid in ("nw-adr-0007-idempotency-keys", "nw-rb-psp-failover"):
            mine = [(v.number, v.content_hash, v.created_at) for v in wb.history(fid)]
            theirs = [(v.number, v.content_hash, v.created_at) for v in fresh.history(fid)]
            assert theirs == mine
            # the importer is the author of what it wrote; the bundle's author is kept as a claim in the reason
            for old, new in zip(wb.history(fid), fresh.history(fid)):
                assert new.author == "priya.raman"
                assert old.reason in new.reason and f"by {old.author} in the source workspace" in new.reason
            got, want = fresh.get(fid, principal="marco.bianchi"), wb.get(fid, principal="marco.bianchi")
            assert (got.to_dict() == want.to_dict())
        again = fresh.import_bundle(a)
        assert again.added == [] and len(again.unchanged) == manifest["fragments"]


def test_a_tampered_bundle_is_refused_and_writes_nothing(wb, tmp_path, cli):
    out = tmp_path / "bundle"
    wb.export_bundle("payments-core", out)
    data = (out / "fragments.jsonl").read_text().replace("idempotency", "IDEMPOTENCY", 1)
    (out / "fragments.jsonl").write_text(data)
    fresh_root = tmp_path / "fresh"
    Workbench.init(fresh_root, config=CONFIG).close()
    r = cli("import-bundle", str(out), workspace=fresh_root)
    assert r.returncode == 2 and "checksum mismatch" in r.stderr and "Traceback" not in r.stderr
    with Workbench.open(fresh_root) as fresh:
        assert fresh.stats() == {"fragments": 0, "versions": 0, "events": 0}


def test_agent_files_follow_their_conventions(wb, tmp_path):
    wb.pin("nw-pol-pci-scope", scope="org=northwind", actor="priya.raman", reason="card data")
    out = {}
    for fmt in ("agents-md", "claude-md", "cursor-rules", "llms-txt"):
        result = wb.export_agents(fmt, tmp_path / fmt, scope="org=northwind,repo=payments-api",
                                  principal="marco.bianchi", budget=6000)
        out[fmt] = result
        assert result["pins"] == 1 and result["avoid"] >= 5
    agents = (tmp_path / "agents-md" / "AGENTS.md").read_text()
    assert agents.index("## Rules") < agents.index("## Do not") < agents.index("## Knowledge")
    assert "- Always follow “PCI DSS scope and cardholder data handling” (pinned, `nw-pol-pci-scope@v1`)." in agents
    assert "nw-pol-pci-scope@v1" in agents and "**Don't:**" in agents and "**Instead:**" in agents
    assert "tw-" not in agents
    claude = (tmp_path / "claude-md" / "CLAUDE.md").read_text()
    assert claude.startswith("# CLAUDE.md") and "## Do not" in claude
    rules = sorted((tmp_path / "cursor-rules" / ".cursor" / "rules").glob("*.mdc"))
    for rule in rules:
        front = yaml.safe_load(rule.read_text().split("---")[1])
        assert set(front) == {"description", "globs", "alwaysApply"}
    always = yaml.safe_load((tmp_path / "cursor-rules" / ".cursor/rules/workbench-do-not.mdc").read_text()
                            .split("---")[1])
    assert always["alwaysApply"] is True
    llms = (tmp_path / "llms-txt" / "llms.txt").read_text().splitlines()
    assert llms[0].startswith("# ") and llms[2].startswith("> ")
    assert "## Do not" in llms and any(line.startswith("- [") and "](fragments/" in line for line in llms)
    full = (tmp_path / "llms-txt" / "llms-full.txt").read_text()
    assert "nw-pol-pci-scope@v1" in full
    for line in llms:
        if line.startswith("- ["):
            target = line.split("](", 1)[1].split(")", 1)[0]
            assert (tmp_path / "llms-txt" / target).is_file()
    # the same state gives the same files
    again = wb.export_agents("agents-md", tmp_path / "again", scope="org=northwind,repo=payments-api",
                             principal="marco.bianchi", budget=6000)
    assert (tmp_path / "again" / "AGENTS.md").read_text() == agents
    assert again["files"] == ["AGENTS.md", ".workbench-export.json"]
    assert (tmp_path / "again" / ".workbench-export.json").read_bytes() == \
        (tmp_path / "agents-md" / ".workbench-export.json").read_bytes()  # no clock in the manifest either


def test_agent_files_fit_the_budget_and_respect_scope(wb, tmp_path):
    small = wb.agent_selection(scope="org=northwind,repo=payments-api", principal="marco.bianchi", budget=4000)
    large = wb.agent_selection(scope="org=northwind,repo=payments-api", principal="marco.bianchi", budget=40000)
    assert len(small.knowledge) < len(large.knowledge) and small.omitted > large.omitted
    with pytest.raises(PermissionDenied):
        wb.agent_selection(scope="org=tidewater", principal="marco.bianchi")
    with pytest.raises(NotFound):
        wb.export_agents("agents-md", tmp_path / "x", scope="org=northwind", set_name="nope")


@pytest.mark.parametrize("args,message", [
    (["export", "pdf", "--out", "OUT"], "unknown export format 'pdf' (valid: bundle, agents-md, claude-md, "
                                        "cursor-rules, llms-txt)"),
    (["export", "bundle", "--set", "nope", "--out", "OUT"], "unknown set 'nope'"),
    (["export", "agents-md", "--out", "OUT"], "needs --scope"),
])
def test_bad_export_input(sample_workspace, tmp_path, cli, args, message):
    r = cli(*[a.replace("OUT", str(tmp_path / "o")) for a in args], workspace=sample_workspace)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_export_into_a_folder_with_other_files_overwrites_none_of_them_without_force(wb, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    wb.export_agents("agents-md", tmp_path / "full", scope="org=northwind", principal="priya.raman")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"  # not in the way: no --force needed
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "AGENTS.md").write_text("my own instructions")
    with pytest.raises(UserError, match="refusing to overwrite 'AGENTS.md'.*not written by workbench.*--force"):
        wb.export_agents("agents-md", tmp_path / "mine", scope="org=northwind", principal="priya.raman")
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["AGENTS.md"]
    assert (tmp_path / "mine" / "AGENTS.md").read_text() == "my own instructions"
    wb.export_agents("agents-md", tmp_path / "mine", scope="org=northwind", principal="priya.raman", force=True)
    assert (tmp_path / "mine" / "AGENTS.md").read_text().startswith("# AGENTS.md")


def test_notebook_reprs_are_escaped(wb):
    from workbench.ingest.files import render
    from dataclasses import replace

    f = wb.get("nw-rb-psp-failover", principal="marco.bianchi")
    wb.edit(f.id, render(f.id, replace(f.content, title="PSP <script>alert(1)</script> failover")),
            reason="title", actor="marco.bianchi")
    result = wb.search("PSP failover", principal="marco.bianchi", trace=False)
    page = result._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "| #" in result._repr_markdown_()
    assert "<table>" in wb.history(f.id, principal="marco.bianchi")._repr_html_()
    assert "<table>" in wb.context("PSP failover", principal="marco.bianchi")._repr_html_()
