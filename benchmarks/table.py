"""Print the BENCHMARKS.md table from `workbench bench --json` result files."""

import json
import sys

rows = sorted((json.load(open(p)) for p in sys.argv[1:]), key=lambda r: r["fragments"])
print("| fragments | search p50 / p95 (ms) | DuckDB-native p50 / p95 (ms) | speed-up p50 | embed p50 | lexical p50 "
      "| dense p50 | fusion p50 | compose p50 | ingest (frag/s) | re-ingest unchanged (s) | lexical rebuild (ms) "
      "| peak RSS (MB) |")
print("|" + "---|" * 13)
for r in rows:
    s = r["stages_ms"]
    print(f"| {r['fragments']:,} | {r['search_ms']['p50']:.1f} / {r['search_ms']['p95']:.1f} "
          f"| {r['baseline_search_ms']['p50']:.1f} / {r['baseline_search_ms']['p95']:.1f} | {r['speedup_p50']}x "
          f"| {s['embed']['p50']:.1f} | {s['lexical']['p50']:.2f} | {s['dense']['p50']:.2f} | {s['fusion']['p50']:.2f} "
          f"| {s['compose']['p50']:.1f} | {r['ingest_fragments_per_s']:.0f} | {r['reingest_unchanged_s']:.1f} "
          f"| {r['lexical_rebuild_ms']:.0f} | {r['peak_rss_mb']:.0f} |")
print()
print("| fragments | numpy exact top-100 p50 (ms) | DuckDB exact scan p50 (ms) | HNSW build (s) | HNSW p50 (ms) "
      "| HNSW recall@100 vs exact |")
print("|---|---|---|---|---|---|")
for r in rows:
    d = r["dense_paths"]
    h = d.get("hnsw")
    hn = (f"{h['build_s']} | {h['query_ms']['p50']} | {h['recall_at_k_vs_exact']}" if h else "- | - | -")
    print(f"| {r['fragments']:,} | {d['numpy_exact_ms']['p50']} | {d['duckdb_exact_ms']['p50']} | {hn} |")
