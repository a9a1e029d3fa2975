"""Published contexts and subscriptions (issue 30), on both store backends.

A small workspace: Northwind's platform team (dan.kowalski) publishes the set ``platform``
(org=northwind,repo=platform-infra) as ``northwind/platform``; tomas.silva subscribes
org=tidewater,persona=sre. Exactly the members of that scope (and Northwind's own members) see the
published fragments, on every face, with ``via``; nothing else of Northwind crosses.
"""

from __future__ import annotations

import pytest

from conftest import ROOT, write_fragment

from workbench import Workbench
from workbench.errors import NotFound, PermissionDenied

CTX = "northwind/platform"
SRE = "org=tidewater,persona=sre"
DEPLOY, ONCALL, PAYMENTS, SECURITY, SESSION = ("nw-deploy-rollback", "nw-oncall-paging", "nw-payments-retry",
                                               "nw-security-keys", "nw-session-notes")
RECEIVERS = {"tomas.silva", "agent.tw-ops", "lena.fischer"}   # members of org=tidewater,persona=sre, not of northwind


@pytest.fixture
def pub(tmp_path, backend_config):
    frag = tmp_path / "frags"
    write_fragment(frag, DEPLOY, kind="runbook", title="Rolling back a bad deploy", repo="platform-infra",
                   owner="dan.kowalski", body="Roll back a bad deploy with argo rollouts undo; zeppelin marker.")
    write_fragment(frag, ONCALL, kind="runbook", title="On-call paging", repo=None, persona="sre",
                   owner="dan.kowalski", body="Page the on-call zeppelin engineer after five minutes.")
    write_fragment(frag, PAYMENTS, kind="policy", title="Payments retries", repo="payments-api",
                   owner="marco.bianchi", body="Retry PSP calls with backoff; zeppelin idempotency.")
    write_fragment(frag, SECURITY, kind="policy", title="Security keys", repo=None, persona="security",
                   owner="omar.haddad", body="Rotate zeppelin keys every ninety days.")
    write_fragment(frag, "tw-dispatch", kind="note", title="Dispatch note", org="tidewater", repo="dispatch",
                   owner="raj.patel", body="Dispatch zeppelin queue notes.")
    root = tmp_path / "ws"
    with Workbench.init(root, config=backend_config) as wb:
        assert not wb.ingest([frag], actor="kb.sync").errors
        wb.set_create("platform", scope="org=northwind,repo=platform-infra", actor="dan.kowalski")
        wb.publish("platform", actor="dan.kowalski")
        wb.subscribe(CTX, scope=SRE, actor="tomas.silva")
        yield wb


def _search(wb, who, query="zeppelin"):
    result = wb.search(query, principal=who, pipeline="bm25", calibrate=False, k=20)
    return {h.id: h.via for h in result.hits + result.avoid}


def test_a_published_fragment_reaches_exactly_the_subscribing_scope(pub):
    published = {m["id"] for m in pub.published_context(CTX, principal="dan.kowalski")["fragments"]}
    assert published == {DEPLOY, ONCALL}   # in the set's scope, as its owner sees it (not security, not payments)
    for who in pub.principals():
        hits = _search(pub, who.name)
        member = who.can_see(pub.get(DEPLOY, principal="kb.sync").scope)
        receives = who.name in RECEIVERS
        assert (DEPLOY in hits) == (member or receives), who.name
        assert hits.get(DEPLOY) == (CTX if receives and not member else None), who.name
        if "northwind" not in who.orgs:   # nothing else of Northwind crosses
            assert not {PAYMENTS, SECURITY} & set(hits), who.name


