"""DuckDB FTS: a documents table and its full-text index, rebuilt per index generation."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path


class FtsQueries:
    # The host class (Store) provides _q, con and transaction().

    def build_fts(self, ids: list[str], texts: list[str], generation: int) -> None:
        rows = self._q("SELECT value FROM meta WHERE key = 'fts_generation'")
        if rows and int(rows[0][0]) == generation:
            return
        with tempfile.TemporaryDirectory(prefix="workbench-") as tmp:
            path = Path(tmp) / "docs.jsonl"
            with path.open("w", encoding="utf-8") as out:
                for fid, text in zip(ids, texts):
                    out.write(json.dumps({"id": fid, "text": text}) + "\n")
            with self.transaction():
                self._q("CREATE OR REPLACE TABLE fts_docs AS SELECT * FROM read_json(?, format='newline_delimited', "
                        "columns={id: 'VARCHAR', text: 'VARCHAR'})", [str(path)])
                self._q("PRAGMA create_fts_index('fts_docs', 'id', 'text', stemmer='porter', "
                        "stopwords='english', overwrite=1)")
                self._q("INSERT OR REPLACE INTO meta VALUES ('fts_generation', ?)", [str(generation)])

    def fts_scores(self, query: str) -> dict[str, float]:
        rows = self._q("SELECT id, score FROM (SELECT id, fts_main_fts_docs.match_bm25(id, ?) AS score "
                       "FROM fts_docs) WHERE score IS NOT NULL", [query])
        return {r[0]: float(r[1]) for r in rows}
