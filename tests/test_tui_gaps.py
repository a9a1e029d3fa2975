"""The TUI's Gaps screen (g): the unanswered questions a principal may see, grouped, and a group
turned into a new fragment draft (the new-fragment form, prefilled) that is then created; and the
fragment view's usage line. Pilot, at 80×24 (and 120×40 where the layout matters)."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest
from gap_support import BY_ID, run_questions
from tui_support import (
    NOW,
    SIZES,
    SMALL,
    app_for,
    cell,
    inside_screen,
    scrolls_by_column,
    settle,
    until,
    visible_columns,
)

from workbench import Workbench

ADR = "nw-adr-0007-idempotency-keys"


@pytest.fixture(scope="module")
def traced(sample_workspace_template, tmp_path_factory):
    """The sample workspace after the questions were asked, two days before the app's clock."""
    root = tmp_path_factory.mktemp("tui-gaps") / "ws"
    shutil.copytree(sample_workspace_template, root)
    with Workbench.open(root) as bench:
        run_questions(bench, NOW - timedelta(days=2))
    return root


@pytest.fixture
def wb(traced, tmp_path):
    with Workbench.open(shutil.copytree(traced, tmp_path / "ws")) as bench:
        yield bench


def shown(widget) -> str:
    return str(widget.render())


async def open_gaps(pilot):
    await settle(pilot)
    await pilot.press("g")
    await settle(pilot)
    assert type(pilot.app.screen).__name__ == "GapsScreen"
    return pilot.app.screen


@pytest.mark.parametrize("size", SIZES)
async def test_the_gaps_screen_lists_the_groups_a_lead_may_see(wb, size):
    report = wb.gaps(principal="priya.raman", now=NOW)
    app = app_for(wb, principal="priya.raman")
    async with app.run_test(size=size) as pilot:
        screen = await open_gaps(pilot)
        table = screen.query_one("#gaps")
        assert table.row_count == len(report.groups) > 10
        first = [str(c) for c in table.get_row_at(0)]
        assert first[0] == "4" and first[1].startswith("what is the parental leave")
        assert f"{report.questions} question(s) in {len(report.groups)} group(s)" in shown(
            screen.query_one("#gaps-count"))
        detail = shown(screen.query_one("#gaps-detail"))
        assert BY_ID["neg-q005"]["query"] in detail and "also: how much parental leave do engineers get" in detail
        for selector in ("#gaps", "#gaps-detail", "#gaps-count"):
            assert inside_screen(app, screen.query_one(selector)), selector
        await pilot.press("down")
        await settle(pilot)
        assert report.groups[1].question in shown(screen.query_one("#gaps-detail"))


async def test_the_gaps_table_fits_80_columns_and_scrolls_by_column(wb):
    """At 80 columns the count, the question, who asked and when are in view (where and since when
    fold first); narrower, → scrolls to the folded columns a whole column at a time."""
    app = app_for(wb, principal="priya.raman")
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_gaps(pilot)
        table = screen.query_one("#gaps")
        assert visible_columns(table)[:4] == ["n", "question", "who", "last"]
        question = screen.groups[0].question
        assert question.startswith(cell(table, 0, "question").rstrip("…"))
        await pilot.resize_terminal(60, 24)
        await settle(pilot)
        assert visible_columns(table)[:2] == ["n", "question"] and table.fitted.folded_keys
        await scrolls_by_column(pilot, table)


@pytest.mark.parametrize("size", SIZES, ids=["80x24", "120x40"])
def test_gaps_snapshot(wb, snap_compare, size):
    async def open_it(pilot):
        await open_gaps(pilot)
    assert snap_compare(app_for(wb, principal="priya.raman"), terminal_size=size, run_before=open_it)


async def test_another_org_sees_only_its_own_question(wb):
    app = app_for(wb, principal="agent.tw-ops")
    async with app.run_test(size=SMALL) as pilot:
        screen = await open_gaps(pilot)
        table = screen.query_one("#gaps")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert rows and all(row[2] == "agent.tw-ops" and row[3] == "11-28" for row in rows)
        assert any(row[0] == "1" and row[1].startswith("how do we localise the driver app into") for row in rows)
        assert len(rows) == len(wb.gaps(principal="agent.tw-ops", now=NOW).groups)
        # an agent may not create fragments: it is told to propose, and neither d nor enter opens a draft
        assert "answer one with a proposal" in shown(screen.query_one("#gaps-count"))
        for key in ("ctrl+d", "d", "enter"):
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is screen, key


