"""Curation: pins (rights, events), anti-patterns, authority graph, near-duplicates and
merge, staleness with nudges, verify and snooze, secret guard. Sample corpus, real store."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import pytest

from conftest import write_fragment
from workbench import Workbench
from workbench.errors import NotFound, PermissionDenied, SecretFound, UserError

NOW = datetime(2026, 11, 30, 12, 0)


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def assert_exit_2(r, text):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert text in r.stderr and "Traceback" not in r.stderr


# -- pins ------------------------------------------------------------------------------------

def test_pins_are_recorded_events_and_only_leads_may_pin(sample_workspace, cli):
    assert_exit_2(cli("pin", "nw-pol-pci-scope", "--scope", "org=northwind", "--as", "marco.bianchi",
                      workspace=sample_workspace), "not a tech lead of org=northwind")
    r = cli("pin", "nw-rb-ledger-imbalance", "--scope", "org=northwind,repo=ledger", "--as", "sofia.okafor",
            "--reason", "every ledger agent needs it", "--until", "2099-01-01", "--json", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["pinned_by"] == "sofia.okafor"
    listed = json.loads(cli("pins", "--as", "sofia.okafor", "--json", workspace=sample_workspace).stdout)
    assert [(p["id"], p["reason"]) for p in listed] == [("nw-rb-ledger-imbalance", "every ledger agent needs it")]
    assert json.loads(cli("pins", "--as", "raj.patel", "--json", workspace=sample_workspace).stdout) == []
    assert_exit_2(cli("unpin", "nw-rb-ledger-imbalance", "--scope", "org=northwind,repo=ledger", "--as",
                      "hannah.lee", workspace=sample_workspace), "not a tech lead")
    assert cli("unpin", "nw-rb-ledger-imbalance", "--scope", "org=northwind,repo=ledger", "--as", "sofia.okafor",
               "--reason", "moved to onboarding", workspace=sample_workspace).returncode == 0
    with Workbench.open(sample_workspace) as wb:
        events = [(e["action"], e["actor"], e["detail"]["reason"]) for e in wb.store.events()
                  if e["action"] in ("pin", "unpin")]
    assert events == [("pin", "sofia.okafor", "every ledger agent needs it"),
                      ("unpin", "sofia.okafor", "moved to onboarding")]


def test_a_pin_in_the_past_is_refused(wb):
    with pytest.raises(UserError, match="in the past"):
        wb.pin("nw-pol-pci-scope", scope="org=northwind", actor="priya.raman", until="2020-01-01")


# -- anti-patterns ---------------------------------------------------------------------------

def test_antipattern_add_is_a_first_class_fragment_that_retrieval_avoids(sample_workspace, cli):
    r = cli("antipattern", "add", "--title", "Calling the PSP from a database transaction",
            "--dont", "Do not call the PSP while holding a Postgres transaction open",
            "--why", "PSP latency holds row locks; INC-3301 stalled payouts for 40 minutes",
            "--instead", "Commit an outbox row, then call the PSP from the relay worker",
            "--evidence", "INC-3301", "nw-adr-0006-transactional-outbox",
            "--scope", "org=northwind,repo=payments-api", "--as", "marco.bianchi", "--json",
            workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    created = json.loads(r.stdout)
    assert created["kind"] == "anti-pattern" and created["owner"] == "marco.bianchi"
    assert created["details"]["evidence"] == ["INC-3301", "nw-adr-0006-transactional-outbox"]
    with Workbench.open(sample_workspace) as wb:
        result = wb.search("can I call the PSP inside a database transaction", principal="marco.bianchi")
        assert created["id"] in [h.id for h in result.avoid]
        assert created["id"] not in [h.id for h in result.hits]
        wb.pin(created["id"], scope="org=northwind,repo=payments-api", actor="marco.bianchi")
        ctx = wb.context("kafka consumer lag", principal="marco.bianchi", scope="org=northwind,repo=payments-api")
        assert created["id"] in [i.hit.id for i in ctx.avoid]  # a pinned anti-pattern always reaches agents
    r = cli("antipattern", "add", "--title", "x", "--dont", "d", "--why", "w", "--instead", "i",
            "--scope", "org=northwind", "--as", "nobody", workspace=sample_workspace)
    assert_exit_2(r, "unknown principal 'nobody'")


# -- authority --------------------------------------------------------------------------------

def test_graph_ranks_by_pagerank_with_links_in_and_out(sample_workspace, cli):
    r = cli("graph", "--top", "5", "--as", "grace.kim", "--json", workspace=sample_workspace)
    rows = json.loads(r.stdout)
    assert len(rows) == 5
    assert [row["authority"] for row in rows] == sorted((row["authority"] for row in rows), reverse=True)
    for row in rows:
        assert row["in_links"] >= len(row["links_in"]) and row["out_links"] >= len(row["links_out"])
    assert sum(row["in_links"] for row in rows) >= 25  # heavily cited fragments lead
    mine = json.loads(cli("graph", "--top", "0", "--as", "raj.patel", "--json", workspace=sample_workspace).stdout)
    assert all(row["id"].startswith("tw-") for row in mine)


def test_authority_is_recomputed_after_changes(wb):
    from dataclasses import replace

    from workbench.ingest.files import render

    before = dict(wb.store.authority()[1])
    target = "nw-note-payments-glossary"
    for fid in ("nw-rb-deploy-rollback", "nw-rb-psp-failover", "nw-rb-webhook-backlog"):
        f = wb.get(fid, principal="priya.raman")
        wb.edit(fid, render(fid, replace(f.content, links=(*f.links, target))), reason="cite the glossary",
                actor="priya.raman")
    wb.graph(top=1)
    after = dict(wb.store.authority()[1])
    assert after[target][1] == before[target][1] + 3 and after[target][0] > before[target][0]


# -- near-duplicates and merge -----------------------------------------------------------------

def test_dedupe_finds_the_copied_runbook(sample_workspace, cli):
    pairs = json.loads(cli("dedupe", "--as", "lena.fischer", "--json", workspace=sample_workspace).stdout)
    assert [(p["a"], p["b"]) for p in pairs] == [("tw-rb-fleet-pgbouncer-pool-exhausted",
                                                  "tw-rb-pgbouncer-pool-exhaustion")]
    assert pairs[0]["distance"] <= 3
    assert json.loads(cli("dedupe", "--as", "marco.bianchi", "--json", workspace=sample_workspace).stdout) == []


def test_dedupe_graph_and_nudge_say_whose_view_and_agree_with_the_ingest_warning(sample_workspace, cli, tmp_path):
    """Ingest as kb.sync warns of a near-duplicate and names the dedupe that shows it (as kb.sync);
    that dedupe lists the pair. Without --as, dedupe, graph and nudge name the default principal
    (priya.raman, who sees no tidewater fragment) and where it came from, in text and, on stderr, with --json."""
    from conftest import SAMPLE

    original = SAMPLE / "fragments" / "tidewater" / "org" / "tw-rb-pgbouncer-pool-exhaustion.md"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "tw-rb-pgbouncer-copy.md").write_text(
        original.read_text(encoding="utf-8").replace("id: tw-rb-pgbouncer-pool-exhaustion", "id: tw-rb-pgbouncer-copy"),
        encoding="utf-8")
    r = cli("ingest", str(tmp_path / "in"), "--as", "kb.sync", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    warned = re.findall(r"near-duplicate: (\S+) and (\S+) \(SimHash distance \d+\); see `workbench dedupe --as (\S+)`",
                        r.stderr)
    assert warned and {w[2] for w in warned} == {"kb.sync"}, r.stderr
    r = cli("dedupe", "--as", "kb.sync", workspace=sample_workspace)
    assert r.stdout.startswith("near-duplicates among the fragments kb.sync can see\n")
    pairs = json.loads(cli("dedupe", "--as", "kb.sync", "--json", workspace=sample_workspace).stdout)
    assert {(p["a"], p["b"]) for p in pairs if "tw-rb-pgbouncer-copy" in (p["a"], p["b"])} == \
        {(a, b) for a, b, _ in warned}
    default = "priya.raman can see (the default principal, from default_principal in workbench.yaml"
    r = cli("dedupe", workspace=sample_workspace)
    assert r.returncode == 0 and r.stdout.startswith(f"no near-duplicates among the fragments {default}"), r.stdout
    assert cli("graph", "--top", "2", workspace=sample_workspace).stdout.startswith(
        f"authority among the fragments {default}")
    assert f"nudging about what {default}" in cli("nudge", workspace=sample_workspace).stdout
    for command in ("dedupe", "graph", "nudge"):
        r = cli(command, "--json", workspace=sample_workspace)
        assert f"workbench: {command} shows what {default}" in r.stderr
        json.loads(r.stdout)
        r = cli(command, "--json", workspace=sample_workspace, env={"WORKBENCH_PRINCIPAL": "lena.fischer"})
        assert "lena.fischer can see (the default principal, from $WORKBENCH_PRINCIPAL" in r.stderr
        assert cli(command, "--json", "--as", "priya.raman", workspace=sample_workspace).stderr == ""


def test_merge_collapses_drop_into_keep(wb):
    keep, drop = "tw-rb-pgbouncer-pool-exhaustion", "tw-rb-fleet-pgbouncer-pool-exhausted"
    # something links to the copy first
    f = wb.get("tw-adr-0008-pgbouncer-transaction-pooling", principal="lena.fischer")
    from dataclasses import replace
    from workbench.ingest.files import render
    wb.edit(f.id, render(f.id, replace(f.content, links=(*f.links, drop))), reason="link", actor="lena.fischer")
    drop_sources = wb.get(drop, principal="lena.fischer").sources
    result = wb.merge(keep, drop, actor="lena.fischer")
    assert result["relinked"] == ["tw-adr-0008-pgbouncer-transaction-pooling"]
    kept = wb.get(keep, principal="lena.fischer")
    assert set(drop_sources) <= set(kept.sources)
    assert drop not in wb.get(f.id, principal="lena.fischer").links
    assert keep in wb.get(f.id, principal="lena.fischer").links
    dropped = wb.get(drop, principal="lena.fischer")
    assert dropped.status == "archived" and len(wb.history(drop, principal="lena.fischer")) == 2
    hits = wb.search("pgbouncer pool exhausted clients waiting", principal="lena.fischer", k=20, trace=False)
    ids = [h.id for h in hits.hits]
    assert keep in ids and drop not in ids


def test_merge_across_orgs_is_refused(sample_workspace, cli):
    r = cli("merge", "nw-rb-deploy-rollback", "tw-rb-deploy-rollback", "--as", "grace.kim",
            workspace=sample_workspace)
    assert_exit_2(r, "cannot merge across orgs")


# -- staleness, nudges, verify, snooze ----------------------------------------------------------

def test_stale_finds_old_heavily_cited_fragments_first(wb):
    items = wb.stale(days=180, now=NOW)
    assert len(items) >= 30
    top = items[:5]
    assert all(i.in_links >= 6 and i.age_days >= 180 for i in top), [(i.fragment.id, i.in_links) for i in top]
    assert [i.usage for i in items] == sorted((i.usage for i in items), reverse=True)
    assert all(i.fragment.owner and i.reasons for i in items)


def test_retrieval_traces_count_as_use(wb):
    before = {i.fragment.id: i.usage for i in wb.stale(now=NOW, principal="tomas.silva")}
    target = "tw-rb-oncall-paging-escalation"
    for _ in range(3):
        result = wb.search("who do I page when dispatch is down at night", principal="tomas.silva")
        assert target in [h.id for h in result.hits]
    after = {i.fragment.id: (i.usage, i.traces)
             for i in wb.stale(now=datetime.utcnow() + timedelta(minutes=1), principal="tomas.silva")}
    assert after[target][1] >= 3 and after[target][0] >= before[target] + 3


def test_nudge_is_idempotent_and_writes_one_digest_per_owner(wb, sample_workspace, cli):
    first = wb.nudge(now=NOW)
    stale_owners = {i.fragment.owner for i in wb.stale(now=NOW)}
    assert set(first.nudged) == stale_owners and first.skipped == 0
    outbox = sample_workspace / "outbox" / "2026-11-30"
    assert sorted(p.stem for p in outbox.glob("*.md")) == sorted(stale_owners)
    text = (outbox / "dan.kowalski.md").read_text()
    assert "nw-pol-incident-severity" in text and "workbench verify" in text
    mtimes = {p: p.stat().st_mtime_ns for p in outbox.glob("*.md")}
    again = wb.nudge(now=NOW + timedelta(hours=3))
    assert again.nudged == {} and again.skipped == sum(len(v) for v in first.nudged.values())
    assert {p: p.stat().st_mtime_ns for p in outbox.glob("*.md")} == mtimes
    later = wb.nudge(now=NOW + timedelta(days=15))
    assert set(later.nudged) == stale_owners


def test_verify_by_owner_resets_the_clock_and_others_are_refused(sample_workspace, cli):
    assert_exit_2(cli("verify", "nw-pol-incident-severity", "--as", "priya.raman", workspace=sample_workspace),
                  "only the owner (dan.kowalski)")
    r = cli("verify", "nw-pol-incident-severity", "--as", "dan.kowalski", "--note", "re-read after INC-3340",
            "--json", workspace=sample_workspace)
    assert r.returncode == 0 and json.loads(r.stdout)["verified_at"]
    with Workbench.open(sample_workspace) as wb:
        assert "nw-pol-incident-severity" not in [i.fragment.id for i in wb.stale()]
        assert wb.store.events(action="verify")[0]["detail"] == {"note": "re-read after INC-3340"}


def test_snooze(sample_workspace, cli):
    for days in ("0", "-3"):
        assert_exit_2(cli("snooze", "nw-pol-pci-scope", "--days", days, "--as", "omar.haddad",
                          workspace=sample_workspace), "the number of days must be between 1 and 36500 days")
    assert_exit_2(cli("snooze", "nw-pol-pci-scope", "--days", "5", "--as", "dan.kowalski",
                      workspace=sample_workspace), "only the owner")
    assert cli("snooze", "nw-pol-pci-scope", "--days", "30", "--as", "omar.haddad",
               workspace=sample_workspace).returncode == 0
    with Workbench.open(sample_workspace) as wb:
        assert "nw-pol-pci-scope" not in [i.fragment.id for i in wb.stale()]
        assert "nw-pol-pci-scope" in [i.fragment.id for i in wb.stale(now=datetime.utcnow() + timedelta(days=31))]


# -- secret guard ----------------------------------------------------------------------------

AWS = "AKIA" + "ABCDEFGHIJKLMNOP"


def test_ingest_refuses_credentials_naming_file_and_line(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-clean")
    write_fragment(src, "nw-leaky", body=f"## Setup\nexport AWS_ACCESS_KEY_ID={AWS}\n")
    write_fragment(src, "nw-dsn", body="Connect with postgres://payments:hunter2hunter2@db.internal:5432/payments")
    report = wb.ingest([src])
    assert report.added == ["nw-clean"]
    messages = sorted(e["message"] for e in report.errors)
    assert "nw-dsn.md: contains a credential (line 9: password in a connection string)" in messages[0]
    assert "nw-leaky.md: contains a credential (line 10: AWS access key id)" in messages[1]
    with pytest.raises(NotFound):
        wb.get("nw-leaky", principal="marco.bianchi")


def test_allow_secret_stores_and_records_the_override(sample_workspace, tmp_path, cli):
    src = tmp_path / "in"
    write_fragment(src, "nw-leaky", body=f"export AWS_ACCESS_KEY_ID={AWS}\n")
    assert cli("ingest", str(src), workspace=sample_workspace).returncode == 2
    r = cli("ingest", str(src), "--allow-secret", "--json", workspace=sample_workspace)
    assert r.returncode == 0 and json.loads(r.stdout)["added"] == 1
    with Workbench.open(sample_workspace) as wb:
        events = wb.store.events(action="allow-secret")
        assert len(events) == 1 and "AWS access key id" in events[0]["detail"]["findings"]


def test_a_fragment_stored_with_an_override_is_withheld_unless_the_call_says_so(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-leaky-runbook", kind="runbook", title="Rotate the zebra quartz gateway credentials",
                   body=f"Rotate the zebra quartz gateway: export AWS_ACCESS_KEY_ID={AWS}\n")
    assert wb.ingest([src], actor="marco.bianchi", allow_secret=True).added == ["nw-leaky-runbook"]
    assert wb.store.secret_flagged() == {"nw-leaky-runbook"}
    query = "rotate the zebra quartz gateway credentials"
    ids = lambda result: [h.id for h in result.hits + result.avoid]  # noqa: E731
    assert "nw-leaky-runbook" not in ids(wb.search(query, principal="marco.bianchi"))
    assert "nw-leaky-runbook" in ids(wb.search(query, principal="marco.bianchi", allow_secret=True))
    served = wb.context(query, principal="marco.bianchi", budget=2000)
    assert "nw-leaky-runbook" not in [i.hit.id for i in served.fragments + served.avoid]
    with pytest.raises(UserError, match="not served to agents"):
        wb.fetch("nw-leaky-runbook", principal="marco.bianchi")  # the MCP `get`
    assert wb.fetch("nw-leaky-runbook", principal="marco.bianchi", allow_secret=True)[0].id == "nw-leaky-runbook"
    wb.pin("nw-leaky-runbook", scope="org=northwind,repo=payments-api", actor="marco.bianchi")
    assert "nw-leaky-runbook" not in [i.hit.id for i in wb.context(query, principal="marco.bianchi").fragments]
    exported = {p.stem for p in wb.export_files(tmp_path / "files", principal="marco.bianchi")}
    assert "nw-leaky-runbook" not in exported and "nw-adr-0007-idempotency-keys" in exported
    agents = (tmp_path / "agents")
    wb.export_agents("agents-md", agents, scope="org=northwind,repo=payments-api", principal="marco.bianchi")
    assert "nw-leaky-runbook" not in (agents / "AGENTS.md").read_text()
    # the owner fixes it: the new version is clean, so nothing is withheld any more
    wb.edit("nw-leaky-runbook", "Rotate the zebra quartz gateway keys through the vault.", reason="remove the key",
            actor="marco.bianchi")
    assert wb.store.secret_flagged() == set()
    assert "nw-leaky-runbook" in ids(wb.search(query, principal="marco.bianchi"))


def test_lead_of_outside_ones_own_orgs_is_a_config_error(tmp_path, cli):
    from conftest import CONFIG

    bad = tmp_path / "workbench.yaml"
    bad.write_text(CONFIG.read_text().replace('lead_of: ["org=northwind,repo=payments-api"]',
                                              'lead_of: ["org=northwind,repo=payments-api", "org=tidewater"]'))
    r = cli("init", "--config", str(bad), workspace=tmp_path / "ws")
    assert_exit_2(r, "lead_of 'org=tidewater' is outside the principal's orgs (northwind)")


def test_edit_refuses_credentials(wb):
    with pytest.raises(SecretFound, match="line 2: password assignment"):
        wb.edit("nw-rb-deploy-rollback", "Steps\npassword = \"Tr0ub4dor&3x\"\n", reason="oops", actor="dan.kowalski")
    assert len(wb.history("nw-rb-deploy-rollback", principal="dan.kowalski")) == 1
    # placeholders are not secrets
    wb.edit("nw-rb-deploy-rollback", "Use postgres://app:<password>@db:5432/app", reason="ok", actor="dan.kowalski")


def test_permission_errors_are_user_errors():
    assert issubclass(PermissionDenied, UserError) and issubclass(SecretFound, UserError)
