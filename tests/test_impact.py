"""Edit impact (issue 15, part 2): which golden queries an edit would change, before it is saved.

On the real sample workspace: an edit that breaks a golden answer names the query with the
fragment's ranks before and after; an edit that changes nothing golden says so; ``edit --dry-run``
stores nothing and ``edit --json`` keeps its keys and adds ``impact``; an editor of another org
learns nothing (not even that the id exists), and a report names only what its reader sees; and
the incremental re-score equals a full re-rank of the saved edit, whole rankings compared."""

from __future__ import annotations

import json

import pytest

from workbench import Workbench
from workbench.errors import NotFound, UserError
from workbench.ingest.files import render_fragment
from workbench.models import utcnow
from workbench import policy

FAILOVER = "nw-rb-psp-failover"      # the answer to nw-q003 (dan.kowalski), at rank 3
OWNER = "dan.kowalski"
BROKEN = "Nothing useful here.\n"


@pytest.fixture
def wb(sample_workspace):
    with Workbench.open(sample_workspace) as bench:
        yield bench


def by_id(report):
    return {q.query_id: q for q in report.queries}


def versions(wb, fid, who=OWNER) -> int:
    return len(wb.history(fid, principal=who))


# -- what the report says ------------------------------------------------------------------------

def test_an_edit_that_breaks_a_golden_answer_names_the_query_with_its_ranks(wb):
    report = wb.edit_impact(FAILOVER, BROKEN, actor=OWNER)
    assert report.golden == str(wb.root / "golden.yaml") and report.k == 10 and report.note is None
    q = by_id(report)["nw-q003"]
    assert q.query.startswith("main acquirer is down") and q.principal == OWNER
    assert (q.rank_before, q.rank_after) == (3, None)               # it was the answer, at #3; now gone
    assert (q.first_relevant_before, q.first_relevant_after) == (3, None)
    assert (q.recall_before, q.recall_after) == (1.0, 0.0)
    assert q.breaks and q.changed and q.top3_changed
    assert FAILOVER in q.top_before and FAILOVER not in q.top_after
    assert q in report.breaks and q in report.changed
    data = report.to_dict()
    assert data["breaks"] == len(report.breaks) >= 1 and data["changed"] >= data["breaks"]
    row = next(r for r in data["touched"] if r["query_id"] == "nw-q003")
    assert row["rank_before"] == 3 and row["rank_after"] is None and row["breaks"] is True
    assert "nw-q003" in report._repr_markdown_() and "out of top 10" in "\n".join(report.lines())
    assert versions(wb, FAILOVER) == 1                            # a preview writes no version


def test_an_edit_that_changes_nothing_golden_reports_no_change(wb):
    fid = "nw-adr-0007-idempotency-keys"
    body = wb.get(fid, principal="marco.bianchi").body
    report = wb.edit_impact(fid, body + "\n\nReviewed.", actor="marco.bianchi")
    assert report.queries                                         # golden queries touch it...
    assert report.changed == [] and report.breaks == [] and report.to_dict()["changed"] == 0  # ...none changes
    assert all(not q.top3_changed and q.top_before == q.top_after for q in report.queries)


def test_without_a_golden_set_the_report_is_empty_with_a_note(wb):
    (wb.root / "golden.yaml").unlink()
    report = wb.edit_impact(FAILOVER, BROKEN, actor=OWNER)         # workbench.yaml names a file now missing
    assert report.queries == () and "impact not computed" in report.note and "golden.yaml" in report.note
    config = wb.root / "workbench.yaml"
    config.write_text("".join(line for line in config.read_text().splitlines(True)
                              if not line.startswith("golden:")))
    with Workbench.open(wb.root) as fresh:
        report = fresh.edit_impact(FAILOVER, BROKEN, actor=OWNER)
    assert report.queries == () and report.golden is None and report.note.startswith("no golden set")
    assert report.summary().startswith("impact: no golden set")


