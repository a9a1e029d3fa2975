"""`workbench bench` runs end to end and reports the documented JSON (numbers are not asserted:
speed is measured in benchmarks, not in tests)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_bench_reports_the_documented_fields(cli):
    r = cli("bench", "--fragments", "60", "--queries", "3", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert {"fragments", "search_ms", "stages_ms", "baseline_search_ms", "speedup_p50", "ingest_fragments_per_s",
            "peak_rss_mb"} <= set(data)
    assert set(data["stages_ms"]) == {"embed", "lexical", "dense", "fusion", "compose"}
    assert data["fragments"] == 60 and data["search_ms"]["p50"] > 0 and data["dense_paths"]["hnsw"]["k"] == 59


def test_bench_rejects_nonsense(cli):
    r = cli("bench", "--fragments", "0")
    assert r.returncode == 2 and "at least 10" in r.stderr


def test_synthetic_fragments_are_valid_and_scoped(tmp_path):
    from workbench.benchmark import synthesize
    from workbench.ingest.files import parse_fragment

    ids = synthesize(40, tmp_path)
    parsed = [parse_fragment((tmp_path / f"{i}.md").read_text(), file=i) for i in ids]
    assert {p.content.scope.org for p in parsed} == {"org0", "org1", "org2", "org3"}
    assert all(p.content.body for p in parsed) and len({p.content.content_hash() for p in parsed}) == 40