@pytest.mark.parametrize("size", SIZES)
async def test_a_gap_becomes_a_draft_that_an_owner_publishes(wb, size):
    """Issue 28: a gap drafted in the TUI was saved at once as an active fragment. Now the form saves
    a proposal (served to no one), the gap leaves the list, and an owner publishes it from the inbox."""
    app = app_for(wb, principal="priya.raman")
    async with app.run_test(size=size) as pilot:
        gaps = await open_gaps(pilot)
        before = len(gaps.groups)
        await pilot.press("d")  # a plain letter never acts on a row
        await settle(pilot)
        assert app.screen is gaps
        await pilot.press("ctrl+d")
        await settle(pilot)
        form = app.screen
        assert type(form).__name__ == "NewFragmentScreen"
        assert form.query_one("#nf-title").value == "What is the parental leave policy for engineers"
        assert form.query_one("#nf-scope").value == "org=northwind"
        assert form.query_one("#nf-owner").value == "priya.raman"
        body = form.query_one("#nf-body").text
        assert "Agents asked this 4 times" in body
        for question in (BY_ID["neg-q005"]["query"], "how much parental leave do engineers get",
                         "what's the parental leave policy for our engineers"):
            assert f"- {question}" in body
        for selector in ("#nf-title", "#nf-kind", "#nf-scope", "#nf-owner", "#nf-body", "#create"):
            assert inside_screen(app, form.query_one(selector)), selector
        form.query_one("#nf-body").text = "Engineers get 20 weeks of paid parental leave (HR policy HR-12)."
        await pilot.press("ctrl+s")
        await until(pilot, lambda: type(app.screen).__name__ == "GapsScreen" and len(app.screen.groups) < before)
        await settle(pilot)
        assert all("parental leave" not in g.question for g in app.screen.groups)   # drafted: not open any more
    [draft] = wb.proposals(principal="priya.raman")
    assert draft.status == "proposed" and draft.id.startswith("prop-") and draft.owner == "priya.raman"
    assert draft.body.startswith("Engineers get 20 weeks")
    assert draft.id not in [i.hit.id for i in wb.context(BY_ID["neg-q005"]["query"], principal="omar.haddad").fragments]
    published = wb.accept(draft.id, principal="priya.raman", reason="HR confirmed")
    assert published.id == "nw-note-what-is-the-parental-leave-policy-for-engineers"
    assert (published.kind, str(published.scope), published.owner) == ("note", "org=northwind", "priya.raman")
    # and the gap is answered: the same question now gets it
    assert published.id in [i.hit.id for i in wb.context(BY_ID["neg-q005"]["query"],
                                                         principal="omar.haddad").fragments]


async def test_the_draft_form_reports_what_the_core_refuses(wb):
    app = app_for(wb, principal="lena.fischer")   # a tidewater lead (an agent is not offered the form)
    async with app.run_test(size=SMALL) as pilot:
        await open_gaps(pilot)
        await pilot.press("enter")
        await settle(pilot)
        form = app.screen
        assert type(form).__name__ == "NewFragmentScreen" and form.query_one("#nf-scope").value == "org=tidewater"
        form.query_one("#nf-scope").value = "org=northwind"
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert type(app.screen).__name__ == "NewFragmentScreen"
        assert "unknown scope 'org=northwind'" in shown(form.query_one("#errors"))   # as a proposal: unseen
        form.query_one("#nf-body").text = ""
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "Required: body" in shown(form.query_one("#errors"))


async def test_the_fragment_view_shows_how_often_agents_received_it(wb):
    for minutes in (1, 2):
        wb.fetch(ADR, principal="agent.nw-coder", now=NOW - timedelta(days=1, minutes=minutes))
    wb.fetch(ADR, principal="marco.bianchi", now=NOW - timedelta(days=1))
    wb.fetch(ADR, principal="marco.bianchi", now=NOW - timedelta(days=200))   # outside the 90 days
    app = app_for(wb, principal="marco.bianchi")
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.open_fragment(ADR)
        await settle(pilot)
        meta = app.screen.query_one("#meta")
        assert "usage: served 3 times in 90 days by 2 principals" in shown(meta)
        pane = app.screen.query_one("#meta-scroll")   # the line is on screen without scrolling, at 80×24
        lines = [line.text for line in meta.render_lines(meta.region.reset_offset)]
        row = next(i for i, line in enumerate(lines) if "usage:" in line)
        assert inside_screen(app, pane) and row < pane.region.height, (row, lines)
        await pilot.press("escape")
        await settle(pilot)
        app.open_fragment("nw-rb-webhook-backlog")
        await settle(pilot)
        assert "usage: never served in 90 days" in shown(app.screen.query_one("#meta"))


def test_a_draft_takes_the_most_asked_scope_its_writer_may_write_in(wb):
    from workbench.service.gaps import draft

    grace = next(g for g in wb.gaps(principal="lena.fischer", now=NOW).groups
                 if g.question == BY_ID["neg-q026"]["query"])   # asked by grace.kim, a member of both orgs
    assert [s for s, _ in grace.scopes] == ["org=northwind", "org=tidewater"]
    assert draft(grace, wb.principal("lena.fischer"))["scope"] == "org=tidewater"
    assert draft(grace, wb.principal("priya.raman"))["scope"] == "org=northwind"
    assert draft(grace)["body"].startswith("Agents asked this once on ")