def test_an_explicit_golden_file_and_k_are_used(wb, tmp_path):
    golden = tmp_path / "one.yaml"
    golden.write_text("queries:\n- id: only\n  query: main acquirer is down, how do we route card approvals to "
                      "the backup provider\n  principal: dan.kowalski\n  relevant: [nw-rb-psp-failover]\n")
    report = wb.edit_impact(FAILOVER, BROKEN, actor=OWNER, golden=str(golden), k=3)
    assert report.golden == str(golden) and report.considered == 1 and [q.query_id for q in report.queries] == ["only"]
    assert report.queries[0].move(3) == "#3 → out of top 3"
    with pytest.raises(UserError, match="k must be"):
        wb.edit_impact(FAILOVER, BROKEN, actor=OWNER, k=0)
    with pytest.raises(UserError, match="cannot read the golden set"):   # a file asked for must be there
        wb.edit_impact(FAILOVER, BROKEN, actor=OWNER, golden=str(tmp_path / "missing.yaml"))


def test_the_edit_is_checked_as_edit_checks_it(wb):
    with pytest.raises(UserError, match="no change"):
        wb.edit_impact(FAILOVER, wb.get(FAILOVER, principal=OWNER).body, actor=OWNER)
    with pytest.raises(UserError, match="is empty"):
        wb.edit_impact(FAILOVER, "   \n", actor=OWNER)


# -- the command line ------------------------------------------------------------------------------

def test_dry_run_prints_the_impact_and_stores_nothing(sample_workspace, cli, tmp_path):
    body = tmp_path / "body.md"
    body.write_text(BROKEN)
    with Workbench.open(sample_workspace) as wb:
        generation, before = wb.store.generation(), wb.get(FAILOVER, principal=OWNER)
    out = cli("edit", FAILOVER, "--file", str(body), "--dry-run", "--as", OWNER, "--json", workspace=sample_workspace)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["dry_run"] is True and data["id"] == FAILOVER
    row = next(r for r in data["impact"]["touched"] if r["query_id"] == "nw-q003")
    assert (row["rank_before"], row["rank_after"], row["breaks"]) == (3, None, True)
    text = cli("edit", FAILOVER, "--file", str(body), "--dry-run", "--as", OWNER, workspace=sample_workspace)
    assert text.returncode == 0 and "not saved" in text.stdout and "nw-q003" in text.stdout
    with Workbench.open(sample_workspace) as wb:                 # nothing stored: no version, same generation
        after = wb.get(FAILOVER, principal=OWNER)
        assert wb.store.generation() == generation and versions(wb, FAILOVER) == 1
        assert (after.version, after.content_hash, after.body) == (before.version, before.content_hash, before.body)


def test_edit_json_keeps_its_keys_and_adds_the_impact(sample_workspace, cli, tmp_path):
    body = tmp_path / "body.md"
    body.write_text(BROKEN)
    with Workbench.open(sample_workspace) as wb:
        keys = set(wb.get(FAILOVER, principal=OWNER).to_dict())
    out = cli("edit", FAILOVER, "--file", str(body), "--reason", "shorten", "--as", OWNER, "--json",
              workspace=sample_workspace)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data) == keys | {"impact"} and data["version"] == 2
    assert any(r["query_id"] == "nw-q003" and r["breaks"] for r in data["impact"]["touched"])
    body.write_text("Back again: fail over to Halyard.\n")
    text = cli("edit", FAILOVER, "--file", str(body), "--reason", "restore", "--as", OWNER, workspace=sample_workspace)
    assert text.returncode == 0 and text.stdout.startswith(f"{FAILOVER} is now at version 3\nimpact: ")


def test_edit_without_a_reason_saves_nothing_and_computes_nothing(sample_workspace, cli, tmp_path):
    body = tmp_path / "body.md"
    body.write_text(BROKEN)
    out = cli("edit", FAILOVER, "--file", str(body), "--as", OWNER, workspace=sample_workspace)
    assert out.returncode == 2 and "a reason is required" in out.stderr
    with Workbench.open(sample_workspace) as wb:
        assert versions(wb, FAILOVER) == 1


