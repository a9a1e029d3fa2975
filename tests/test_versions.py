"""Versioning: every change appends a version; nothing is overwritten or deleted."""

from __future__ import annotations

import pytest

from conftest import fragment_text, write_fragment
from workbench.errors import NotFound, PermissionDenied, UserError


@pytest.fixture
def one(wb, tmp_path):
    write_fragment(tmp_path / "in", "nw-one", kind="decision", body="## Context\nFirst body.")
    assert wb.ingest([tmp_path / "in"], actor="marco.bianchi").added == ["nw-one"]
    return wb


def test_ingest_creates_version_one(one):
    history = one.history("nw-one", principal="marco.bianchi")
    assert [v.number for v in history] == [1]
    assert history[0].author == "marco.bianchi"
    assert history[0].content_hash == one.get("nw-one", principal="marco.bianchi").content_hash


def test_edit_appends_version_with_reason_and_author(one):
    f = one.edit("nw-one", "## Context\nSecond body.", reason="clarify", actor="sofia.okafor")
    assert f.version == 2 and f.body == "## Context\nSecond body."
    v = one.history("nw-one", principal="marco.bianchi")
    assert [(x.number, x.author, x.reason) for x in v] == [(1, "marco.bianchi", "ingest nw-one.md"),
                                                           (2, "sofia.okafor", "clarify")]
    assert v[0].content.body == "## Context\nFirst body."  # the old version is untouched
    assert one.get("nw-one", version=1, principal="marco.bianchi").body == "## Context\nFirst body."


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_edit_without_reason_is_refused_and_changes_nothing(one, reason):
    with pytest.raises(UserError, match="reason is required"):
        one.edit("nw-one", "new", reason=reason, actor="marco.bianchi")
    assert len(one.history("nw-one", principal="marco.bianchi")) == 1


def test_edit_with_whole_file_changes_metadata(one):
    text = fragment_text("nw-one", kind="runbook", title="Now a runbook", body="Steps.", owner="sofia.okafor",
                         repo="ledger")
    f = one.edit("nw-one", text, reason="rescope", actor="marco.bianchi")
    assert (f.kind, f.title, f.owner, f.scope.repo) == ("runbook", "Now a runbook", "sofia.okafor", "ledger")


def test_edit_with_identical_content_is_refused(one):
    with pytest.raises(UserError, match="no change"):
        one.edit("nw-one", "## Context\nFirst body.", reason="noop", actor="marco.bianchi")


def test_edit_outside_the_editors_scope_is_refused(one):
    # hannah.lee is in northwind but not in repo payments-api: she cannot see the fragment.
    with pytest.raises(NotFound):
        one.edit("nw-one", "x", reason="r", actor="hannah.lee")
    # marco may not move it into a repo he is not a member of.
    text = fragment_text("nw-one", repo="checkout-web", owner="hannah.lee")
    with pytest.raises(PermissionDenied):
        one.edit("nw-one", text, reason="move", actor="marco.bianchi")
    assert len(one.history("nw-one", principal="marco.bianchi")) == 1


def test_edit_with_mismatched_id_or_unknown_owner_is_refused(one):
    with pytest.raises(UserError, match="does not match"):
        one.edit("nw-one", fragment_text("nw-other"), reason="r", actor="marco.bianchi")
    with pytest.raises(UserError, match="unknown owner"):
        one.edit("nw-one", fragment_text("nw-one", owner="nobody"), reason="r", actor="marco.bianchi")


def test_revert_is_a_new_version(one):
    one.edit("nw-one", "## Context\nSecond body.", reason="clarify", actor="marco.bianchi")
    f = one.revert("nw-one", 1, actor="marco.bianchi")
    assert f.version == 3 and f.body == "## Context\nFirst body."
    history = one.history("nw-one", principal="marco.bianchi")
    assert [v.reason for v in history] == ["ingest nw-one.md", "clarify", "revert to v1"]
    assert history[2].content_hash == history[0].content_hash
    with pytest.raises(NotFound):
        one.revert("nw-one", 9, actor="marco.bianchi")


def test_archive_and_restore_are_versioned(one):
    one.archive("nw-one", actor="marco.bianchi", reason="obsolete")
    assert [f.id for f in one.list(principal="marco.bianchi")] == []
    assert [f.id for f in one.list(principal="marco.bianchi", include_archived=True)] == ["nw-one"]
    assert one.get("nw-one", principal="marco.bianchi").status == "archived"
    one.restore("nw-one", actor="marco.bianchi", reason="still used")
    statuses = [v.content.status for v in one.history("nw-one", principal="marco.bianchi")]
    assert statuses == ["active", "archived", "active"]
    with pytest.raises(UserError, match="already active"):
        one.restore("nw-one", actor="marco.bianchi", reason="again")


def test_diff_between_versions(one):
    one.edit("nw-one", "## Context\nSecond body.", reason="clarify", actor="marco.bianchi")
    text = one.diff("nw-one", 1, 2, principal="marco.bianchi")
    assert "-First body." in text and "+Second body." in text
    assert one.diff("nw-one", 1, 1, principal="marco.bianchi") == ""
    with pytest.raises(NotFound):
        one.diff("nw-one", 1, 5, principal="marco.bianchi")


def test_unknown_id_and_unknown_principal(one):
    with pytest.raises(NotFound, match="unknown fragment"):
        one.get("nw-nope", principal="marco.bianchi")
    with pytest.raises(NotFound, match="unknown principal"):
        one.get("nw-one", principal="mallory")
    with pytest.raises(NotFound, match="no version 7"):
        one.get("nw-one", version=7, principal="marco.bianchi")
