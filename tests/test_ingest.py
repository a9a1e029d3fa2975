"""Ingest of fragment files: idempotent, versioned, all-or-nothing, bad files reported and skipped."""

from __future__ import annotations

import pytest

from conftest import fragment_text, write_fragment
from workbench.errors import StoreError


def test_reingest_unchanged_changes_nothing(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src, "nw-a")
    write_fragment(src, "nw-b", kind="runbook")
    first = wb.ingest([src])
    assert sorted(first.added) == ["nw-a", "nw-b"]
    before = wb.stats()
    again = wb.ingest([src])
    assert (again.added, again.updated, sorted(again.unchanged)) == ([], [], ["nw-a", "nw-b"])
    assert wb.stats() == before


def test_changed_file_makes_a_new_version(wb, tmp_path):
    src = tmp_path / "in"
    path = write_fragment(src, "nw-a", body="v1")
    wb.ingest([src])
    path.write_text(fragment_text("nw-a", body="v2"))
    report = wb.ingest([src])
    assert report.updated == ["nw-a"]
    assert [v.content.body for v in wb.history("nw-a", principal="marco.bianchi")] == ["v1", "v2"]


def test_front_matter_timestamps_are_kept(wb, tmp_path):
    write_fragment(tmp_path / "in", "nw-a", extra="created: 2025-01-02\nupdated: 2025-03-04T10:00:00Z\n"
                                                  "verified: 2025-06-01\n")
    wb.ingest([tmp_path / "in"])
    f = wb.get("nw-a", principal="marco.bianchi")
    assert (f.created_at.isoformat(), f.updated_at.isoformat(), f.verified_at.isoformat()) == (
        "2025-01-02T00:00:00", "2025-03-04T10:00:00", "2025-06-01T00:00:00")


BAD = {
    "malformed.md": ("---\nid: nw-x\ntitle: a: b\n---\nbody\n", "malformed YAML (line 3: mapping values"),
    "schema.md": (fragment_text("nw-y", kind="decison"), "kind: 'decison' is not one of"),
    "missing.md": ("---\nid: nw-z\nkind: note\nscope: {org: northwind}\nowner: marco.bianchi\n---\nb\n",
                   "title: required field is missing"),
    "owner.md": (fragment_text("nw-o", owner="nobody"), "owner: unknown owner 'nobody'"),
    "scope.md": (fragment_text("nw-s", repo="no-such-repo"), "scope: unknown repo 'no-such-repo'"),
    "nonmember.md": (fragment_text("nw-n", repo="checkout-web"), "is not a member of scope"),
    "nofront.md": ("just markdown\n", "no YAML front matter"),
    "empty.md": (fragment_text("nw-e", body=""), "body: is empty"),
    "ap.md": (fragment_text("nw-ap", kind="anti-pattern"), "dont: required field is missing"),
    "badid.md": (fragment_text("NW Bad Id"), "id: 'NW Bad Id' has the wrong form"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_file_is_reported_with_file_and_field_and_others_are_imported(wb, tmp_path, name):
    text, expected = BAD[name]
    src = tmp_path / "in"
    write_fragment(src, "nw-good")
    (src / name).write_text(text)
    report = wb.ingest([src])
    assert report.added == ["nw-good"]
    assert len(report.errors) == 1
    assert report.errors[0]["file"].endswith(name)
    assert name in report.errors[0]["message"] and expected in report.errors[0]["message"]


def test_duplicate_id_in_one_ingest(wb, tmp_path):
    src = tmp_path / "in"
    write_fragment(src / "a", "nw-dup", body="first")
    write_fragment(src / "b", "nw-dup", body="second")
    report = wb.ingest([src])
    assert report.added == ["nw-dup"]
    assert "duplicate id 'nw-dup'" in report.errors[0]["message"]
    assert wb.get("nw-dup", principal="marco.bianchi").body == "first"


def test_missing_path_is_reported(wb, tmp_path):
    report = wb.ingest([tmp_path / "nope"])
    assert report.errors == [{"file": str(tmp_path / "nope"), "message": "no such file or folder"}]


def test_dangling_links_are_warned_not_fatal(wb, tmp_path):
    write_fragment(tmp_path / "in", "nw-a", extra="links: [nw-missing]\n")
    report = wb.ingest([tmp_path / "in"])
    assert report.added == ["nw-a"]
    assert "nw-missing" in report.warnings[0]["message"]


def test_a_failure_mid_ingest_writes_nothing(wb, tmp_path, monkeypatch):
    from workbench.ingest import importer

    src = tmp_path / "in"
    for i in range(5):
        write_fragment(src, f"nw-{i}")
    monkeypatch.setattr(importer, "WRITE_CHUNK", 2)
    original = wb.store.write_versions
    calls = {"n": 0}

    def failing(items):
        calls["n"] += 1
        if calls["n"] == 2:  # the first chunk is already written inside the transaction
            raise StoreError("disk on fire")
        return original(items)

    monkeypatch.setattr(wb.store, "write_versions", failing)
    with pytest.raises(StoreError):
        wb.ingest([src])
    assert calls["n"] == 2
    assert wb.stats() == {"fragments": 0, "versions": 0, "events": 0}
    monkeypatch.setattr(wb.store, "write_versions", original)
    assert len(wb.ingest([src]).added) == 5
