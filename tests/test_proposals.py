"""Agent proposals: an agent proposes over MCP, only its author and its reviewers can read the
proposal (everyone else is answered exactly as for an id that does not exist, on every path), a
lead accepts it in the TUI, and then it is served; rejections, the rate limit, the secret guard,
scopes the agent cannot see, and the history of every step."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import CONFIG, WORKBENCH_BIN

from workbench import Workbench
from workbench.errors import Conflict, NotFound, PermissionDenied, RateLimited, SecretFound, UserError, WorkbenchError

AGENT = "agent.nw-coder"
SCOPE = "org=northwind,repo=payments-api"
TOKEN = "quokkaledger"   # a word no sample fragment holds: search finds the proposal iff it is indexed
TITLE = f"Settlement retries use the {TOKEN} backoff table"
BODY = (f"Settlement retries follow the {TOKEN} backoff table: 5 attempts at 1, 4, 16, 64 and 256 seconds, "
        "then the batch goes to the settlement dead-letter queue for a person to look at.")
MISSING = "prop-no-such-proposal-000000"
OUTSIDERS = ("sofia.okafor", "lena.fischer", "grace.kim")   # same org (not a reviewer), other org, both orgs


def params(workspace, principal):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=str(WORKBENCH_BIN),
                                 args=["--workspace", str(workspace), "mcp", "--as", principal])


def text_of(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def refusal(call, *args, **kwargs) -> tuple[type, str]:
    try:
        call(*args, **kwargs)
    except WorkbenchError as e:
        return type(e), e.message
    raise AssertionError(f"{call.__name__} did not refuse")


def assert_like_missing(call, fid, *args, **kwargs) -> None:
    """``call`` answers about ``fid`` exactly as about an id that does not exist."""
    got = refusal(call, fid, *args, **kwargs)
    missing = refusal(call, MISSING, *args, **kwargs)
    assert got[0] is missing[0] is NotFound, (got, missing)
    assert got[1].replace(fid, "X") == missing[1].replace(MISSING, "X"), (got, missing)


def served_ids(wb, principal, query=TOKEN) -> set[str]:
    found = wb.search(query, principal=principal, k=20, min_confidence=0)
    composed = wb.context(query, principal=principal, budget=4000, min_confidence=0)
    return {h.id for h in found.hits + found.avoid} | {i.hit.id for i in composed.fragments + composed.avoid}


def assert_unseen(wb, fid, who, tmp_path) -> None:
    """Every read path answers ``who`` about ``fid`` as about nothing at all."""
    assert_like_missing(wb.get, fid, principal=who)
    assert_like_missing(wb.fetch, fid, principal=who)
    assert_like_missing(wb.history, fid, principal=who)
    assert_like_missing(wb.diff, fid, 1, 1, principal=who)
    assert_like_missing(wb.superseded_by, fid, principal=who)
    assert_like_missing(wb.merge, fid, "nw-rb-psp-failover", actor=who)
    assert_like_missing(wb.accept, fid, principal=who)
    assert_like_missing(wb.reject, fid, principal=who, reason="no")
    assert_like_missing(wb.edit, fid, "new text", reason="r", actor=who)
    lead_scope = next(iter(wb.principal(who).lead_of), None)
    if lead_scope is not None:
        assert_like_missing(wb.pin, fid, scope=lead_scope, actor=who)
    assert fid not in {f.id for f in wb.list(principal=who, include_archived=True)}
    assert fid not in {r.id for r in wb.browse(principal=who, include_archived=True)}
    assert fid not in {f.id for f in wb.proposals(principal=who, status="all")}
    assert fid not in served_ids(wb, who)
    assert fid not in {p for pair in wb.dedupe(principal=who) for p in (pair["a"], pair["b"])}
    assert fid not in {r["id"] for r in wb.graph(top=0, principal=who)}
    assert all(fid not in path for path, _ in wb.preview_files(principal=who))
    out = tmp_path / f"export-{who}"
    wb.export_files(out, principal=who)
    assert not list(out.rglob(f"{fid}*")) and fid not in "".join(p.read_text() for p in out.rglob("*.md"))
    if "northwind" in wb.principal(who).orgs:
        files, _ = wb.render_agents("agents-md", scope="org=northwind", principal=who)
        assert files and fid not in "".join(files.values())


# -- the round trip: propose over MCP, invisible, accepted in the TUI, served ----------------------

@pytest.mark.process
@pytest.mark.tui
async def test_an_agents_proposal_over_mcp_is_unseen_until_a_lead_accepts_it_in_the_tui(sample_workspace,
                                                                                        tmp_path):
    from mcp import Client
    from tui_support import app_for, settle, until

    async with Client(params(sample_workspace, AGENT), read_timeout_seconds=120) as agent:
        tools = {t.name: t for t in (await agent.list_tools()).tools}
        assert tools["propose"].annotations.read_only_hint is False
        made = await agent.call_tool("propose", {"title": TITLE, "body": BODY, "kind": "note", "scope": SCOPE})
        assert not made.is_error, text_of(made)
        data = made.structured_content
        pid = data["id"]
        assert pid.startswith("prop-settlement-retries") and data["status"] == "proposed"
        assert data["proposed_by"] == AGENT and data["scope"] == SCOPE
        assert pid in text_of(made) and "awaiting review" in text_of(made)
        own = await agent.call_tool("get", {"id": pid})  # its author reads it back
        assert not own.is_error and own.structured_content["status"] == "proposed"
        assert "awaiting review" in text_of(own) and TOKEN in own.structured_content["body"]
        found = await agent.call_tool("search", {"query": TOKEN, "k": 10, "min_confidence": 0})
        assert pid not in json.dumps(found.structured_content)  # never served, not even to its author

    async with Client(params(sample_workspace, "sofia.okafor"), read_timeout_seconds=120) as other:
        hidden = await other.call_tool("get", {"id": pid})
        missing = await other.call_tool("get", {"id": MISSING})
        assert hidden.is_error and missing.is_error
        assert text_of(hidden).replace(pid, "X") == text_of(missing).replace(MISSING, "X")
        names, cursor = [], None
        while True:
            page = await other.list_resources(cursor=cursor)
            names += [r.name for r in page.resources]
            cursor = page.next_cursor
            if not cursor:
                break
        assert names and pid not in names
        answers = []
        for fid in (pid, MISSING):
            try:
                await other.read_resource(f"workbench://fragment/{fid}")
            except Exception as e:  # noqa: BLE001 - the SDK raises its error type
                answers.append(str(e).replace(fid, "X"))
        assert len(answers) == 2 and answers[0] == answers[1]
        context = await other.call_tool("context", {"query": TOKEN, "budget": 2000, "min_confidence": 0})
        assert pid not in json.dumps(context.structured_content)

    with Workbench.open(sample_workspace) as wb:
        for who in OUTSIDERS:
            assert_unseen(wb, pid, who, tmp_path)
        assert [f.id for f in wb.proposals(principal="marco.bianchi")] == [pid]   # leads payments-api
        assert [f.id for f in wb.proposals(principal="priya.raman")] == [pid]     # leads the org
        assert pid not in served_ids(wb, "marco.bianchi")                         # a reviewer is not served it
        assert wb.get(pid, principal=AGENT).status == "proposed"

        app = app_for(wb, principal="marco.bianchi")
        async with app.run_test(size=(170, 48)) as pilot:
            await pilot.press("i")
            await until(pilot, lambda: getattr(app.screen, "proposals", None))
            screen = app.screen
            assert [f.id for f in screen.proposals] == [pid]
            screen.query_one("#proposals").focus()
            await pilot.pause()
            await pilot.press("ctrl+a")
            await until(pilot, lambda: type(app.screen).__name__ == "AcceptDialog")
            dialog = app.screen
            assert dialog.query_one("#accept-dialog-scope").value == SCOPE
            assert dialog.query_one("#accept-dialog-owner").value == "marco.bianchi"
            dialog.query_one("#accept-dialog-reason").value = "matches the settlement runbook"
            await pilot.press("ctrl+s")
            await until(pilot, lambda: type(app.screen).__name__ == "InboxScreen" and not screen.proposals)
            await settle(pilot)

        accepted = wb.get(pid, principal="sofia.okafor")
        assert accepted.status == "active" and accepted.owner == "marco.bianchi"
        review = accepted.content.detail("review")
        assert review["decision"] == "accepted" and review["by"] == "marco.bianchi"
        assert review["reason"] == "matches the settlement runbook"
        assert accepted.content.detail("proposed_by") == AGENT
        fid = accepted.id   # the org's convention (issue 28); the prop- id redirects to it
        assert fid == "nw-note-settlement-retries-use-the-quokkaledger-backoff-table"
        for who in ("sofia.okafor", "marco.bianchi", AGENT):
            assert fid in served_ids(wb, who), who
        assert fid not in served_ids(wb, "lena.fischer")  # still scoped: another org never sees it
        history = [(v.number, v.author, v.content.status) for v in wb.history(pid, principal="marco.bianchi")]
        assert history == [(1, AGENT, "proposed"), (2, "marco.bianchi", "active")]


# -- rejection, read back by the author -------------------------------------------------------------

@pytest.mark.process
async def test_a_rejected_proposals_reason_is_read_back_by_its_author_over_mcp(sample_workspace):
    from mcp import Client

    with Workbench.open(sample_workspace) as wb:
        pid = wb.propose(TITLE, BODY, scope=SCOPE, principal=AGENT).id
        done = wb.reject(pid, principal="marco.bianchi", reason="we keep backoff tables in nw-rb-psp-failover")
        assert done.status == "rejected" and done.content.detail("review")["reason"].startswith("we keep")
        for who in OUTSIDERS:
            assert_like_missing(wb.get, pid, principal=who)
    async with Client(params(sample_workspace, AGENT), read_timeout_seconds=120) as agent:
        got = await agent.call_tool("get", {"id": pid})
        assert not got.is_error
        data = got.structured_content
        assert data["status"] == "rejected" and data["details"]["review"]["by"] == "marco.bianchi"
        assert "Rejected by marco.bianchi" in text_of(got)
        assert "we keep backoff tables in nw-rb-psp-failover" in text_of(got)


def test_the_author_reads_a_rejection_with_show_and_cannot_undo_it(sample_workspace, cli):
    with Workbench.open(sample_workspace) as wb:
        pid = wb.propose(TITLE, BODY, scope=SCOPE, principal=AGENT).id
        wb.reject(pid, principal="priya.raman", reason="too specific")
        kind, message = refusal(wb.restore, pid, actor=AGENT, reason="please")
        assert kind is PermissionDenied and "only by a review" in message
        kind, message = refusal(wb.edit, pid, "try again", reason="again", actor=AGENT)
        assert kind is PermissionDenied and "no longer changes" in message
        kind, message = refusal(wb.accept, pid, principal="priya.raman")
        assert "rejected" in message
    shown = cli("show", pid, "--as", AGENT, workspace=sample_workspace)
    assert shown.returncode == 0 and "review: rejected by priya.raman" in shown.stdout
    assert "too specific" in shown.stdout
    hidden = cli("show", pid, "--as", "sofia.okafor", workspace=sample_workspace)
    missing = cli("show", MISSING, "--as", "sofia.okafor", workspace=sample_workspace)
    assert hidden.returncode == missing.returncode == 2
    assert hidden.stderr.replace(pid, "X") == missing.stderr.replace(MISSING, "X")


# -- who may review, and how --------------------------------------------------------------------------

def test_only_a_reviewer_accepts_and_every_step_is_a_version_with_its_author(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        pid = wb.propose(TITLE, BODY, scope=SCOPE, principal=AGENT).id
        kind, message = refusal(wb.accept, pid, principal=AGENT)   # its author is no reviewer
        assert kind is PermissionDenied and "may review" in message
        kind, message = refusal(wb.restore, pid, actor="marco.bianchi", reason="skip the review")
        assert kind is PermissionDenied and "only by a review" in message
        edited = wb.edit(pid, BODY + "\n\nThe table lives in settlement/backoff.py.", reason="add the file",
                         actor=AGENT, base=1)   # the author may improve it before the review
        assert edited.status == "proposed" and edited.content.detail("proposed_by") == AGENT
        kind, _ = refusal(wb.accept, pid, principal="marco.bianchi", base=1)   # the base version rule
        assert kind.__name__ == "Conflict"
        done = wb.accept(pid, principal="marco.bianchi", scope="org=northwind,repo=ledger", owner="sofia.okafor",
                         title="Settlement retry backoff", base=2)
        assert (done.status, str(done.scope), done.owner, done.title) == \
            ("active", "org=northwind,repo=ledger", "sofia.okafor", "Settlement retry backoff")
        steps = [(v.number, v.author, v.content.status, v.reason) for v in wb.history(pid, principal="marco.bianchi")]
        assert steps == [(1, AGENT, "proposed", f"proposed by {AGENT}: awaiting review"),
                         (2, AGENT, "proposed", "add the file"),
                         (3, "marco.bianchi", "proposed", "edited before accepting"),
                         (4, "marco.bianchi", "active", "accepted")]
        again = refusal(wb.accept, pid, principal="marco.bianchi")
        assert "is active" in again[1]


def test_accepting_into_a_scope_the_reviewer_cannot_see_is_refused(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        pid = wb.propose(TITLE, BODY, scope=SCOPE, principal=AGENT).id
        unseen = refusal(wb.accept, pid, principal="marco.bianchi", scope="org=northwind,repo=checkout-web")
        nowhere = refusal(wb.accept, pid, principal="marco.bianchi", scope="org=northwind,repo=nope")
        assert unseen == (NotFound, nowhere[1].replace("nope", "checkout-web"))
        _, message = refusal(wb.accept, pid, principal="marco.bianchi", owner="hannah.lee")
        assert "hannah.lee" in message and "not a member" in message
        assert wb.get(pid, principal="marco.bianchi").status == "proposed"


def test_the_owner_a_proposal_names_reviews_it_and_an_ingest_cannot_accept_it(workspace, tmp_path):
    from conftest import write_fragment

    def proposal_file(folder: str, **extra) -> Path:
        front = "".join(f"{k}: {v}\n" for k, v in extra.items())
        return write_fragment(tmp_path / folder, pid, title="Ledger note", body="Journal entries are immutable.",
                              repo="ledger", owner="grace.kim", extra=front)

    with Workbench.open(workspace) as wb:   # grace.kim is a member of the ledger repo and leads nothing
        pid = wb.propose("Ledger note", "Journal entries are immutable.", scope="org=northwind,repo=ledger",
                         principal="marco.bianchi").id
        assert_like_missing(wb.get, pid, principal="grace.kim")
        moved = wb.ingest([proposal_file("f", status="proposed", proposed_by="marco.bianchi")],
                          actor="marco.bianchi")
        assert not moved.errors and moved.updated == [pid], moved.errors   # the author names an owner
        assert [f.id for f in wb.proposals(principal="grace.kim", to_review=True)] == [pid]
        for actor, refused in (("marco.bianchi", "may review"), ("grace.kim", "only by a review")):
            flipped = wb.ingest([proposal_file(f"g-{actor}", proposed_by="marco.bianchi")], actor=actor)
            assert flipped.errors and refused in flipped.errors[0]["message"], flipped.errors  # no accept by ingest
        assert wb.get(pid, principal="grace.kim").status == "proposed"
        kind, message = refusal(wb.accept, pid, principal="grace.kim")   # v2 now: name the version read
        assert kind is Conflict and "base 2" in message
        done = wb.accept(pid, principal="grace.kim", base=2)
        assert done.owner == "grace.kim" and done.content.detail("review")["by"] == "grace.kim"


# -- what a proposal is refused for ---------------------------------------------------------------------

def test_a_scope_the_agent_cannot_see_is_refused_like_one_that_does_not_exist(wb):
    before = wb.stats()["fragments"]
    for unseen, missing in (("org=tidewater", "org=nowhere"), ("org=northwind,repo=ledger", "org=northwind,repo=x"),
                            ("org=northwind,persona=sre", "org=northwind,persona=x")):
        got, other = refusal(wb.propose, TITLE, BODY, scope=unseen, principal=AGENT), \
            refusal(wb.propose, TITLE, BODY, scope=missing, principal=AGENT)
        assert got[0] is other[0] is NotFound
        assert got[1].replace(unseen, "S") == other[1].replace(missing, "S") == "unknown scope 'S'"
    kind, message = refusal(wb.propose, TITLE, BODY, principal=AGENT)  # no session scope of its own
    assert kind is UserError and "give a scope" in message
    assert wb.stats()["fragments"] == before


def config_with(tmp_path: Path, text: str) -> Path:
    """A copy of the sample workbench.yaml (and the golden set it names) with ``text`` in place of it."""
    folder = tmp_path / "cfg"
    folder.mkdir()
    for extra in CONFIG.parent.glob("golden*.yaml"):
        shutil.copy(extra, folder)
    (folder / "workbench.yaml").write_text(text)
    return folder / "workbench.yaml"


def test_a_proposal_goes_to_the_agents_own_session_scope_by_default(tmp_path):
    text = CONFIG.read_text().replace("    personas: [northwind/backend]\n  # Tidewater",
                                      "    personas: [northwind/backend]\n    sessions: [s-coder-42]\n  # Tidewater")
    assert "s-coder-42" in text
    with Workbench.init(tmp_path / "ws", config=config_with(tmp_path, text)) as wb:
        made = wb.propose("What I learned today", "Ledger exports run at 02:00 UTC.", kind="session-summary",
                          principal=AGENT)
        assert str(made.scope) == "org=northwind,session=s-coder-42" and made.kind == "session-summary"
        assert [f.id for f in wb.proposals(principal="priya.raman")] == [made.id]     # the org's lead reviews
        assert_like_missing(wb.get, made.id, principal="marco.bianchi")               # leads a repo only
        done = wb.accept(made.id, principal="priya.raman", scope="org=northwind,repo=ledger", owner="sofia.okafor")
        assert str(done.scope) == "org=northwind,repo=ledger"


def test_the_rate_limit_refuses_the_next_proposal_and_stores_nothing(tmp_path, cli):
    root = tmp_path / "ws"
    with Workbench.init(root, config=config_with(tmp_path, CONFIG.read_text() + "proposals:\n  per_hour: 3\n")) as wb:
        assert wb.config.proposals_per_hour == 3
        for n in range(3):
            wb.propose(f"Note {n}", f"Body {n}.", scope=SCOPE, principal=AGENT)
        counts = wb.stats()
        kind, message = refusal(wb.propose, "Note 3", "Body 3.", scope=SCOPE, principal=AGENT)
        assert kind is RateLimited and "at most 3" in message
        assert wb.stats() == counts  # nothing stored: no fragment, no version
        wb.propose("Another agent's note", "Body.", scope="org=tidewater,repo=dispatch", principal="agent.tw-ops")
    over = cli("propose", "Note 4", "--body", "Body 4.", "--scope", SCOPE, "--as", AGENT, "--json", workspace=root)
    assert over.returncode == 2 and "at most 3" in over.stderr and over.stdout == ""
    with Workbench.open(root) as wb:
        last = max(f.created_at for f in wb.proposals(principal=AGENT))
        later = wb.propose("Next hour", "Body.", scope=SCOPE, principal=AGENT, now=last + timedelta(minutes=61))
        assert later.status == "proposed"  # an hour after the last one, the window has room again


def test_a_proposal_holding_a_secret_is_refused_and_nothing_is_stored(wb):
    before = wb.stats()
    kind, message = refusal(wb.propose, "Deploy key", "Use AKIAIOSFODNN7EXAMPLE with secret "
                            "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", scope=SCOPE,
                            principal=AGENT)
    assert kind is SecretFound and "credential" in message and "--allow-secret" not in message
    assert wb.stats() == before


def test_an_anti_pattern_proposal_takes_its_fields_from_the_body(wb):
    made = wb.propose("Retrying settlement without a key", "Seen in INC-3301.\n\nDon't: retry a settlement "
                      "batch without its idempotency key\n**Why:** the batch is paid twice\n## Instead\nreuse the "
                      "batch's key on every retry", kind="anti-pattern", scope=SCOPE, principal=AGENT)
    assert made.content.detail("dont") == "retry a settlement batch without its idempotency key"
    assert made.content.detail("why") == "the batch is paid twice"
    assert made.content.detail("instead") == "reuse the batch's key on every retry"
    assert made.body == "Seen in INC-3301."
    kind, message = refusal(wb.propose, "Half an anti-pattern", "Don't: do it\nWhy this is bad: it is",
                            kind="anti-pattern", scope=SCOPE, principal=AGENT)
    assert kind is UserError and "Why, Instead" in message


# -- proposals stay out of what is shared; an accepted one round-trips --------------------------------

def test_an_accepted_proposal_round_trips_through_files_and_bundles(sample_workspace, tmp_path, cli):
    with Workbench.open(sample_workspace) as wb:
        pid = wb.propose(TITLE, BODY, scope=SCOPE, principal=AGENT).id
        pending = wb.propose("Still pending", "Not reviewed yet.", scope=SCOPE, principal=AGENT).id
        fid = wb.accept(pid, principal="marco.bianchi", reason="good").id
        wb.set_create("retries", scope=SCOPE, actor="marco.bianchi")
        out = tmp_path / "files"
        wb.export_files(out, principal="marco.bianchi")
        assert not list(out.rglob(f"{pending}*"))   # a proposal is not exported, even to a reviewer
        assert not list(out.rglob(f"{pid}*"))       # exported under the id it was accepted with
        exported = next(out.rglob(f"{fid}.md")).read_text()
        assert "proposed_by: agent.nw-coder" in exported and "decision: accepted" in exported
        again = wb.ingest([out], actor="marco.bianchi")
        assert fid in again.unchanged and not again.errors   # the review record round-trips
        wb.export_bundle("retries", tmp_path / "bundle", principal="marco.bianchi")
        assert fid in (tmp_path / "bundle" / "fragments.jsonl").read_text()
        assert pending not in (tmp_path / "bundle" / "fragments.jsonl").read_text()
    fresh = tmp_path / "fresh"
    shutil.copytree(sample_workspace, fresh, ignore=shutil.ignore_patterns("workbench.duckdb*"))
    with Workbench.open(fresh) as wb:
        report = wb.import_bundle(tmp_path / "bundle", actor="marco.bianchi")
        assert fid in report.added
        copy = wb.get(fid, principal="sofia.okafor")
        assert copy.status == "active" and copy.content.detail("review")["by"] == "marco.bianchi"


def test_proposals_are_never_pinned_or_merged(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        pid = wb.propose(TITLE, BODY, scope=SCOPE, principal=AGENT).id
        kind, message = refusal(wb.pin, pid, scope=SCOPE, actor="marco.bianchi")
        assert kind is UserError and "only active fragments can be pinned" in message
        kind, message = refusal(wb.merge, "nw-rb-psp-failover", pid, actor="marco.bianchi")
        assert "only active fragments can be merged" in message


# -- the faces: CLI and the team server's JSON API ---------------------------------------------------

def test_the_cli_proposes_lists_and_reviews(sample_workspace, cli, tmp_path):
    body = tmp_path / "ap.md"
    body.write_text("Don't: log card numbers\nWhy: PCI scope\nInstead: log the last four digits\n")
    made = cli("propose", "Logging card numbers", "--file", str(body), "--kind", "anti-pattern", "--scope", SCOPE,
               "--as", AGENT, "--json", workspace=sample_workspace)
    assert made.returncode == 0, made.stderr
    pid = json.loads(made.stdout)["id"]
    queue = cli("proposals", "--as", "marco.bianchi", "--json", workspace=sample_workspace)
    rows = json.loads(queue.stdout)
    assert [(r["id"], r["proposed_by"], r["mine"], r["status"]) for r in rows] == [(pid, AGENT, False, "proposed")]
    mine = json.loads(cli("proposals", "--status", "all", "--as", AGENT, "--json", workspace=sample_workspace).stdout)
    assert [(r["id"], r["mine"]) for r in mine] == [(pid, True)]
    assert json.loads(cli("proposals", "--as", "sofia.okafor", "--json", workspace=sample_workspace).stdout) == []
    text = cli("proposals", "--as", "marco.bianchi", workspace=sample_workspace).stdout
    assert pid in text and "review accept" in text
    done = cli("review", "accept", pid, "--owner", "marco.bianchi", "--reason", "yes", "--as", "marco.bianchi",
               "--json", workspace=sample_workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["details"]["review"]["decision"] == "accepted"
    no_reason = cli("review", "reject", pid, "--as", "marco.bianchi", workspace=sample_workspace)
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr


def test_a_reviewer_never_accepts_text_it_did_not_read(sample_workspace, cli):
    """The red team's case (issue 26): marco read the proposal, its author then edited it (its right
    until the review), and `review accept` without --base took the new text. Now an accept of a
    proposal with more than one version names the version read, or is refused, naming the latest
    version, its author and time; `proposals` shows the version and the --base to pass."""
    as_marco = ("--as", "marco.bianchi")
    pid = json.loads(cli("propose", TITLE, "--body", BODY, "--scope", SCOPE, "--as", AGENT, "--json",
                         workspace=sample_workspace).stdout)["id"]
    read = json.loads(cli("show", pid, *as_marco, "--json", workspace=sample_workspace).stdout)
    assert read["version"] == 1
    with Workbench.open(sample_workspace) as wb:
        wb.edit(pid, "Agents may retry POSTs freely.", reason="simplify", actor=AGENT)   # after marco read it
    listed = cli("proposals", *as_marco, workspace=sample_workspace).stdout
    row = next(line for line in listed.splitlines() if pid in line)
    assert " v2 " in f" {row} " and "--base N" in listed, listed
    unread = cli("review", "accept", pid, *as_marco, workspace=sample_workspace)
    assert unread.returncode == 2 and "Traceback" not in unread.stderr, unread.stderr
    assert all(w in unread.stderr for w in ("v2", AGENT, "--base", "base 2")), unread.stderr
    stale = cli("review", "accept", pid, "--base", str(read["version"]), *as_marco, workspace=sample_workspace)
    assert stale.returncode == 2 and "changed since v1" in stale.stderr, stale.stderr
    with Workbench.open(sample_workspace) as wb:
        kept = wb.get(pid, principal="marco.bianchi")
        assert (kept.status, kept.version) == ("proposed", 2)   # nothing accepted, nothing lost
        kind, message = refusal(wb.accept, pid, principal=AGENT)    # who may review is answered first
        assert kind is PermissionDenied and "base" not in message
        assert_like_missing(wb.accept, pid, principal="sofia.okafor")   # and an unseen one is unknown
    done = cli("review", "accept", pid, "--base", "2", *as_marco, "--json", workspace=sample_workspace)
    assert done.returncode == 0 and json.loads(done.stdout)["body"] == "Agents may retry POSTs freely.", done.stderr


# -- the nudge digest ------------------------------------------------------------------------------------

def test_reviewers_get_their_proposals_in_the_nudge_digest_once(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        pid = wb.propose(TITLE, BODY, scope=SCOPE, principal=AGENT).id
        other = wb.nudge(principal="lena.fischer")   # another org's lead: its run names nothing of northwind
        assert other.proposals == {} and all(pid not in Path(d).read_text() for d in other.digests)
        report = wb.nudge(principal="priya.raman")
        assert report.to_dict()["proposals"] == {"marco.bianchi": [pid], "priya.raman": [pid]}
        for name in ("marco.bianchi", "priya.raman"):
            text = next(Path(d) for d in report.digests if Path(d).name == f"{name}.md").read_text()
            section = text.split("## Proposals to review", 1)[1]
            assert pid in section and f"by {AGENT}" in section and f"--as {name}" in section
        assert all(pid not in Path(d).read_text() for d in report.digests
                   if Path(d).name not in ("marco.bianchi.md", "priya.raman.md"))
        assert wb.nudge(principal="priya.raman").proposals == {}   # told once (until the cooldown, or a change)
        wb.edit(pid, BODY + " Seen again today.", reason="more", actor=AGENT)
        assert wb.nudge(principal="priya.raman").proposals == {"marco.bianchi": [pid], "priya.raman": [pid]}


# -- the team server: the JSON API, MCP over HTTP, the remote facade the TUI uses ---------------------

@pytest.mark.process
def test_the_team_server_serves_proposals_and_answers_429_past_the_limit(sample_workspace):
    from server_support import server

    from workbench.remote.client import RemoteWorkbench

    config = sample_workspace / "workbench.yaml"
    config.write_text(config.read_text() + "proposals:\n  per_hour: 2\n")
    with Workbench.open(sample_workspace) as wb:
        agent, marco, sofia = (wb.token_create(p).token for p in (AGENT, "marco.bianchi", "sofia.okafor"))
    with server(sample_workspace) as running:
        status, made, _ = running.call("POST", "/api/v1/propose", {"title": TITLE, "body": BODY, "scope": SCOPE,
                                                                    "as": "marco.bianchi"}, token=agent)
        assert status == 200 and made["status"] == "proposed", made
        pid = made["id"]
        assert made["details"]["proposed_by"] == AGENT   # a non-admin token acts as itself, whatever `as` says
        hidden = running.call("GET", f"/api/v1/show?id={pid}", token=sofia)
        missing = running.call("GET", f"/api/v1/show?id={MISSING}", token=sofia)
        assert hidden[0] == missing[0] == 404
        assert hidden[1]["error"].replace(pid, "X") == missing[1]["error"].replace(MISSING, "X")
        status, queue, _ = running.call("GET", "/api/v1/proposals", token=marco)
        assert status == 200 and [r["id"] for r in queue] == [pid]
        assert running.call("GET", "/api/v1/proposals", token=sofia)[1] == []

        remote = RemoteWorkbench(running.url, agent)   # the TUI's remote facade
        second = remote.propose("Second note", "Another thing learned.", scope=SCOPE, principal=AGENT)
        assert second.status == "proposed" and second.content.detail("proposed_by") == AGENT
        with pytest.raises(RateLimited, match="at most 2"):
            remote.propose("Third note", "One too many.", scope=SCOPE, principal=AGENT)
        status, body, _ = running.call("POST", "/api/v1/propose", {"title": "Fourth", "body": "Still too many.",
                                                                  "scope": SCOPE},
                                       token=agent)
        assert status == 429 and "at most 2" in body["error"] and body["exit"] == 2

        reviewer = RemoteWorkbench(running.url, marco)
        assert [f.id for f in reviewer.proposals(principal="marco.bianchi")] == [pid, second.id]
        remote.edit(pid, BODY + " Edited after the review began.", reason="more", actor=AGENT)   # over RPC
        for unread in (lambda: running.call("POST", "/api/v1/review/accept", {"id": pid}, token=marco)[:2],
                       lambda: refusal(reviewer.accept, pid, principal="marco.bianchi")):
            status, said = unread()   # over HTTP and over RPC: no base, more than one version: refused
            assert status in (409, Conflict) and "base 2" in str(said) and AGENT in str(said), said
        status, done, _ = running.call("POST", "/api/v1/review/accept", {"id": pid, "reason": "good", "base": 2},
                                       token=marco)
        assert status == 200 and done["status"] == "active" and done["details"]["review"]["by"] == "marco.bianchi"
        rejected = reviewer.reject(second.id, principal="marco.bianchi", reason="duplicate")
        assert rejected.status == "rejected"
        assert remote.get(second.id, principal=AGENT).content.detail("review")["reason"] == "duplicate"
        status, shown, _ = running.call("GET", f"/api/v1/show?id={pid}", token=sofia)
        assert status == 200 and shown["status"] == "active"   # accepted: now everyone in scope reads it


def test_accepting_gives_the_orgs_id_and_the_proposal_id_redirects(backend, backend_config, tmp_path, request):
    """Issue 28: accepted proposals kept their prop-... id forever, and it became a Cursor rule's file
    name. Now the accepted fragment takes the org's convention (nw-note-<slug>, as new fragments do)
    and the old id redirects: get, show, history, MCP get; it survives a move between backends."""
    from conftest import fragment_text, run_cli

    root = tmp_path / "ws"
    Workbench.init(root, config=backend_config).close()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "nw-note-existing.md").write_text(fragment_text("nw-note-existing"))
    with Workbench.open(root) as wb:
        assert not wb.ingest([tmp_path / "in"], actor="marco.bianchi").errors
        pid = wb.propose("Webhook retries back off", "Webhook retries back off: 1, 4, 16 minutes.", scope=SCOPE,
                         principal=AGENT).id
        twin = wb.propose("Webhook retries back off", "The same title, again.", scope=SCOPE, principal=AGENT).id
        accepted = wb.accept(pid, principal="marco.bianchi", reason="good")
        assert accepted.id == "nw-note-webhook-retries-back-off" and accepted.status == "active"
        assert wb.accept(twin, principal="marco.bianchi").id == "nw-note-webhook-retries-back-off-2"
        assert wb.get(pid, principal="marco.bianchi").id == accepted.id                   # get by the old id
        assert [(v.number, v.content.status) for v in wb.history(pid, principal="marco.bianchi")] == \
            [(1, "proposed"), (2, "active")]                                                # the whole history
        fetched, _ = wb.fetch(pid, principal="sofia.okafor")                               # MCP get
        assert fetched.id == accepted.id
        assert_like_missing(wb.get, pid, principal="lena.fischer")   # another org: as an id that does not exist
        wb.edit(pid, "Webhook retries back off: 1, 4, 16 and 64 minutes.", reason="one more", actor="marco.bianchi")
        assert wb.get(accepted.id, principal="marco.bianchi").version == 3                # edits reach it too
        files, _ = wb.render_agents("cursor-rules", scope=SCOPE, principal="marco.bianchi")
        assert f".cursor/rules/{accepted.id}.mdc" in files and not any("prop-" in name for name in files)
    shown = run_cli("show", pid, "--as", "marco.bianchi", "--json", workspace=root)
    assert shown.returncode == 0 and json.loads(shown.stdout)["id"] == accepted.id
    # the redirect moves with the workspace (store/transfer.py copies fragment_aliases)
    target = request.getfixturevalue("pg_url") if backend == "duckdb" else str(tmp_path / "copy")
    with Workbench.open(root) as wb:
        wb.migrate_to(target)
    with Workbench.open(root if backend == "duckdb" else tmp_path / "copy") as moved:
        assert moved.get(pid, principal="marco.bianchi").id == accepted.id
