"""Lexical backends, chosen by name: ``bm25s`` (default) and ``duckdb-fts``.

A backend is built over the index's texts (position i = fragment i) and answers
``scores(query) -> float array`` with 0 where a document does not match. Building
bm25s is one full rebuild per index generation (well under 1 s at 10k fragments).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Protocol

import numpy as np

from ..errors import UserError

_WORD = re.compile(r"[a-z0-9_]+(?:[-.:/][a-z0-9_]+)*")
_PART = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Lower-case words, stopwords removed, English-stemmed. Identifiers such as
    ``NWPAY-4091`` or ``ledger.posting.batch_size`` also count as one whole token."""
    stop = _stopwords()
    whole: list[str] = []
    parts: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        pieces = [p for p in _PART.findall(word) if len(p) > 1 and p not in stop]
        if len(pieces) > 1 or (pieces and pieces[0] != word):
            whole.append(word)
        parts.extend(pieces)
    return whole + (_stemmer().stemWords(parts) if parts else [])


_IDENT_HINT = re.compile(r"[-.:/_]|[a-z][0-9]|[0-9][a-z]")


def identifiers(text: str) -> list[str]:
    """Whole identifier-like tokens of ``text`` (error codes, config keys, snake_case names)."""
    return [m.group(0) for m in _WORD.finditer(text.lower()) if _IDENT_HINT.search(m.group(0))]


class LexicalBackend(Protocol):
    name: str

    def scores(self, query: str) -> np.ndarray: ...


class Bm25s:
    """bm25s (Lucene BM25, k1=1.5, b=0.75) over stemmed, stopword-free tokens."""

    name = "bm25s"

    def __init__(self, texts: list[str]):
        import bm25s

        self.size = len(texts)
        self.retriever = bm25s.BM25()
        corpus = [tokenize(t) or ["\x00empty"] for t in texts]
        if corpus:
            self.retriever.index(corpus, show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        if self.size == 0:
            return np.zeros(0, dtype=np.float32)
        ids = self.retriever.get_tokens_ids(tokenize(query))
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self.retriever.get_scores_from_ids(ids), dtype=np.float32)

    def document_frequency(self, token: str) -> int:
        """How many documents contain ``token`` (an already-normalised token)."""
        tid = self.retriever.vocab_dict.get(token) if self.size else None
        if tid is None:
            return 0
        indptr = self.retriever.scores["indptr"]
        return int(indptr[tid + 1] - indptr[tid])


class DuckdbFts:
    """DuckDB's FTS extension (BM25 with the porter stemmer and English stopwords)."""

    name = "duckdb-fts"

    def __init__(self, texts: list[str], ids: list[str], store, generation: int):
        self.ids = ids
        self.pos = {fid: i for i, fid in enumerate(ids)}
        self.store = store
        store.build_fts(ids, texts, generation)

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.ids), dtype=np.float32)
        for fid, score in self.store.fts_scores(query).items():
            i = self.pos.get(fid)
            if i is not None:
                out[i] = score
        return out


LEXICAL_BACKENDS = ("bm25s", "duckdb-fts")


def check_backend(name: str) -> str:
    if name not in LEXICAL_BACKENDS:
        raise UserError(f"unknown lexical backend {name!r} (valid: {', '.join(LEXICAL_BACKENDS)})")
    return name
