"""The TUI faces of published contexts (issue 30 §3), on both store backends.

A small workspace (as tests/test_published.py's): Northwind's platform team (dan.kowalski)
publishes the set ``platform`` as ``northwind/platform``; tomas.silva subscribes
org=tidewater,persona=sre. Browse shows the received fragments under their own "subscribed" branch,
read-only (the write keys the core refuses are neither shown, run nor listed by ctrl+o; a lead of
the subscribing scope may pin); the fragment screen says "via"; the Export screen exports the
context. The Browse snapshot with the branch is taken on the sample workspace (its published context).
"""

from __future__ import annotations

import json

import pytest
from conftest import write_fragment
from tui_support import SMALL, app_for, settle, until

from workbench import Workbench
from workbench.errors import PermissionDenied
from workbench.service.browse import Branch, branches, context_tree, rows, scope_tree

CTX = "northwind/platform"
SRE = "org=tidewater,persona=sre"
DEPLOY, ONCALL, PAYMENTS = "nw-deploy-rollback", "nw-oncall-paging", "nw-payments-retry"
WRITES = ("edit_row", "verify_row", "snooze_row", "archive_row")


@pytest.fixture
def pub(tmp_path, backend_config):
    frag = tmp_path / "frags"
    write_fragment(frag, DEPLOY, kind="runbook", title="Rolling back a bad deploy", repo="platform-infra",
                   owner="dan.kowalski", body="Roll back a bad deploy with argo rollouts undo.")
    write_fragment(frag, ONCALL, kind="runbook", title="On-call paging", repo=None, persona="sre",
                   owner="dan.kowalski", body="Page the on-call engineer after five minutes.")
    write_fragment(frag, PAYMENTS, kind="policy", title="Payments retries", repo="payments-api",
                   owner="marco.bianchi", body="Retry PSP calls with backoff.")
    write_fragment(frag, "tw-dispatch", kind="note", title="Dispatch note", org="tidewater", repo="dispatch",
                   owner="raj.patel", body="Dispatch queue notes.")
    with Workbench.init(tmp_path / "ws", config=backend_config) as wb:
        assert not wb.ingest([frag], actor="kb.sync").errors
        wb.set_create("platform", scope="org=northwind,repo=platform-infra", actor="dan.kowalski")
        wb.publish("platform", actor="dan.kowalski")
        wb.subscribe(CTX, scope=SRE, actor="tomas.silva")
        yield wb


def _state(wb) -> tuple:
    """What a write would change: every fragment's version and status, and the pins."""
    frags = sorted((f.id, f.version, f.status) for f in wb.list(principal="kb.sync", include_archived=True))
    return frags, sorted((p.fragment_id, str(p.scope)) for p in wb.pins(principal="kb.sync"))


async def _browse(pilot):
    await until(pilot, lambda: type(pilot.app.screen).__name__ == "BrowseScreen" and pilot.app.screen.items is not None)
    await settle(pilot)
    return pilot.app.screen


async def _open_branch(pilot, screen, label: str):
    tree = screen.query_one("#scope-tree")
    tree.focus()
    node = next(n for n in _walk(tree.root) if str(n.label).startswith(label))
    tree.move_cursor(node)
    await pilot.press("enter")
    await pilot.pause()
    table = screen.query_one("#fragments")
    await until(pilot, lambda: table.row_count == len(screen.rows))
    table.focus()
    await pilot.pause()
    return node


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


