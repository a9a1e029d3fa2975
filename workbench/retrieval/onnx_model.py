"""The bundled all-MiniLM-L6-v2 through onnxruntime: the embedding path without torch.

Importing torch and sentence-transformers costs ~3 s of a cold CLI call, and torch's thread
pool made one query 10–30× slower when another process was busy. This path needs only
onnxruntime, the ``tokenizers`` library and numpy: 0.2 s to import and open, ~4 ms a query on
one intra-op thread.

The ONNX graph is exported locally from the bundled weights (torch, once, no network) and
cached in the user cache by the weights' hash (``$WORKBENCH_CACHE``, else
``$XDG_CACHE_HOME/workbench``, else ``~/.cache/workbench``). It is written to a temporary file
and renamed into place, so a killed export leaves nothing half-written and two processes
exporting at once both end with a whole file. The model is loaded with eager attention for the
export: traced with SDPA, the mask logic became constants and the graph's vectors were off
(cosine 0.90 on the golden queries); eager attention traces to a graph whose vectors agree with
sentence-transformers' to cosine 1.000000 (a test checks ≥ 0.999 on every golden query and
every sample fragment).

Pooling is sentence-transformers' for this model: the mean of the token states under the
attention mask, L2-normalised; texts are truncated at the model's 256 tokens.

Two sessions: one query at a time runs on one intra-op thread (no thread pool to starve on a
busy machine), batches on the available cores, opened on first use. Sessions and tokenizers are
opened once per process and shared by every encoder (every open workspace) that reads the same
file: opening them costs ~0.3 s, a run is thread-safe, and a file that changes (its size or mtime)
is opened anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from ..errors import ModelError
from .bundled import offline

RECIPE = "minilm-eager-opset17-v1"   # bump when the export changes: the cache key includes it
MAX_TOKENS = 256                      # sentence-transformers' max_seq_length for this model
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def cache_root() -> Path:
    explicit = os.environ.get("WORKBENCH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "workbench"


def _weights(model_dir: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (model_dir / name).is_file():
            return model_dir / name
    raise ModelError(f"no weights file in {model_dir}")


def weights_hash(model_dir: Path) -> str:
    """SHA-256 of the weights, config and tokenizer, and the export recipe. The hash of a file
    is remembered by its path, size and mtime (``hashes.json`` in the cache), so a cold process
    does not read 90 MB to find the graph."""
    files = [_weights(model_dir), model_dir / "config.json", model_dir / "tokenizer.json"]
    stats = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
    stat_key = hashlib.sha256(json.dumps([RECIPE, stats]).encode()).hexdigest()
    memo = cache_root() / "onnx" / "hashes.json"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if isinstance(known, dict) and isinstance(known.get(stat_key), str):
        return known[stat_key]
    digest = hashlib.sha256(RECIPE.encode())
    for p in files:
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    value = digest.hexdigest()
    if isinstance(known, dict):
        known[stat_key] = value
        _write_atomic(memo, json.dumps(known, indent=1).encode())
    return value


def _write_atomic(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:  # a read-only cache: the memo is only a speed-up
        pass


def graph_path(model_dir: Path) -> Path:
    """The cached ONNX graph of the bundled weights (exported now if missing)."""
    path = cache_root() / "onnx" / weights_hash(model_dir)[:32] / "model.onnx"
    if not path.is_file():
        export(model_dir, path)
    return path


def export(model_dir: Path, out: Path) -> None:
    """Export the bundled weights to ONNX at ``out`` (torch, transformers and onnx; offline)."""
    offline()
    try:
        import torch
        from transformers import AutoModel

        model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager",
                                          local_files_only=True).eval()

        class LastHiddenState(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids).last_hidden_state

        example = {"input_ids": torch.tensor([[101, 7592, 2088, 102, 0]]),
                   "attention_mask": torch.tensor([[1, 1, 1, 1, 0]]),
                   "token_type_ids": torch.zeros((1, 5), dtype=torch.long)}
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix="model.", suffix=".onnx.tmp")
        os.close(fd)
        try:
            axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
            with torch.inference_mode(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # tracer notes on branches that are constant for this model
                torch.onnx.export(LastHiddenState(model), tuple(example[k] for k in INPUTS), tmp, input_names=list(INPUTS),
                                  output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17,
                                  dynamo=False)
            os.replace(tmp, out)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - any export failure: the caller falls back to torch
        raise ModelError(f"cannot export the embedding model to ONNX at {out}: {e}") from e


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


_opened: dict[tuple, object] = {}
_opened_lock = threading.Lock()


def _shared(path: Path, variant, make):
    """What ``make()`` opens from ``path`` (with ``variant``): once per process while the file is
    unchanged (keyed by its path, size and mtime)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns, variant)
    held = _opened.get(key)
    if held is None:
        with _opened_lock:
            held = _opened.get(key)
            if held is None:
                held = _opened[key] = make()
    return held