def test_every_face_carries_via(pub, tmp_path):
    from workbench.mcp.server import _fetch

    got = pub.get(DEPLOY, principal="tomas.silva")
    assert got.owner == "dan.kowalski" and got.id == DEPLOY   # the publisher's fragment, not a copy
    assert pub.received_via(DEPLOY, principal="tomas.silva") == CTX
    assert pub.received_via(DEPLOY, principal="dan.kowalski") is None
    ctx = pub.context("zeppelin", principal="tomas.silva", pipeline="bm25", min_confidence=0.0)
    assert f"(source: {DEPLOY}@v1 via {CTX})" in ctx.text()
    assert {i["id"]: i.get("via") for i in ctx.to_dict()["fragments"]}[DEPLOY] == CTX
    trace = pub.trace(ctx.trace_id, principal="tomas.silva")
    assert {i["id"]: i.get("via") for i in trace["served"]}[DEPLOY] == CTX
    assert _fetch(pub, DEPLOY, pub.principal("tomas.silva"))["via"] == CTX
    files, _ = pub.render_agents("agents-md", scope=SRE, principal="tomas.silva")
    text = "".join(files.values())
    assert f"{DEPLOY}@v1 via {CTX}" in text and PAYMENTS not in text
    assert DEPLOY in {f.id for f in pub.list(principal="tomas.silva")}
    with pytest.raises(NotFound):
        pub.get(DEPLOY, principal="raj.patel")   # tidewater, outside the subscribing scope
    with pytest.raises(NotFound):
        pub.get(PAYMENTS, principal="tomas.silva")


def test_removing_from_the_set_stops_it_at_once(pub):
    pub.set_change("platform", DEPLOY, include=False, actor="dan.kowalski")
    with pytest.raises(NotFound):
        pub.get(DEPLOY, principal="tomas.silva")
    assert DEPLOY not in _search(pub, "tomas.silva")
    assert ONCALL in _search(pub, "tomas.silva")
    log = pub.published_context(CTX, principal="dan.kowalski")["changelog"]
    assert [c["version"] for c in log] == [1, 2] and log[1]["removed"] == [DEPLOY] and log[1]["reason"] == "set-remove"



def test_a_picked_set_publishes_exactly_what_is_picked(pub):
    """A picked set holds its hand includes and nothing else of its scope: the context published
    from it carries exactly those (a scope-wide set of the same scope would carry DEPLOY too)."""
    from workbench.errors import UserError

    made = pub.set_create("oncall", scope="org=northwind,repo=platform-infra", actor="dan.kowalski", picked=True)
    assert made["picked"] is True and made["fragments"] == []
    shown = pub.set_change("oncall", ONCALL, include=True, actor="dan.kowalski")
    assert [f["id"] for f in shown["fragments"]] == [ONCALL] and shown["include"] == [ONCALL]
    assert pub.set_show("platform", principal="dan.kowalski")["picked"] is False
    pub.publish("oncall", actor="dan.kowalski")
    members = {m["id"] for m in pub.published_context("northwind/oncall", principal="dan.kowalski")["fragments"]}
    assert members == {ONCALL}
    pub.set_change("oncall", ONCALL, include=False, actor="dan.kowalski")   # picked out: version 2 is empty
    assert pub.published_context("northwind/oncall", principal="dan.kowalski")["fragments"] == []
    with pytest.raises(UserError, match="takes no query"):
        pub.set_create("both", scope="org=northwind", actor="priya.raman", picked=True, query="paging")


def test_set_create_picked_on_the_command_line(pub, cli):
    import json

    root = pub.root
    made = cli("set", "create", "rules", "--scope", "org=northwind", "--picked", "--as", "priya.raman",
               workspace=root)
    assert made.returncode == 0, made.stderr
    assert "picked: exactly the fragments included by hand" in made.stdout
    added = cli("set", "add", "rules", SECURITY, "--as", "priya.raman", "--json", workspace=root)
    data = json.loads(added.stdout)
    assert data["picked"] is True and [f["id"] for f in data["fragments"]] == [SECURITY]
    both = cli("set", "create", "x", "--scope", "org=northwind", "--picked", "--query", "keys", "--as",
               "priya.raman", workspace=root)
    assert both.returncode == 2 and "takes no query" in both.stderr and "Traceback" not in both.stderr


