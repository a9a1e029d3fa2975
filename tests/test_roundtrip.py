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


def test_export_refuses_a_non_empty_folder(wb, tmp_path):
    import pytest
    from workbench.errors import UserError

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("keep me")
    with pytest.raises(UserError, match="not empty"):
        wb.export_files(tmp_path / "full")
    assert (tmp_path / "full" / "x.txt").read_text() == "keep me"

