"""Anti-pattern ids follow the workspace's convention: the org's prefix, ``ap``, a slug of the title,
and never an id that is taken."""

from __future__ import annotations

import pytest
from conftest import write_fragment

from workbench import Workbench
from workbench.curate.ids import new_id, org_prefix, slug
from workbench.errors import UserError

AP = {"dont": "Do not do it", "why": "it broke before (INC-1)", "instead": "do the other thing"}


def test_the_prefix_is_the_orgs_anti_pattern_prefix_then_its_common_prefix_then_its_name():
    rows = [("nw-ap-a", "anti-pattern"), ("nw-ap-b", "anti-pattern"), ("old-ap-c", "anti-pattern"),
            ("pay-rb-x", "runbook"), ("pay-rb-y", "runbook"), ("pay-adr-z", "decision")]
    assert org_prefix("northwind", rows, "anti-pattern", "ap") == "nw"
    assert org_prefix("northwind", rows[3:], "anti-pattern", "ap") == "pay"
    assert org_prefix("northwind", [], "anti-pattern", "ap") == "northwind"
    assert org_prefix("northwind", [("b-ap-1", "anti-pattern"), ("a-ap-2", "anti-pattern")], "anti-pattern",
                      "ap") == "a"  # a tie: the same answer every time
    assert org_prefix("acme", [("x-rb-1", "runbook"), ("x-ap-2", "runbook")], "anti-pattern", "ap") == "x"


def test_a_taken_id_gets_the_next_number():
    taken = {"nw-ap-float-for-money", "nw-ap-float-for-money-2"}
    assert new_id("Float for money!", org="northwind", org_ids=[("nw-ap-x", "anti-pattern")],
                  taken=taken) == "nw-ap-float-for-money-3"
    assert new_id("  ", org="northwind", org_ids=[], taken=set()) == "northwind-ap-anti-pattern"
    assert slug("A" * 70 + " b", "x") == "a" * 60


def test_sample_workspace_ids_follow_the_corpus(sample_workspace):
    with Workbench.open(sample_workspace) as wb:
        nw = wb.add_antipattern(title="Retrying webhooks forever", scope="org=northwind,repo=payments-api",
                                actor="marco.bianchi", **AP)
        assert nw.id == "nw-ap-retrying-webhooks-forever"
        tw = wb.add_antipattern(title="Retrying webhooks forever", scope="org=tidewater", actor="lena.fischer", **AP)
        assert tw.id == "tw-ap-retrying-webhooks-forever"
        again = wb.add_antipattern(title="Retrying webhooks forever", scope="org=northwind,repo=payments-api",
                                   actor="marco.bianchi", **AP)
        assert again.id == "nw-ap-retrying-webhooks-forever-2"
        existing = wb.add_antipattern(title="Float for money", scope="org=northwind,repo=payments-api",
                                      actor="marco.bianchi", **AP)
        assert existing.id == "nw-ap-float-for-money-2"  # the corpus's own nw-ap-float-for-money is kept
        assert wb.get("nw-ap-float-for-money", principal="marco.bianchi").version == 1
        # an id chosen by hand is never renumbered: taken is refused
        with pytest.raises(UserError, match="already exists"):
            wb.add_antipattern(title="x", scope="org=northwind,repo=payments-api", actor="marco.bianchi",
                               fragment_id="nw-ap-float-for-money", **AP)


def test_a_fresh_workspace_uses_the_org_name_then_what_the_org_already_uses(wb, tmp_path):
    first = wb.add_antipattern(title="Float for money", scope="org=northwind", actor="priya.raman", **AP)
    assert first.id == "northwind-ap-float-for-money"
    folder = tmp_path / "frags"
    for fid in ("pay-rb-one", "pay-rb-two", "pay-note-three"):
        write_fragment(folder, fid, org="tidewater", repo=None, owner="lena.fischer")
    report = wb.ingest([folder], actor="lena.fischer")
    assert not report.errors, report.errors
    tw = wb.add_antipattern(title="Float for money", scope="org=tidewater", actor="lena.fischer", **AP)
    assert tw.id == "pay-ap-float-for-money"  # no anti-pattern yet: the org's most common prefix
