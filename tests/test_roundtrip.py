"""export-files writes fragment files that re-ingest to the same state."""

from __future__ import annotations

from conftest import CONFIG
from workbench import Workbench


def _state(bench):
    return {f.id: {k: v for k, v in f.to_dict().items() if k != "version"} for f in bench.store.fragments()}


def test_round_trip_through_files(sample_workspace, tmp_path):
    out = tmp_path / "out"
    with Workbench.open(sample_workspace) as bench:
        bench.archive("tw-adr-0006-error-code-namespaces", actor="raj.patel", reason="test archived export")
        bench.store.set_verified("tw-adr-0001-kafka-event-backbone", bench.store.get(
            "tw-adr-0001-kafka-event-backbone").updated_at.replace(year=2026, month=11, day=1))
        before = _state(bench)
        written = bench.export_files(out, principal="kb.sync")  # the corpus's service principal sees it all
        assert len(written) == len(before)
        # same workspace: nothing changes
        again = bench.ingest([out], actor="kb.sync")
        assert not again.errors and not again.added and not again.updated
        assert len(again.unchanged) == len(before)
    # a fresh workspace: the same fragments, byte for byte in content and timestamps
    with Workbench.init(tmp_path / "fresh", config=CONFIG) as fresh:
        report = fresh.ingest([out], actor="kb.sync")
        assert not report.errors
        assert _state(fresh) == before


def test_export_files_leaves_foreign_files_alone_and_refuses_to_overwrite_one(wb, tmp_path):
    import pytest
    from conftest import write_fragment
    from workbench.errors import UserError

    wb.ingest([write_fragment(tmp_path / "in", "nw-kept")], actor="marco.bianchi")
    out = tmp_path / "full"
    (out / "northwind" / "payments-api").mkdir(parents=True)
    (out / "x.txt").write_text("keep me")
    written = wb.export_files(out, principal="marco.bianchi")  # no collision: no --force needed
    assert [p.name for p in written] == ["nw-kept.md"] and (out / "x.txt").read_text() == "keep me"
    other = tmp_path / "other"
    (other / "northwind" / "payments-api").mkdir(parents=True)
    mine = other / "northwind" / "payments-api" / "nw-kept.md"
    mine.write_text("my own notes")
    with pytest.raises(UserError, match="not written by workbench"):
        wb.export_files(other, principal="marco.bianchi")
    assert mine.read_text() == "my own notes"
    wb.export_files(other, principal="marco.bianchi", force=True)
    assert mine.read_text().startswith("---\nid: nw-kept")
