"""Lexical backends, chosen by name: ``bm25`` (default; ``bm25s`` is an alias) and ``duckdb-fts``.

A backend is built over the index's texts (position i = fragment i) and answers
``scores(query, mask) -> float array`` with 0 where a document does not match or is outside
the mask. Every corpus statistic behind a score (N, document frequencies, idf, average
length) is computed over the documents in the caller's mask only, so a caller's scores do
not depend on text they cannot see. bm25 is incremental: after an edit only the changed
fragments are tokenized, into a delta segment next to the base (``Bm25.derive``).
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Callable, Iterator, Protocol

import numpy as np

from ..errors import UserError
from ..rank.bm25 import TITLE_WEIGHT

_WORD = re.compile(r"[a-z0-9_]+(?:[-.:/][a-z0-9_]+)*")
_PART = re.compile(r"[a-z0-9]+")


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


def _stopwords() -> frozenset[str]:
    from .stopwords import STOPWORDS_EN

    return STOPWORDS_EN


class Vocabulary:
    """Token → id for one index lineage (owned by its ``IndexManager``), with the memoised
    stems and per-text token ids that make a rebuild after one edit tokenize one text."""

    MAX_TEXTS = 500_000

    def __init__(self, tokens: list[str] | None = None) -> None:
        self.ids: dict[str, int] = {t: i for i, t in enumerate(tokens or ())}
        self._stems: dict[str, str] = {}
        self._texts: dict[str, np.ndarray] = {}
        self._grow = threading.Lock()

    def tokens(self) -> list[str]:
        """The vocabulary in id order (what a snapshot stores)."""
        out = [""] * len(self.ids)
        for token, i in self.ids.items():
            out[i] = token
        return out

    def ids_of(self, text: str) -> np.ndarray:
        """Token ids of a document's indexed ``text`` (its title weighted: ``document_tokens``), growing
        the vocabulary (no memo: a full build reads each text once)."""
        tokens = self.document_tokens(text)
        with self._grow:
            grow = self.ids.setdefault
            return np.fromiter((grow(t, len(self.ids)) for t in tokens), dtype=np.int32, count=len(tokens))

    def __len__(self) -> int:
        return len(self.ids)

    def stem(self, words: list[str]) -> list[str]:
        missing = [w for w in set(words) if w not in self._stems]
        if missing:
            self._stems.update(zip(missing, _stemmer().stemWords(missing)))
        return [self._stems[w] for w in words]

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text, stem=self.stem)

    def document_tokens(self, text: str) -> list[str]:
        """The BM25 tokens of a document's indexed text: its title's counted ``TITLE_WEIGHT`` times."""
        title, body = split_title(text)
        return field_tokens(self.tokenize(title), self.tokenize(body)) if title else self.tokenize(text)

    def lookup(self, tokens: list[str]) -> list[int]:
        """Ids of the known tokens (a query's unknown tokens match nothing)."""
        return [i for i in (self.ids.get(t) for t in tokens) if i is not None]

    def document(self, key: str, text: str) -> np.ndarray:
        """Token ids of a document's ``text`` (growing the vocabulary), memoised by ``key``."""
        ids = self._texts.get(key)
        if ids is None:
            if len(self._texts) > self.MAX_TEXTS:
                self._texts.clear()
            ids = self._texts[key] = self.ids_of(text)
        return ids


def _stem_plain(words: list[str]) -> list[str]:
    return list(_stemmer().stemWords(words))


def tokenize(text: str, *, stem=_stem_plain) -> list[str]:
    """Lower-case words, stopwords removed, English-stemmed. Identifiers such as
    ``NWPAY-4091`` or ``ledger.posting.batch_size`` also count as one whole token."""
    stop = _stopwords()
    whole: list[str] = []
    parts: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if "-" not in word and "." not in word and "_" not in word and ":" not in word and "/" not in word:
            if len(word) > 1 and word not in stop:
                parts.append(word)
            continue
        pieces = [p for p in _PART.findall(word) if len(p) > 1 and p not in stop]
        if len(pieces) > 1 or (pieces and pieces[0] != word):
            whole.append(word)
        parts.extend(pieces)
    return whole + (stem(parts) if parts else [])


LEXICAL_VERSION = "" if TITLE_WEIGHT == 1 else f"fields-t{TITLE_WEIGHT}"  # what the postings hold (a
#   snapshot of other postings is rebuilt; weight 1 holds what postings always held)


def split_title(text: str) -> tuple[str, str]:
    """(title, rest) of an indexed text (columns.index_text: the title, a blank line, the rest).
    A text with no blank line, or whose first paragraph spans lines, has no title."""
    head, sep, rest = text.partition("\n\n")
    if not sep or "\n" in head:
        return "", text
    return head, rest


def field_tokens(title: list[str], body: list[str], weight: int | None = None) -> list[str]:
    """A document's BM25 tokens with its title counted ``weight`` times: BM25F with one shared
    length normalisation (a title token adds ``weight`` to the term frequency and to the length);
    ``weight`` None is ``TITLE_WEIGHT``."""
    return title * (TITLE_WEIGHT if weight is None else weight) + body


_CODE_IDENTIFIER = re.compile(
    r"\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"                 # snake_case names
    r"|\b[A-Za-z_][A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]+)+\b"     # dotted config keys
    r"|\b[A-Za-z]{2,}-\d{3,}\b"                                    # error codes: NWPAY-4091, INC-2291
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+){2,}\b")                   # CamelCase alert and class names


def identifiers(text: str) -> list[str]:
    """Code identifiers named in ``text`` (error codes, config keys, snake_case and CamelCase
    names), as index tokens. Plain words with digits (gene names, versions) are not included."""
    found = [m.group(0).lower() for m in _CODE_IDENTIFIER.finditer(text)]
    return found + [t for t in _stem_plain(found) if t not in found]


class LexicalBackend(Protocol):
    name: str

    def scores(self, query: str, mask: np.ndarray | None = None) -> np.ndarray: ...


class Bm25:
    """BM25 (Lucene's variant at rank.bm25's K1, B: the scores bm25s gives, checked by a property test)
    over stemmed, stopword-free tokens, a title's counted ``TITLE_WEIGHT`` times (``field_tokens``), with its statistics taken over the caller's mask (see
    rank/bm25.py).

    Incremental: a base segment over every fragment of some generation (built once; persisted
    by the IndexManager as part of the snapshot) and a delta segment holding the fragments whose
    content changed since, re-built on each change (tokenizing only those: the delta's token ids
    are remembered by (id, content hash)). Base documents edited or removed since are
    tombstones. When the delta grows past ``max(MERGE_MIN, MERGE_SHARE × N)`` documents, the next
    generation builds a new base (a merge). Scores equal a full rebuild's exactly."""

    name = "bm25"
    MERGE_MIN, MERGE_SHARE = 2000, 0.05

    def __init__(self, texts: list[str] | None = None, keys: list[str] | None = None,
                 vocabulary: Vocabulary | None = None):
        """A full build over ``texts`` (position i = text i); ``keys`` name them in the vocabulary's memo."""
        from ..rank.bm25 import Postings, SegmentedBM25

        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary()
        texts = texts or []
        keys = keys or [f"text:{hash(t)}" for t in texts]
        docs = [self.vocabulary.document(k, t) for k, t in zip(keys, texts)]
        self._base(Postings.build(docs, len(self.vocabulary)), np.array(keys, dtype=object),
                   np.array(keys, dtype=object))
        self.matrix = SegmentedBM25([(self.base, None)], self.base.lengths, len(self.vocabulary))
        self.size = len(texts)

    def _base(self, base, ids: np.ndarray, content: np.ndarray) -> None:
        self.base, self.base_ids, self.base_content = base, ids, content
        self._base_index: dict[str, int] | None = None
        self.delta_tokens: dict[tuple[str, str], np.ndarray] = {}
        self.delta_size = 0

    def base_index(self) -> dict[str, int]:
        if self._base_index is None:
            self._base_index = {fid: b for b, fid in enumerate(self.base_ids.tolist())}
        return self._base_index

    @classmethod
    def of_base(cls, vocabulary: Vocabulary, base, ids: np.ndarray, content: np.ndarray) -> "Bm25":
        """A backend whose base segment was loaded (a snapshot), with no delta."""
        from ..rank.bm25 import SegmentedBM25

        self = cls.__new__(cls)
        self.vocabulary = vocabulary
        self._base(base, ids, content)
        self.matrix = SegmentedBM25([(base, None)], base.lengths, max(len(vocabulary), base.vocab_size))
        self.size = base.n
        return self

    @classmethod
    def derive(cls, seed: "Bm25 | None", ids: list[str], content: np.ndarray, vocabulary: Vocabulary, *,
               texts: Callable[[list[int]], list[str]], all_texts: Callable[[], Iterator[tuple[int, str]]]
               ) -> "Bm25":
        """The backend of a generation whose fragments are ``ids`` (with these content hashes):
        from ``seed`` (the previous generation's backend, or a snapshot's) by a delta, or built
        whole when there is no seed, the seed has another vocabulary, or the delta grew too large."""
        from ..rank.bm25 import Postings, SegmentedBM25

        n = len(ids)
        if seed is not None and seed.vocabulary is vocabulary:
            memo = getattr(seed, "_b_of", None)  # (ids list, base row of each): shared base, same ids list
            if memo is not None and memo[0] is ids:
                b_of = memo[1]
            else:
                b_of = np.fromiter((seed.base_index().get(fid, -1) for fid in ids), dtype=np.int64, count=n)
            same = b_of >= 0
            same[same] = seed.base_content[b_of[same]] == content[same]
            changed = np.flatnonzero(~same)
            if changed.size <= max(cls.MERGE_MIN, cls.MERGE_SHARE * n):
                keys = [(ids[i], content[i]) for i in changed.tolist()]
                known = {k: seed.delta_tokens[k] for k in keys if k in seed.delta_tokens}
                todo = [int(i) for i, k in zip(changed.tolist(), keys) if k not in known]
                for i, text in zip(todo, texts(todo) if todo else []):
                    known[(ids[i], content[i])] = vocabulary.ids_of(text)
                delta = Postings.build([known[k] for k in keys], len(vocabulary))
                if same.all() and n == seed.base.n:
                    where = None                               # the base, untouched
                else:
                    where = np.full(seed.base.n, -1, dtype=np.int64)
                    where[b_of[same]] = np.flatnonzero(same)
                lengths = np.zeros(n, dtype=np.int64)
                lengths[same] = seed.base.lengths[b_of[same]]
                lengths[changed] = delta.lengths
                self = cls.__new__(cls)
                self.vocabulary = vocabulary
                self.base, self.base_ids, self.base_content = seed.base, seed.base_ids, seed.base_content
                self._base_index = seed._base_index
                self.delta_tokens = known
                self.delta_size = int(changed.size)
                self._b_of = (ids, b_of)
                segments = [(seed.base, where)] + ([(delta, changed)] if changed.size else [])
                self.matrix = SegmentedBM25(segments, lengths, len(vocabulary))
                self.size = n
                return self
        docs: list[np.ndarray] = [np.zeros(0, dtype=np.int32)] * n
        for i, text in all_texts():
            docs[i] = vocabulary.ids_of(text)
        self = cls.__new__(cls)
        self.vocabulary = vocabulary
        self._base(Postings.build(docs, len(vocabulary)), np.array(ids, dtype=object), content.copy())
        self.matrix = SegmentedBM25([(self.base, None)], self.base.lengths, len(vocabulary))
        self.size = n
        return self

    @property
    def whole(self) -> bool:
        """True when every document is in the base (no delta, no tombstone): what a snapshot keeps."""
        return self.delta_size == 0 and len(self.matrix.segments) == 1 and self.matrix.segments[0][1] is None

    def token_ids(self, tokens: list[str]) -> list[int]:
        return self.vocabulary.lookup(tokens)

    def scores(self, query: str, mask: np.ndarray | None = None) -> np.ndarray:
        """BM25 of each document over the documents in ``mask`` (all when None); 0 outside it."""
        return self.matrix.scores(self.vocabulary.lookup(self.vocabulary.tokenize(query)), mask)

    def document_frequency(self, token: str, mask: np.ndarray | None = None) -> int:
        """How many documents in ``mask`` (all when None) contain ``token``."""
        tid = self.vocabulary.ids.get(token)
        return 0 if tid is None else self.matrix.document_frequency(tid, mask)


class DuckdbFts:
    """DuckDB's FTS extension (BM25 with the porter stemmer and English stopwords), scored in
    SQL from the FTS index tables over the caller's visible documents (store/fts.py)."""

    name = "duckdb-fts"

    def __init__(self, texts: Callable[[], list[str]], ids: list[str], store, generation: int, build):
        self.ids = ids
        self.pos = {fid: i for i, fid in enumerate(ids)}
        self.store = store
        build(ids, texts, generation)   # the IndexManager's: it reads the texts and builds only when stale
        docids = store.fts_doc_ids()
        self.docid = np.array([docids.get(fid, -1) for fid in ids], dtype=np.int64)  # -1: not indexed

    def scores(self, query: str, mask: np.ndarray | None = None) -> np.ndarray:
        """``match_bm25``'s BM25 with N, df and avgdl over the documents in ``mask``."""
        out = np.zeros(len(self.ids), dtype=np.float32)
        visible = self.docid if mask is None else self.docid[mask]
        visible = visible[visible >= 0]
        if visible.size == 0:
            return out
        for fid, score in self.store.fts_scores(query, visible.tolist()).items():
            i = self.pos.get(fid)
            if i is not None:
                out[i] = score
        return out


LEXICAL_BACKENDS = ("bm25", "duckdb-fts")
ALIASES = {"bm25s": "bm25"}  # its name until bm25s stopped scoring (traces and scripts still say it)


def canonical_backend(name: str) -> str:
    """The backend's name, with old aliases accepted; a clear error for an unknown one."""
    name = ALIASES.get(name, name)
    if name not in LEXICAL_BACKENDS:
        raise UserError(f"unknown lexical backend {name!r} (valid: {', '.join(LEXICAL_BACKENDS)})")
    return name


check_backend = canonical_backend
