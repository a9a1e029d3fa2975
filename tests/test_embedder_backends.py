"""The two embedding backends: onnx (default, no torch on the query path) and torch (the
reference). They must give the same vectors; the ONNX graph is exported once, cached by the
weights' hash, and a broken cache falls back to torch instead of failing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from workbench.retrieval import onnx_model
from workbench.retrieval.embedder import Embedder, model_dir

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_corpus"


def _golden_queries() -> list[str]:
    return [q["query"] for q in yaml.safe_load((SAMPLE / "golden.yaml").read_text())["queries"] if "paths" not in q]




@pytest.fixture(scope="module")
def both():
    return Embedder("onnx"), Embedder("torch")


def test_onnx_agrees_with_torch_on_every_golden_query(both):
    onnx, torch = both
    queries = _golden_queries()
    assert len(queries) > 100
    cos = np.array([float(onnx.encode_query(q) @ torch.encode_query(q)) for q in queries])
    assert onnx.backend == "onnx" and torch.backend == "torch"
    assert cos.min() >= 0.999, queries[int(cos.argmin())]
    # and not trivially: different queries give different vectors
    assert float(onnx.encode_query(queries[0]) @ onnx.encode_query(queries[1])) < 0.99


@pytest.mark.deep   # make test compares both backends on every golden query (the test below)
def test_onnx_agrees_with_torch_on_every_sample_fragment_batched_and_alone(both, sample_wb):
    onnx, torch = both
    index = sample_wb.index.current()
    texts = index.texts_of(list(range(len(index.ids))))  # what retrieval embeds: title, anti-pattern fields, body, tags
    assert len(texts) >= 150
    reference = torch.encode(texts)
    batched = onnx.encode(texts)  # padded batches, sorted by length
    assert batched.shape == reference.shape == (len(texts), 384)
    assert batched.dtype == np.float32
    assert (batched * reference).sum(axis=1).min() >= 0.999
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    for i in (0, len(texts) // 2, len(texts) - 1):  # one at a time, no padding
        assert float(onnx.encode_query(texts[i]) @ reference[i]) >= 0.999


def test_long_text_is_truncated_like_sentence_transformers(both):
    onnx, torch = both
    text = " ".join(f"word{i} payments ledger retry" for i in range(400))  # far past 256 tokens
    assert float(onnx.encode([text])[0] @ torch.encode([text])[0]) >= 0.999


def test_graph_is_exported_once_and_cached_by_weights_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    path = onnx_model.graph_path(model_dir())
    assert path.is_file() and path.stat().st_size > 50_000_000
    assert path.parent.name == onnx_model.weights_hash(model_dir())[:32]
    mtime = path.stat().st_mtime_ns
    calls = []
    monkeypatch.setattr(onnx_model, "export", lambda *a: calls.append(a))
    assert onnx_model.graph_path(model_dir()) == path and path.stat().st_mtime_ns == mtime
    assert calls == []  # cached: no second export
    assert not list(path.parent.glob("*.tmp"))  # nothing half-written left behind
    memo = json.loads((tmp_path / "cache" / "onnx" / "hashes.json").read_text())
    assert list(memo.values()) == [onnx_model.weights_hash(model_dir())]


def test_a_corrupt_cached_graph_falls_back_to_torch(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(onnx_model, "export", lambda model, out: (out.parent.mkdir(parents=True, exist_ok=True),
                                                                  out.write_bytes(b"not a graph")))
    embedder = Embedder("onnx")
    vector = embedder.encode_query("roll back a bad deploy")
    assert embedder.backend == "torch"
    assert "ONNX embedder is unavailable" in capsys.readouterr().err
    assert float(vector @ Embedder("torch").encode_query("roll back a bad deploy")) > 0.9999


def test_environment_chooses_the_backend_and_rejects_unknown_ones(monkeypatch):
    from workbench.errors import UserError

    monkeypatch.setenv("WORKBENCH_EMBEDDER", "torch")
    assert Embedder("onnx").backend == "torch"
    monkeypatch.setenv("WORKBENCH_EMBEDDER", "tensorflow")
    with pytest.raises(UserError, match="unknown embedder 'tensorflow'"):
        Embedder()


def test_cold_cli_search_never_imports_torch_and_traces_name_the_backend(sample_workspace):
    code = ("import sys, json\nfrom workbench.cli.main import main\n"
            "try:\n    main(['search', 'customer charged twice on retry', '--as', 'marco.bianchi', '--json',"
            f" '--workspace', {str(sample_workspace)!r}])\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules)),"
            " file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stderr.strip().splitlines()[-1]) == []
    out = json.loads(r.stdout)
    assert out["hits"], out
    trace = subprocess.run([sys.executable, "-m", "workbench", "trace", out["trace_id"], "--as", "marco.bianchi",
                            "--json", "--workspace", str(sample_workspace)], capture_output=True, text=True, timeout=120)
    assert trace.returncode == 0, trace.stderr
    assert json.loads(trace.stdout)["settings"]["embedder"] == "onnx"


def test_workspace_config_chooses_torch(workspace):
    from conftest import run_cli

    config = workspace / "workbench.yaml"
    config.write_text(config.read_text() + "\nembedder: torch\n")
    from workbench import Workbench

    with Workbench.open(workspace) as wb:
        assert wb.index.embedder.backend == "torch"
    config.write_text(config.read_text().replace("embedder: torch", "embedder: tensorflow"))
    r = run_cli("list", workspace=workspace)
    assert r.returncode == 2 and "embedder" in r.stderr and "Traceback" not in r.stderr


def test_onnx_query_runs_on_one_thread_and_batches_on_the_cores(both):
    onnx, _ = both
    onnx.encode_query("customer charged twice on retry")
    onnx.encode(["customer charged twice on retry", "roll back a bad deploy"])
    encoder = onnx._onnx
    assert encoder._query[0].get_session_options().intra_op_num_threads == 1
    assert encoder._batch[0].get_session_options().intra_op_num_threads == onnx_model._cores()


def test_encoders_in_one_process_share_sessions_and_tokenizers_until_the_graph_changes(tmp_path, monkeypatch):
    """Each open workspace has an encoder of its own; opening a session costs ~0.3 s, so they share
    what they open from the same unchanged file, and a changed file is opened anew."""
    first, second = Embedder("onnx"), Embedder("onnx")
    same = first.encode(["roll back a bad deploy"])
    assert np.array_equal(second.encode(["roll back a bad deploy"]), same)
    a, b = first._onnx, second._onnx
    assert a is not b and a._query[0] is b._query[0] and a._query[1] is b._query[1] and a._batch[1] is b._batch[1]
    real = onnx_model.graph_path(model_dir())
    monkeypatch.setenv("WORKBENCH_CACHE", str(tmp_path / "cache"))
    copy = onnx_model.cache_root() / "onnx" / onnx_model.weights_hash(model_dir())[:32] / "model.onnx"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(real, copy)
    third = Embedder("onnx")
    third.encode_query("roll back a bad deploy")
    assert third._onnx._query[0] is not a._query[0]  # another file
    stat = copy.stat()
    os.utime(copy, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    fourth = Embedder("onnx")
    assert float(fourth.encode_query("roll back a bad deploy") @ same[0]) > 0.9999
    assert fourth._onnx._query[0] is not third._onnx._query[0]  # the same file, changed: opened anew
    assert fourth._onnx._query[1] is a._query[1]  # the tokenizer's file did not change
