"""Model upgrades through a shadow window (issue 31): add -> shadow -> compare -> promote -> search
with the new vectors -> rollback (no embedding) -> the old vectors dropped after the window; the
refusals; and a query is never scored against another model's vectors. On both backends, with a
second model built offline from the bundled one (int8-quantized, cached per test session)."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli, write_fragment

TEXTS = {
    "nw-rollback": ("Rolling back a bad deploy", "Run kubectl rollout undo and watch the error rate for ten minutes."),
    "nw-idempotency": ("Idempotency keys for payments", "Clients send an Idempotency-Key header so a retried charge "
                       "is not billed twice."),
    "nw-webhooks": ("Webhook backlog", "When merchants get late event notifications, drain the webhook queue."),
    "nw-ledger": ("Double-entry ledger", "Never edit a balance column; post a correcting journal entry instead."),
    "nw-secrets": ("Rotating database credentials", "Rotate the database password every 90 days with the vault job."),
}
GOLDEN = """queries:
- {id: q1, query: undo a broken release, principal: marco.bianchi, relevant: [nw-rollback]}
- {id: q2, query: a customer was charged twice after a retry, principal: marco.bianchi, relevant: [nw-idempotency]}
- {id: q3, query: how often do we change the db password, principal: marco.bianchi, relevant: [nw-secrets]}
"""
INT8 = "minilm-int8"


@pytest.fixture(scope="session")
def int8_model(tmp_path_factory) -> Path:
    """The int8-quantized copy of the bundled model, built once per test session."""
    from workbench.retrieval.models import build_int8

    return build_int8(tmp_path_factory.mktemp("models") / INT8)


@pytest.fixture
def small(backend_config, tmp_path):
    """A workspace (either backend) of five fragments, indexed with the bundled model."""
    from workbench import Workbench

    folder = tmp_path / "frags"
    for fid, (title, body) in TEXTS.items():
        write_fragment(folder, fid, title=title, body=body)
    (tmp_path / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
    root = tmp_path / "ws"
    Workbench.init(root, config=backend_config).close()
    with Workbench.open(root) as wb:
        assert not wb.ingest([folder], actor="kb.sync").errors
        wb.warm()
        yield wb


def _cos(a, b) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_int8_copy_agrees_with_the_bundled_model(int8_model, sample_wb):
    """Cosine of the int8 copy's vectors against the bundled model's, on the sample's texts (reported)."""
    from workbench.retrieval.embedder import Embedder
    from workbench.retrieval.models import RegisteredEmbedder, agreement

    index = sample_wb.search_index()
    texts = index.texts_of(list(range(0, len(index.ids), 4)))
    found = agreement(Embedder(), RegisteredEmbedder(INT8, int8_model, "onnx"), texts)
    print(f"int8 vs bundled on {found['texts']} sample texts: mean {found['mean_cosine']}, min {found['min_cosine']}")
    assert found["mean_cosine"] > 0.9 and found["min_cosine"] > 0.85  # measured: 0.935 / 0.915
    assert found["mean_cosine"] < 0.9999  # a different model: its vectors are its own


def test_shadow_promote_rollback_cycle(small, int8_model, tmp_path):
    from workbench.retrieval.embedder import MODEL_NAME

    wb = small
    before = {m.name: m.state for m in wb.model_list()}
    assert before == {MODEL_NAME: "serving"}
    info = wb.model_add(int8_model)
    assert (info.name, info.state, info.kind, info.vectors) == (INT8, "shadow", "onnx", 0)

    shadow = wb.model_shadow(INT8)
    assert shadow.embedded == shadow.total == len(TEXTS) and shadow.skipped == 0
    again = wb.model_shadow(INT8)  # resumable: nothing left to embed
    assert (again.embedded, again.skipped) == (0, len(TEXTS))
    listed = {m.name: m for m in wb.model_list()}
    assert (listed[INT8].shadow_done, listed[INT8].shadow_total, listed[INT8].vectors) == (5, 5, 5)
    assert wb.index.current().model == MODEL_NAME  # the serving model still serves

    report = wb.compare_models(tmp_path / "golden.yaml")
    assert report["models"] == [MODEL_NAME, INT8]
    for name in report["models"]:
        assert report["metrics"][name]["hybrid"]["queries"] == 3
        assert report["metrics"][name]["dense"]["recall@10"] == 1.0

    old_vectors = wb.store.embeddings(MODEL_NAME)
    promoted = wb.model_promote(INT8)
    assert (promoted.state, promoted.previous) == ("serving", MODEL_NAME)
    index = wb.index.current()
    assert index.model == INT8 and wb.index.embedder.name == INT8
    new_vectors = wb.store.embeddings(INT8)
    matrix = index.vectors()
    for i, h in enumerate(index.hashes):  # the index holds the new model's vectors, not the old ones
        assert np.allclose(matrix[i], new_vectors[h], atol=1e-6)
        assert _cos(matrix[i], old_vectors[h]) < 0.9999
    result = wb.search("undo a broken release", principal="marco.bianchi")
    assert result.hits[0].id == "nw-rollback"
    assert wb.trace(result.trace_id, principal="marco.bianchi")["settings"]["model"] == INT8

    embedded = []
    original = wb.index.embed
    wb.index.embed = lambda *a, **k: embedded.append(a) or original(*a, **k)
    back = wb.model_rollback()
    assert back.name == MODEL_NAME and back.state == "serving"
    index = wb.index.current()
    assert index.model == MODEL_NAME
    index.vectors()
    assert embedded == []  # instant: the old generation's vectors were kept
    assert wb.search("undo a broken release", principal="marco.bianchi").hits[0].id == "nw-rollback"
    states = {m.name: m.state for m in wb.model_list()}
    assert states == {MODEL_NAME: "serving", INT8: "shadow"}