@pytest.mark.process
def test_the_team_servers_api_serves_the_dry_run(sample_workspace):
    from server_support import start_server, stop_server

    running = start_server(sample_workspace)
    try:
        status, body, _ = running.call("POST", "/api/v1/edit", {"id": FAILOVER, "file": "-", "stdin": BROKEN,
                                                                "dry_run": True, "as": OWNER}, token=running.owner)
        assert status == 200 and body["dry_run"] is True, body
        assert any(r["query_id"] == "nw-q003" and r["breaks"] for r in body["impact"]["touched"])
        status, history, _ = running.call("GET", f"/api/v1/history?id={FAILOVER}&as={OWNER}", token=running.owner)
        assert status == 200 and [v["version"] for v in history] == [1]
    finally:
        stop_server(running)


# -- scope -------------------------------------------------------------------------------------------

def test_an_editor_of_another_org_learns_nothing(wb, sample_workspace, cli, tmp_path):
    with pytest.raises(NotFound) as seen:
        wb.edit_impact(FAILOVER, BROKEN, actor="lena.fischer")
    with pytest.raises(NotFound) as missing:
        wb.edit_impact("nw-no-such-fragment", BROKEN, actor="lena.fischer")
    assert str(seen.value) == str(missing.value).replace("nw-no-such-fragment", FAILOVER)
    body = tmp_path / "body.md"
    body.write_text(BROKEN)
    runs = [cli("edit", fid, "--file", str(body), "--dry-run", "--as", "lena.fischer", "--json",
                workspace=sample_workspace) for fid in (FAILOVER, "nw-no-such-fragment")]
    assert [r.returncode for r in runs] == [2, 2] and all(r.stdout == "" for r in runs)
    assert runs[0].stderr == runs[1].stderr.replace("nw-no-such-fragment", FAILOVER)


def test_a_report_names_only_what_its_reader_sees(wb):
    lena = wb.principal("lena.fischer")
    report = wb.edit_impact("tw-rb-oncall-paging-escalation", BROKEN, actor=lena)
    assert report.queries and report.hidden_queries == 2          # grace.kim's queries (tw-q… and a persona one): she asks for both orgs
    assert all(q.principal != "grace.kim" for q in report.queries)
    named = {fid for q in report.queries for fid in (*q.top_before, *q.top_after) if fid is not None}
    assert named and all(policy.sees(lena, wb.get(fid, principal="grace.kim")) for fid in named)
    marco = wb.principal("marco.bianchi")
    report = wb.edit_impact("nw-note-payments-glossary", BROKEN, actor=marco)
    tops = [fid for q in report.queries for fid in (*q.top_before, *q.top_after)]
    assert None in tops                                           # fragments marco may not see are counted only
    assert all(policy.sees(marco, wb.get(fid, principal="priya.raman")) for fid in tops if fid is not None)
    seen_all = wb.edit_impact("nw-note-payments-glossary", BROKEN, actor="priya.raman")
    assert None not in [fid for q in seen_all.queries for fid in (*q.top_before, *q.top_after)]


# -- incremental == a full re-rank of the saved edit ------------------------------------------------------

def _file(f, **subs) -> str:
    text = render_fragment(f)
    for old, new in subs.items():
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


EDITS = {
    "rewrite": (OWNER, lambda f: BROKEN),
    "boost": (OWNER, lambda f: f.body + "\n\nWhen the acquirer's report never arrived in the SFTP inbox, fail over."),
    "title-and-tags": (OWNER, lambda f: _file(f, **{"tags: [psp, failover, payments, availability]":
                                                    "tags: [sftp, settlement]",
                                                    "PSP outage": "Settlement file outage"})),
    "reassign": ("priya.raman", lambda f: _file(f, **{"repo: payments-api": "repo: ledger",
                                                      "owner: dan.kowalski": "owner: sofia.okafor"})),
    "links-and-supersedes": (OWNER, lambda f: _file(f, **{"links: [": "supersedes: [nw-note-psp-landscape]\n"
                                                          "links: [nw-adr-0007-idempotency-keys, "})),
    "archive": (OWNER, lambda f: _file(f, **{"status: active": "status: archived"})),
}


