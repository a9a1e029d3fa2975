"""Hybrid search end to end on the sample corpus with the real bundled model."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SAMPLE, examples
from workbench import Workbench
from workbench.errors import NotFound, PermissionDenied, UserError
from workbench.models import utcnow
from workbench.retrieval.embedder import count_tokens

HIT_FIELDS = {"id", "version", "title", "score", "scores", "source", "updated_at", "text", "scope", "owner", "kind",
              "confidence", "superseded_by"}
SCORE_FIELDS = {"lexical", "dense", "fused", "freshness", "authority", "pinned", "coverage"}


@pytest.fixture(scope="module")
def sample_wb(sample_workspace_template, tmp_path_factory):
    """This module's own copy of the sample workspace: its search and context calls store traces
    (usage), which must not reach the shared template other modules copy (the inbox ranks by use)."""
    import shutil

    target = tmp_path_factory.mktemp("private-sample") / "ws"
    shutil.copytree(sample_workspace_template, target)
    with Workbench.open(target) as bench:
        yield bench


def golden():
    return yaml.safe_load((SAMPLE / "golden.yaml").read_text())["queries"]


def test_hits_carry_the_documented_fields(sample_wb):
    result = sample_wb.search("how do we roll back a bad deploy", principal="dan.kowalski", trace=False)
    data = result.to_dict()
    assert set(data) >= {"trace_id", "hits", "avoid"} and len(data["hits"]) == 10
    for hit in data["hits"]:
        assert HIT_FIELDS <= set(hit) and SCORE_FIELDS <= set(hit["scores"])
    scores = [h["score"] for h in data["hits"]]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("q", [q for q in golden() if q["type"] == "identifier"][:6], ids=lambda q: q["id"])
def test_exact_identifiers_are_found(sample_wb, q):
    hits = sample_wb.search(q["query"], principal=q["principal"], trace=False)
    top = [h.id for h in hits.hits[:5]] + [h.id for h in hits.avoid]
    assert set(q["relevant"]) & set(top), (q["query"], top)


def test_anti_patterns_go_to_avoid_never_to_hits(sample_wb):
    result = sample_wb.search("can I log the full card number while debugging", principal="marco.bianchi",
                              trace=False)
    assert "nw-ap-logging-full-pan" in [h.id for h in result.avoid]
    assert all(h.fragment.kind != "anti-pattern" for h in result.hits)
    assert all(h.fragment.kind == "anti-pattern" for h in result.avoid)


FTS = pytest.mark.duckdb_only("the duckdb-fts lexical backend")


@pytest.mark.parametrize("pipeline,lexical,dense", [("bm25", "bm25", "numpy"),
                                                    pytest.param("bm25", "duckdb-fts", "numpy", marks=FTS),
                                                    ("dense", "bm25", "numpy"), ("dense", "bm25s", "duckdb"),
                                                    pytest.param("hybrid", "duckdb-fts", "duckdb", marks=FTS)])
def test_every_backend_finds_the_obvious_answer(sample_wb, pipeline, lexical, dense):
    result = sample_wb.search("double-entry ledger journal postings must balance", principal="sofia.okafor",
                              pipeline=pipeline, lexical=lexical, dense=dense, trace=False)
    assert "nw-adr-0001-double-entry-ledger" in [h.id for h in result.hits[:3]]


def test_dense_paths_agree(sample_wb):
    a = sample_wb.search("pgbouncer pool exhausted", principal="grace.kim", pipeline="dense", trace=False)
    b = sample_wb.search("pgbouncer pool exhausted", principal="grace.kim", pipeline="dense", dense="duckdb",
                         trace=False)
    assert [h.id for h in a.hits] == [h.id for h in b.hits]
    assert [round(h.scores["dense"], 4) for h in a.hits] == [round(h.scores["dense"], 4) for h in b.hits]


def test_k_results_come_back_whenever_k_visible_fragments_match(sample_wb):
    # agent.nw-coder sees a small slice; the filter runs before the top-k cut
    visible = {f.id for f in sample_wb.list(principal="agent.nw-coder")}
    for k in (5, 25):
        result = sample_wb.search("payments", principal="agent.nw-coder", k=k, pipeline="dense", trace=False)
        assert len(result.hits) == k
        assert {h.id for h in result.hits + result.avoid} <= visible


def test_min_score_drops_weak_candidates(sample_wb):
    loose = sample_wb.search("kafka consumer lag", principal="lena.fischer", pipeline="dense", k=50, trace=False)
    strict = sample_wb.search("kafka consumer lag", principal="lena.fischer", pipeline="dense", k=50,
                              min_score=0.4, trace=False)
    assert 0 < len(strict.hits) < len(loose.hits)
    assert all(h.scores["dense"] >= 0.4 for h in strict.hits + strict.avoid)


@pytest.mark.parametrize("kwargs,message", [
    ({"pipeline": "magic"}, "unknown pipeline 'magic' (valid: hybrid, bm25, dense)"),
    ({"lexical": "lucene"}, "unknown lexical backend 'lucene' (valid: bm25, duckdb-fts)"),
    ({"fusion": "borda"}, "unknown fusion 'borda'"),
    ({"principal": "mallory"}, "unknown principal 'mallory'"),
])
def test_bad_search_input(sample_wb, kwargs, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sample_wb.search("anything", **{"principal": "grace.kim", **kwargs})
    with pytest.raises(UserError, match="query is empty"):
        sample_wb.search("   ", principal="grace.kim")


def test_cli_search_and_context_json_contracts(sample_workspace, cli):
    r = cli("search", "deploy rollback", "--as", "dan.kowalski", "--json", "-k", "3", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["trace_id"].startswith("tr_") and len(data["hits"]) == 3
    r = cli("context", "deploy rollback", "--as", "dan.kowalski", "--json", "--budget", "1200",
            workspace=sample_workspace)
    data = json.loads(r.stdout)
    assert set(data) >= {"trace_id", "budget_tokens", "used_tokens", "fragments", "avoid", "min_confidence",
                         "abstained"}
    for item in data["fragments"] + data["avoid"]:
        assert {"id", "version", "title", "score", "scores", "tokens", "source", "updated_at", "text", "confidence",
                "superseded_by"} <= set(item)
    for args, message in ((["search", "", "--as", "grace.kim"], "query is empty"),
                          (["search", "x", "--as", "nobody"], "unknown principal"),
                          (["search", "x", "--pipeline", "nope"], "valid: hybrid, bm25, dense"),
                          (["search", "x", "--lexical", "nope"], "valid: bm25, duckdb-fts"),
                          (["context", "x", "--budget", "-5"], "budget")):
        r = cli(*args, workspace=sample_workspace)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)


# -- embeddings: never embed unchanged text twice -----------------------------------------

def test_embeddings_are_cached_by_text_hash(sample_workspace, tmp_path):
    with Workbench.open(sample_workspace) as wb:
        assert wb.warm()["embedded"] == 0           # the template already embedded everything
        out = tmp_path / "files"
        wb.export_files(out)
        wb.ingest([out])                             # re-ingest: unchanged
        assert wb.warm()["embedded"] == 0
        wb.edit("nw-rb-deploy-rollback", "## Steps\nRoll back with `nwctl rollback`.", reason="shorter",
                actor="dan.kowalski")
        generation = wb.store.generation()
        assert wb.warm()["embedded"] == 1            # exactly the edited text
        assert wb.search_index().generation == generation
        hit = wb.search("nwctl rollback", principal="dan.kowalski", trace=False).hits[0]
        assert hit.id == "nw-rb-deploy-rollback" and hit.fragment.version == 2


# -- pins ----------------------------------------------------------------------------------

def test_pins_come_first_in_search_when_relevant_and_always_in_context(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        wb.pin("nw-pol-pci-scope", scope="org=northwind", actor="priya.raman", reason="card data rules")
        result = wb.search("where may cardholder data be stored", principal="marco.bianchi", trace=False)
        assert result.hits[0].id == "nw-pol-pci-scope" and result.hits[0].scores["pinned"] is True
        unrelated = wb.search("kafka consumer lag", principal="marco.bianchi", trace=False).hits
        assert unrelated[0].id == "nw-rb-kafka-consumer-lag"  # the pin ranks by its own score here
        assert [h.scores["pinned"] for h in unrelated if h.id == "nw-pol-pci-scope"] in ([], [True])
        ctx = wb.context("kafka consumer lag", principal="marco.bianchi", budget=3200)
        assert ctx.fragments[0].hit.id == "nw-pol-pci-scope" and ctx.fragments[0].hit.scores["pinned"]
        # a tidewater principal never gets a northwind pin
        other = wb.context("kafka consumer lag", principal="raj.patel", budget=3200)
        assert "nw-pol-pci-scope" not in [i.hit.id for i in other.fragments]
        # a pin in a repo scope does not reach agents working in another repo
        wb.pin("nw-rb-ledger-imbalance", scope="org=northwind,repo=ledger", actor="sofia.okafor")
        here = wb.context("kafka", principal="priya.raman", scope="org=northwind,repo=ledger")
        there = wb.context("kafka", principal="priya.raman", scope="org=northwind,repo=payments-api")
        assert "nw-rb-ledger-imbalance" in [i.hit.id for i in here.fragments if i.hit.scores["pinned"]]
        assert "nw-rb-ledger-imbalance" not in [i.hit.id for i in there.fragments]
        wb.unpin("nw-pol-pci-scope", scope="org=northwind", actor="priya.raman")
        after = wb.search("card number logging redaction", principal="marco.bianchi", trace=False).hits
        assert [h.scores["pinned"] for h in after if h.id == "nw-pol-pci-scope"] in ([], [False])


TINY = {  # id: (title, body): a corpus small enough to build on each backend in seconds
    "nw-rb-kafka-lag": ("Kafka consumer lag runbook", ("When the Kafka consumer lag alert fires, check the consumer "
                        "group offsets, scale the consumers and look for a stuck partition.")),
    "nw-note-kafka-topics": ("Kafka topics we run", ("The payments Kafka topics, their partitions, retention and "
                             "which consumer groups read them.")),
    "nw-rb-db-failover": ("Postgres failover", ("Promote the replica, repoint pgbouncer and check replication lag "
                          "before reopening writes.")),
    "nw-pol-office-plants": ("Office plant watering rota", ("Water the ferns on Mondays and the cactus once a "
                             "month; the rota hangs in the kitchen.")),
    "nw-adr-retries": ("Client retries with backoff", ("Clients retry idempotent calls with exponential backoff "
                       "and jitter, at most five times.")),
}


def test_an_unrelated_pin_is_not_ranked_first_in_search_yet_reaches_agents(backend_config, tmp_path):
    from conftest import write_fragment

    for fid, (title, body) in TINY.items():
        write_fragment(tmp_path / "src", fid, title=title, body=body)
    with Workbench.init(tmp_path / "ws", config=backend_config) as wb:
        assert not wb.ingest([tmp_path / "src"], actor="kb.sync").errors
        for fid in ("nw-pol-office-plants", "nw-note-kafka-topics"):  # unrelated to the query; related to it
            wb.pin(fid, scope="org=northwind", actor="priya.raman", reason="always")
        floor = wb.confidence_floor()
        hits = wb.search("kafka consumer lag", principal="marco.bianchi", trace=False).hits
        ranks = {h.id: h for h in hits}
        plants, topics, lag = ranks["nw-pol-office-plants"], ranks["nw-note-kafka-topics"], ranks["nw-rb-kafka-lag"]
        assert plants.scores["pinned"] and plants.confidence < floor
        assert plants.rank > lag.rank and plants.rank > topics.rank  # below every relevant hit
        assert topics.confidence >= floor and topics.rank == 1   # a relevant pin still lifts its hit to the top
        assert topics.score < lag.score                           # (it would be second by its own score)
        floor_hits = wb.search("kafka consumer lag", principal="marco.bianchi", trace=False, min_confidence=floor).hits
        assert "nw-pol-office-plants" not in [h.id for h in floor_hits]  # nor exempt from a floor the caller sets
        lexical = wb.search("kafka consumer lag", principal="marco.bianchi", trace=False, pipeline="bm25",
                            calibrate=False).hits  # no model: relevant means a lexical match
        assert lexical[0].id == "nw-note-kafka-topics" and "nw-pol-office-plants" not in [h.id for h in lexical]
        served = [i.hit.id for i in wb.context("kafka consumer lag", principal="marco.bianchi").fragments]
        assert served[:2] == ["nw-pol-office-plants", "nw-note-kafka-topics"]  # context: every pin, first


def test_expired_pins_stop_applying(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        wb.pin("nw-pol-pci-scope", scope="org=northwind", actor="priya.raman",
               until=(utcnow() + timedelta(days=1)).date().isoformat())
        assert wb.context("kafka", principal="marco.bianchi").fragments[0].hit.id == "nw-pol-pci-scope"
        later = utcnow() + timedelta(days=3)
        assert "nw-pol-pci-scope" not in [i.hit.id for i in wb.context("kafka", principal="marco.bianchi",
                                                                           now=later).fragments[:1]]


def test_only_leads_of_the_scope_may_pin(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        with pytest.raises(PermissionDenied, match="not a tech lead of org=northwind"):
            wb.pin("nw-pol-pci-scope", scope="org=northwind", actor="marco.bianchi")
        with pytest.raises(UserError, match="does not apply in"):
            wb.pin("nw-rb-ledger-imbalance", scope="org=northwind,repo=payments-api", actor="marco.bianchi")
        with pytest.raises(NotFound):
            wb.pin("tw-rb-oncall-paging-escalation", scope="org=northwind", actor="priya.raman")
        assert wb.pins(principal="priya.raman") == []
        assert [e["action"] for e in wb.store.events() if e["action"] in ("pin", "unpin")] == []


# -- context ---------------------------------------------------------------------------------

def test_context_fits_the_budget_in_order_with_model_token_counts(sample_wb):
    ctx = sample_wb.context("idempotency keys and retries for payment requests", principal="marco.bianchi",
                            budget=1500)
    assert 0 < ctx.used_tokens <= 1500
    # what an agent receives is what was counted: items with their citations, separators, the avoid heading
    from workbench.retrieval.compose import SEPARATOR

    assert 0 <= ctx.used_tokens - count_tokens(ctx.text()) <= count_tokens(SEPARATOR)
    for item in ctx.fragments + ctx.avoid:
        assert item.tokens == count_tokens(item.text)
        assert item.text.endswith(f"(source: {item.hit.id}@v{item.hit.fragment.version})")
    assert ctx.avoid and all(i.hit.fragment.kind == "anti-pattern" for i in ctx.avoid)
    text = ctx.text()
    assert text.index(ctx.fragments[0].text) < text.index("# Avoid")
    for item in ctx.fragments:
        if not item.partial:  # a body is served verbatim, never paraphrased
            assert item.hit.fragment.body.strip() in item.text


def test_partial_fragments_keep_their_heading_path(sample_wb):
    ctx = sample_wb.context("idempotency keys", principal="marco.bianchi", budget=250)
    partial = [i for i in ctx.fragments if i.partial]
    for item in partial:
        assert all(s.startswith(item.hit.fragment.title) for s in item.sections)
        assert f"[{item.sections[0]}]" in item.text


def test_a_budget_smaller_than_any_fragment_returns_nothing_with_a_note(sample_wb):
    ctx = sample_wb.context("idempotency keys", principal="marco.bianchi", budget=5)
    assert ctx.fragments == [] and ctx.avoid == []
    assert "smaller than the smallest" in ctx.note   # the metadata explains; the text served is counted
    assert ctx.used_tokens == sample_wb.index.tokens.count(ctx.text()) <= 5


@pytest.mark.parametrize("budget", [0, 1, 10, 30])
@pytest.mark.parametrize("query", ["idempotency keys", "parental leave policy for engineering staff"])
def test_the_context_never_exceeds_even_a_tiny_budget_and_counts_its_notice(sample_wb, budget, query):
    """Issue 28: a budget of 1 or 10 tokens returned a 20-token notice with used_tokens=0."""
    ctx = sample_wb.context(query, principal="marco.bianchi", budget=budget)
    served = sample_wb.index.tokens.count(ctx.text())
    assert served == ctx.used_tokens <= budget, (ctx.text(), ctx.used_tokens)
    assert ctx.to_dict()["used_tokens"] == served
    if budget >= 30 and not ctx.fragments and not ctx.avoid:   # room for the whole notice: told why
        assert ctx.text() == ctx.note and ctx.note


# -- traces ----------------------------------------------------------------------------------

def test_trace_replays_exactly_what_was_served_after_later_edits(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        ctx = wb.context("roll back a bad deploy", principal="dan.kowalski", budget=2000)
        served = [(i.hit.id, i.hit.fragment.version, i.text) for i in ctx.fragments + ctx.avoid]
        first = ctx.fragments[0].hit.id
        wb.edit(first, "Rewritten later.", reason="rewrite", actor="dan.kowalski")
        trace = wb.trace(ctx.trace_id, principal="dan.kowalski")
        assert [(i["id"], i["version"], i["text"]) for i in trace["served"]] == served
        assert trace["query"] == "roll back a bad deploy" and trace["principal"] == "dan.kowalski"
        assert trace["settings"]["model"] == "all-MiniLM-L6-v2" and trace["settings"]["chunker"]
        # other principals see only what their scope allows
        with pytest.raises(NotFound):
            wb.trace(ctx.trace_id, principal="raj.patel")
        with pytest.raises(NotFound):
            wb.trace("tr_nope", principal="dan.kowalski")


def test_cli_trace(sample_workspace, cli):
    r = cli("search", "pgbouncer connection pool", "-k", "30", "--as", "grace.kim", "--json",
            workspace=sample_workspace)
    trace_id = json.loads(r.stdout)["trace_id"]
    r = cli("trace", trace_id, "--as", "grace.kim", "--json", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["trace_id"] == trace_id and data["served"] and data["hidden"] == 0
    # a trace is its caller's alone: anyone else is answered exactly as for an id that does not exist
    other = cli("trace", trace_id, "--as", "marco.bianchi", "--json", workspace=sample_workspace)
    made_up = cli("trace", "tr_20261130000000_deadbeef", "--as", "marco.bianchi", workspace=sample_workspace)
    assert other.returncode == made_up.returncode == 2 and other.stdout == ""
    assert other.stderr.replace(trace_id, "ID") == made_up.stderr.replace("tr_20261130000000_deadbeef", "ID")


def test_an_edit_refreshes_only_what_changed(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        before = wb.search_index()
        base = before.lexical("bm25").base
        vectors = before.vectors()
        authority = dict(wb.store.authority()[1])
        wb.edit("nw-rb-deploy-rollback", "## Steps\nRoll back with `nwctl rollback`.", reason="shorter",
                actor="dan.kowalski")
        reads, real = [], wb.store.fragments
        wb.store.fragments = lambda **kw: reads.append(kw.get("ids")) or real(**kw)
        try:
            after = wb.search_index()
        finally:
            wb.store.fragments = real
        assert after.generation != before.generation
        assert reads == [["nw-rb-deploy-rollback"]]                                 # only the edited one is read
        assert after.fragment(after.pos["nw-rb-deploy-rollback"]).version == 2
        bm25 = after.lexical("bm25")
        assert bm25.base is base and bm25.delta_size == 1                           # a delta, not a rebuild
        kept = after.pos["nw-pol-pci-scope"]
        assert np.array_equal(after.vectors()[kept],
                                                                     vectors[before.pos["nw-pol-pci-scope"]])
        generation, same = wb.store.authority()
        assert generation == after.generation and same == authority                 # same links: same PageRank
        # archiving changes the graph: PageRank is recomputed without the archived fragment
        wb.archive("nw-rb-deploy-rollback", actor="dan.kowalski", reason="gone")
        assert "nw-rb-deploy-rollback" not in wb.search_index().pos
        assert "nw-rb-deploy-rollback" not in wb.store.authority()[1]


# -- filters and the per-query dense weight ------------------------------------------------------

def test_filters_narrow_the_candidates_before_the_k_cut(sample_wb):
    from datetime import date

    nw = [f for f in sample_wb.list(principal="priya.raman") if f.kind != "anti-pattern"]
    cases = [({"kind": "runbook"}, lambda f: f.kind == "runbook"),
             ({"kind": ["policy", "decision"]}, lambda f: f.kind in ("policy", "decision")),
             ({"tag": "payments"}, lambda f: "payments" in f.tags),
             ({"tag": ["kafka", "ledger"]}, lambda f: {"kafka", "ledger"} & set(f.tags)),
             ({"owner": "dan.kowalski"}, lambda f: f.owner == "dan.kowalski"),
             ({"updated_since": "2026-06-01"}, lambda f: f.updated_at.date() >= date(2026, 6, 1)),
             ({"updated_since": date(2026, 6, 1), "kind": "decision"},
              lambda f: f.kind == "decision" and f.updated_at.date() >= date(2026, 6, 1))]
    for filters, keep in cases:
        matching = {f.id for f in nw if keep(f)}
        assert matching, filters
        for k in (3, 40):
            result = sample_wb.search("kafka consumer lag", principal="priya.raman", pipeline="dense", k=k,
                                      trace=False, **filters)
            ids = {h.id for h in result.hits}
            assert ids <= matching, filters
            assert len(result.hits) == min(k, len(matching)), (filters, k)   # k whenever k match
        ctx = sample_wb.context("kafka consumer lag", principal="priya.raman", min_confidence=0.0,
                                budget=100_000, **filters)
        assert {i.hit.id for i in ctx.fragments} <= matching


def test_filters_do_not_change_the_statistics_a_score_is_made_of(sample_wb):
    """BM25 (N, df, avgdl) and authority stay over what the caller sees: a fragment's lexical
    score and authority are the same with or without a filter."""
    plain = sample_wb.search("pgbouncer pool exhausted", principal="grace.kim", k=60, trace=False)
    narrow = sample_wb.search("pgbouncer pool exhausted", principal="grace.kim", k=60, trace=False, kind="runbook")
    before = {h.id: h.scores for h in plain.hits}
    assert narrow.hits and all(h.fragment.kind == "runbook" for h in narrow.hits)
    for h in narrow.hits:
        if h.id in before:
            assert h.scores["lexical"] == before[h.id]["lexical"]
            assert h.scores["authority"] == before[h.id]["authority"]
            assert h.scores["dense"] == before[h.id]["dense"]


def test_dense_weight_is_applied_and_traced(sample_wb):
    result = sample_wb.search("pgbouncer pool exhausted", principal="grace.kim", dense_weight=1.0)
    for h in result.hits:
        assert h.scores["fused"] == pytest.approx(h.scores["dense"])     # all dense
    trace = sample_wb.trace(result.trace_id, principal="grace.kim")
    assert trace["settings"]["dense_weight"] == 1.0 and trace["settings"]["filters"] is None
    lexical = sample_wb.search("pgbouncer pool exhausted", principal="grace.kim", dense_weight=0.0, kind="runbook")
    top = max(h.scores["lexical"] for h in lexical.hits)
    for h in lexical.hits:
        assert h.scores["fused"] == pytest.approx(h.scores["lexical"] / top)
    trace = sample_wb.trace(lexical.trace_id, principal="grace.kim")
    assert trace["settings"]["dense_weight"] == 0.0 and trace["settings"]["filters"]["kind"] == ["runbook"]


@pytest.mark.parametrize("kwargs,message", [
    ({"kind": "memo"}, "unknown kind 'memo' (valid: decision"),
    ({"kind": ["runbook", ""]}, "--kind must be a non-empty name"),
    ({"owner": "mallory"}, "unknown owner 'mallory'"),
    ({"updated_since": "last tuesday"}, "the date must be written YYYY-MM-DD"),
    ({"updated_since": "2026-02-30"}, "the date must be written YYYY-MM-DD"),
    ({"dense_weight": 1.5}, "the dense weight must be a number from 0 to 1"),
    ({"dense_weight": "high"}, "the dense weight must be a number from 0 to 1"),
    ({"dense_weight": 0.5, "fusion": "rrf"}, "the dense weight applies to the hybrid pipeline with weighted fusion"),
    ({"dense_weight": 0.5, "pipeline": "bm25"}, "the dense weight applies to the hybrid pipeline"),
])
def test_bad_filters_are_user_errors(sample_wb, kwargs, message):
    with pytest.raises(UserError, match=re.escape(message)):
        sample_wb.search("anything", principal="grace.kim", **kwargs)
    if "fusion" not in kwargs:
        with pytest.raises(UserError, match=re.escape(message)):
            sample_wb.context("anything", principal="grace.kim", **kwargs)


def test_cli_filters(sample_workspace, cli):
    r = cli("search", "kafka consumer lag", "--as", "priya.raman", "--kind", "runbook", "--kind", "decision",
            "--updated-since", "2025-01-01", "--dense-weight", "0.5", "--json", "-k", "5", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)["hits"]
    assert hits and all(h["kind"] in ("runbook", "decision") for h in hits)
    assert all(0 <= h["confidence"] <= 1 and 0 <= h["score"] <= 1 for h in hits)
    r = cli("context", "kafka consumer lag", "--as", "priya.raman", "--tag", "kafka", "--owner", "marco.bianchi",
            "--min-confidence", "0", "--json", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    for args, message in ((["--kind", "memo"], "unknown kind"), (["--owner", "nobody"], "unknown owner"),
                          (["--updated-since", "soon"], "YYYY-MM-DD"), (["--dense-weight", "7"], "from 0 to 1"),
                          (["--dense-weight", "x"], "invalid float"), (["--min-confidence", "2"], "from 0 to 1")):
        for command in ("search", "context"):
            r = cli(command, "kafka", "--as", "priya.raman", *args, workspace=sample_workspace)
            assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (command, args, r.stderr)


FILTER_TAGS = ["payments", "kafka", "ledger", "postgres", "pgbouncer", "deploy", "incident", "security", "dispatch"]
FILTER_OWNERS = ["marco.bianchi", "dan.kowalski", "priya.raman", "raj.patel", "lena.fischer", "emma.novak"]


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(who=st.sampled_from(["grace.kim", "marco.bianchi", "agent.tw-ops", "hannah.lee"]),
       kinds=st.lists(st.sampled_from(["decision", "runbook", "code", "policy", "note", "session-summary"]),
                      unique=True, max_size=3),
       tags=st.lists(st.sampled_from(FILTER_TAGS), unique=True, max_size=3),
       owners=st.lists(st.sampled_from(FILTER_OWNERS), unique=True, max_size=3),
       since=st.sampled_from([None, "2025-06-01", "2026-03-01"]), k=st.integers(1, 30))
def test_filtered_search_returns_k_whenever_k_match(sample_wb, who, kinds, tags, owners, since, k):
    from datetime import date

    def keep(f):
        return (f.kind != "anti-pattern" and (not kinds or f.kind in kinds) and (not tags or set(tags) & set(f.tags))
                and (not owners or f.owner in owners)
                and (since is None or f.updated_at.date() >= date.fromisoformat(since)))

    matching = {f.id for f in sample_wb.list(principal=who) if keep(f)}
    result = sample_wb.search("incident response for the payments database", principal=who, pipeline="dense", k=k,
                              trace=False, kind=kinds or None, tag=tags or None, owner=owners or None,
                              updated_since=since)
    assert {h.id for h in result.hits} <= matching
    assert len(result.hits) == min(k, len(matching))


def test_a_query_is_encoded_on_one_thread_and_batches_keep_theirs():
    import torch

    from workbench.retrieval.embedder import Embedder

    embedder = Embedder("torch")
    original = torch.get_num_threads()
    torch.set_num_threads(2)  # as torch sets itself on a 2-core machine
    before = torch.get_num_threads()
    seen = []
    real = torch.nn.functional.normalize

    def spy(*args, **kwargs):  # called inside the query's forward pass
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)
    torch.nn.functional.normalize = spy
    try:
        query = embedder.encode_query("customer charged twice on retry")
    finally:
        torch.nn.functional.normalize = real
    assert seen and set(seen) == {1} and torch.get_num_threads() == before == 2
    torch.set_num_threads(original)
    batch = embedder.encode(["customer charged twice on retry"])[0]
    assert float(query @ batch) > 0.99999
