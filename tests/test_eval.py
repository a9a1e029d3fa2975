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
    assert set(data) == {"bm25", "hybrid", "paths", "archived"} and METRICS <= set(data["hybrid"])   # paths: golden paths: entries
    assert data["archived"]["hybrid"]["queries"] >= 5 and data["archived"]["hybrid"]["recall@10"] >= 0.8   # --include-archived
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


ABSTENTION_DOCS = [
    ("a1", "Pruning apple trees", "Prune apple trees in late winter while they are dormant; cut crossing branches."),
    ("a2", "Sourdough starter", "Feed a sourdough starter equal weights of flour and water every twelve hours."),
    ("a3", "Reefing a mainsail", "Reef the mainsail before the wind rises above twenty knots, not during a gust."),
    ("a4", "Telescope collimation", "Collimate a Newtonian telescope by centring the secondary mirror first."),
    ("a5", "Beekeeping in winter", "Leave twenty kilograms of honey in the hive so the colony survives winter."),
    ("a6", "Tiling a bathroom", "Spread tile adhesive with a notched trowel and leave three millimetre joints."),
    ("a7", "Knitting a heel", "Turn a sock heel with short rows, wrapping each stitch before you turn."),
    ("a8", "Bicycle chain wear", "Replace a bicycle chain once it has stretched by half a percent."),
    ("f1", "Watercolour washes", "Wet the paper first for a soft graded wash of watercolour."),
    ("f2", "Chess openings", "The Sicilian defence answers e4 with c5 and fights for the centre."),
    ("f3", "Composting", "Mix green and brown material in a compost heap and turn it every fortnight."),
    ("f4", "Choir warm-ups", "Warm up the voice with lip trills and sirens before a choir rehearsal."),
]
ABSTENTION_QUERIES = [
    ("q1", "when should I prune my apple tree"), ("q2", "how often do I feed a sourdough starter"),
    ("q3", "when to reef the mainsail on a windy day"), ("q4", "how to collimate a newtonian telescope"),
    ("q5", "how much honey do bees need for winter"), ("q6", "what trowel for tile adhesive"),
    ("q7", "how do I turn the heel of a sock"), ("q8", "when is a bicycle chain worn out"),
]


def test_eval_beir_abstention_on_a_tiny_directory(tmp_path, cli, monkeypatch):
    """``eval --beir DIR --abstention --sizes``: per size, workspaces where each query is answerable
    (its document kept) or not (removed), with the prior's and the legacy model's answered and
    abstained rates; the sizes share the corpus's vectors (each document embedded once)."""
    beir = write_beir(tmp_path / "tiny", corpus=[{"_id": i, "title": t, "text": x} for i, t, x in ABSTENTION_DOCS],
                      queries=[{"_id": q, "text": t} for q, t in ABSTENTION_QUERIES],
                      qrels="query-id\tcorpus-id\tscore\n" + "".join(f"q{n}\ta{n}\t1\n" for n in range(1, 9)))
    cache = str(tmp_path / "c.duckdb")
    from workbench.rank import calibration
    from workbench.retrieval.embedder import Embedder

    calls = []
    original = Embedder.encode
    monkeypatch.setattr(Embedder, "encode",
                        lambda self, texts, **kw: calls.append(len(texts)) or original(self, texts, **kw))
    r = cli("eval", "--beir", str(beir), "--abstention", "--sizes", "4,all", "--cache", cache, "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)["abstention"]
    assert sum(calls) == len(ABSTENTION_DOCS) + len(ABSTENTION_QUERIES), calls  # no document embedded twice
    assert list(report) == ["4", "all"]
    small, whole = report["4"], report["all"]
    assert small["documents"] == 4 and small["workspaces"] == 2   # 4 answerable queries, 2 per workspace
    assert whole["documents"] == 8 and whole["workspaces"] == 1    # the 4 unanswerable queries' documents removed
    for row, asked_unanswerable in ((small, 8), (whole, 4)):   # the unanswerable are asked in every workspace
        assert row["answerable"] == 4 and row["unanswerable"] == asked_unanswerable and row["recall@10"] == 1.0
        for model in ("prior", "legacy"):
            rates = row[model]
            assert set(rates) == {"floor", "answered", "answered_relevant", "abstained"}
            assert 0 <= rates["answered_relevant"] <= rates["answered"] <= 1 and 0 <= rates["abstained"] <= 1
        assert row["prior"]["floor"] == calibration.PRIOR.floor and row["prior"]["answered_relevant"] == 1.0
    table = cli("eval", "--beir", str(beir), "--abstention", "--sizes", "4", "--cache", cache)
    assert table.returncode == 0 and "prior answered" in table.stdout and "legacy abstained" in table.stdout
    for args, message in ((["--sizes", "4"], "--sizes needs --abstention"), (["--abstention", "--sizes", "1"],
                                                                            "is not a number of documents")):
        r = cli("eval", "--beir", str(beir), "--cache", cache, *args)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