def _full_rankings(wb, now) -> dict[str, list[str]]:
    """Every golden query ranked by search's own pipeline over the current index, as eval ranks it."""
    from workbench.retrieval.evaluate import load_golden, preset
    from workbench.retrieval.index import text_hash
    from workbench.retrieval.pipeline import rank

    queries = load_golden(wb.golden_path())
    index, settings = wb.search_index(), preset(wb.settings(), "hybrid")
    vectors = wb.index.embeddings([text_hash(q["query"]) for q in queries])   # the vectors impact keeps
    return {q["id"]: [index.ids[i] for i in rank(index, q["query"], wb.principal(q["principal"]), settings, now=now,
                                                  query_vector=vectors[text_hash(q["query"])]).order]
            for q in queries}


@pytest.mark.parametrize("edit", list(EDITS))
def test_the_incremental_rankings_equal_a_full_re_rank_of_the_saved_edit(wb, edit):
    actor, make = EDITS[edit]
    text = make(wb.get(FAILOVER, principal=actor))
    now = utcnow()
    predicted = wb.impact.rankings(FAILOVER, text, actor=actor, now=now)
    report = wb.edit_impact(FAILOVER, text, actor=actor, now=now)
    before = _full_rankings(wb, now)
    visible = {f.id for f in wb.list(principal=actor)}
    wb.edit(FAILOVER, text, reason=edit, actor=actor)
    after = _full_rankings(wb, now)                      # the saved edit is newer than ``now``: age 0, as predicted
    assert len(predicted) >= 70
    for qid, (ranked_before, ranked_after) in predicted.items():  # whole rankings, 300 deep, exactly (no tie slack)
        assert ranked_before == before[qid], qid
        assert ranked_after == after[qid], qid
    for qid in set(before) - set(predicted):             # askers who never see it: their rankings do not move
        assert FAILOVER not in before[qid] + after[qid] and before[qid] == after[qid], qid
    for q in report.queries:                             # and the report is read off those rankings
        assert q.rank_before == (before[q.query_id][:10].index(FAILOVER) + 1 if FAILOVER in before[q.query_id][:10]
                                 else None)
        assert q.rank_after == (after[q.query_id][:10].index(FAILOVER) + 1 if FAILOVER in after[q.query_id][:10]
                                else None)
        for top, full in ((q.top_before, before[q.query_id][:3]), (q.top_after, after[q.query_id][:3])):
            assert list(top) == [fid if fid in visible else None for fid in full]   # unseen ones counted only
    touched = {qid for qid in predicted if FAILOVER in before[qid][:10] + after[qid][:10]}
    assert touched and len(report.queries) + report.hidden_queries == len(touched)
    assert {q.query_id for q in report.queries} <= touched and report.considered == len(predicted)


def test_the_cache_follows_the_index_generation(wb):
    """After a save, the next preview ranks against the new generation (cosines carried over for the
    rows that did not change), and still equals a full re-rank."""
    first = wb.edit_impact(FAILOVER, BROKEN, actor=OWNER)
    state = wb.impact._state
    wb.edit(FAILOVER, BROKEN, reason="shorten", actor=OWNER)
    back = wb.get(FAILOVER, principal=OWNER).body + "\n\nFail over from Corvid to Halyard."
    now = utcnow()
    second = wb.edit_impact(FAILOVER, back, actor=OWNER, now=now)
    assert wb.impact._state is not state and second.generation > first.generation
    predicted = wb.impact.rankings(FAILOVER, back, actor=OWNER, now=now)
    full = _full_rankings(wb, now)
    assert all(ranked_before == full[qid] for qid, (ranked_before, _) in predicted.items())
    q = by_id(second).get("nw-q003")
    assert q is None or q.rank_before is None                     # the saved edit is what it starts from


