"""Browse and Search in the TUI, and the actions on any fragment row: at 80×24 and 120×40, on
the real sample workspace; each write is checked in the store.

Also the read model behind Browse (workbench/browse.py): tree counts equal the rows each node
shows, and the forgiving owner/kind match.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta

import pytest
from tui_support import LARGE, NOW, SIZES, app_for, cell, column_visible, confirm, inside_screen, settle, until, visible_columns

from workbench import Workbench
from workbench.models import KINDS, Scope
from workbench.service.browse import (
    ORG_WIDE,
    Branch,
    branches,
    match_rank,
    matching,
    pin_scopes,
    rows,
    scope_tree,
)
from workbench.tui.format import scope_label, short_id
from workbench.tui.screens.browse import COLUMNS


@pytest.fixture
def bench(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        yield wb


def screen_name(app):
    return type(app.screen).__name__


def notes(app):
    return [n.message for n in app._notifications]


async def browse_ready(pilot):
    await until(pilot, lambda: screen_name(pilot.app) == "BrowseScreen" and pilot.app.screen.items is not None)
    await settle(pilot)
    return pilot.app.screen


async def choose_row(pilot, screen, fid):
    """Put the Browse cursor on ``fid`` (all rows added first)."""
    await until(pilot, lambda: screen.query_one("#fragments").row_count == len(screen.rows))
    table = screen.query_one("#fragments")
    table.focus()
    table.move_cursor(row=screen._ids.index(fid))
    await pilot.pause()
    assert screen.row_fragment().id == fid


# -- the read model -----------------------------------------------------------------------------

def test_match_is_a_prefix_or_the_letters_in_order():
    owners = ["marco.bianchi", "omar.haddad", "priya.raman", "sofia.okafor"]
    assert matching("mar", owners) == {"marco.bianchi"}          # a prefix wins over letters in order
    assert matching("MAR", owners) == {"marco.bianchi"}
    assert matching("bianchi", owners) == {"marco.bianchi"}      # a word of it
    assert matching("mbianchi", owners) == {"marco.bianchi"}     # letters in order
    assert matching("m.b", owners) == {"marco.bianchi"}
    assert matching("zzz", owners) == set()
    assert matching("anti", KINDS) == {"anti-pattern"}
    assert matching("ap", KINDS) == {"anti-pattern"}
    assert matching("sess", KINDS) == {"session-summary"}
    assert match_rank("", "anything") == 0 and match_rank("ra", "priya.raman") == 1 and match_rank("pr", "x") is None


def test_tree_counts_equal_the_rows_of_every_node(bench):
    for who in ("grace.kim", "marco.bianchi", "dan.kowalski"):
        items = bench.browse(principal=who, now=NOW)
        nodes = branches(scope_tree(items))
        assert nodes[0] == (Branch(), len(items))
        for branch, count in nodes:
            assert len(rows(items, branch=branch)) == count, (who, branch)
    items = bench.browse(principal="marco.bianchi", now=NOW)
    org_wide = rows(items, branch=Branch("northwind", ORG_WIDE))
    assert org_wide and all(r.scope.repo is None for r in org_wide)
    assert len(rows(items, branch=Branch("northwind"))) == len(items) > len(org_wide)


def test_rows_filter_owner_and_kind_forgivingly(bench):
    items = bench.browse(principal="priya.raman", now=NOW)
    mine = rows(items, owner="mbianchi")
    assert mine and {r.owner for r in mine} == {"marco.bianchi"}
    assert len(mine) == len([r for r in items if r.owner == "marco.bianchi"])
    assert {r.kind for r in rows(items, kind="ap")} == {"anti-pattern"}
    both = rows(items, owner="mar", kind="anti")
    assert both and all(r.owner == "marco.bianchi" and r.kind == "anti-pattern" for r in both)
    assert rows(items, owner="nobody-like-this") == []


def test_short_labels_and_pin_scopes(bench):
    assert short_id("nw-adr-0007-idempotency-keys") == "nw-adr-0007-idemp…" and short_id("nw-short") == "nw-short"
    assert scope_label(Scope("northwind", "payments-api"), ("northwind",)) == "payments-api"
    assert scope_label(Scope("northwind", persona="sre"), ("northwind", "tidewater")) == "northwind/@sre"
    assert scope_label(Scope("northwind"), ("northwind",)) == "org-wide"
    dan = bench.principal("dan.kowalski")
    assert [str(s) for s in pin_scopes(dan, Scope("northwind", persona="sre"))] == [
        "org=northwind,repo=platform-infra", "org=northwind,persona=sre"]
    assert pin_scopes(bench.principal("grace.kim"), Scope("northwind")) == []


# -- Browse -------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_browse_layout_fits(bench, size):
    app = app_for(bench)
    async with app.run_test(size=size) as pilot:
        screen = await browse_ready(pilot)
        table = screen.query_one("#fragments")
        assert {c.key for c in COLUMNS} == {column.key.value for column in table.ordered_columns}
        assert {"title", "kind", "owner", "age"} <= set(visible_columns(table))
        assert column_visible(app, table, "title", min_width=16)
        for selector in ("#filter-owner", "#filter-kind", "#filter-stale", "#browse-detail", "#scope-tree"):
            assert inside_screen(app, screen.query_one(selector)), selector
        row = screen.row_fragment()
        detail = str(screen.query_one("#browse-detail").render())
        assert detail.startswith(f"{row.id} · {row.title}")
        tree = screen.query_one("#scope-tree")
        assert tree.region.width <= 0.34 * size[0] + 1
        await pilot.press("t")  # the tree folds away, the title gets wider (once the table is laid out again)
        await until(pilot, lambda: not tree.display and len(cell(table, 0, "title")) >= 24, timeout=30)
        assert not tree.display and column_visible(app, table, "title", min_width=24)
        assert len(cell(table, 0, "title")) >= 24
        await pilot.press("t")
        await pilot.pause()
        assert tree.display


@pytest.mark.parametrize("who", ["grace.kim", "priya.raman"])
async def test_every_tree_node_opens_as_many_rows_as_it_counts(bench, who):
    app = app_for(bench, principal=who)
    async with app.run_test(size=LARGE) as pilot:
        screen = await browse_ready(pilot)
        tree = screen.query_one("#scope-tree")
        tree.focus()
        seen = 0
        nodes = [tree.root]
        while nodes:
            node = nodes.pop(0)
            nodes += list(node.children)
            tree.move_cursor(node)
            await pilot.press("enter")
            await pilot.pause()
            count = int(re.search(r"\((\d+)\)$", str(node.label)).group(1))
            assert screen.branch == node.data and len(screen.rows) == count, str(node.label)
            assert all(node.data.holds(r.scope) for r in screen.rows)
            if node.children:
                assert node.is_expanded, f"enter collapsed {node.label}"
            seen += 1
        assert seen == len(branches(scope_tree(screen.items)))
        org_wide = next(n for n in tree.root.children[0].children if str(n.label).startswith(ORG_WIDE))
        tree.move_cursor(org_wide)
        await pilot.press("space")
        await pilot.pause()
        assert not org_wide.is_expanded
        await pilot.press("space")
        await pilot.pause()
        assert org_wide.is_expanded


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_owner_and_kind_filters_are_fuzzy(bench, size):
    app = app_for(bench, principal="priya.raman")
    async with app.run_test(size=size) as pilot:
        screen = await browse_ready(pilot)
        await pilot.click("#filter-owner")
        await pilot.press(*"mbianchi")
        await until(pilot, lambda: screen.rows and {r.owner for r in screen.rows} == {"marco.bianchi"})
        assert len(screen.rows) == len([r for r in screen.items if r.owner == "marco.bianchi"])
        assert "owner marco.bianchi" in str(screen.query_one("#browse-count").render())
        await pilot.press("tab")
        assert screen.focused is screen.query_one("#filter-kind")
        await pilot.press("a", "p", "enter")
        await until(pilot, lambda: {r.kind for r in screen.rows} == {"anti-pattern"})
        assert all(r.owner == "marco.bianchi" for r in screen.rows)
        assert screen.focused is screen.query_one("#fragments")   # enter in a filter goes to the table
        assert screen.query_one("#fragments").row_count == len(screen.rows)


async def test_browse_keeps_its_place_and_shows_an_edit_made_elsewhere(bench):
    from workbench.ingest.files import render_fragment

    fid = "nw-rb-psp-failover"
    app = app_for(bench, principal="marco.bianchi")
    async with app.run_test(size=LARGE) as pilot:
        screen = await browse_ready(pilot)
        tree = screen.query_one("#scope-tree")
        node = next(n for n in tree.root.children[0].children if str(n.label).startswith("payments-api"))
        tree.select_node(node)
        await pilot.pause()
        await choose_row(pilot, screen, fid)
        await pilot.press("slash")  # another screen is on top while the fragment changes
        await until(pilot, lambda: screen_name(app) == "SearchScreen")
        text = re.sub(r"(?m)^title: .*$", 'title: "PSP failover, retitled elsewhere"',
                      render_fragment(bench.get(fid, principal="marco.bianchi")))
        app.submit(app.wb.edit, fid, text, reason="new title", actor="marco.bianchi", write=True)
        await settle(pilot)
        await pilot.press("escape")
        await until(pilot, lambda: screen_name(app) == "BrowseScreen")
        await settle(pilot)
        assert screen.branch == Branch("northwind", "payments-api")           # the node is kept
        assert screen.row_fragment().id == fid                                 # and the cursor
        assert screen.row_fragment().title == "PSP failover, retitled elsewhere"
        table = screen.query_one("#fragments")
        assert "retitled elsewhere" in cell(table, table.cursor_row, "title")


# -- row actions --------------------------------------------------------------------------------

async def test_pin_in_the_chosen_scope_with_until_then_unpin(bench):
    fid = "nw-note-slo-catalog"          # org=northwind,persona=sre: both of dan's led scopes apply
    app = app_for(bench, principal="dan.kowalski")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await browse_ready(pilot)
        await choose_row(pilot, screen, fid)
        await pilot.press("ctrl+k")
        await until(pilot, lambda: screen_name(app) == "PinDialog")
        dialog = app.screen
        select = dialog.query_one("#pin-dialog-scope")
        assert [str(label) for label, _ in select._options] == [
            "org=northwind,repo=platform-infra", "org=northwind,persona=sre"]
        for selector in ("#pin-dialog-scope", "#pin-dialog-until", "#pin-dialog-reason", "#pin-dialog-pin"):
            assert inside_screen(app, dialog.query_one(selector)), selector
        select.value = "org=northwind,persona=sre"
        await pilot.press(*"2026-01-01", "enter")                             # in the past: said plainly
        await pilot.pause()
        assert "not after today" in str(dialog.query_one("#pin-dialog-errors").render())
        dialog.query_one("#pin-dialog-until").value = "2027-01-31"
        dialog.query_one("#pin-dialog-reason").value = "the SLOs every page refers to"
        await pilot.click("#pin-dialog-pin")
        await until(pilot, lambda: screen_name(app) == "BrowseScreen" and app.pending == 0)
        await settle(pilot)
        pins = [p for p in bench.pins(principal="dan.kowalski", include_expired=True) if p.fragment_id == fid]
        assert [(str(p.scope), p.until, p.reason, p.pinned_by) for p in pins] == [
            ("org=northwind,persona=sre", datetime(2027, 1, 31), "the SLOs every page refers to", "dan.kowalski")]
        assert any(f"{fid} pinned in org=northwind,persona=sre until 2027-01-31" in m for m in notes(app))
        assert screen.row_fragment().id == fid and cell(screen.query_one("#fragments"),
                                                        screen.query_one("#fragments").cursor_row, "age").endswith("●")
        await pilot.press("ctrl+u")
        await until(pilot, lambda: screen_name(app) == "UnpinDialog")
        assert [str(label) for label, _ in app.screen.query_one("#unpin-dialog-scope")._options] == [
            "org=northwind,persona=sre"]
        await pilot.press(*"done with it", "enter")
        await until(pilot, lambda: screen_name(app) == "BrowseScreen" and app.pending == 0)
        await settle(pilot)
        assert [p for p in bench.pins(principal="dan.kowalski", include_expired=True) if p.fragment_id == fid] == []
        await pilot.press("ctrl+u")                                            # nothing left to unpin
        await settle(pilot)
        assert screen_name(app) == "BrowseScreen" and any("is not pinned in a scope you lead" in m for m in notes(app))


async def test_a_non_lead_is_told_why_they_cannot_pin(bench):
    app = app_for(bench, principal="grace.kim")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await browse_ready(pilot)
        await choose_row(pilot, screen, "nw-rb-psp-failover")
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert screen_name(app) == "BrowseScreen"
        assert any("grace.kim is not a tech lead of any scope, so cannot pin" in m for m in notes(app))
        assert not any("--" in m for m in notes(app))
    assert bench.pins(principal="grace.kim") == []


async def test_verify_and_snooze_from_a_row(bench):
    fid = "nw-rb-oncall-paging-escalation"      # owned by dan.kowalski
    app = app_for(bench, principal="dan.kowalski")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await browse_ready(pilot)
        await choose_row(pilot, screen, fid)
        await pilot.press("ctrl+y")                                            # asks first
        await confirm(pilot)
        assert bench.get(fid, principal="dan.kowalski").verified_at == NOW
        assert any(f"{fid} verified" in m for m in notes(app))
        await pilot.press("ctrl+z")
        await until(pilot, lambda: screen_name(app) == "SnoozeDialog")
        days = app.screen.query_one("#snooze-dialog-days")
        assert days.value == "30" and inside_screen(app, days)
        days.value = "0"
        await pilot.press("enter")
        await pilot.pause()
        assert "whole number from 1" in str(app.screen.query_one("#snooze-dialog-errors").render())
        days.value = "45"
        await pilot.press("enter")
        await until(pilot, lambda: screen_name(app) == "BrowseScreen")
        await settle(pilot)
        assert any(f"{fid} snoozed for 45 days" in m for m in notes(app))
    assert bench.store.snoozes()[fid] == NOW + timedelta(days=45)


async def test_row_action_errors_are_notifications_in_the_tuis_words(bench):
    fid = "nw-rb-psp-failover"     # owned by someone else: marco may not verify it
    owner = bench.get(fid, principal="priya.raman").owner
    who = "sofia.okafor" if owner != "sofia.okafor" else "marco.bianchi"
    app = app_for(bench, principal=who)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await browse_ready(pilot)
        await choose_row(pilot, screen, fid)
        await pilot.press("ctrl+y")
        await confirm(pilot)
        errors = [n for n in app._notifications if n.severity == "error"]
        assert errors and not any("--" in n.message for n in errors)
    assert bench.get(fid, principal=who).verified_at is None


async def test_row_letters_do_not_fire_while_typing_in_a_filter(bench):
    app = app_for(bench, principal="dan.kowalski")
    async with app.run_test(size=(80, 24)) as pilot:
        await browse_ready(pilot)
        await pilot.click("#filter-owner")
        await pilot.press("v", "z", "P", "e", "t", "ctrl+y", "ctrl+e", "ctrl+o")  # ctrl keys act on a focused row only
        await pilot.pause()
        assert screen_name(app) == "BrowseScreen" and app.screen.query_one("#filter-owner").value == "vzPet"
        assert app.screen.query_one("#scope-tree").display


async def test_edit_from_a_search_row_starts_from_the_version_shown(bench):
    app = app_for(bench)
    async with app.run_test(size=LARGE) as pilot:
        await pilot.press("slash")
        await until(pilot, lambda: screen_name(app) == "SearchScreen")
        app.screen.run_search("psp failover")
        await until(pilot, lambda: app.screen.result is not None and app.pending == 0)
        await pilot.press("down")
        hit = app.screen.row_fragment()
        await pilot.press("ctrl+e")
        await until(pilot, lambda: screen_name(app) == "EditScreen")
        assert app.screen.fragment_id == hit.id and app.screen.shown == hit.version == 1


# -- Search -------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
async def test_search_layout_fits(bench, size):
    app = app_for(bench)
    async with app.run_test(size=size) as pilot:
        await pilot.press("slash")
        await until(pilot, lambda: screen_name(app) == "SearchScreen")
        screen = app.screen
        assert inside_screen(app, screen.query_one("#search-input"))
        await pilot.press(*"charged twice on retry")
        await until(pilot, lambda: screen.result is not None and screen.result.query == "charged twice on retry"
                    and app.pending == 0, timeout=120)
        table = screen.query_one("#results")
        assert [column.key.value for column in table.ordered_columns][:2] == ["rank", "title"]
        assert column_visible(app, table, "title", min_width=16)
        assert column_visible(app, table, "conf", min_width=4)
        assert {"kind", "owner", "age"} <= set(visible_columns(table))
        if size == LARGE:
            assert column_visible(app, table, "scope", min_width=12)
        assert "nw-rb-duplicate-charge" in [h.id for h in screen.result.hits[:5]]
        await pilot.press("down")
        assert screen.focused is table
        hit = screen.hits[table.cursor_row]
        explain = str(screen.query_one("#explain").render())
        assert hit.id in explain and str(hit.fragment.scope) in explain and "lexical" in explain and "dense" in explain
        assert inside_screen(app, screen.query_one("#explain"))
        await pilot.press("enter")
        await until(pilot, lambda: screen_name(app) == "FragmentScreen")


async def test_search_previews_lexically_while_the_model_loads_then_goes_hybrid(bench):
    app = app_for(bench)
    app.model_state = "loading"        # as while the app loads the model in the background
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("slash")
        await until(pilot, lambda: screen_name(app) == "SearchScreen")
        screen = app.screen
        screen.query_one("#search-input").value = "charged twice on retry"
        await until(pilot, lambda: screen.result is not None and app.pending == 0)
        assert screen.preview and screen.result.settings["pipeline"] == "bm25"
        assert all(h.confidence is None for h in screen.hits)
        table = screen.query_one("#results")
        assert cell(table, 0, "conf") == "…"
        assert "lexical results while the model loads" in str(screen.query_one("#search-status").render())
        app.model_ready, app.model_state = True, "ready"      # the app says so when the model is in
        await until(pilot, lambda: not screen.preview and app.pending == 0, timeout=120)
        assert screen.result.settings["pipeline"] == "hybrid" and screen.result.query == "charged twice on retry"
        assert all(isinstance(h.confidence, float) for h in screen.hits)
        assert cell(table, 0, "conf") != "…"
        assert "lexical" not in str(screen.query_one("#search-status").render())


def test_an_uncalibrated_bm25_search_has_no_confidence(bench):
    from workbench.errors import UserError

    result = bench.search("charged twice on retry", principal="marco.bianchi", pipeline="bm25", calibrate=False,
                          trace=False)
    assert result.hits and all(h.confidence is None for h in [*result.hits, *result.avoid])
    assert result.to_dict()["hits"][0]["confidence"] is None
    calibrated = bench.search("charged twice on retry", principal="marco.bianchi", pipeline="bm25", trace=False)
    assert [h.id for h in calibrated.hits] == [h.id for h in result.hits]      # same ranking, confidences added
    assert all(isinstance(h.confidence, float) for h in calibrated.hits)
    with pytest.raises(UserError, match="confidence floor"):
        bench.search("retry", principal="marco.bianchi", pipeline="bm25", calibrate=False, min_confidence=0.5)


PREVIEW_PROBE = textwrap.dedent("""
    import asyncio, json, sys, time
    from workbench import Workbench
    from workbench.tui.app import WorkbenchApp

    async def main():
        with Workbench.open(sys.argv[1]) as wb:
            app = WorkbenchApp(wb, principal="marco.bianchi", load_model=False)
            app.model_state = "loading"          # the model is "loading": search must not wait for it
            async with app.run_test(size=(80, 24)) as pilot:
                while app.first_paint_at is None:
                    await asyncio.sleep(0.01)
                await pilot.press("slash")
                start = time.perf_counter()
                app.screen.query_one("#search-input").value = "charged twice on retry"
                while app.screen.result is None or app.pending:
                    await asyncio.sleep(0.01)
                print(json.dumps({"seconds": time.perf_counter() - start, "preview": app.screen.preview,
                                  "hits": len(app.screen.hits), "torch": "torch" in sys.modules,
                                  "sentence_transformers": "sentence_transformers" in sys.modules}))
    asyncio.run(main())
""")


def test_the_lexical_preview_never_loads_the_model(sample_workspace):
    out = subprocess.run([sys.executable, "-c", PREVIEW_PROBE, str(sample_workspace)], capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["preview"] and probe["hits"] > 0
    assert not probe["torch"] and not probe["sentence_transformers"]
    assert probe["seconds"] < 2.0, probe
