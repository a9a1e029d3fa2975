"""DuckDB FTS: a documents table and its full-text index, rebuilt per index generation.

Scores are BM25 computed here in SQL from the index tables (``docs``, ``terms``, ``dict``)
rather than by ``match_bm25``, because ``match_bm25`` takes N, df and the average length
from the whole table: every statistic here is taken over the caller's visible documents,
passed as one bound parameter: the doc ids as comma-separated text, split into a BIGINT[]
list in SQL (DuckDB binds a Python list parameter at ~0.1 ms per element: 2,000 ids took
270 ms, the text form 0.6 ms). The formula and its SQL types are ``match_bm25``'s
(k = 1.2, b = 0.75, distinct query terms), so with every document visible the scores are
``match_bm25``'s (a test checks it). Query text and ids are always bound, never spliced.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Sequence

FTS_SCHEMA = "fts_main_fts_docs"  # where create_fts_index('fts_docs', ...) puts the index


class FtsQueries:
    # The host class (Store) provides _q, con and transaction().

    def build_fts(self, ids: list[str], texts: list[str], generation: int) -> None:
        rows = self._q("SELECT value FROM meta WHERE key = 'fts_generation'")
        if rows and int(rows[0][0]) == generation:
            return
        if self.read_only:  # the index lives in the file (DuckDB cannot put it in TEMP): it cannot be built
            self.require_writable("build the duckdb-fts index (the bm25 lexical backend needs none)")
        with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
            path = Path(tmp) / "docs.jsonl"
            with path.open("w", encoding="utf-8") as out:
                for fid, text in zip(ids, texts):
                    out.write(json.dumps({"id": fid, "text": text}) + "\n")
            with self.transaction():
                self._drop_fts_index()
                self._q("CREATE OR REPLACE TABLE fts_docs AS SELECT * FROM read_json(?, format='newline_delimited', "
                        "columns={id: 'VARCHAR', text: 'VARCHAR'})", [str(path)])
                self._q("PRAGMA create_fts_index('fts_docs', 'id', 'text', stemmer='porter', "
                        "stopwords='english')")
                self._q("INSERT OR REPLACE INTO meta VALUES ('fts_generation', ?)", [str(generation)])

    def _drop_fts_index(self) -> None:
        """Drop the FTS index's tables and macros one by one, then its schema. Not
        ``create_fts_index(overwrite=1)`` or ``drop_fts_index``: they log a DROP SCHEMA that
        DuckDB 1.5.5 cannot replay from the write-ahead log ("Cannot drop entry ... Use
        DROP...CASCADE"), so a workspace closed or killed before the next checkpoint would not open."""
        objects = self._q(
            "SELECT 'TABLE', table_name FROM duckdb_tables() WHERE schema_name = ? UNION ALL "
            "SELECT CASE WHEN function_type = 'table_macro' THEN 'MACRO TABLE' ELSE 'MACRO' END, function_name "
            "FROM duckdb_functions() WHERE schema_name = ? AND function_type IN ('macro', 'table_macro')",
            [FTS_SCHEMA, FTS_SCHEMA])
        for kind, name in objects:
            self._q(f'DROP {kind} {FTS_SCHEMA}."{name}"')  # names from the catalog, not from input
        self._q(f"DROP SCHEMA IF EXISTS {FTS_SCHEMA}")

    def fts_generation(self) -> int | None:
        """The index generation the persisted FTS index was built for (None: never built)."""
        rows = self._q("SELECT value FROM meta WHERE key = 'fts_generation'")
        return int(rows[0][0]) if rows else None

    def fts_doc_ids(self) -> dict[str, int]:
        """Fragment id → the FTS index's doc id."""
        return {name: int(docid) for name, docid in self._q("SELECT name, docid FROM fts_main_fts_docs.docs")}

    def fts_scores(self, query: str, visible: Sequence[int]) -> dict[str, float]:
        """Fragment id → BM25 for the documents whose doc ids are in ``visible`` that match
        ``query``, with N, df and avgdl over those documents only. Per-term parts are summed
        here in term order, so equal inputs give bit-equal sums."""
        if not len(visible):
            return {}
        rows = self._q(_VISIBLE_BM25, [",".join(str(int(d)) for d in visible), query])
        out: dict[str, float] = {}
        for name, subscore in rows:
            out[name] = out.get(name, 0.0) + float(subscore)
        return out


# match_bm25's subscore, with its statistics over ``vis`` (the visible documents).
_VISIBLE_BM25 = """
WITH vis AS (
    SELECT docid, len FROM fts_main_fts_docs.docs WHERE docid IN (SELECT unnest(string_split(?, ',')::BIGINT[]))
), stats AS (
    SELECT count(*) AS num_docs, sum(len) / count(*) AS avgdl FROM vis
), tokens AS (
    SELECT DISTINCT stem(unnest(fts_main_fts_docs.tokenize(?)), 'porter') AS t
), qterms AS (
    SELECT dict.termid, dict.term FROM fts_main_fts_docs.dict AS dict JOIN tokens ON dict.term = tokens.t
), term_tf AS (
    SELECT terms.termid, terms.docid, count(*) AS tf FROM fts_main_fts_docs.terms AS terms
    WHERE terms.termid IN (SELECT termid FROM qterms) AND terms.docid IN (SELECT docid FROM vis)
    GROUP BY terms.termid, terms.docid
), term_df AS (
    SELECT termid, count(*) AS df FROM term_tf GROUP BY termid
)
SELECT docs.name,
       log((((stats.num_docs - term_df.df) + 0.5) / (term_df.df + 0.5)) + 1)
       * ((term_tf.tf * (1.2 + 1)) / (term_tf.tf + (1.2 * ((1 - 0.75) + (0.75 * (vis.len / stats.avgdl))))))
       AS subscore
FROM term_tf
JOIN term_df ON term_df.termid = term_tf.termid
JOIN qterms ON qterms.termid = term_tf.termid
JOIN vis ON vis.docid = term_tf.docid
JOIN fts_main_fts_docs.docs AS docs ON docs.docid = term_tf.docid
CROSS JOIN stats
ORDER BY qterms.term, docs.name
"""