def test_the_window_closes(small, int8_model):
    """After models.rollback_days the replaced model's vectors are dropped and rollback is refused."""
    from workbench.errors import UserError
    from workbench.retrieval.embedder import MODEL_NAME

    wb = small
    wb.model_add(int8_model)
    wb.model_shadow(INT8)
    promoted = wb.model_promote(INT8)
    at = promoted.promoted_at
    assert wb.config.models_rollback_days == 14
    assert wb.model_list(now=at + timedelta(days=13))  # still inside: nothing dropped
    assert wb.store.embedding_count(MODEL_NAME) == len(TEXTS)
    listed = {m.name: m for m in wb.model_list(now=at + timedelta(days=15))}
    assert wb.store.embedding_count(MODEL_NAME) == 0 and listed[MODEL_NAME].dropped_at is not None
    assert wb.store.embedding_count(INT8) == len(TEXTS)
    with pytest.raises(UserError, match="rollback window"):
        wb.model_rollback(now=at + timedelta(days=15))
    assert wb.index.current().model == INT8


def test_rollback_outside_the_window_is_refused_before_any_drop(small, int8_model):
    from workbench.errors import UserError

    wb = small
    wb.model_add(int8_model)
    wb.model_shadow(INT8)
    at = wb.model_promote(INT8).promoted_at
    with pytest.raises(UserError, match="rollback window"):
        wb.model_rollback(now=at + timedelta(days=14, minutes=1))


def test_refusals(small, int8_model, tmp_path):
    from workbench.errors import NotFound, PermissionDenied, UserError

    wb = small
    with pytest.raises(NotFound, match="unknown model"):
        wb.model_shadow("nope")
    with pytest.raises(NotFound, match="unknown model"):
        wb.model_promote("nope")
    with pytest.raises(UserError, match="nothing to roll back"):
        wb.model_rollback()
    with pytest.raises(PermissionDenied, match="agent"):
        wb.model_add(int8_model, actor="agent.nw-coder")
    with pytest.raises(PermissionDenied, match="admin"):
        wb.model_add(int8_model, actor="marco.bianchi")
    assert wb.model_add(int8_model, actor="priya.raman").name == INT8  # an admin may
    with pytest.raises(UserError, match="registered already"):
        wb.model_add(int8_model)
    with pytest.raises(UserError, match="incomplete"):
        wb.model_promote(INT8)  # nothing shadowed yet
    with pytest.raises(PermissionDenied, match="agent"):
        wb.model_shadow(INT8, actor="agent.nw-coder")
    with pytest.raises(PermissionDenied):
        wb.model_promote(INT8, actor="agent.nw-coder")
    with pytest.raises(UserError, match="no such model folder"):
        wb.model_add(tmp_path / "missing")
    bare = tmp_path / "bare"
    shutil.copytree(int8_model, bare)
    (bare / "tokenizer.json").unlink()
    (bare / "vocab.txt").unlink()
    with pytest.raises(UserError, match="no tokenizer"):
        wb.model_add(bare)
    with pytest.raises(UserError, match="neither an ONNX"):
        wb.model_add(tmp_path)


def test_incomplete_shadow_resumes(small, int8_model, monkeypatch):
    from workbench.errors import UserError
    from workbench.service import models as service

    wb = small
    wb.model_add(int8_model)
    monkeypatch.setattr(service, "BATCH", 2)
    calls = []

    def stop_after_first(stage, done, total):
        calls.append(done)
        raise KeyboardInterrupt  # the process is stopped after its first batch

    with pytest.raises(KeyboardInterrupt):
        wb.model_shadow(INT8, progress=stop_after_first)
    assert calls == [2] and wb.store.embedding_count(INT8) == 2
    with pytest.raises(UserError, match=r"incomplete \(2/5"):
        wb.model_promote(INT8)
    resumed = wb.model_shadow(INT8)
    assert (resumed.skipped, resumed.embedded) == (2, 3)
    assert wb.model_promote(INT8).state == "serving"