def test_received_rows_are_read_only_by_the_policy(pub):
    items = pub.browse(principal="tomas.silva")
    got = {r.id: r.received for r in items if r.received is not None}
    assert set(got) == {DEPLOY, ONCALL} and {r.via for r in got.values()} == {CTX}
    # tomas leads the subscribing scope: the policy lets him pin there, and nothing else
    assert all(r.actions == {"pin", "unpin"} and [str(s) for s in r.pin_scopes] == [SRE] for r in got.values())
    agent = {r.id: r.received for r in pub.browse(principal="agent.tw-ops") if r.received is not None}
    assert set(agent) == {DEPLOY, ONCALL} and all(r.read_only for r in agent.values())   # agents never pin
    assert not any(r.received for r in pub.browse(principal="dan.kowalski"))   # the publisher's own
    assert pub.received(DEPLOY, principal="dan.kowalski") is None
    assert pub.received(DEPLOY, principal="tomas.silva").via == CTX
    # the tree: counts are exactly the rows of every node, the received ones under "subscribed" only
    nodes = branches(scope_tree(items), context_tree(items))
    assert (Branch(via="subscribed"), 2) in nodes and (Branch(via=CTX), 2) in nodes
    assert not any(b.org == "northwind" for b, _ in nodes)
    for branch, count in nodes:
        assert len(rows(items, branch=branch)) == count, branch
    # the publisher's pins do not cross (it did not publish --with-pins); the subscriber's own do
    pub.pin(DEPLOY, scope="org=northwind,repo=platform-infra", actor="dan.kowalski")
    assert {r.id for r in pub.browse(principal="dan.kowalski") if r.pinned} == {DEPLOY}
    assert not any(r.pinned for r in pub.browse(principal="tomas.silva"))
    pub.pin(DEPLOY, scope=SRE, actor="tomas.silva")
    assert {r.id for r in pub.browse(principal="tomas.silva") if r.pinned} == {DEPLOY}


