"""Evaluation: golden set over the workspace, BEIR directories (cached embeddings), compare."""

from __future__ import annotations

import json

import pytest

from conftest import SAMPLE
from workbench import Workbench
from workbench.errors import UserError

METRICS = {"ndcg@10", "recall@10", "recall@100", "mrr@10", "queries"}


def test_golden_targets_hold(sample_wb):
    report = sample_wb.eval_golden(str(SAMPLE / "golden.yaml"), pipelines=["bm25", "dense", "hybrid"])
    for name in ("bm25", "dense", "hybrid"):
        assert METRICS <= set(report[name]) and report[name]["queries"] >= 80
    assert report["hybrid"]["recall@10"] >= 0.95
    assert report["hybrid"]["abstention"] >= 0.8 and report["hybrid"]["negatives"] >= 25
    assert report["hybrid"]["ndcg@10"] > max(report["bm25"]["ndcg@10"], report["dense"]["ndcg@10"])
    assert set(report["hybrid"]["by_scope"]) == {"org=northwind", "org=tidewater"}


def test_golden_eval_runs_each_query_as_its_principal(sample_wb, tmp_path):
    # a query whose only relevant fragment the principal cannot see can never be found
    bad = tmp_path / "golden.yaml"
    bad.write_text("queries:\n- id: leak\n  query: pgbouncer transaction pooling\n  principal: marco.bianchi\n"
                   "  relevant: [tw-adr-0008-pgbouncer-transaction-pooling]\n")
    report = sample_wb.eval_golden(str(bad), pipelines=["bm25", "dense", "hybrid"])
    assert all(report[p]["recall@100"] == 0.0 for p in ("bm25", "dense", "hybrid"))


def write_beir(root, *, corpus=None, queries=None, qrels=None):
    (root / "qrels").mkdir(parents=True)
    docs = corpus or [
        {"_id": "d1", "title": "Kafka consumer lag", "text": "Consumer lag grows when the consumer group rebalances."},
        {"_id": "d2", "title": "Postgres pooling", "text": "pgbouncer in transaction mode keeps connections low."},
        {"_id": "d3", "title": "Feature flags", "text": "Flags are removed within ninety days of full rollout."},
        {"_id": "d4", "title": "Idempotency", "text": "Every payment mutation carries an idempotency key."},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    qs = queries or [{"_id": "q1", "text": "why is my consumer group lagging"},
                     {"_id": "q2", "text": "connection pooler for postgres"},
                     {"_id": "q3", "text": "avoid double charges on retries"}]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n")
    (root / "qrels" / "test.tsv").write_text(qrels or "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td4\t1\n")
    return root


def test_beir_eval_on_a_tiny_directory_and_cached_embeddings(tmp_path, monkeypatch):
    beir = write_beir(tmp_path / "tiny")
    cache = tmp_path / "cache.duckdb"
    report = Workbench.eval_beir(str(beir), pipelines=["bm25", "dense", "hybrid", "fts"], cache=str(cache))
    assert report["dense"]["queries"] == 3 and METRICS <= set(report["hybrid"])
    assert report["hybrid"]["recall@10"] == 1.0 and report["dense"]["mrr@10"] == 1.0
    # the second run embeds nothing: every corpus vector comes from the cache
    from workbench.retrieval.embedder import Embedder

    calls = []
    original = Embedder.encode
    monkeypatch.setattr(Embedder, "encode",
                        lambda self, texts, **kw: calls.append(len(texts)) or original(self, texts, **kw))
    again = Workbench.eval_beir(str(beir), pipelines=["dense"], cache=str(cache))
    assert again["dense"] == report["dense"]
    assert calls == [3]  # the three queries, in one batch: no corpus text is embedded again


def test_compare_lists_queries_whose_top3_differ(tmp_path):
    beir = write_beir(tmp_path / "tiny")
    report = Workbench.eval_beir(str(beir), pipelines=["bm25"], compare=("bm25", "dense"),
                                 cache=str(tmp_path / "c.duckdb"))
    assert "dense" in report and isinstance(report["compare"], list)
    for item in report["compare"]:
        assert {"query_id", "query", "bm25", "dense"} <= set(item) and item["bm25"] != item["dense"]


@pytest.mark.parametrize("breakage,message", [
    ("no-qrels", "missing"),
    ("bad-json", "not a BEIR corpus line"),
    ("bad-score", "is not a number"),
])
def test_malformed_beir_directory_is_a_user_error(tmp_path, cli, breakage, message):
    beir = write_beir(tmp_path / "b")
    if breakage == "no-qrels":
        (beir / "qrels" / "test.tsv").unlink()
    elif breakage == "bad-json":
        (beir / "corpus.jsonl").write_text("{not json\n")
    else:
        (beir / "qrels" / "test.tsv").write_text("q1\td1\tmaybe\n")
    with pytest.raises(UserError, match=message):
        Workbench.eval_beir(str(beir), cache=str(tmp_path / "c.duckdb"))
    r = cli("eval", "--beir", str(beir), "--cache", str(tmp_path / "c.duckdb"))
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_cli_eval_golden_json_contract(sample_workspace, cli):
    r = cli("eval", "--golden", str(SAMPLE / "golden.yaml"), "--pipeline", "bm25", "hybrid", "--json",
            workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert set(data) == {"bm25", "hybrid"} and METRICS <= set(data["hybrid"])
    r = cli("eval", "--golden", str(SAMPLE / "golden.yaml"), "--pipeline", "nope", workspace=sample_workspace)
    assert r.returncode == 2 and "unknown pipeline 'nope'" in r.stderr


def test_negative_queries_are_left_out_of_ndcg_and_give_the_abstention_rate(sample_wb, tmp_path):
    positive = ("- id: p1\n  query: double-entry ledger journal postings must balance\n  principal: sofia.okafor\n"
                "  relevant: [nw-adr-0001-double-entry-ledger]\n")
    negative = ("- id: n1\n  query: what is the budget for the quarterly team offsite\n  principal: sofia.okafor\n"
                "  relevant: []\n  type: negative\n")
    alone, mixed = tmp_path / "alone.yaml", tmp_path / "mixed.yaml"
    alone.write_text("queries:\n" + positive)
    mixed.write_text("queries:\n" + positive + negative)
    a = sample_wb.eval_golden(str(alone), pipelines=["bm25", "hybrid"])
    m = sample_wb.eval_golden(str(mixed), pipelines=["bm25", "hybrid"])
    for name in ("bm25", "hybrid"):
        for metric in ("ndcg@10", "recall@10", "recall@100", "mrr@10", "queries", "answered"):
            assert m[name][metric] == a[name][metric], (name, metric)
        assert m[name]["queries"] == 1 and m[name]["negatives"] == 1 and m[name]["abstention"] == 1.0
        assert a[name]["abstention"] is None and a[name]["answered"] == 1.0
        assert m[name]["min_confidence"] == sample_wb.confidence_floor()
    bad = tmp_path / "bad.yaml"
    bad.write_text("queries:\n" + negative.replace("relevant: []", "relevant: [nw-adr-0001-double-entry-ledger]"))
    with pytest.raises(UserError, match="a negative query has no relevant fragments"):
        sample_wb.eval_golden(str(bad))


def test_cli_eval_reports_abstention(sample_workspace, cli):
    r = cli("eval", "--golden", str(SAMPLE / "golden.yaml"), "--pipeline", "hybrid", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr
    assert "abstention" in r.stdout and "negative queries" in r.stdout