def test_wrong_dimension_is_refused(small, tmp_path):
    """A model making 8-dimension vectors: refused, saying the index stores 384."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from workbench.errors import UserError
    from workbench.retrieval.bundled import model_dir

    folder = tmp_path / "tiny"
    folder.mkdir()
    table = numpy_helper.from_array(np.random.default_rng(0).normal(size=(30522, 8)).astype(np.float32), "table")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "input_ids"], ["last_hidden_state"])], "tiny",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["b", "t"])
         for n in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "t", 8])], [table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "model.onnx"))
    shutil.copyfile(model_dir() / "tokenizer.json", folder / "tokenizer.json")
    with pytest.raises(UserError, match="8-dimension vectors; the index stores 384"):
        small.model_add(folder)


def test_a_query_is_never_scored_against_another_models_vectors(small, int8_model):
    """Mixing them must fail: an index holding the bundled model's vectors, asked with the int8 model."""
    from workbench.errors import ModelError
    from workbench.retrieval.models import RegisteredEmbedder

    wb = small
    index = wb.index.current()
    index.vectors()
    index.embedder = RegisteredEmbedder(INT8, int8_model, "onnx")
    with pytest.raises(ModelError, match="never scored against another model"):
        wb.search("undo a broken release", principal="marco.bianchi", pipeline="dense")


def test_query_cache_is_keyed_by_model(int8_model):
    from workbench.retrieval.embedder import Embedder
    from workbench.retrieval.models import RegisteredEmbedder

    bundled, copy = Embedder(), RegisteredEmbedder(INT8, int8_model, "onnx")
    a, b = bundled.encode_query("undo a broken release"), copy.encode_query("undo a broken release")
    assert _cos(a, b) < 0.9999
    assert all(key[0] == bundled.name for key in bundled._queries)
    assert all(key[0] == INT8 for key in copy._queries)


@pytest.mark.duckdb_only("the CLI faces, once")
def test_cli_cycle(tmp_path, int8_model):
    root = tmp_path / "ws"
    folder = tmp_path / "frags"
    for fid, (title, body) in TEXTS.items():
        write_fragment(folder, fid, title=title, body=body)
    (tmp_path / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
    assert run_cli("init", "--config", str(Path(__file__).parent.parent / "sample_corpus" / "workbench.yaml"),
                   workspace=root).returncode == 0
    assert run_cli("ingest", str(folder), "--as", "kb.sync", workspace=root).returncode == 0
    assert run_cli("index", workspace=root).returncode == 0
    done = run_cli("model", "add", str(int8_model), "--as", "agent.nw-coder", workspace=root)
    assert done.returncode == 2 and "agent" in done.stderr
    assert run_cli("model", "add", str(tmp_path / "missing"), workspace=root).returncode == 2
    assert run_cli("model", "add", str(int8_model), workspace=root).returncode == 0
    done = run_cli("model", "promote", INT8, workspace=root)
    assert done.returncode == 2 and "incomplete" in done.stderr
    done = run_cli("model", "shadow", INT8, "--wait", "--json", workspace=root)
    assert done.returncode == 0, done.stderr
    done = run_cli("eval", "--golden", str(tmp_path / "golden.yaml"), "--compare-models", workspace=root)
    assert done.returncode == 0, done.stderr
    assert INT8 in done.stdout and "ndcg@10" in done.stdout
    done = run_cli("eval", "--golden", str(tmp_path / "golden.yaml"), "--compare-models", INT8, "all-MiniLM-L6-v2",
                   "--json", workspace=root)
    assert done.returncode == 0, done.stderr
    assert run_cli("model", "promote", INT8, workspace=root).returncode == 0
    done = run_cli("model", "list", "--json", workspace=root)
    import json

    states = {m["name"]: m["state"] for m in json.loads(done.stdout)}
    assert states == {INT8: "serving", "all-MiniLM-L6-v2": "retired"}
    assert run_cli("model", "rollback", workspace=root).returncode == 0


@pytest.mark.slow
@pytest.mark.duckdb_only("a background process on the DuckDB file, releasing it between batches")
def test_background_shadow(tmp_path, int8_model):
    import json
    import time

    root = tmp_path / "ws"
    folder = tmp_path / "frags"
    for fid, (title, body) in TEXTS.items():
        write_fragment(folder, fid, title=title, body=body)
    run_cli("init", "--config", str(Path(__file__).parent.parent / "sample_corpus" / "workbench.yaml"), workspace=root)
    run_cli("ingest", str(folder), "--as", "kb.sync", workspace=root)
    run_cli("model", "add", str(int8_model), workspace=root)
    done = run_cli("model", "shadow", INT8, workspace=root)
    assert done.returncode == 0 and "background" in done.stdout
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        listed = {m["name"]: m for m in json.loads(run_cli("model", "list", "--json", workspace=root).stdout)}
        if listed[INT8]["vectors"] == len(TEXTS):
            break
        time.sleep(1)
    assert listed[INT8]["vectors"] == len(TEXTS), (root / "model-shadow.log").read_text()
    assert run_cli("model", "promote", INT8, workspace=root).returncode == 0
