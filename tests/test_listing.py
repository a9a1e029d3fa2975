"""``Workbench.list`` decides who sees what on light rows and reads only what it returns whole:
the same answers as the rule applied to every whole fragment, pages that add up to the whole list,
and no fragment outside the caller's scope even when a row changed between the two reads."""

from __future__ import annotations

import json

import pytest

from workbench import Workbench, policy
from workbench.errors import UserError
from workbench.models import PROPOSAL_STATUSES


def _reference(wb, name, *, include_archived=False, servable=False):
    """The rule applied to every fragment read whole (what ``list`` did before it read light rows)."""
    who = wb.principal(name)
    withheld = wb.store.secret_flagged() if servable else set()
    rows = wb.store.fragments(status=None if include_archived else "active")
    return [f.id for f in rows if f.status not in PROPOSAL_STATUSES and policy.sees(who, f) and f.id not in withheld]


def _principals(wb):
    return sorted(wb.config.principals)


def test_list_answers_what_the_rule_answers_on_whole_fragments_for_every_principal(sample_wb):
    names = _principals(sample_wb)
    assert len(names) >= 3
    sizes = set()
    for name in names:
        for include_archived in (False, True):
            for servable in (False, True):
                got = [f.id for f in sample_wb.list(principal=name, include_archived=include_archived,
                                                    servable=servable)]
                assert got == _reference(sample_wb, name, include_archived=include_archived,
                                         servable=servable), (name, include_archived, servable)
        sizes.add(len(sample_wb.list(principal=name)))
    assert len(sizes) > 1, "the principals see different slices: the comparison means something"


@pytest.mark.parametrize("limit", [1, 2, 7, 50])
def test_pages_add_up_to_the_whole_list(sample_wb, limit):
    for name in _principals(sample_wb):
        whole = [f.id for f in sample_wb.list(principal=name)]
        paged, after = [], None
        while True:
            page = sample_wb.list(principal=name, after=after, limit=limit)
            assert len(page) <= limit
            paged += [f.id for f in page]
            if len(page) < limit:
                break
            after = page[-1].id
        assert paged == whole, name


def test_only_the_page_is_read_whole(sample_workspace, monkeypatch):
    with Workbench.open(sample_workspace) as wb:
        total = len(wb.store.ids())
        read: list[str] = []
        whole = wb.store.fragments

        def counting(**kw):
            rows = whole(**kw)
            read.extend(f.id for f in rows)
            return rows

        monkeypatch.setattr(wb.store, "fragments", counting)
        page = wb.list(principal="marco.bianchi", limit=3)
        assert len(page) == 3
        # only the span from the page's first id to its last is read whole
        assert read and min(read) == page[0].id and max(read) == page[-1].id and len(read) < total / 2


def test_a_row_that_changed_between_the_two_reads_is_decided_again_on_the_whole_fragment(sample_workspace,
                                                                                        monkeypatch):
    """An attacker's view of the two reads: a light row that says "your org" for a fragment that is
    (by the time it is read whole) in another org must not be returned."""
    with Workbench.open(sample_workspace) as wb:
        who = "marco.bianchi"
        hidden = [f for f in wb.store.fragments(status="active") if not policy.sees(wb.principal(who), f)]
        seen = wb.list(principal=who)
        assert hidden and seen
        mine = seen[0].scope
        listing = wb.store.listing

        def stale(**kw):  # every hidden fragment's row claims the scope of one the caller sees
            return [(fid, mine.org, mine.repo, mine.persona, mine.session, owner, status)
                    for fid, _o, _r, _p, _s, owner, status in listing(**kw)]

        monkeypatch.setattr(wb.store, "listing", stale)
        got = {f.id for f in wb.list(principal=who)}
        assert got == {f.id for f in seen}
        assert not got & {f.id for f in hidden}


@pytest.mark.parametrize("limit", [0, -1, True, "3", 2.5])
def test_a_bad_limit_is_a_user_error(sample_wb, limit):
    with pytest.raises(UserError, match="limit"):
        sample_wb.list(principal="marco.bianchi", limit=limit)


def test_cli_list_pages_and_refuses_a_bad_limit_with_exit_2(sample_workspace, cli):
    whole = json.loads(cli("list", "--as", "marco.bianchi", "--json", workspace=sample_workspace).stdout)
    first = cli("list", "--as", "marco.bianchi", "--limit", "2", "--json", workspace=sample_workspace)
    assert first.returncode == 0, first.stderr
    page = json.loads(first.stdout)
    assert [r["id"] for r in page] == [r["id"] for r in whole[:2]]
    nxt = cli("list", "--as", "marco.bianchi", "--after", page[-1]["id"], "--limit", "2", "--json",
              workspace=sample_workspace)
    assert [r["id"] for r in json.loads(nxt.stdout)] == [r["id"] for r in whole[2:4]]
    for bad in ("0", "-3", "abc"):
        done = cli("list", "--as", "marco.bianchi", "--limit", bad, workspace=sample_workspace)
        assert done.returncode == 2 and "Traceback" not in done.stderr and "limit" in done.stderr, done.stderr


def test_list_reads_its_light_rows_in_chunks_and_the_cli_its_bodies_in_pages(sample_workspace, cli, monkeypatch):
    """Tiny chunks and pages give the same answers as one of each (the boundaries are where a
    cursor is off by one)."""
    from workbench.cli import commands
    from workbench.service import fragments

    with Workbench.open(sample_workspace) as wb:
        expected = {name: [f.id for f in wb.list(principal=name)] for name in _principals(wb)}
    whole = {name: cli("list", "--as", name, "--json", workspace=sample_workspace).stdout for name in expected}
    monkeypatch.setattr(fragments, "LISTING_CHUNK", 3)
    monkeypatch.setattr(commands, "LIST_PAGE", 2)
    with Workbench.open(sample_workspace) as wb:
        for sparse in (0, 10**9):  # bodies read by id, or the span read whole: the same answers
            monkeypatch.setattr(fragments, "SPARSE", sparse)
            for name, ids in expected.items():
                assert [f.id for f in wb.list(principal=name)] == ids, (name, sparse)
                assert [f.id for f in wb.list(principal=name, limit=5)] == ids[:5], (name, sparse)
    for name in expected:
        paged = cli("list", "--as", name, "--json", workspace=sample_workspace)
        assert paged.returncode == 0 and paged.stdout == whole[name], name
        assert [r["id"] for r in json.loads(cli("list", "--as", name, "--limit", "3", "--json",
                                                workspace=sample_workspace).stdout)] == expected[name][:3]
