"""Hybrid search end to end on the sample corpus with the real bundled model."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import yaml

from conftest import SAMPLE
from workbench import Workbench
from workbench.errors import NotFound, PermissionDenied, UserError
from workbench.retrieval.embedder import count_tokens
from workbench.store.store import utcnow

HIT_FIELDS = {"id", "version", "title", "score", "scores", "source", "updated_at", "text", "scope", "owner", "kind"}
SCORE_FIELDS = {"lexical", "dense", "fused", "freshness", "authority", "pinned"}


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


@pytest.mark.parametrize("pipeline,lexical,dense", [("bm25", "bm25s", "numpy"), ("bm25", "duckdb-fts", "numpy"),
                                                    ("dense", "bm25s", "numpy"), ("dense", "bm25s", "duckdb"),
                                                    ("hybrid", "duckdb-fts", "duckdb")])
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
    ({"lexical": "lucene"}, "unknown lexical backend 'lucene' (valid: bm25s, duckdb-fts)"),
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
    assert set(data) >= {"trace_id", "budget_tokens", "used_tokens", "fragments", "avoid"}
    for item in data["fragments"] + data["avoid"]:
        assert {"id", "version", "title", "score", "scores", "tokens", "source", "updated_at", "text"} <= set(item)
    for args, message in ((["search", "", "--as", "grace.kim"], "query is empty"),
                          (["search", "x", "--as", "nobody"], "unknown principal"),
                          (["search", "x", "--pipeline", "nope"], "valid: hybrid, bm25, dense"),
                          (["search", "x", "--lexical", "nope"], "valid: bm25s, duckdb-fts"),
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

def test_pins_come_first_in_search_and_always_in_context(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        wb.pin("nw-pol-pci-scope", scope="org=northwind", actor="priya.raman", reason="card data rules")
        result = wb.search("card number logging redaction", principal="marco.bianchi", trace=False)
        assert result.hits[0].id == "nw-pol-pci-scope" and result.hits[0].scores["pinned"] is True
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
    assert ctx.used_tokens == sum(i.tokens for i in ctx.fragments + ctx.avoid)
    for item in ctx.fragments + ctx.avoid:
        assert item.tokens == count_tokens(item.text)
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
    assert ctx.fragments == [] and ctx.avoid == [] and ctx.used_tokens == 0
    assert "smaller than the smallest" in ctx.note


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
        untouched = before.fragments[before.pos["nw-pol-pci-scope"]]
        authority = dict(wb.store.authority()[1])
        wb.edit("nw-rb-deploy-rollback", "## Steps\nRoll back with `nwctl rollback`.", reason="shorter",
                actor="dan.kowalski")
        after = wb.search_index()
        assert after.generation != before.generation
        assert after.fragments[after.pos["nw-pol-pci-scope"]] is untouched           # reused, not reloaded
        assert after.fragments[after.pos["nw-rb-deploy-rollback"]].version == 2
        generation, same = wb.store.authority()
        assert generation == after.generation and same == authority                 # same links: same PageRank
        # archiving changes the graph: PageRank is recomputed without the archived fragment
        wb.archive("nw-rb-deploy-rollback", actor="dan.kowalski", reason="gone")
        assert "nw-rb-deploy-rollback" not in wb.search_index().pos
        assert "nw-rb-deploy-rollback" not in wb.store.authority()[1]
