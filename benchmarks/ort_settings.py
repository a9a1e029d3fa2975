"""ONNX Runtime settings against CPU per full-window (256-token) text, and each setting's vectors
against the current session's (min cosine): the check of BENCHMARKS.md "Corpus embedding".

    .venv/bin/python benchmarks/ort_settings.py N_TEXTS ROUNDS [CORPUS_JSONL]   # e.g. 64 2

Texts are the first N BEIR documents that fill the model's window; batches of 8 (what
``_run_bucketed`` runs at 256 tokens). GFLOP/s-cpu assumes ~6.0 GFLOP a 256-token text (6 layers x
256 tokens x ~3.9 MFLOP: Q, K, V, O and the 1,536-wide FFN, 3.54 MFLOP, plus attention's 0.39).
The fused graph (onnxruntime.transformers' BERT fusion) is written under $TMPDIR.
"""
import json, sys, time, os, tempfile
import numpy as np
import onnxruntime as ort
from workbench.retrieval import onnx_model as om
from workbench.retrieval.bundled import model_dir

path = om.graph_path(model_dir())
docs = [json.loads(l) for l in open(sys.argv[3] if len(sys.argv) > 3 else "../shared/datasets/scifact/corpus.jsonl")]
tok = om.OnnxEncoder._open_tokenizer(model_dir() / "tokenizer.json", pad=False)
texts = []
for d in docs:
    t = (d.get("title", "") + "\n\n" + d["text"])
    if len(tok.encode(t).ids) >= 256:
        texts.append(t)
    if len(texts) >= int(sys.argv[1]):
        break
enc = tok.encode_batch(texts)
ids = np.array([e.ids for e in enc], dtype=np.int64); mask = np.ones_like(ids)
assert ids.shape[1] == 256

def session(p, threads, level, spin=False):
    o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL; o.graph_optimization_level = level; o.log_severity_level = 3
    if threads > 1 and not spin:
        o.add_session_config_entry("session.intra_op.allow_spinning", "0")
    o.enable_mem_pattern = False
    return ort.InferenceSession(str(p), o, providers=["CPUExecutionProvider"])

def run(s, batch=8):
    out = []
    s.run(None, {"input_ids": ids[:batch], "attention_mask": mask[:batch], "token_type_ids": np.zeros_like(ids[:batch])})
    c, w = time.process_time(), time.perf_counter()
    for i in range(0, len(ids), batch):
        f = {"input_ids": ids[i:i+batch], "attention_mask": mask[i:i+batch], "token_type_ids": np.zeros_like(ids[i:i+batch])}
        out.append(om._pool(s.run(None, f)[0], f["attention_mask"]))
    return np.concatenate(out), (time.process_time() - c) / len(ids) * 1000, (time.perf_counter() - w) / len(ids) * 1000

fused = None
try:
    from onnxruntime.transformers.optimizer import optimize_model
    m = optimize_model(str(path), model_type="bert", num_heads=12, hidden_size=384, opt_level=0)
    fused = os.path.join(tempfile.gettempdir(), "workbench-fused.onnx"); m.save_model_to_file(fused)
    print("fused ops:", m.get_fused_operator_statistics())
except Exception as e:
    print("no fusion:", e)

L = ort.GraphOptimizationLevel
configs = [("current ALL t2", path, 2, L.ORT_ENABLE_ALL, False), ("ALL t1", path, 1, L.ORT_ENABLE_ALL, False),
           ("EXTENDED t2", path, 2, L.ORT_ENABLE_EXTENDED, False), ("BASIC t2", path, 2, L.ORT_ENABLE_BASIC, False),
           ("ALL t2 spin", path, 2, L.ORT_ENABLE_ALL, True)]
if fused:
    configs += [("fused ALL t2", fused, 2, L.ORT_ENABLE_ALL, False), ("fused ALL t1", fused, 1, L.ORT_ENABLE_ALL, False)]
ref = None
for rep in range(int(sys.argv[2])):
    for name, p, t, lvl, spin in configs:
        v, cpu, wall = run(session(p, t, lvl, spin))
        if ref is None: ref = v
        cos = float((v * ref).sum(1).min())
        gf = 6.0 / (cpu / 1000)
        print(f"{rep} {name:16s} cpu {cpu:6.1f} ms/text  wall {wall:6.1f} ms/text  {1000/wall:5.1f} texts/s  {gf:5.0f} GFLOP/s-cpu  min cos {cos:.8f}  load {os.getloadavg()[0]:.1f}", flush=True)
