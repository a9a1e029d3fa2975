"""The English stopword list the lexical tokenizer drops, vendored so bm25s is not a runtime dependency.

``STOPWORDS_EN`` is copied exactly from bm25s 0.3.16, ``bm25s/stopwords.py`` (``STOPWORDS_EN``),
https://github.com/xhluca/bm25s, MIT License, Copyright (c) 2024 Xing Han Lu. The 33 words are
also Lucene's classic English stop set (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``, Apache-2.0).
Changing it changes every token, so every lexical score: tests/test_bm25_property.py checks it
still equals bm25s's list while bm25s is installed for tests.
Data only: no imports, no I/O.
"""

from __future__ import annotations

STOPWORDS_EN: frozenset[str] = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they",
    "this", "to", "was", "will", "with",
))