def test_a_held_principal_never_keeps_stale_receipts(pub):
    """A Principal resolved once and kept (the TUI's ``me``, the server's token principal) is resolved
    again on every call: removed from the set, or unsubscribed, it stops receiving at once."""
    from dataclasses import replace

    me = pub.principal("tomas.silva")
    assert {r.fragment_id for r in me.received} == {DEPLOY, ONCALL}
    assert pub.get(DEPLOY, principal=me).id == DEPLOY and DEPLOY in _search(pub, me)
    pub.set_change("platform", DEPLOY, include=False, actor="dan.kowalski")
    with pytest.raises(NotFound):
        pub.get(DEPLOY, principal=me)           # the SAME object, still carrying its old receipts
    assert DEPLOY not in _search(pub, me) and ONCALL in _search(pub, me)
    assert DEPLOY not in {f.id for f in pub.list(principal=me)}
    pub.unsubscribe(CTX, scope=SRE, actor="tomas.silva")
    with pytest.raises(NotFound):
        pub.get(ONCALL, principal=me)
    assert ONCALL not in _search(pub, me)
    pub.subscribe(CTX, scope=SRE, actor="tomas.silva")   # a new subscription reaches a held one too
    empty = replace(me, received=())
    assert pub.get(ONCALL, principal=empty).id == ONCALL and pub.received_via(ONCALL, principal=empty) == CTX

def test_archive_and_a_narrower_scope_stop_it(pub):
    from dataclasses import replace

    from workbench.ingest.files import render_fragment
    from workbench.models import Scope

    pub.archive(DEPLOY, actor="dan.kowalski", reason="old")
    assert DEPLOY not in _search(pub, "tomas.silva")
    pub.restore(DEPLOY, actor="dan.kowalski", reason="back")
    assert _search(pub, "tomas.silva").get(DEPLOY) == CTX
    current = pub.get(ONCALL, principal="dan.kowalski")
    narrower = replace(current, content=replace(current.content, scope=Scope.parse(
        "org=northwind,repo=platform-infra,persona=sre")))
    pub.edit(ONCALL, render_fragment(narrower), actor="dan.kowalski", reason="narrower", base=current.version)
    assert ONCALL not in _search(pub, "tomas.silva")


def test_pinned_subscriptions_stay_until_moved(pub):
    pub.subscribe(CTX, scope="org=tidewater,repo=dispatch", actor="raj.patel", pinned=True)
    first = pub.get(DEPLOY, principal="raj.patel")
    pub.edit(DEPLOY, "Roll back with the new zeppelin procedure.", actor="dan.kowalski", reason="new",
             base=first.version)
    assert pub.get(DEPLOY, principal="raj.patel").version == 1          # pinned: the recorded version
    assert "argo rollouts undo" in pub.get(DEPLOY, principal="raj.patel").body
    assert pub.get(DEPLOY, principal="tomas.silva").version == 2        # latest follows
    assert [v.number for v in pub.history(DEPLOY, principal="raj.patel")] == [1]   # no other version's history
    with pytest.raises(NotFound):
        pub.get(DEPLOY, version=2, principal="raj.patel")
    pub.publish("platform", actor="dan.kowalski")   # version 2 records the new fragment version
    moved = pub.move_subscription(CTX, scope="org=tidewater,repo=dispatch", actor="raj.patel")
    assert moved["diff"]["changed"] == [{"id": DEPLOY, "from": 1, "to": 2}] and moved["to"] == 2
    assert pub.get(DEPLOY, principal="raj.patel").version == 2


def test_either_side_ends_it(pub):
    pub.unsubscribe(CTX, scope=SRE, actor="tomas.silva")
    assert DEPLOY not in _search(pub, "tomas.silva")
    pub.subscribe(CTX, scope=SRE, actor="tomas.silva")
    assert DEPLOY in _search(pub, "tomas.silva")
    pub.unpublish(CTX, actor="dan.kowalski")
    assert DEPLOY not in _search(pub, "tomas.silva")
    with pytest.raises(NotFound):
        pub.subscribe(CTX, scope=SRE, actor="tomas.silva")


