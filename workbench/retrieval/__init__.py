"""Retrieval: lexical (BM25, DuckDB FTS), dense (MiniLM), the hybrid pipeline and context
composition. SQL stays in store/; ranking maths stays in rank/."""