async def test_browse_shows_the_subscribed_branch_read_only(pub):
    before = _state(pub)
    app = app_for(pub, principal="tomas.silva")
    async with app.run_test(size=SMALL) as pilot:
        screen = await _browse(pilot)
        node = await _open_branch(pilot, screen, "subscribed")
        assert str(node.label) == "subscribed (2)" and [str(c.label) for c in node.children] == [f"{CTX} (2)"]
        assert {r.id for r in screen.rows} == {DEPLOY, ONCALL} and {r.owner for r in screen.rows} == {"dan.kowalski"}
        detail = str(screen.query_one("#browse-detail").render())
        assert f"via {CTX}" in detail and "read-only" in detail
        for action in WRITES:   # not offered: neither in the footer nor in the actions menu
            assert not screen.check_action(action, ())
        assert screen.check_action("pin_row", ())   # a lead of the subscribing scope may pin it there
        from workbench.tui.screens.actionsmenu import menu_entries

        assert [e.action for e in menu_entries(screen)] == ["open_row", "pin_row", "unpin_row"]
        for key in ("ctrl+e", "ctrl+y", "ctrl+n", "ctrl+z"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is screen, key   # no editor, no question
        # the palette does not list them either
        names = [name for name, _ in screen.row_commands()]
        assert names == ["Pin the highlighted fragment", "Unpin the highlighted fragment"]
        # a row of his own scope keeps its keys
        await _open_branch(pilot, screen, "all scopes")
        assert not any(r.via for r in screen.rows if r.id == "tw-dispatch")
    assert _state(pub) == before



async def _search(pilot, query: str):
    pilot.app.action_search()
    await until(pilot, lambda: type(pilot.app.screen).__name__ == "SearchScreen" and pilot.app.screen.is_mounted)
    screen = pilot.app.screen
    screen.run_search(query)
    await until(pilot, lambda: screen.result is not None and screen.result.query == query)
    await settle(pilot)
    table = screen.query_one("#results")
    table.focus()
    await pilot.pause()
    return screen, table


async def test_search_offers_received_hits_only_what_the_core_allows(pub):
    """A received hit on the Search screen is read-only as on Browse (the core's ``Received``, asked
    with the search): no write key in the footer, the actions menu or the palette, and none acts; a
    lead of the subscribing scope keeps pin. A hit of its own scope keeps every key."""
    from workbench.tui.screens.actionsmenu import menu_entries

    before = _state(pub)
    app = app_for(pub, principal="tomas.silva")
    async with app.run_test(size=SMALL) as pilot:
        await _browse(pilot)
        screen, table = await _search(pilot, "roll back a bad deploy")
        ids = [h.id for h in screen.hits]
        table.move_cursor(row=ids.index(DEPLOY))
        await pilot.pause()
        row = screen.row_fragment()
        assert row.received is not None and row.received.via == CTX   # the core's answer, on the row
        for action in WRITES:
            assert not screen.check_action(action, ()), action
        assert screen.check_action("pin_row", ())
        assert [e.action for e in menu_entries(screen)] == ["open_row", "pin_row", "unpin_row"]
        assert [name for name, _ in screen.row_commands()] == ["Pin the highlighted fragment",
                                                               "Unpin the highlighted fragment"]
        assert f"via {CTX} · read-only" in str(screen.query_one("#explain").render())
        for key in ("ctrl+e", "ctrl+y", "ctrl+n", "ctrl+z"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is screen, key   # no editor, no question
        screen, table = await _search(pilot, "dispatch queue notes")   # his own scope: every key
        table.move_cursor(row=[h.id for h in screen.hits].index("tw-dispatch"))
        await pilot.pause()
        assert screen.row_fragment().received is None
        assert all(screen.check_action(action, ()) for action in WRITES)
    app = app_for(pub, principal="agent.tw-ops")   # an agent: read-only altogether, pin included
    async with app.run_test(size=SMALL) as pilot:
        await _browse(pilot)
        screen, table = await _search(pilot, "roll back a bad deploy")
        table.move_cursor(row=[h.id for h in screen.hits].index(DEPLOY))
        await pilot.pause()
        assert screen.row_fragment().received.read_only
        assert not any(screen.check_action(a, ()) for a in (*WRITES, "pin_row", "unpin_row"))
    assert _state(pub) == before

async def test_no_branch_outside_the_subscribing_scope(pub):
    app = app_for(pub, principal="raj.patel")   # tidewater, not an SRE
    async with app.run_test(size=SMALL) as pilot:
        screen = await _browse(pilot)
        labels = [str(n.label) for n in _walk(screen.query_one("#scope-tree").root)]
        assert not any(label.startswith("subscribed") for label in labels)
        assert not {DEPLOY, ONCALL} & {r.id for r in screen.items}


async def test_a_lead_pins_a_received_fragment_in_the_subscribing_scope(pub):
    app = app_for(pub, principal="tomas.silva")
    async with app.run_test(size=SMALL) as pilot:
        screen = await _browse(pilot)
        await _open_branch(pilot, screen, f"{CTX}")
        table = screen.query_one("#fragments")
        table.move_cursor(row=screen._ids.index(DEPLOY))
        await pilot.pause()
        await pilot.press("ctrl+k")
        await until(pilot, lambda: type(app.screen).__name__ == "PinDialog")
        dialog = app.screen
        assert [str(s) for s in dialog.scopes] == [SRE]
    assert (DEPLOY, SRE) not in {(p.fragment_id, str(p.scope)) for p in pub.pins(principal="kb.sync")}


async def test_fragment_screen_says_via_and_the_version_served(pub):
    pub.subscribe(CTX, scope="org=tidewater,repo=dispatch", pinned=True, actor="raj.patel")
    f = pub.get(DEPLOY, principal="dan.kowalski")
    pub.edit(DEPLOY, "Roll back with argo rollouts undo, then page the on-call.", actor="dan.kowalski",
             reason="v2", base=f.version)
    pub.publish("platform", actor="dan.kowalski")   # version 2 of the context; raj's stays on 1
    before = _state(pub)
    app = app_for(pub, principal="raj.patel")
    async with app.run_test(size=SMALL) as pilot:
        await _browse(pilot)
        app.open_fragment(DEPLOY)
        await until(pilot, lambda: type(app.screen).__name__ == "FragmentScreen")
        await settle(pilot)
        screen = app.screen
        meta = str(screen.query_one("#meta").render())
        assert f"via {CTX}" in meta and "serves v1" in meta and screen.fragment.version == 1
        for action in (*WRITES, "revert"):
            assert not screen.check_action(action, ()), action
        assert screen.check_action("pin_row", ())   # raj leads the subscribing scope (org=tidewater,repo=dispatch)
        await pilot.press("ctrl+e")
        await pilot.pause()
        assert app.screen is screen
    assert _state(pub) == before


def test_exporting_a_published_context(pub, tmp_path):
    out = tmp_path / "agents"
    result = pub.export_agents("agents-md", out, principal="tomas.silva", context=CTX)
    text = (out / "AGENTS.md").read_text(encoding="utf-8")
    assert result["knowledge"] + result["pins"] + result["avoid"] == 2
    assert f"{DEPLOY}@v1 via {CTX}" in text and "tw-dispatch" not in text and PAYMENTS not in text
    manifest = pub.export_context_bundle(CTX, tmp_path / "bundle", principal="tomas.silva")
    records = [json.loads(line) for line in (tmp_path / "bundle" / "fragments.jsonl").read_text().splitlines()]
    assert manifest["fragments"] == 2 and {r["id"] for r in records} == {DEPLOY, ONCALL}
    assert all(len(r["versions"]) == 1 for r in records)   # a receiver: the version served, no other
    assert manifest["set"]["picked"] is True and manifest["set"]["include"] == sorted({DEPLOY, ONCALL})  # as held
    with pytest.raises(PermissionDenied):
        pub.export_context_bundle(CTX, tmp_path / "no", principal="raj.patel")   # neither publishes nor receives
    assert not (tmp_path / "no").exists()


async def test_export_screen_exports_a_published_context(pub, tmp_path):
    from workbench.tui.plain import Input, Select

    out = tmp_path / "ctx-bundle"
    app = app_for(pub, principal="tomas.silva")
    async with app.run_test(size=SMALL) as pilot:
        await _browse(pilot)
        app.action_export()
        await until(pilot, lambda: type(app.screen).__name__ == "ExportScreen")
        await settle(pilot)
        screen = app.screen
        screen.query_one("#export-set", Input).value = CTX
        screen.query_one("#export-format", Select).value = "bundle"
        screen.query_one("#export-dir", Input).value = str(out)
        await pilot.pause()
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.plan)
        assert DEPLOY in screen.plan[0][1] and CTX in screen.plan[0][0]
        await pilot.press("ctrl+s")
        await until(pilot, lambda: (out / "manifest.yaml").exists())
        await settle(pilot)
        assert "2 fragments of northwind/platform" in str(screen.query_one("#export-summary").render())
        screen.query_one("#export-format", Select).value = "claude-md"
        screen.query_one("#export-dir", Input).value = str(tmp_path / "claude")
        await pilot.pause()
        await pilot.press("ctrl+s")
        await until(pilot, lambda: (tmp_path / "claude" / "CLAUDE.md").exists())
    assert f"via {CTX}" in (tmp_path / "claude" / "CLAUDE.md").read_text(encoding="utf-8")


# -- the sample workspace's published context -------------------------------------------------

@pytest.fixture
def sample(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        yield wb


def test_browse_subscribed_branch_snapshot(sample, snap_compare):
    """tomas.silva (a Tidewater SRE lead) on the sample: the "subscribed" branch with the sample's
    northwind/platform context, its rows selected, at 80×24."""
    async def choose(pilot):
        screen = await _browse(pilot)
        await _open_branch(pilot, screen, CTX)
        assert screen.rows and all(r.via == CTX for r in screen.rows)
        await pilot.pause()
    assert snap_compare(app_for(sample, principal="tomas.silva"), terminal_size=SMALL, run_before=choose)


async def test_published_screen_shows_both_sides(pub):
    app = app_for(pub, principal="dan.kowalski")
    async with app.run_test(size=SMALL) as pilot:
        await _browse(pilot)
        app.action_published()
        await until(pilot, lambda: type(app.screen).__name__ == "PublishedScreen")
        await settle(pilot)
        area = app.screen.query_one("#published-text")
        await until(pilot, lambda: "Published from your scopes" in area.text)
        assert f"{CTX}  v1" in area.text and f"subscribed by {SRE}" in area.text
    app = app_for(pub, principal="raj.patel")   # neither side: only what is published, to subscribe
    async with app.run_test(size=SMALL) as pilot:
        await _browse(pilot)
        app.action_published()
        await until(pilot, lambda: type(app.screen).__name__ == "PublishedScreen")
        await settle(pilot)
        area = app.screen.query_one("#published-text")
        await until(pilot, lambda: "Published from your scopes" in area.text)
        assert "subscribed by" not in area.text and f"{CTX}  v1  by dan.kowalski" in area.text
