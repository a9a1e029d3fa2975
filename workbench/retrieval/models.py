"""Embedding models other than the bundled one: checking a local model folder, encoding with it,
and building the int8 copy of the bundled model that tests and benchmarks use as a second model.

A registered model is a local folder, never downloaded: either an ONNX folder (``model.onnx``, or
``onnx/model.onnx``, whose first output is the token states, and ``tokenizer.json``: mean pooling
under the mask, L2-normalised, as the bundled model) or a sentence-transformers folder
(``modules.json``; loaded with torch). Vectors are stored as ``FLOAT[384]`` (DuckDB) and
``vector(384)`` (pgvector) and scored against the 384-wide index matrix, so only 384-dimension
models are accepted: another width would need a new embeddings column and index, which this
module does not pretend to support.

``RegisteredEmbedder`` has the ``Embedder`` interface (name, dim, encode, encode_query, load),
so the index, the pipeline and evaluation use it unchanged; its ``name`` keys the stored vectors.
Nothing here touches the store or decides who may change models (service/models.py, policy).
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np

from ..errors import ModelError, UserError
from ..userpath import expand_user
from .embedder import DIM, MODEL_NAME, Embedder
from .onnx_model import OnnxEncoder, _shared

KINDS = ("bundled", "onnx", "sentence-transformers")
TOKENIZER = "tokenizer.json"
PROBES = ("How do I roll back a bad deploy?", "The payment service retries failed webhooks three times.",
          "Rotate the database credentials every 90 days.", "Use feature flags for risky frontend changes.",
          "An incident review lists the timeline, the impact and the follow-ups.", "kubectl rollout undo",
          "Tokens expire after an hour; refresh them before calling the API.", "Why is the build slow?")


def _onnx_file(folder: Path) -> Path | None:
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    return None


def detect_kind(folder: Path) -> str:
    """``onnx`` or ``sentence-transformers`` for a local folder, or a UserError saying what is missing."""
    if not folder.is_dir():
        raise UserError(f"{folder}: no such model folder (models are local folders; nothing is downloaded)",
                        param="path")
    if _onnx_file(folder) is not None:
        kind = "onnx"
    elif (folder / "modules.json").is_file() or (folder / "config_sentence_transformers.json").is_file():
        kind = "sentence-transformers"
    else:
        raise UserError(f"{folder}: neither an ONNX model folder (model.onnx) nor a sentence-transformers "
                        "folder (modules.json)", param="path")
    if not (folder / TOKENIZER).is_file() and not (kind == "sentence-transformers" and (folder / "vocab.txt").is_file()):
        raise UserError(f"{folder}: no tokenizer ({TOKENIZER}): a model folder must carry the tokenizer it was "
                        "trained with", param="path")
    return kind


class _FolderOnnx(OnnxEncoder):
    """``OnnxEncoder`` over a folder's own graph (no export: the folder holds ``model.onnx``)."""

    def _session(self, threads: int):
        path = _onnx_file(self.model_dir)
        if path is None:
            raise ModelError(f"no model.onnx in {self.model_dir}")
        return _shared(path, ("session", threads), lambda: self._open_session(path, threads))


class RegisteredEmbedder(Embedder):
    """An ``Embedder`` over a registered local model folder (``kind`` onnx or sentence-transformers)."""

    def __init__(self, name: str, path: str | Path, kind: str):
        super().__init__()
        if kind not in KINDS[1:]:
            raise ModelError(f"unknown model kind {kind!r} (valid: {', '.join(KINDS[1:])})")
        self.name, self.path, self.kind = name, Path(path), kind
        self.backend = "onnx" if kind == "onnx" else "torch"
        self._st = None
        self._st_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<RegisteredEmbedder {self.name} {self.kind} {self.path}>"

    def _onnx_encoder(self):
        if self.kind != "onnx":
            return None
        if self._onnx is None:
            with self._lock:
                if self._onnx is None:
                    if not self.path.is_dir():
                        raise ModelError(f"the model {self.name!r} is gone from {self.path}")
                    encoder = _FolderOnnx(self.path)
                    encoder.load()
                    self._onnx = encoder
        return self._onnx

    def _sentence_transformer(self):
        if self._st is None:
            with self._st_lock:
                if self._st is None:
                    from .bundled import offline

                    offline()
                    try:
                        from sentence_transformers import SentenceTransformer

                        self._st = SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
                    except Exception as e:  # noqa: BLE001 - translate any loading failure
                        raise ModelError(f"cannot load the model {self.name!r} from {self.path}: {e}") from e
        return self._st

    def load(self) -> None:
        if self._onnx_encoder() is None:
            self._sentence_transformer()

    def loaded(self) -> bool:
        return self._onnx is not None if self.kind == "onnx" else self._st is not None

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.encode(texts, batch_size=batch_size)
        vectors = self._sentence_transformer().encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                                      normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)

    def encode_query_uncached(self, text: str) -> np.ndarray:
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.encode_query(text)
        return self.encode([text])[0]


