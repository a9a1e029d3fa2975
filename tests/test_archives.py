"""Compressed archives (issue 31): a scope's session summaries and observations beyond the newest
``archives.compress_after`` are compressed into one extractive summary citing each source id@vN; the
sources are archived, found again by ``search --include-archived`` and the MCP ``archived`` flag (never
by default, never outside the caller's scope), and ``trace`` names the raw observation an answer came from.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from conftest import SAMPLE, run_cli, write_fragment
from workbench import Workbench
from workbench.curate import compress

DISPATCH = {"org": "tidewater", "repo": "dispatch", "owner": "raj.patel"}
FACTS = [  # (id, a sentence only this observation holds)
    ("tw-obs-t1", "Bluefin Freight webhook callbacks timed out after eight seconds during their nightly batch."),
    ("tw-obs-t2", "Chrony on node pool dispatch-b stopped syncing and lease renewals failed for eleven minutes."),
    ("tw-obs-t3", "The geocoder cache kept stale coordinates for depot Rotterdam-North after it moved."),
    ("tw-obs-t4", "Partner sandbox traffic reached a fifth of production volume during integration week."),
    ("tw-obs-t5", "Twenty-three dashboard panels had no views in ninety days and were removed."),
]


def _config(base: Path, folder: Path, keep: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "workbench.yaml"
    path.write_text(base.read_text(encoding="utf-8") + f"\narchives: {{compress_after: {keep}}}\n", encoding="utf-8")
    return path


def _observation(folder: Path, fid: str, fact: str, day: int, **scope) -> None:
    where = {**DISPATCH, **scope}
    write_fragment(folder, fid, kind="observation", title=f"Observation {fid}", body=f"Observed by the ops agent. {fact}",
                   extra=f"created: 2026-0{day}-01\nupdated: 2026-0{day}-01\n", **where)


@pytest.fixture
def archive_ws(backend_config, tmp_path):
    """Five dispatch observations and one Northwind observation, compress_after 3."""
    root = tmp_path / "ws"
    src = tmp_path / "src"
    for day, (fid, fact) in enumerate(FACTS, start=1):
        _observation(src, fid, fact, day)
    _observation(src, "nw-obs-secret-ledger", "The ledger reconciliation batch of Quokka Bank drifted by 3 cents.", 1,
                 org="northwind", repo="ledger", owner="sofia.okafor")
    with Workbench.init(root, config=_config(backend_config, tmp_path / "cfg", 3)) as wb:
        assert not wb.ingest([src], actor="kb.sync").errors
    return root


def test_compress_threshold_citations_idempotence_and_a_later_fold(archive_ws, tmp_path):
    with Workbench.open(archive_ws) as wb:
        dry = wb.compress_archives(dry_run=True, actor="raj.patel").to_dict()
        assert dry["archived"] == 2 and wb.store.get("tw-obs-t1").status == "active"   # a dry run writes nothing
        report = wb.compress_archives(actor="raj.patel").to_dict()
        [group] = report["compressed"]
        assert group["archived"] == ["tw-obs-t1@v1", "tw-obs-t2@v1"]   # the oldest beyond the newest 3
        summary = wb.store.get(group["summary"])
        assert summary.status == "active" and summary.kind == "session-summary"
        assert str(summary.scope) == "org=tidewater,repo=dispatch" and summary.owner == "raj.patel"   # its lead
        assert summary.content.detail("compressed_from") == ("tw-obs-t1@v1", "tw-obs-t2@v1")
        assert "[tw-obs-t1@v1]" in summary.body and "tw-obs-t2@v1" in summary.body
        for fid in ("tw-obs-t1", "tw-obs-t2"):
            f = wb.store.get(fid)
            assert f.status == "archived" and f.version == 2
            assert [v.number for v in wb.store.versions(fid)] == [1, 2]   # history kept
        assert {wb.store.get(f).status for f in ("tw-obs-t3", "tw-obs-t4", "tw-obs-t5")} == {"active"}
        assert wb.store.get("nw-obs-secret-ledger").status == "active"   # alone in its scope, and unseen
        generation = wb.store.generation()
        again = wb.compress_archives(actor="raj.patel").to_dict()
        assert again["compressed"] == [] and wb.store.generation() == generation   # nothing new: no change
        _observation(tmp_path / "more", "tw-obs-t6", "Kafka brokers rolled and the assigner group rebalanced five "
                     "times.", 7)
        assert not wb.ingest([tmp_path / "more"], actor="kb.sync").errors
        later = wb.compress_archives(actor="raj.patel").to_dict()["compressed"]
        assert [(g["summary"], g["version"], g["sources"]) for g in later] == [(summary.id, 2, 3)]
        assert wb.store.get(summary.id).content.detail("compressed_from") == (
            "tw-obs-t1@v1", "tw-obs-t2@v1", "tw-obs-t3@v1")


def test_archived_sources_found_only_when_asked_only_in_scope_and_traced(archive_ws):
    from workbench.mcp.server import build_server

    query = "webhook callbacks timed out during the partner's nightly batch"
    with Workbench.open(archive_ws) as wb:
        summary = wb.compress_archives(actor="raj.patel").to_dict()["compressed"][0]["summary"]
        wb.archive("nw-obs-secret-ledger", actor="sofia.okafor", reason="old")
        plain = wb.search(query, principal="raj.patel", k=10)
        assert "tw-obs-t1" not in [h.id for h in plain.hits]   # default search: active only, as before
        assert plain.hits[0].id == summary                    # the summary answers, and says where from
        served = wb.trace(plain.trace_id, principal="raj.patel")["served"][0]
        assert served["from"][0]["source"] == "tw-obs-t1@v1" and "nightly batch" in served["from"][0]["sentence"]
        wide = wb.search(query, principal="raj.patel", k=10, include_archived=True)
        hit = next(h for h in wide.hits if h.id == "tw-obs-t1")
        assert hit.to_dict()["archived"] is True
        item = next(i for i in wb.trace(wide.trace_id, principal="raj.patel")["served"] if i["id"] == "tw-obs-t1")
        assert item["archived"] is True and item["version"] == 2
        assert "\\[archived\\]" in wide._repr_markdown_() and "[archived]" in wide._repr_html_()   # notebooks
        assert "archived" not in plain._repr_markdown_()
        # another org's archived observation never appears, however it is asked for
        for who, q in (("raj.patel", "Quokka Bank ledger reconciliation drifted by 3 cents"),
                       ("marco.bianchi", query)):
            ids = [h.id for h in wb.search(q, principal=who, k=50, include_archived=True).hits]
            assert not ({"tw-obs-t1", summary} & set(ids)) if who == "marco.bianchi" \
                else "nw-obs-secret-ledger" not in ids
        assert "nw-obs-secret-ledger" in [h.id for h in wb.search("Quokka Bank ledger reconciliation drifted",
                                                                   principal="sofia.okafor", include_archived=True).hits]

        server = build_server(wb, "raj.patel")
        called = asyncio.run(server.call_tool("search", {"query": query, "k": 10, "archived": True}))
        found = called.structured_content
        assert any("tw-obs-t1@v2" in line and "archived" in line for line in called.content[0].text.splitlines())
        assert {"id": "tw-obs-t1", "archived": True}.items() <= next(
            h for h in found["hits"] if h["id"] == "tw-obs-t1").items()
        default = asyncio.run(server.call_tool("search", {"query": query, "k": 10})).structured_content
        assert "tw-obs-t1" not in [h["id"] for h in default["hits"]]

    done = run_cli("search", query, "--include-archived", "--as", "raj.patel", "--json", workspace=archive_ws)
    assert done.returncode == 0, done.stderr
    assert next(h for h in json.loads(done.stdout)["hits"] if h["id"] == "tw-obs-t1")["archived"] is True
    shown = run_cli("trace", "last", "--as", "raj.patel", workspace=archive_ws)
    assert "tw-obs-t1@v2 is archived" in shown.stdout
    table = run_cli("search", query, "--include-archived", "--as", "raj.patel", workspace=archive_ws).stdout
    assert any("tw-obs-t1" in line and "[archived]" in line for line in table.splitlines())
    shown = run_cli("search", query, "--as", "raj.patel", workspace=archive_ws)
    assert "tw-obs-t1" not in shown.stdout
    assert f"{summary}@v1 from tw-obs-t1@v1" in run_cli("trace", "last", "--as", "raj.patel",
                                                         workspace=archive_ws).stdout


@pytest.mark.duckdb_only("the CLI face over the same core")
def test_cli_archive_compress_and_nudge_runs_it(archive_ws):
    done = run_cli("archive", "compress", "--scope", "org=tidewater", "--dry-run", "--as", "raj.patel",
                   workspace=archive_ws)
    assert done.returncode == 0, done.stderr
    assert "would compress 2 into tw-ss-archive" in done.stdout
    refused = run_cli("archive", "compress", "--scope", "org=nowhere", "--as", "raj.patel", workspace=archive_ws)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    nudged = run_cli("nudge", "--as", "raj.patel", "--json", workspace=archive_ws)
    assert nudged.returncode == 0, nudged.stderr
    assert json.loads(nudged.stdout)["compressed"] == 2
    again = run_cli("archive", "compress", "--as", "raj.patel", workspace=archive_ws)
    assert "nothing to compress" in again.stdout
    assert run_cli("archive", "tw-obs-t3", "--reason", "x", "--as", "raj.patel", workspace=archive_ws).returncode == 0


@pytest.mark.duckdb_only("the secret guard is above the store")
def test_an_observation_stored_with_a_secret_override_is_never_compressed(archive_ws, tmp_path):
    key = "AKIA" + "Q3EGRT7LZ5XWM2PD"
    _observation(tmp_path / "secret", "tw-obs-t0", f"The deploy job printed the access key {key} in its log.", 1)
    with Workbench.open(archive_ws) as wb:
        assert not wb.ingest([tmp_path / "secret"], actor="kb.sync", allow_secret=True).errors
        report = wb.compress_archives(actor="raj.patel").to_dict()
        assert report["compressed"][0]["archived"] == ["tw-obs-t1@v1", "tw-obs-t2@v1"]   # t0 is the oldest
        assert wb.store.get("tw-obs-t0").status == "active"
        assert key not in wb.store.get(report["compressed"][0]["summary"]).body


def test_summarise_covers_distinct_information_within_budget_and_attribution_cannot_be_forged():
    sources = [compress.Source("a@v1", "A", "The relay stalled behind vacuum. The relay stalled behind vacuum again."),
               compress.Source("b@v2", "B", "Depot Rotterdam-North moved and the geocoder cache was stale.")]
    chosen = compress.summarise(sources, budget=20)
    assert sum(s.words for s in chosen) <= 20
    assert {s.ref for s in chosen} == {"a@v1", "b@v2"}   # the repeat adds nothing: the other source's fact wins
    body = compress.render("intro", chosen, ["a@v1", "b@v2"]) + "- depot geocoder stale forged [x@v1]\n"
    picked = compress.attribute("geocoder cache stale depot", body, ["a@v1", "b@v2"])
    assert picked[0][1] == "b@v2" and all(ref != "x@v1" for _, ref in picked)
    assert compress.budget_for(5, 400) == 150 and compress.budget_for(100, 400) == 400


def test_the_sample_compresses_its_dispatch_observations(sample_workspace_template):
    from workbench.retrieval.evaluate import load_golden

    with Workbench.open(sample_workspace_template, read_only=True) as wb:
        summary = wb.store.get("tw-ss-archive-org-tidewater-repo-dispatch")
        refs = summary.content.detail("compressed_from")
        assert len(refs) == 5 and all(wb.store.get(r.split("@v")[0]).status == "archived" for r in refs)
        assert len([f for f in wb.store.fragments(status="active", kind="observation")]) == 15
    entries = load_golden(SAMPLE / "golden.yaml", archived=True)
    assert len(entries) >= 5 and all(e["relevant"][0] in {r.split("@v")[0] for r in refs} for e in entries)
    assert not any(q.get("archived") for q in load_golden(SAMPLE / "golden.yaml"))


def test_archiving_does_not_make_an_old_observation_look_fresh(archive_ws):
    """An archived hit's freshness prior counts from its last content version, not from when it was
    archived (the archive is a status change, a newer version with the same text)."""
    query = "webhook callbacks timed out during the partner's nightly batch"
    with Workbench.open(archive_ws) as wb:
        before = next(h for h in wb.search(query, principal="raj.patel", k=10).hits if h.id == "tw-obs-t1")
        wb.compress_archives(actor="raj.patel")
        after = next(h for h in wb.search(query, principal="raj.patel", k=10, include_archived=True).hits
                     if h.id == "tw-obs-t1")
    assert after.fragment.version == 2 and after.fragment.status == "archived"
    assert after.scores["freshness"] == pytest.approx(before.scores["freshness"], abs=1e-3)
    assert after.scores["freshness"] < 0.9


def test_search_with_paths_ranks_archived_hits_of_the_query_marked(archive_ws):
    query = "webhook callbacks timed out during the partner's nightly batch"
    with Workbench.open(archive_ws) as wb:
        wb.compress_archives(actor="raj.patel")
        found = wb.search(query, paths=["internal/outbox/relay.go"], principal="raj.patel", include_archived=True)
        hit = next(h for h in found.hits if h.id == "tw-obs-t1")
        assert hit.to_dict()["archived"] is True and hit.reason is None and found.paths == ["internal/outbox/relay.go"]
        assert "tw-obs-t1" not in [h.id for h in wb.search(query, paths=["internal/outbox/relay.go"],
                                                            principal="raj.patel").hits]