class OnnxEncoder:
    """Encodes texts with the ONNX graph: mean pooling under the mask, L2-normalised float32."""

    def __init__(self, model_dir: Path):
        self.model_dir = model_dir
        self._lock = threading.Lock()
        self._query = None      # (session, tokenizer) on one intra-op thread
        self._batch = None      # (session, tokenizer padding to the longest text) on the cores

    def _session(self, threads: int):
        path = graph_path(self.model_dir)
        return _shared(path, ("session", threads), lambda: self._open_session(path, threads))

    @staticmethod
    def _open_session(path: Path, threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if threads > 1:  # a busy-waiting pool would take a core from whoever else runs here
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.enable_mem_pattern = False  # batches of ever-changing shapes: no plan to reuse, only memory
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def _tokenizer(self, pad: bool):
        path = self.model_dir / "tokenizer.json"
        return _shared(path, ("tokenizer", pad), lambda: self._open_tokenizer(path, pad))

    @staticmethod
    def _open_tokenizer(path: Path, pad: bool):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(path))
        tok.enable_truncation(MAX_TOKENS)
        if pad:
            tok.enable_padding(pad_id=0, pad_token="[PAD]")
        else:
            tok.no_padding()
        return tok

    def load(self) -> None:
        """Open the query session now (exporting the graph first if it is not cached)."""
        if self._query is None:
            with self._lock:
                if self._query is None:
                    try:
                        self._query = (self._session(1), self._tokenizer(pad=False))
                    except ModelError:
                        raise
                    except Exception as e:  # noqa: BLE001 - onnxruntime's errors are not typed
                        raise ModelError(f"cannot open the ONNX embedding model: {e}") from e

    @property
    def loaded(self) -> bool:
        return self._query is not None

    def encode_query(self, text: str) -> np.ndarray:
        self.load()
        session, tok = self._query
        enc = tok.encode(text)
        feed = {"input_ids": np.array([enc.ids], dtype=np.int64),
                "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
                "token_type_ids": np.zeros((1, len(enc.ids)), dtype=np.int64)}
        return _pool(session.run(None, feed)[0], feed["attention_mask"])[0]

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        if self._batch is None:
            self.load()
            with self._lock:
                if self._batch is None:
                    cores = _cores()
                    session = self._query[0] if cores == 1 else self._session(cores)
                    self._batch = (session, self._tokenizer(pad=True))
        session = self._batch[0]
        if len(texts) <= SMALL_BATCH:  # an edit's few chunks: one thread, leaving the other cores to queries
            session = self._query[0]
        out = np.empty((len(texts), 384), dtype=np.float32)
        for start in range(0, len(texts), BUCKET_SPAN):  # tokenizer output held for a span at a time
            out[start:start + BUCKET_SPAN] = self._run_bucketed(session, self._query[1],
                                                                texts[start:start + BUCKET_SPAN], batch_size)
        return out

    @staticmethod
    def _run_bucketed(session, tok, texts: list[str], batch_size: int) -> np.ndarray:
        """Length-bucketed batches: every text is tokenized once (no padding), the texts are
        ordered by token count, and each batch of neighbours is padded only to its own longest,
        so a batch does no work on padding beyond a few tokens. A batch holds about
        ``BATCH_TOKENS`` tokens (8 texts of 256 tokens, 64 of 32: short texts go in larger batches,
        fewer session runs) and at most 8 × ``batch_size`` texts. The token budget bounds what one
        run allocates: ONNX Runtime's arena keeps its largest run's tensors (attention is batch ×
        12 heads × tokens²), 32 texts of 256 tokens grew it by ~700 MB, 8 by ~250 MB, at the same
        CPU time per text (benchmarks/memory_peak.py, BENCHMARKS.md issue 31). Vectors equal an
        unbatched run's to float rounding (the attention mask zeroes the padding; a test checks
        cosine within 1e-5)."""
        encoded = tok.encode_batch(list(texts))  # truncated at MAX_TOKENS, unpadded
        lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(encoded))
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(texts), 384), dtype=np.float32)
        start = 0
        while start < len(order):
            longest = int(lengths[order[start]])
            size = max(1, min(len(order) - start, BATCH_TOKENS // max(longest, 1), max(batch_size, 1) * 8,
                              MAX_BATCH))
            chunk = order[start:start + size]
            ids = np.zeros((len(chunk), longest), dtype=np.int64)
            mask = np.zeros((len(chunk), longest), dtype=np.int64)
            for row, i in enumerate(chunk):
                n = int(lengths[i])
                ids[row, :n] = encoded[i].ids
                mask[row, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[chunk] = _pool(session.run(None, feed)[0], mask)
            start += size
        return out

    def encode_unbucketed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """The reference: batches in the given order, each padded to its longest text (what
        ``encode`` did before length buckets; kept for the equality test and the benchmark)."""
        self.load()
        session, out = self._query[0], np.zeros((len(texts), 384), dtype=np.float32)
        tok = self._tokenizer(pad=True)
        if self._batch is not None:
            session = self._batch[0]
        for start in range(0, len(texts), batch_size):
            encoded = tok.encode_batch(texts[start:start + batch_size])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[start:start + batch_size] = _pool(session.run(None, feed)[0], mask)
        return out


SMALL_BATCH = 8  # texts encoded on the one-thread session (see encode)
BATCH_TOKENS = 2048  # tokens in one session run, padding included (see _run_bucketed)
MAX_BATCH = 256  # texts in one session run at most
BUCKET_SPAN = 2048  # texts tokenized and length-sorted together (their encodings are held until embedded)


def _pool(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the token states under the mask, L2-normalised (float32)."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (states * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    vectors = summed / counts
    norms = np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
    return (vectors / norms).astype(np.float32)