def embedder_for(name: str, path: str, kind: str, backend: str | None = None) -> Embedder:
    """The embedder of a registry row (the bundled model: ``Embedder`` with the configured backend)."""
    if kind == "bundled" or name == MODEL_NAME:
        return Embedder(backend)
    return RegisteredEmbedder(name, path, kind)


def probe(embedder: Embedder) -> int:
    """Encode the probe texts; the vectors' width (a ModelError when they are not finite unit vectors)."""
    try:
        vectors = np.stack([np.asarray(embedder.encode_query_uncached(t), dtype=np.float32).reshape(-1)
                            for t in PROBES])  # one at a time: a batch's output is 384 wide by construction
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever a foreign folder's graph does wrong
        raise ModelError(f"the model {embedder.name!r} could not encode a test sentence: {e}") from e
    if vectors.ndim != 2 or vectors.shape[0] != len(PROBES) or not np.isfinite(vectors).all():
        raise ModelError(f"the model {embedder.name!r} did not return one finite vector per text "
                         f"(shape {vectors.shape}): its first output must be the token states")
    return int(vectors.shape[1])


def check_dimension(dim: int, folder: Path) -> None:
    if dim != DIM:
        raise UserError(f"{folder}: the model makes {dim}-dimension vectors; the index stores {DIM}-dimension "
                        f"vectors (FLOAT[{DIM}] / vector({DIM})), so only {DIM}-dimension models can be added",
                        param="path")


def agreement(a: Embedder, b: Embedder, texts: list[str]) -> dict[str, float]:
    """Cosine of ``b``'s vectors against ``a``'s on the same texts: mean and minimum."""
    va, vb = a.encode(texts), b.encode(texts)
    cos = np.sum(va * vb, axis=1)
    return {"texts": len(texts), "mean_cosine": round(float(cos.mean()), 6), "min_cosine": round(float(cos.min()), 6)}


def build_int8(out: str | Path, *, force: bool = False) -> Path:
    """An int8-quantized copy of the bundled model in ``out`` (an ONNX model folder): the bundled
    graph (exported once, onnx_model.py) through onnxruntime's ``quantize_dynamic`` (weights int8,
    activations quantized per batch), and the bundled tokenizer files. Offline."""
    from .bundled import model_dir
    from .onnx_model import graph_path

    out = expand_user(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise UserError(f"{out} exists and is not empty (use --force to replace what it holds)", param="out")
    source = model_dir()
    graph = graph_path(source)
    out.mkdir(parents=True, exist_ok=True)
    try:
        import logging

        from onnxruntime.quantization import QuantType, quantize_dynamic

        tmp = out / "model.onnx.tmp"
        root, level = logging.getLogger(), logging.getLogger().level
        root.setLevel(logging.ERROR)  # its advice to pre-process the graph is for image models
        try:
            quantize_dynamic(str(graph), str(tmp), weight_type=QuantType.QInt8)
        finally:
            root.setLevel(level)
        tmp.replace(out / "model.onnx")
    except Exception as e:  # noqa: BLE001 - onnxruntime's errors are not typed
        raise ModelError(f"cannot quantize the bundled model into {out}: {e}") from e
    for name in (TOKENIZER, "config.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (source / name).is_file():
            shutil.copyfile(source / name, out / name)
    return out


def serving_embedder(store, bundled: Embedder, current: Embedder | None = None) -> Embedder:
    """The embedder of the model the store's registry names as serving: ``current`` when it is
    that model already, ``bundled`` when none registered serves (or the bundled one does)."""
    row = store.serving_model_row()
    name = row.name if row is not None else MODEL_NAME
    if current is not None and current.name == name:
        return current
    if row is None or row.kind == "bundled":
        return bundled
    return RegisteredEmbedder(row.name, row.path, row.kind)
