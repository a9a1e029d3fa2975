"""Usage: what search, context and get calls served, counted from the traces of a window, exactly as
the calls made here served it; the active fragments never served; who is named to whom; and the
staleness scan counting with the same function. Real store, sample corpus."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import timedelta

import pytest

from gap_support import without_default_principal
from workbench import Workbench
from workbench.errors import NotFound
from workbench.models import utcnow

ADR = "nw-adr-0007-idempotency-keys"


def served_ids(result) -> list[str]:
    """What a search or context result served (each id once per call)."""
    if hasattr(result, "hits"):
        return list(dict.fromkeys(h.id for h in [*result.hits, *result.avoid]))
    return list(dict.fromkeys(i.hit.id for i in [*result.fragments, *result.avoid]))


@pytest.fixture
def made(sample_workspace, monkeypatch):
    """Calls two hours ago (search, context and get, by four principals, one in tidewater) and one
    a hundred days ago; returns the workspace and, per fragment, the calls that served it per principal."""
    monkeypatch.delenv("WORKBENCH_PRINCIPAL", raising=False)
    without_default_principal(sample_workspace)
    at = utcnow() - timedelta(hours=2)
    expected: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    with Workbench.open(sample_workspace) as wb:
        calls = [
            ("marco.bianchi", wb.search("customer charged twice after a retry", principal="marco.bianchi", k=5,
                                        now=at)),
            ("marco.bianchi", wb.search("customer charged twice after a retry", principal="marco.bianchi", k=5,
                                        now=at + timedelta(minutes=1))),
            ("dan.kowalski", wb.context("how do I roll back a bad deploy", principal="dan.kowalski", budget=1500,
                                        now=at + timedelta(minutes=2))),
            ("agent.nw-coder", wb.search("idempotency key retention", principal="agent.nw-coder", k=3,
                                         now=at + timedelta(minutes=3))),
            ("emma.novak", wb.search("driver app crashes on start", principal="emma.novak", k=4,
                                     now=at + timedelta(minutes=4))),
        ]
        for who, result in calls:
            for fid in served_ids(result):
                expected[fid][who] += 1
        wb.fetch(ADR, principal="agent.nw-coder", now=at + timedelta(minutes=5))
        expected[ADR]["agent.nw-coder"] += 1
        old = wb.search("pgbouncer pool exhausted", principal="tomas.silva", k=3, now=utcnow() - timedelta(days=100))
    return sample_workspace, {k: dict(v) for k, v in expected.items()}, served_ids(old)


def table(report) -> dict[str, tuple[int, dict[str, int], int]]:
    return {u.fragment.id: (u.served.count, dict(u.served.principals), u.served.others) for u in report.served}


def test_usage_counts_equal_the_calls_made_and_never_served_is_the_rest(made):
    root, expected, _ = made
    with Workbench.open(root) as wb:
        report = wb.usage()   # the local administrator: every call named
        assert report.principal is None
        assert table(report) == {fid: (sum(per.values()), per, 0) for fid, per in expected.items()}
        assert report.calls == sum(sum(per.values()) for per in expected.values())
        active = {f.id for f in wb.store.fragments(status="active")}
        assert {u.fragment.id for u in report.never_served} == active - set(expected)
        touched = [u.last_touched for u in report.never_served]
        assert touched == sorted(touched)   # oldest first
        counts = [u.served.count for u in report.served]
        assert counts == sorted(counts, reverse=True)
        assert report.served[0].served.last is not None


def test_the_window_leaves_older_calls_out(made):
    root, expected, old = made
    with Workbench.open(root) as wb:
        only_old = set(old) - set(expected)
        assert only_old
        assert only_old <= {u.fragment.id for u in wb.usage().never_served}
        year = table(wb.usage(days=365))
        assert all(year[fid][1].get("tomas.silva") == 1 for fid in old)
        assert wb.usage(days=1, now=utcnow() - timedelta(days=1)).served == ()


def test_names_are_shown_only_to_whom_may_read_the_calls(made):
    root, expected, _ = made
    with Workbench.open(root) as wb:
        agent = wb.usage(principal="agent.nw-coder")
        for fid, (count, named, others) in table(agent).items():
            assert count == sum(expected[fid].values())
            assert set(named) <= {"agent.nw-coder"} and named.get("agent.nw-coder") == expected[fid].get(
                "agent.nw-coder")
            assert others == len(set(expected[fid]) - {"agent.nw-coder"})
        lead = table(wb.usage(principal="priya.raman"))   # lead of org=northwind: every northwind caller named
        northwind = {fid: per for fid, per in expected.items() if fid.startswith("nw-")}
        assert {fid: lead[fid][1] for fid in northwind} == northwind
        seen = {f.id for f in wb.list(principal="agent.nw-coder")}
        assert {u.fragment.id for u in agent.served} == set(expected) & seen
        assert {u.fragment.id for u in agent.never_served} == seen - set(expected)


def test_another_org_learns_nothing(made):
    root, expected, _ = made
    with Workbench.open(root) as wb:
        emma = wb.usage(principal="emma.novak")
        text = json.dumps(emma.to_dict())
        assert "nw-" not in text and "marco.bianchi" not in text and "dan.kowalski" not in text
        assert emma.hidden == 0
        assert table(emma) == {fid: (sum(per.values()), per, 0) for fid, per in expected.items()
                               if fid.startswith("tw-")}
        with pytest.raises(NotFound, match=f"unknown fragment '{ADR}'"):
            wb.fragment_usage(ADR, principal="emma.novak")


def test_scope_narrows_and_a_fragment_moved_out_of_sight_is_counted_hidden(made):
    root, expected, _ = made
    with Workbench.open(root) as wb:
        repo = wb.usage(scope="org=northwind,repo=payments-api")
        assert all(u.fragment.scope.repo == "payments-api" for u in [*repo.served, *repo.never_served])
        assert ADR in {u.fragment.id for u in repo.served}
        from workbench.ingest.files import render_fragment

        moved = render_fragment(wb.get(ADR, principal="marco.bianchi")).replace(
            "scope: {org: northwind, repo: payments-api}", "scope: {org: northwind, repo: ledger}")
        wb.edit(ADR, moved, reason="belongs to the ledger", actor="marco.bianchi")
        agent = wb.usage(principal="agent.nw-coder")   # served to it, now out of its sight
        assert ADR not in json.dumps(agent.to_dict()) and agent.hidden == 1


def test_fragment_usage_is_the_same_count(made):
    root, expected, _ = made
    with Workbench.open(root) as wb:
        served = wb.fragment_usage(ADR)
        assert (served.count, dict(served.principals)) == (sum(expected[ADR].values()), expected[ADR])
        by = len(expected[ADR])
        assert served.describe(90) == f"served {served.count} times in 90 days by {by} principal{'s' * (by > 1)}"
        never = next(u.fragment.id for u in wb.usage().never_served)
        assert wb.fragment_usage(never).describe(90) == "never served in 90 days"


def test_stale_counts_as_usage_counts(made):
    root, expected, _ = made
    with Workbench.open(root) as wb:
        for who in ("priya.raman", "agent.nw-coder", "emma.novak"):
            report = wb.usage(days=90, principal=who)
            usage = {u.fragment.id: u.served for u in report.served}
            never = {u.fragment.id for u in report.never_served}
            items = wb.stale(days=90, principal=who)
            assert items
            for item in items:
                assert item.traces == (usage[item.fragment.id].count if item.fragment.id in usage else 0)
                assert item.never_served == (item.fragment.id in never)
                if item.fragment.id in usage:
                    assert item.served == usage[item.fragment.id]
        used = [i for i in wb.stale(days=90, principal="priya.raman") if not i.never_served]
        assert used and all(i.to_dict()["served"] == i.traces and i.to_dict()["window_days"] == 90 for i in used)


def test_usage_and_stale_commands(made, cli):
    root, expected, _ = made
    r = cli("usage", "--json", workspace=root)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert {row["id"]: row["served"] for row in data["served"]} == {f: sum(p.values()) for f, p in expected.items()}
    assert set(data) == {"days", "since", "until", "principal", "scope", "served", "never_served", "hidden"}
    assert set(data["served"][0]) == {"id", "title", "kind", "owner", "scope", "status", "served", "principals",
                                      "other_principals", "last_served"}
    text = cli("usage", "--as", "marco.bianchi", "--days", "30", workspace=root)
    assert text.returncode == 0 and ADR in text.stdout and "never served in the last 30 days" in text.stdout
    stale = json.loads(cli("stale", "--json", "--days", "90", "--as", "priya.raman", workspace=root).stdout)
    assert {"served", "principals", "other_principals", "last_served", "never_served", "window_days"} <= set(stale[0])
    assert any(not s["never_served"] for s in stale) and any(s["never_served"] for s in stale)
    shown = cli("stale", "--days", "90", "--as", "priya.raman", workspace=root).stdout
    assert "never" in shown and "served" in shown
    bad = cli("usage", "--days", "-1", workspace=root)
    assert bad.returncode == 2 and "between 1 and 36500" in bad.stderr
