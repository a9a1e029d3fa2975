"""Proposals in the TUI inbox, driven with Pilot: a lead edits then accepts, or rejects with a
reason; the keys act on the table that has focus; nothing shows to a principal who reviews nothing.
(The round trip from an agent over MCP to an accept in the inbox is in test_proposals.py.)"""

from __future__ import annotations

import pytest
from tui_support import app_for, settle, until

from workbench import Workbench

SIZE = (170, 48)
AGENT, SCOPE = "agent.nw-coder", "org=northwind,repo=payments-api"


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def screen_name(app) -> str:
    return type(app.screen).__name__


async def open_proposals(pilot, app, count: int):
    await pilot.press("i")
    await until(pilot, lambda: screen_name(app) == "InboxScreen" and len(getattr(app.screen, "proposals", [])) == count)
    screen = app.screen
    screen.query_one("#proposals").focus()
    await pilot.pause()
    return screen


async def test_a_lead_edits_a_proposal_then_accepts_it(wb):
    pid = wb.propose("Webhook retries", "Five retries, then the DLQ.", scope=SCOPE, principal=AGENT).id
    app = app_for(wb, principal="priya.raman")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_proposals(pilot, app, 1)
        assert screen.query_one("#proposals-pane").display
        assert pid in str(screen.query_one("#proposal-detail").render())
        bindings = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        assert {"accept", "reject"} <= bindings and not {"verify_row", "snooze_row"} & bindings  # this table's
        await pilot.press("ctrl+e")
        await until(pilot, lambda: screen_name(app) == "EditScreen" and app.screen.ready)
        editor = app.screen.query_one("#editor")
        editor.load_text("Webhook deliveries retry five times with backoff, then go to the DLQ.")
        app.screen.query_one("#reason").value = "say what retries"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: screen_name(app) == "AcceptDialog")   # edit, then accept
        dialog = app.screen
        dialog.query_one("#accept-dialog-scope").value = "org=northwind"
        dialog.query_one("#accept-dialog-owner").value = "marco.bianchi"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: screen_name(app) == "InboxScreen" and not screen.proposals)
        await settle(pilot)
        assert not screen.query_one("#proposals-pane").display
    done = wb.get(pid, principal="sofia.okafor")
    assert (done.status, str(done.scope), done.owner) == ("active", "org=northwind", "marco.bianchi")
    assert done.body.startswith("Webhook deliveries retry five times")
    steps = [(v.author, v.content.status, v.reason) for v in wb.history(pid, principal="priya.raman")]
    assert steps == [(AGENT, "proposed", f"proposed by {AGENT}: awaiting review"),
                     ("priya.raman", "proposed", "say what retries"), ("priya.raman", "active", "accepted")]


async def test_a_lead_opens_a_proposal_then_rejects_it_with_a_reason_its_author_reads(wb):
    pid = wb.propose("Webhook retries", "Five retries, then the DLQ.", scope=SCOPE, principal=AGENT).id
    app = app_for(wb, principal="marco.bianchi")
    async with app.run_test(size=SIZE) as pilot:
        await open_proposals(pilot, app, 1)
        await pilot.press("enter")   # open it, as any fragment
        await until(pilot, lambda: screen_name(app) == "FragmentScreen" and app.screen.fragment is not None)
        assert app.screen.fragment.id == pid and app.screen.fragment.status == "proposed"
        await pilot.press("escape")
        screen = await open_proposals(pilot, app, 1)
        await pilot.press("r")       # a plain letter never acts on a row
        await pilot.pause()
        assert screen_name(app) == "InboxScreen"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen_name(app) == "RejectDialog")
        await pilot.press("enter")   # no reason: refused in the dialog
        await pilot.pause()
        assert screen_name(app) == "RejectDialog" and screen.proposals
        await pilot.press(*"already in the webhook runbook")
        await pilot.press("enter")
        await until(pilot, lambda: screen_name(app) == "InboxScreen" and not screen.proposals)
        await settle(pilot)
    read = wb.get(pid, principal=AGENT)
    assert read.status == "rejected"
    assert read.content.detail("review") == {"decision": "rejected", "by": "marco.bianchi",
                                             "at": read.content.detail("review")["at"],
                                             "reason": "already in the webhook runbook"}


async def test_a_refused_accept_is_a_notification_and_the_proposal_stays(wb):
    pid = wb.propose("Webhook retries", "Five retries, then the DLQ.", scope=SCOPE, principal=AGENT).id
    app = app_for(wb, principal="marco.bianchi")
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_proposals(pilot, app, 1)
        await pilot.press("ctrl+a")
        await until(pilot, lambda: screen_name(app) == "AcceptDialog")
        app.screen.query_one("#accept-dialog-owner").value = "hannah.lee"   # not a member of payments-api
        await pilot.press("ctrl+s")
        await settle(pilot)  # refused: the dialog stays open with what was typed, the error is a notification
        assert screen_name(app) == "AcceptDialog" and app.screen.query_one("#accept-dialog-owner").value == "hannah.lee"
        assert any("hannah.lee" in n.message for n in app._notifications)
        await pilot.press("escape")   # the owner was typed: asks first
        await until(pilot, lambda: screen_name(app) == "DiscardScreen")
        await pilot.press("ctrl+d")
        await until(pilot, lambda: screen_name(app) == "InboxScreen")
        assert [f.id for f in screen.proposals] == [pid]
    assert wb.get(pid, principal="marco.bianchi").status == "proposed"


async def test_the_inbox_shows_no_proposals_to_whom_reviews_none(wb):
    wb.propose("Webhook retries", "Five retries, then the DLQ.", scope=SCOPE, principal=AGENT)
    app = app_for(wb, principal="sofia.okafor")   # same org, leads the ledger: not a reviewer
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i")
        await until(pilot, lambda: screen_name(app) == "InboxScreen")
        await settle(pilot)
        screen = app.screen
        assert screen.proposals == [] and not screen.query_one("#proposals-pane").display
        await pilot.press("ctrl+a")     # nothing to accept: the key does nothing
        await pilot.pause()
        assert screen_name(app) == "InboxScreen"