def test_the_report_renders_for_notebooks_and_escapes_what_a_golden_file_says():
    from workbench.service.impact_report import ImpactReport, QueryImpact

    hostile = "<script>alert(1)</script> | a | b"
    q = QueryImpact(query_id="q1", query=hostile, principal="dan.kowalski", rank_before=1, rank_after=None,
                    top_before=("f", None, "g"), top_after=("g", None, "h"), top3_changed=True,
                    first_relevant_before=1, first_relevant_after=None, recall_before=1.0, recall_after=0.0)
    report = ImpactReport("f", "golden.yaml", 10, considered=3, queries=(q,), hidden_queries=1, hidden_changed=1)
    md = report._repr_markdown_()
    assert "<script>" not in md and "&lt;script&gt;" in md and "\\| a \\| b" in md and "(hidden)" in md
    assert repr(report) == "<ImpactReport f: 2 touched, 2 changed>"
    assert report.to_dict()["changed"] == 2 and report.to_dict()["touched"][0]["top_before"] == ["f", None, "g"]
    assert report.summary() == ("impact: 2 of 3 golden queries touch f; 2 would change, 1 would lose their answer "
                                "(1 not shown to you)")


def test_the_bm25_re_score_of_one_edited_document_equals_a_rebuild():
    """rank/impact.py alone: random documents and masks, one document's tokens replaced (and its
    visibility flipped); BM25 from the cached postings equals a matrix rebuilt with the edit, bitwise."""
    import numpy as np

    from workbench.rank import impact as maths
    from workbench.rank.bm25 import BM25Matrix

    rng = np.random.default_rng(7)
    vocab = [f"t{i}" for i in range(30)]
    for trial in range(40):
        n = int(rng.integers(2, 40))
        docs = [list(rng.choice(vocab, size=int(rng.integers(0, 25)))) for _ in range(n)]
        e = int(rng.integers(0, n))
        edited_tokens = list(rng.choice(vocab + ["new"], size=int(rng.integers(0, 25))))
        ids = {t: i for i, t in enumerate(vocab + ["new"])}
        before = BM25Matrix([np.array([ids[t] for t in d], dtype=np.int32) for d in docs], len(ids))
        after_docs = [*docs[:e], edited_tokens, *docs[e + 1:]]
        after = BM25Matrix([np.array([ids[t] for t in d], dtype=np.int32) for d in after_docs], len(ids))
        query_tokens = tuple(rng.choice(vocab + ["new"], size=int(rng.integers(1, 6))))
        mask = rng.random(n) < 0.7
        mask_after = mask.copy()
        mask_after[e] = bool(rng.random() < 0.5) if trial % 2 else mask[e]
        query = maths.Query(tokens=query_tokens, identifiers=(), cosines=np.zeros(n, dtype=np.float32),
                            named=frozenset(), postings={t: before.postings(ids[t]) for t in set(query_tokens)})
        lengths = before.lengths.copy()
        lengths[e] = len(edited_tokens)
        caller = maths.Caller(mask=mask_after, lengths=lengths, authority=np.zeros(n), superseded=np.zeros(0, int))
        edited = maths.Edited(position=e, tf={t: edited_tokens.count(t) for t in set(edited_tokens)}, cosine={})
        got = maths.lexical_scores(query, caller, edited)
        want = after.scores([ids[t] for t in query_tokens], mask_after)
        assert got.dtype == want.dtype and np.array_equal(got, want), trial
        unchanged = maths.Caller(mask=mask, lengths=before.lengths, authority=np.zeros(n), superseded=np.zeros(0, int))
        want = before.scores([ids[t] for t in query_tokens], mask)
        assert np.array_equal(maths.lexical_scores(query, unchanged), want)
