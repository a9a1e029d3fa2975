"""Embedding figures per backend (``onnx``, ``torch``), in process: query embedding p50/p95 (one
text through ``encode_query``, the search hot path) and the corpus embedding rate (a batch
through ``encode``, as ingest and `workbench index` embed), with the two backends' agreement.

A backend that cannot be made or run is reported by its error, not skipped silently: before the
backend setting existed, ``Embedder(backend=...)`` raised TypeError and only the torch figures
(the one ``Embedder()``) are reported. Loaded by path from bench.py (no package, no relative imports).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

BACKENDS = ("onnx", "torch")


def embedders() -> dict[str, Any]:
    """Backend name → an Embedder, or the message saying why there is none."""
    from workbench.retrieval.embedder import Embedder

    made: dict[str, Any] = {}
    chosen = os.environ.pop("WORKBENCH_EMBEDDER", None)  # it would win over backend=
    try:
        for name in BACKENDS:
            try:
                made[name] = Embedder(backend=name)
            except TypeError as e:  # no backend setting yet: the one Embedder() is the torch path
                made[name] = Embedder() if name == "torch" else f"Embedder(backend=...) not available: {e}"
            except Exception as e:  # noqa: BLE001 - reported, the other backend still runs
                made[name] = f"{type(e).__name__}: {e}"
    finally:
        if chosen is not None:
            os.environ["WORKBENCH_EMBEDDER"] = chosen
    return made


def _ran_as(name: str, embedder) -> None:
    """An embedder that fell back to another backend must not be reported under this one."""
    actual = getattr(embedder, "backend", name)
    if actual != name:
        raise RuntimeError(f"asked for {name}, ran on {actual} (see the warning above)")


def corpus_texts(wb, principal: str, count: int = 256) -> list[str]:
    """``count`` texts as the index embeds them (title, fields, body, tags) of the fragments
    ``principal`` sees in an open workspace, repeated when there are fewer."""
    from workbench.retrieval.index import index_text

    texts = [index_text(f) for f in wb.list(principal=principal)]
    return [texts[i % len(texts)] for i in range(count)]


def query_embedding(made: dict[str, Any], texts: list[str], samples: int = 50) -> dict[str, Any]:
    """Backend → p50/p95 ms of ``encode_query`` over ``texts`` repeated to ``samples`` calls (after
    one warm-up call, which loads the model), or ``{"error": ...}``."""
    out: dict[str, Any] = {}
    for name, embedder in made.items():
        if isinstance(embedder, str):
            out[name] = {"error": embedder}
            continue
        try:
            embedder.encode_query_uncached(texts[0])
            _ran_as(name, embedder)
            times = []
            for i in range(max(samples, len(texts))):
                t = time.perf_counter()
                embedder.encode_query_uncached(texts[i % len(texts)])
                times.append((time.perf_counter() - t) * 1000)
        except Exception as e:  # noqa: BLE001
            out[name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        arr = np.asarray(times)
        out[name] = {"p50": round(float(np.percentile(arr, 50)), 3), "p95": round(float(np.percentile(arr, 95)), 3),
                     "samples": len(times)}
    return out


def corpus_rate(made: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    """Backend → texts per second of one ``encode`` call over ``texts`` (after a small warm-up
    batch), or ``{"error": ...}``."""
    out: dict[str, Any] = {}
    for name, embedder in made.items():
        if isinstance(embedder, str):
            out[name] = {"error": embedder}
            continue
        try:
            embedder.encode(texts[:2])
            _ran_as(name, embedder)
            t = time.perf_counter()
            embedder.encode(texts)
            seconds = time.perf_counter() - t
        except Exception as e:  # noqa: BLE001
            out[name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        out[name] = {"fragments_per_s": round(len(texts) / seconds, 1), "texts": len(texts),
                     "seconds": round(seconds, 2)}
    return out


def agreement(made: dict[str, Any], texts: list[str]) -> float | None:
    """The smallest cosine between the two backends' query vectors over ``texts`` (None unless both run)."""
    pair = [made.get(name) for name in BACKENDS]
    if any(e is None or isinstance(e, str) for e in pair):
        return None
    try:
        a = np.stack([pair[0].encode_query(t) for t in texts])
        b = np.stack([pair[1].encode_query(t) for t in texts])
    except Exception:  # noqa: BLE001 - the figures above carry the error
        return None
    cos = (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    return round(float(cos.min()), 6)
