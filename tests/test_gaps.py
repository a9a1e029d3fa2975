"""The gap report: traced questions that got nothing useful, grouped by meaning, shown to whom the
policy allows; its CLI; and the nudge digest's "Questions we could not answer" for scope leads.

The traces are real: the sample golden set's negative queries run through ``context`` as their
principals, plus near-duplicate rephrasings (tests/gap_support.py). Real store, real embedder."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta

import numpy as np
import pytest

from gap_support import BY_ID, NEGATIVES, NORTHWIND, REPHRASINGS, TIDEWATER, run_questions, without_default_principal
from workbench import Workbench
from workbench.curate.gaps import ABSTAINED, LOW_CONFIDENCE, gap_reason
from workbench.errors import UserError
from workbench.models import utcnow
from workbench.rank.clusters import SAME_QUESTION, leader_clusters


@pytest.fixture(scope="module")
def traced(sample_workspace_template, tmp_path_factory):
    """The sample workspace (no default principal) after the questions were asked, two days ago."""
    import shutil

    root = tmp_path_factory.mktemp("gaps") / "ws"
    shutil.copytree(sample_workspace_template, root)
    without_default_principal(root)
    with Workbench.open(root) as wb:
        asked = run_questions(wb, utcnow() - timedelta(days=2))
    return root, asked


@pytest.fixture(scope="module")
def twb(traced, monkeypatch_module):
    monkeypatch_module.delenv("WORKBENCH_PRINCIPAL", raising=False)
    with Workbench.open(traced[0]) as bench:
        yield bench


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture
def ws(traced, tmp_path, monkeypatch):
    """A copy of the traced workspace to change."""
    import shutil

    monkeypatch.delenv("WORKBENCH_PRINCIPAL", raising=False)
    return shutil.copytree(traced[0], tmp_path / "ws")


def family(report, name: str):
    """The group holding the rephrasings of ``name`` (None when the viewer sees none of them)."""
    original, asked = REPHRASINGS[name]
    texts = {BY_ID[original]["query"], *(t for t, _, _ in asked)}
    found = [g for g in report.groups if texts & set(g.examples) or g.question in texts]
    assert len(found) <= 1, [g.examples for g in found]
    return found[0] if found else None


def askers(report) -> set[str]:
    return {name for g in report.groups for name, _ in g.principals}


# -- the report ----------------------------------------------------------------------------------

def test_gaps_groups_each_unanswered_question_and_its_rephrasings(twb, traced):
    _, asked = traced
    report = twb.gaps()   # no --as and no default principal: the local administrator, every call
    assert report.principal is None
    rephrasings = sum(len(a) for _, a in REPHRASINGS.values())
    assert report.questions == len(asked["abstained"]) + rephrasings
    # one group per distinct negative that abstained: the rephrasings joined theirs, nothing else merged
    assert len(report.groups) == len(asked["abstained"])
    originals = {g.question for g in report.groups}
    assert originals == {BY_ID[q]["query"] for q in asked["abstained"]}
    answered = {BY_ID[q]["query"] for q in asked["answered"]}
    assert not answered & {e for g in report.groups for e in g.examples}

    parental = family(report, "parental leave")
    assert parental.count == 4 and report.groups[0] is parental   # the most asked comes first
    assert dict(parental.principals) == {"priya.raman": 1, "omar.haddad": 1, "marco.bianchi": 1,
                                         "agent.nw-coder": 1}
    assert parental.examples[0] == BY_ID["neg-q005"]["query"] and len(parental.examples) == 3
    assert dict(parental.scopes) == {"org=northwind": 4} and dict(parental.reasons) == {ABSTAINED: 4}

    polish = family(report, "driver app in Polish")
    assert polish.count == 3
    assert dict(polish.principals) == {"emma.novak": 1, "agent.tw-ops": 1, "raj.patel": 1}

    jvm = family(report, "JVM garbage collector")
    assert jvm.count == 3 and dict(jvm.principals) == {"agent.nw-coder": 2, "dan.kowalski": 1}
    assert dict(jvm.scopes) == {"org=northwind": 2, "org=northwind,repo=payments-api": 1}
    assert jvm.first_seen < jvm.last_seen
    assert [g.count for g in report.groups] == sorted((g.count for g in report.groups), reverse=True)
    others = [g for g in report.groups if g not in (parental, polish, jvm)]
    assert all(g.count == 1 and len(g.principals) == 1 for g in others)


def test_a_principal_sees_its_own_questions_and_another_org_none(twb):
    agent = twb.gaps(principal="agent.tw-ops")
    assert askers(agent) == {"agent.tw-ops"}
    assert family(agent, "driver app in Polish").count == 1
    text = json.dumps(agent.to_dict())
    northwind_questions = [q["query"] for q in NEGATIVES if q["principal"] in NORTHWIND]
    assert not any(q in text for q in northwind_questions)
    assert not any(name in text for name in NORTHWIND)
    assert family(agent, "parental leave") is None and family(agent, "JVM garbage collector") is None

    emma = twb.gaps(principal="emma.novak")   # a lead of a repo, asking without a scope: only her own
    assert askers(emma) == {"emma.novak"} and family(emma, "driver app in Polish").count == 1


def test_a_lead_sees_the_questions_asked_in_scopes_it_leads(twb):
    priya = twb.gaps(principal="priya.raman")   # lead of org=northwind
    assert askers(priya) <= NORTHWIND | {"grace.kim"} and "grace.kim" in askers(priya)
    assert family(priya, "parental leave").count == 4 and family(priya, "JVM garbage collector").count == 3
    assert family(priya, "driver app in Polish") is None
    assert not askers(priya) & TIDEWATER

    lena = twb.gaps(principal="lena.fischer")   # lead of org=tidewater
    assert askers(lena) <= TIDEWATER | {"grace.kim"} and family(lena, "driver app in Polish").count == 3
    assert family(lena, "parental leave") is None and not askers(lena) & NORTHWIND

    marco = twb.gaps(principal="marco.bianchi")   # lead of org=northwind,repo=payments-api
    jvm = family(marco, "JVM garbage collector")   # only the call made in payments-api (and none of his)
    assert jvm.count == 1 and dict(jvm.principals) == {"agent.nw-coder": 1}
    assert dict(jvm.scopes) == {"org=northwind,repo=payments-api": 1}
    assert askers(marco) == {"marco.bianchi", "agent.nw-coder"}
    hannah = twb.gaps(principal="hannah.lee")    # lead of checkout-web: not payments-api's
    assert family(hannah, "JVM garbage collector") is None


def test_scope_narrows_and_days_bound_the_window(twb):
    repo = twb.gaps(scope="org=northwind,repo=payments-api")
    assert [(g.count, dict(g.principals)) for g in repo.groups] == [(1, {"agent.nw-coder": 1})]
    tidewater = twb.gaps(scope="org=tidewater")
    assert askers(tidewater) <= TIDEWATER | {"grace.kim"}
    assert family(tidewater, "driver app in Polish").count == 3
    assert twb.gaps(days=1).groups == ()     # asked two days ago
    assert twb.gaps(now=utcnow() - timedelta(days=40)).groups == ()
    with pytest.raises(UserError, match="unknown org 'nowhere'"):
        twb.gaps(scope="org=nowhere")
    with pytest.raises(UserError, match="between 1 and 36500"):
        twb.gaps(days=0)


def test_low_confidence_searches_are_gaps_and_answered_ones_are_not(ws):
    with Workbench.open(ws) as wb:
        floor = wb.confidence_floor()
        at = utcnow() - timedelta(hours=1)
        weak = wb.search("what is the dress code when visiting a customer depot", principal="lena.fischer", now=at)
        assert weak.hits and all(h.confidence < floor for h in weak.hits)   # the premise: all below the floor
        good = wb.search("who do I page when dispatch is down at night", principal="lena.fischer", now=at)
        assert max(h.confidence for h in good.hits) >= floor
        nothing = wb.search("payments", principal="lena.fischer", kind="code", tag="no-such-tag", now=at)
        assert not nothing.hits
        report = wb.gaps(principal="lena.fischer", days=1)
        by_question = {g.question: g for g in report.groups}
        assert dict(by_question["what is the dress code when visiting a customer depot"].reasons) == {
            LOW_CONFIDENCE: 1}
        assert dict(by_question["payments"].reasons) == {ABSTAINED: 1}
        assert good.query not in by_question
        assert {k for g in report.groups for k, _ in g.kinds} == {"search"}


def test_context_records_whether_it_abstained_and_a_call_cut_by_its_budget_is_no_gap(ws):
    with Workbench.open(ws) as wb:
        at = utcnow() - timedelta(hours=1)
        none = wb.context(BY_ID["neg-q024"]["query"], principal="lena.fischer", now=at)
        tiny = wb.context("who do I page when dispatch is down at night", principal="lena.fischer", budget=0, now=at)
        assert none.abstained and not tiny.abstained and not tiny.fragments and not tiny.avoid
        assert wb.trace(none.trace_id, principal="lena.fischer")["settings"]["abstained"] is True
        assert wb.trace(tiny.trace_id, principal="lena.fischer")["settings"]["abstained"] is False
        assert [g.question for g in wb.gaps(principal="lena.fischer", days=1).groups] == [none.query]


def test_gap_reason_reads_what_a_trace_recorded_and_infers_it_for_older_traces():
    def row(kind, served, abstained=None, floor=None):
        return {"kind": kind, "served": served, "abstained": abstained, "min_confidence": floor}
    pinned, strong, weak = (True, 0.9), (False, 0.9), (False, 0.1)
    assert gap_reason(row("context", [pinned], abstained=True), 0.5) == ABSTAINED
    assert gap_reason(row("context", [], abstained=False), 0.5) is None      # a budget too small: not a gap
    assert gap_reason(row("context", [pinned]), 0.5) == ABSTAINED             # older trace: only a pin
    assert gap_reason(row("context", [pinned, strong]), 0.5) is None
    assert gap_reason(row("context", [weak]), 0.5) == LOW_CONFIDENCE
    assert gap_reason(row("search", [weak, (False, 0.3)], floor=0.2), 0.5) is None   # its own floor counts
    assert gap_reason(row("search", [weak, (False, 0.3)]), 0.5) == LOW_CONFIDENCE
    assert gap_reason(row("search", [(False, None)]), 0.5) is None            # no confidence: cannot tell
    assert gap_reason(row("search", []), 0.5) == ABSTAINED
    assert gap_reason(row("get", []), 0.5) is None


def test_an_older_context_trace_without_the_flag_is_judged_by_what_it_served(ws):
    with Workbench.open(ws) as wb:
        at = utcnow() - timedelta(hours=1)
        for i, served in enumerate(([{"id": "nw-pol-pci-scope", "version": 1, "section": "fragments", "rank": 0,
                                      "score": 1.0, "confidence": 0.2, "scores": {"pinned": True}}],
                                    [{"id": "nw-pol-pci-scope", "version": 1, "section": "fragments", "rank": 1,
                                      "score": 1.0, "confidence": 0.9, "scores": {}}])):
            wb.store.put_trace({"id": f"tr_old_{i}", "created_at": at, "kind": "context", "principal": "omar.haddad",
                                "query": f"an old question number {i} about quasar telemetry", "scope": None,
                                "settings": {"budget_tokens": 3200}, "served": served})
        questions = {g.question for g in wb.gaps(principal="omar.haddad", days=1).groups}
        assert questions == {"an old question number 0 about quasar telemetry"}


# -- grouping --------------------------------------------------------------------------------------

def test_leader_clusters_is_greedy_by_weight_and_bounded_by_the_threshold():
    v = np.array([[1, 0, 0], [0.8, 0.6, 0], [0, 1, 0], [0, 0, 1], [0.6, 0.8, 0]], dtype=np.float32)
    assert leader_clusters(v, 0.75) == [[0, 1], [2, 4], [3]]
    assert leader_clusters(v, 0.75, weights=[1, 1, 1, 1, 5]) == [[4, 1, 2], [0], [3]]   # the most asked leads
    assert leader_clusters(v, 0.999) == [[0], [1], [2], [3], [4]]
    assert leader_clusters(np.zeros((0, 3)), 0.5) == []


def test_the_threshold_separates_the_sample_negatives_and_joins_their_rephrasings(twb):
    encode = twb.embedder.encode
    negatives = encode([q["query"] for q in NEGATIVES])
    sims = negatives @ negatives.T
    closest = max(sims[i, j] for i, j in itertools.combinations(range(len(NEGATIVES)), 2))
    assert closest < SAME_QUESTION - 0.1   # 0.55 measured: distinct questions stay apart
    for original, asked in REPHRASINGS.values():
        vectors = encode([t for t, _, _ in asked])
        assert (vectors @ negatives[NEGATIVES.index(BY_ID[original])] >= SAME_QUESTION).all(), original


# -- the command line ------------------------------------------------------------------------------

def test_gaps_command(traced, cli):
    root, _ = traced
    r = cli("gaps", "--as", "lena.fischer", "--json", workspace=root)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["principal"] == "lena.fischer" and data["days"] == 30 and data["similarity"] == SAME_QUESTION
    polish = next(g for g in data["groups"] if g["question"] == BY_ID["neg-q017"]["query"])
    assert polish["count"] == 3 and {p["name"] for p in polish["principals"]} == {"emma.novak", "agent.tw-ops",
                                                                                   "raj.patel"}
    assert set(polish) == {"question", "count", "principals", "scopes", "first_seen", "last_seen", "examples",
                           "reasons", "kinds"}
    text = cli("gaps", "--as", "lena.fischer", "--days", "7", workspace=root)
    assert text.returncode == 0 and "how do we translate the driver app into Polish" in text.stdout
    assert "also asked as:" in text.stdout and "as lena.fischer" in text.stdout
    for args, words in ((["--days", "0"], "between 1 and 36500"), (["--scope", "org=nowhere"], "unknown org")):
        bad = cli("gaps", *args, workspace=root)
        assert bad.returncode == 2 and words in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


# -- the nudge digest ------------------------------------------------------------------------------

def test_scope_leads_get_their_gaps_in_the_nudge_digest(ws):
    with Workbench.open(ws) as wb:
        report = wb.nudge(principal="priya.raman")
        assert report.gaps["priya.raman"] == sum(g.count for g in wb.gaps(principal="priya.raman").groups)
        outbox = ws / "outbox" / utcnow().strftime("%Y-%m-%d")
        priya = (outbox / "priya.raman.md").read_text()
        assert "## Questions we could not answer" in priya
        assert BY_ID["neg-q005"]["query"] in priya and "asked 4 time(s)" in priya
        assert BY_ID["neg-q017"]["query"] not in priya
        # tidewater's lead hears, from northwind's run, only what both may read: grace's questions
        lena = (outbox / "lena.fischer.md").read_text()
        assert BY_ID["neg-q026"]["query"] in lena and BY_ID["neg-q005"]["query"] not in lena
        assert "by grace.kim (1) in org=northwind, org=tidewater" in lena
        assert "agent.nw-coder" not in report.gaps and "grace.kim" not in report.gaps   # not leads
        # a second run says nothing new; a question asked again is told again
        assert wb.nudge(principal="priya.raman", now=utcnow() + timedelta(minutes=1)).gaps == {}
        wb.context("how much parental leave do engineers get", principal="sofia.okafor",
                   now=utcnow() + timedelta(minutes=2))
        again = wb.nudge(principal="priya.raman", now=utcnow() + timedelta(minutes=3))
        assert again.gaps == {"priya.raman": 5, "sofia.okafor": 1}   # sofia asked it herself
        assert "asked 5 time(s)" in (outbox / "priya.raman.md").read_text()
        assert wb.store.events(action="nudge.gaps")[-1]["detail"]["lead"] in again.gaps


def test_a_lead_without_stale_fragments_still_gets_a_digest_for_its_gaps(ws):
    with Workbench.open(ws) as wb:
        report = wb.nudge(principal="lena.fischer", days=36500)   # nothing is that old: gaps only
        assert report.nudged == {} and set(report.gaps) >= {"lena.fischer", "emma.novak", "raj.patel"}
        text = (ws / "outbox" / utcnow().strftime("%Y-%m-%d") / "lena.fischer.md").read_text()
        assert text.startswith("# Knowledge to check — lena.fischer") and "need a look" not in text
        assert BY_ID["neg-q017"]["query"] in text and "## Questions we could not answer" in text


def test_the_digest_lists_stale_items_before_gaps_for_an_owner_who_leads(ws):
    with Workbench.open(ws) as wb:
        wb.nudge(principal="priya.raman")
        text = (ws / "outbox" / utcnow().strftime("%Y-%m-%d") / "dan.kowalski.md").read_text()
    assert text.index("need a look") < text.index("## Questions we could not answer")
    assert BY_ID["neg-q006"]["query"] in text   # dan asked it; he leads platform-infra and sre: his own



# -- a drafted gap is a proposal until an owner publishes it (issue 28) ----------------------------------------

def test_a_drafted_gap_is_a_proposal_never_served_or_exported_until_an_owner_publishes_it(backend_config, tmp_path,
                                                                                          cli):
    from conftest import fragment_text

    from workbench.curate.gaps import PLACEHOLDER

    root, src = tmp_path / "ws", tmp_path / "in"
    Workbench.init(root, config=backend_config).close()
    src.mkdir()
    (src / "nw-note-ledger.md").write_text(fragment_text("nw-note-ledger", body="The ledger is double-entry.",
                                                         repo=None))
    assert cli("ingest", str(src), "--as", "priya.raman", workspace=root).returncode == 0
    leave, gc = "what is the parental leave policy for engineers", "how do we tune the JVM garbage collector"
    with Workbench.open(root) as wb:
        for question in (leave, gc):
            assert wb.context(question, principal="marco.bianchi").abstained
        assert {g.question for g in wb.gaps(principal="priya.raman").groups} == {leave, gc}
    # the CLI drafts group 1 (as listed): a proposal, in the asked scope, holding the placeholder
    listed = [g["question"] for g in json.loads(cli("gaps", "--as", "priya.raman", "--json",
                                                    workspace=root).stdout)["groups"]]
    r = cli("gaps", "--draft", str(listed.index(leave) + 1), "--as", "priya.raman", "--json", workspace=root)
    assert r.returncode == 0, r.stderr
    drafted = json.loads(r.stdout)
    assert drafted["status"] == "proposed" and drafted["id"].startswith("prop-") and PLACEHOLDER in drafted["body"]
    with Workbench.open(root) as wb:
        pid = drafted["id"]
        assert [g.question for g in wb.gaps(principal="priya.raman").groups] == [gc]     # no longer open
        with pytest.raises(UserError, match=f"already drafted as {pid}"):               # no second draft
            wb.draft_gap(leave, principal="priya.raman")
        assert len(wb.proposals(principal="priya.raman")) == 1
        assert pid not in [i.hit.id for i in wb.context(leave, principal="marco.bianchi", min_confidence=0).fragments]
        files, _ = wb.render_agents("agents-md", scope="org=northwind", principal="priya.raman")
        assert PLACEHOLDER not in files["AGENTS.md"] and pid not in files["AGENTS.md"]
        with pytest.raises(UserError, match="answer is not written yet"):              # the placeholder is refused
            wb.accept(pid, principal="priya.raman")
        with pytest.raises(UserError, match="placeholder"):   # nor created as a fragment by another path
            wb.add_fragment(title="Leave", body=f"Later.\n\n{PLACEHOLDER}\n", scope="org=northwind",
                            actor="priya.raman")
        published = wb.accept(pid, principal="priya.raman", body="Engineers get 20 weeks of paid parental leave.",
                              base=1)
        assert published.id == "nw-note-what-is-the-parental-leave-policy-for-engineers"
        assert [g.question for g in wb.gaps(principal="priya.raman").groups] == [gc]     # answered for good
        # a rejected draft reopens its gap
        other = wb.draft_gap(gc, principal="priya.raman")
        assert wb.gaps(principal="priya.raman").groups == ()
        wb.reject(other.id, principal="priya.raman", reason="not ours to answer")
        assert [g.question for g in wb.gaps(principal="priya.raman").groups] == [gc]


def test_a_published_draft_hides_its_gap_until_the_question_is_asked_again_without_an_answer(backend_config,
                                                                                             tmp_path):
    """Issue 29: a drafted gap leaves the list until it is asked again after the draft (published, and
    still nothing useful for the asker): then it is open again, and may be drafted again."""
    from conftest import fragment_text

    root, src = tmp_path / "ws", tmp_path / "in"
    src.mkdir()
    (src / "nw-note-ledger.md").write_text(fragment_text("nw-note-ledger", body="The ledger is double-entry.",
                                                         repo=None))
    leave = "what is the parental leave policy for engineers"
    with Workbench.init(root, config=backend_config) as wb:
        assert not wb.ingest([src], actor="kb.sync").errors
        assert wb.context(leave, principal="marco.bianchi").abstained
        first = wb.draft_gap(leave, principal="priya.raman")
        assert wb.gaps(principal="priya.raman").groups == ()          # pending: not listed
        wb.accept(first.id, principal="priya.raman", body="Engineers get 20 weeks of paid parental leave.", base=1)
        assert wb.gaps(principal="priya.raman").groups == ()          # published: answered
        with pytest.raises(UserError, match="already drafted as .* \\(published\\)"):
            wb.draft_gap(leave, principal="priya.raman")
        # asked again after it was published, and still nothing useful for this caller: open again
        assert wb.context(leave, principal="marco.bianchi", kind="runbook").abstained   # the answer is a note
        assert [g.question for g in wb.gaps(principal="priya.raman").groups] == [leave]
        second = wb.draft_gap(leave, principal="priya.raman")        # and it may be drafted again
        assert second.id != first.id and second.status == "proposed"
        assert wb.gaps(principal="priya.raman").groups == ()