def test_who_may_publish_subscribe_and_write(pub):
    with pytest.raises(PermissionDenied):
        pub.subscribe(CTX, scope="org=tidewater", actor="agent.tw-ops")    # agents never
    with pytest.raises(PermissionDenied):
        pub.subscribe(CTX, scope="org=tidewater", actor="raj.patel")       # not a lead of it
    with pytest.raises(PermissionDenied):
        pub.publish("platform", actor="grace.kim")                          # sees it, neither owner nor lead
    with pytest.raises(NotFound):
        pub.publish("platform", actor="hannah.lee")                         # a set it cannot see
    current = pub.get(DEPLOY, principal="tomas.silva")
    for write in (lambda: pub.edit(DEPLOY, "mine now", actor="tomas.silva", reason="x", base=current.version),
                  lambda: pub.archive(DEPLOY, actor="tomas.silva", reason="x"),
                  lambda: pub.pin(DEPLOY, scope="org=northwind", actor="tomas.silva")):
        with pytest.raises((PermissionDenied, NotFound)):
            write()
    assert pub.get(DEPLOY, principal="dan.kowalski").version == 1
    pub.pin(DEPLOY, scope=SRE, actor="tomas.silva")    # a lead of the subscribing scope pins it there
    assert DEPLOY in pub.applicable_pins(pub.principal("agent.tw-ops"), None, __import__("datetime").datetime.now())


def test_the_publisher_sees_subscribers_and_counts_only(pub):
    pub.search("zeppelin", principal="tomas.silva", pipeline="bm25", calibrate=False)
    pub.search("zeppelin", principal="dan.kowalski", pipeline="bm25", calibrate=False)
    [mine] = pub.published(principal="dan.kowalski")
    assert [s["scope"] for s in mine["subscribers"]] == [SRE]
    assert mine["usage"][DEPLOY] == 1     # tomas's call only: the publisher's own calls are not counted
    assert pub.published(principal="raj.patel") == []
    seen = pub.subscriptions(principal="agent.tw-ops")
    assert [s["context"] for s in seen["subscriptions"]] == [CTX]
    assert set(seen["subscriptions"][0]["receives"]) == {DEPLOY, ONCALL}
    assert "fragments" not in pub.published_context(CTX, principal="raj.patel")   # discoverable, not its members


def test_a_subscriber_gets_no_usage_or_curation_work_of_the_publisher(pub):
    pub.search("zeppelin", principal="dan.kowalski", pipeline="bm25", calibrate=False)
    served = {u.fragment.id for u in pub.usage(principal="tomas.silva").served}
    never = {u.fragment.id for u in pub.usage(principal="tomas.silva").never_served}
    assert not {DEPLOY, ONCALL} & (served | never)
    with pytest.raises(NotFound):
        pub.fragment_usage(DEPLOY, principal="tomas.silva")
    stale = pub.stale(principal="tomas.silva", days=1, now=__import__("datetime").datetime(2100, 1, 1))
    assert stale and not {DEPLOY, ONCALL} & {s.fragment.id for s in stale}   # its own stale knowledge only


# -- the sample workspace: northwind/platform, subscribed by org=tidewater,persona=sre -------------

def test_the_sample_context_reaches_exactly_tidewaters_sres_on_every_face(sample_workspace, cli):
    import json

    from workbench.mcp.server import _fetch
    from workbench.models import Scope

    rollback, sre = "nw-rb-deploy-rollback", Scope("tidewater", persona="sre")
    with Workbench.open(sample_workspace) as wb:
        published = {m["id"] for m in wb.published_context("northwind/platform", principal="dan.kowalski")["fragments"]}
        assert rollback in published and "nw-rb-ledger-imbalance" not in published
        picked = {line.split()[3] for line in (ROOT / "sample_corpus" / "contexts.txt").read_text().splitlines()
                  if line.startswith("set add platform ")}
        assert published == picked and 6 <= len(picked) <= 10   # a picked set: nothing else of northwind
        for who in wb.principals():
            member = "northwind" in who.orgs and who.can_see(Scope("northwind", "platform-infra"))
            receives = who.can_see(sre) and not member
            hits = {h.id: h.via for h in wb.search("roll back a bad deploy argo rollouts", principal=who.name,
                                                  pipeline="bm25", calibrate=False, k=50).hits}
            assert (rollback in hits) == (member or receives), who.name
            assert hits.get(rollback) == ("northwind/platform" if receives else None), who.name
            if "northwind" not in who.orgs:   # nothing else of northwind crosses
                assert set(hits) - published <= {i for i in hits if not i.startswith("nw-")}, who.name
            if receives:
                assert _fetch(wb, rollback, who)["via"] == "northwind/platform"
    shown = cli("show", rollback, "--as", "agent.tw-ops", "--json", workspace=sample_workspace)
    assert shown.returncode == 0 and json.loads(shown.stdout)["via"] == "northwind/platform"
    refused = cli("show", rollback, "--as", "raj.patel", workspace=sample_workspace)
    assert refused.returncode == 2 and "unknown fragment" in refused.stderr
    mine = json.loads(cli("subscriptions", "--as", "agent.tw-ops", "--json", workspace=sample_workspace).stdout)
    assert [s["context"] for s in mine["subscriptions"]] == ["northwind/platform"]
    denied = cli("subscribe", "northwind/platform", "--scope", "org=tidewater", "--as", "agent.tw-ops",
                 workspace=sample_workspace)
    assert denied.returncode == 2 and "Traceback" not in denied.stderr
    out = sample_workspace.parent / "platform-rules"
    exported = cli("export", "cursor-rules", "--context", "northwind/platform", "--out", str(out), "--as",
                   "agent.tw-ops", "--json", workspace=sample_workspace)
    assert exported.returncode == 0, exported.stderr
    rules = {p.stem for p in (out / ".cursor" / "rules").glob("*.mdc")}
    assert rollback in rules and not any(r.startswith("tw-") for r in rules)   # the context's fragments only
    outsider = cli("export", "agents-md", "--context", "northwind/platform", "--out", str(out) + "-2", "--as",
                   "raj.patel", workspace=sample_workspace)
    assert outsider.returncode == 2 and "Traceback" not in outsider.stderr and not (out.parent / "platform-rules-2").exists()
    removed = cli("set", "remove", "platform", rollback, "--as", "dan.kowalski", workspace=sample_workspace)
    assert removed.returncode == 0
    gone = cli("show", rollback, "--as", "agent.tw-ops", workspace=sample_workspace)
    assert gone.returncode == 2 and "unknown fragment" in gone.stderr   # at once


def test_the_publishers_pins_travel_only_when_it_says_so(pub):
    from datetime import datetime

    pub.pin(DEPLOY, scope="org=northwind,repo=platform-infra", actor="dan.kowalski")
    pub.publish("platform", actor="dan.kowalski")     # the pin is recorded, but does not travel
    assert DEPLOY not in pub.applicable_pins(pub.principal("tomas.silva"), None, datetime.now())
    pub.publish("platform", actor="dan.kowalski", with_pins=True)
    assert DEPLOY in pub.applicable_pins(pub.principal("tomas.silva"), None, datetime.now())
    assert DEPLOY not in pub.applicable_pins(pub.principal("raj.patel"), None, datetime.now())
    ctx = pub.context("paging", principal="agent.tw-ops", pipeline="bm25", min_confidence=0.0)
    assert ctx.fragments[0].hit.id == DEPLOY and ctx.fragments[0].hit.via == CTX   # pins first
