"""Every write, checked against an oracle written independently of the policy.

The team's write policy (the specification this file tests):

| action | who may do it |
|---|---|
| create a fragment in scope S | a principal who can see S; the owner named must also be able to see S |
| change body, title, tags, links or sources | a principal who can see the fragment's current scope |
| change owner or scope | the current owner or a lead of the current scope; the actor must also see the new scope, and the new owner must see it |
| archive / restore / revert | as for changing the body (a revert to another owner/scope is also an owner/scope change) |
| verify / snooze | the owner |
| pin / unpin | a lead of the pin's scope who can see the fragment |
| merge | the actor sees both, same org; links from fragments the actor cannot see are left alone |
| read a trace | only the principal who made the call |
| read or export a set | its owner, and principals who can see its scope; each gets only what they can see |
| export anything | an explicit principal; only what that principal sees |

Kinds of principal limit that table further (README, "What agents may do"): a person may do all
of it; an agent writes only inside its write grants (``writes:``), and never pins or unpins; a
service writes (pins and unpins included) only inside its grants. A write needs every scope it
touches granted. Every example's workspace holds an agent without a grant, an agent with one and a
service with grants beside its persons.

The author of every version is the actor; an unknown id and an id the actor may not see both
raise ``NotFound``; other refusals of visible targets are ``UserError``s that are not ``NotFound``.

``policy_oracle.py`` states those rules over its own model (written from the table only; it
imports nothing from workbench). ``policy_workspace.py`` (worlds, content, files, bundles),
``policy_machine.py`` (state and checks), ``policy_write_ops.py`` and ``policy_exchange_ops.py``
(the operations) make up the property test. A hypothesis state machine
generates a workspace per example (2 orgs x 2 repos x 2 personas, 1-2 sessions, 2-5 principals
with memberships, wildcard grants, sessions and led scopes, written as a real workbench.yaml) and
runs sequences of real operations on a real DuckDB file, keeping its own model of the workspace
in step: an allowed operation must write exactly the expected versions (authored by the actor),
a refused one must raise the expected kind of ``UserError`` and leave the store unchanged.

Readings the table leaves open, and what this file does about them:
- "can see scope S" at the session level: a member of the session (strict), or anyone who would
  see a fragment in S with that owner, i.e. also its owner (lenient). The oracle decides under
  both; where they differ either outcome passes (the store must still be right) and is counted
  under ``ambiguous_outcomes`` with the reading the product followed.
- a bundle's new fragment: every version is a creation by the importer (nothing here to protect
  yet); an existing fragment's appended versions are changes, one after the other.
- a merge, a pin and a revert also need what makes them meaningful (two distinct active fragments;
  an active fragment that applies in the pin's scope; a version that differs from the current one).

The quick test runs by default; the full one is ``slow``. ``WORKBENCH_POLICY_STATS=FILE`` writes
the counts (operations, principals, allowed, refused, ambiguous, violations, per operation and
per refusal class) as JSON; ``WORKBENCH_POLICY_EXAMPLES`` / ``WORKBENCH_POLICY_STEPS`` size the
full run; ``WORKBENCH_POLICY_LOG=FILE`` appends every operation and its outcome;
``WORKBENCH_POLICY_NO_SHRINK=1`` reports a failure without shrinking it (shrinking can take minutes).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import BACKENDS
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from policy_exchange_ops import ExchangeOps
from policy_machine import STATS, MachineBase, reset_stats
from policy_oracle import Where
from policy_publish_ops import PublishOps
from policy_workspace import CLAIMED_AUTHOR, C, bundle_record, write_bundle
from policy_write_ops import WriteOps

from workbench import Workbench
from workbench.errors import NotFound, PermissionDenied, UserError

EXAMPLES = int(os.environ.get("WORKBENCH_POLICY_EXAMPLES", "35"))
STEPS = int(os.environ.get("WORKBENCH_POLICY_STEPS", "100"))


class WritePolicyMachine(WriteOps, ExchangeOps, PublishOps, MachineBase):
    """The whole machine: state and checks (MachineBase) and every operation."""


# -- the property test ------------------------------------------------------------------------

def _write_stats(elapsed: float, examples: int, steps: int) -> None:
    target = os.environ.get("WORKBENCH_POLICY_STATS")
    if not target:
        return
    out = {k: (dict(v) if isinstance(v, Counter) else v) for k, v in STATS.items()
           if k not in ("by_op", "refusal_errors", "by_kind")}
    out["by_kind"] = {kind: dict(c) for kind, c in sorted(STATS["by_kind"].items())}
    out["by_op"] = {op: dict(c) for op, c in sorted(STATS["by_op"].items())}
    out["refusal_errors"] = {op: dict(c) for op, c in sorted(STATS["refusal_errors"].items())}
    out["seconds"] = round(elapsed, 1)
    out["settings"] = {"max_examples": examples, "stateful_step_count": steps}
    Path(target).write_text(json.dumps(out, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _run_machine(base: Path, examples: int, steps: int, new_database=None) -> None:
    WritePolicyMachine.base = base
    WritePolicyMachine.new_database = staticmethod(new_database) if new_database else None
    reset_stats()
    started = time.monotonic()
    try:
        run_state_machine_as_test(WritePolicyMachine, settings=settings(
            max_examples=examples, stateful_step_count=steps, deadline=None,
            phases=[p for p in Phase if p != Phase.shrink or not os.environ.get("WORKBENCH_POLICY_NO_SHRINK")],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]))
    finally:
        _write_stats(time.monotonic() - started, examples, steps)
    assert STATS["violations"] == 0
    assert STATS["allowed"] > 0 and STATS["refused"] > 0
    # every kind acted: agents without grants (refused every write), agents and services with grants
    assert {"person", "agent", "agent with grants", "service with grants"} <= set(STATS["by_kind"]), STATS["by_kind"]
    assert STATS["by_kind"]["agent"]["refused"] > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_writes_against_the_oracle_quick(tmp_path, backend, request):
    """A short run for the default suite (a few hundred operations), on each store backend (on
    PostgreSQL, a fresh database per example)."""
    if backend == "duckdb":
        _run_machine(tmp_path, examples=6, steps=50)
        return
    import pg_support

    admin = request.getfixturevalue("pg_admin")
    made: list[str] = []
    try:
        _run_machine(tmp_path, examples=6, steps=50,
                     new_database=lambda: made.append(pg_support.fresh_database(admin)) or made[-1])
    finally:
        for url in made:
            pg_support.drop_database(admin, url)
    assert made  # the examples ran on PostgreSQL


@pytest.mark.slow
@pytest.mark.deep  # the long variant of the quick run above: `make test-deep` (CI runs it after `make test`)
def test_every_write_against_the_oracle(tmp_path):
    """The full run: a few thousand operations (sized by WORKBENCH_POLICY_EXAMPLES / _STEPS)."""
    _run_machine(tmp_path, examples=EXAMPLES, steps=STEPS)


# -- regressions for known attacks (hand-written, on the sample workspace config) -----------------

def _history(wb, fid):
    return [(v.number, v.author, v.content_hash) for v in wb.store.versions(fid)]


def test_a_file_reusing_another_orgs_id_is_refused_and_the_rightful_fragment_is_untouched(wb, tmp_path):
    from conftest import write_fragment

    mine = write_fragment(tmp_path / "nw", "nw-shared-id", org="northwind", repo="payments-api",
                          owner="marco.bianchi", title="Northwind card vault plan", body="Only northwind reads this.")
    assert not wb.ingest([mine], actor="marco.bianchi").errors
    wb.edit("nw-shared-id", "Only northwind reads this, v2.", reason="second version", actor="marco.bianchi")
    before, history, counts = wb.store.get("nw-shared-id").to_dict(), _history(wb, "nw-shared-id"), wb.stats()

    theirs = write_fragment(tmp_path / "tw", "nw-shared-id", org="tidewater", repo="dispatch", owner="lena.fischer",
                            title="Tidewater takeover", body="Replaced by tidewater.")
    report = wb.ingest([theirs], actor="lena.fischer")
    assert report.added == [] and report.updated == [] and len(report.errors) == 1, report.to_dict()
    message = report.errors[0]["message"]
    for secret in ("northwind", "payments-api", "marco.bianchi", "card vault", "v2"):
        assert secret not in message, message

    # the same id through every other door: each refused, each answering like an unknown id
    with pytest.raises(NotFound) as seen:
        wb.edit("nw-shared-id", theirs.read_text(), reason="take it", actor="lena.fischer")
    with pytest.raises(NotFound) as unknown:
        wb.edit("tw-no-such-id", theirs.read_text().replace("nw-shared-id", "tw-no-such-id"), reason="x",
                actor="lena.fischer")
    assert str(seen.value) == str(unknown.value).replace("tw-no-such-id", "nw-shared-id")
    for call in (lambda: wb.archive("nw-shared-id", actor="lena.fischer", reason="x"),
                 lambda: wb.revert("nw-shared-id", to=1, actor="lena.fischer"),
                 lambda: wb.history("nw-shared-id", principal="lena.fischer"),
                 lambda: wb.merge("nw-shared-id", "nw-shared-id-2", actor="lena.fischer")):
        with pytest.raises(NotFound):
            call()
    with pytest.raises(UserError) as taken:
        wb.add_antipattern(title="Takeover", dont="d", why="w", instead="i", scope="org=tidewater",
                           actor="lena.fischer", fragment_id="nw-shared-id")
    assert "marco.bianchi" not in str(taken.value) and "northwind" not in str(taken.value)
    record = bundle_record("nw-shared-id", [C("note", "Tidewater takeover", "Replaced by tidewater.",
                                              Where("tidewater", "dispatch"), "lena.fischer")],
                           ["2025-01-01T00:00:00Z"])
    write_bundle(tmp_path / "bundle", [record])
    with pytest.raises(UserError) as refused:
        wb.import_bundle(tmp_path / "bundle", actor="lena.fischer")
    assert "marco.bianchi" not in str(refused.value) and "payments-api" not in str(refused.value)

    assert wb.store.get("nw-shared-id").to_dict() == before
    assert _history(wb, "nw-shared-id") == history
    assert wb.stats() == counts


def test_a_file_naming_someone_else_as_owner_is_authored_by_the_actor(wb, tmp_path):
    from conftest import write_fragment

    path = write_fragment(tmp_path / "in", "nw-owned-by-priya", owner="priya.raman")
    report = wb.ingest([path], actor="marco.bianchi")
    assert report.added == ["nw-owned-by-priya"], report.to_dict()
    assert wb.store.get("nw-owned-by-priya").owner == "priya.raman"
    assert [v.author for v in wb.store.versions("nw-owned-by-priya")] == ["marco.bianchi"]

    # a bundle's claimed authors are claims: the importer is the author of every version written
    record = bundle_record("nw-claimed", [C("note", "Claimed", "v1 text", Where("northwind", "payments-api"),
                                            "priya.raman"),
                                          C("note", "Claimed", "v2 text", Where("northwind", "payments-api"),
                                            "priya.raman")], ["2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"])
    write_bundle(tmp_path / "bundle", [record])
    assert wb.import_bundle(tmp_path / "bundle", actor="marco.bianchi").added == ["nw-claimed"]
    assert [v.author for v in wb.store.versions("nw-claimed")] == ["marco.bianchi", "marco.bianchi"]
    assert all(CLAIMED_AUTHOR not in v.author for v in wb.store.versions("nw-claimed"))


def test_a_non_owner_non_lead_cannot_change_owner_or_scope_with_a_whole_file(wb, tmp_path):
    from conftest import fragment_text, write_fragment

    wb.ingest([write_fragment(tmp_path / "in", "nw-move-me", owner="marco.bianchi")], actor="marco.bianchi")
    # sofia.okafor sees northwind/payments-api and leads ledger, but neither owns nor leads this fragment
    wb.edit("nw-move-me", "sofia may change the body", reason="body", actor="sofia.okafor")
    history, counts = _history(wb, "nw-move-me"), wb.stats()
    body = "sofia may change the body"
    for text in (fragment_text("nw-move-me", owner="sofia.okafor", body=body),              # owner
                 fragment_text("nw-move-me", repo="ledger", body=body),                     # scope
                 fragment_text("nw-move-me", repo="ledger", owner="sofia.okafor", body=body)):
        with pytest.raises(PermissionDenied):
            wb.edit("nw-move-me", text, reason="take it", actor="sofia.okafor")
        path = tmp_path / "again" / f"{len(text)}.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        assert wb.ingest([path], actor="sofia.okafor").errors
    assert _history(wb, "nw-move-me") == history and wb.stats() == counts
    assert wb.store.get("nw-move-me").owner == "marco.bianchi"

    # a lead of a containing scope may (priya.raman leads org=northwind), and is the author
    moved = wb.edit("nw-move-me", fragment_text("nw-move-me", owner="sofia.okafor", body=body), reason="handover",
                    actor="priya.raman")
    assert moved.owner == "sofia.okafor" and wb.store.versions("nw-move-me")[-1].author == "priya.raman"


def test_a_bundle_exported_by_another_principal_elsewhere_imports_only_for_those_allowed(wb, tmp_path):
    from conftest import CONFIG, write_fragment

    with Workbench.init(tmp_path / "other", config=CONFIG) as other:
        src = tmp_path / "src"
        write_fragment(src, "tw-shared-runbook", org="tidewater", repo="dispatch", owner="raj.patel")
        write_fragment(src, "nw-private-note", org="northwind", repo="ledger", owner="sofia.okafor")
        assert not other.ingest([src], actor="kb.sync").errors
        other.edit("tw-shared-runbook", "second text", reason="v2", actor="raj.patel")
        other.set_create("tw-all", scope="org=tidewater", actor="lena.fischer")
        other.set_change("tw-all", "tw-shared-runbook", include=True, actor="lena.fischer")
        with pytest.raises(NotFound):  # not a reader of the set: it does not exist for them
            other.export_bundle("tw-all", tmp_path / "nope", principal="marco.bianchi")
        other.export_bundle("tw-all", tmp_path / "bundle", principal="grace.kim")
    records = [json.loads(line) for line in (tmp_path / "bundle" / "fragments.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == ["tw-shared-runbook"]

    counts = wb.stats()
    with pytest.raises(UserError):  # marco.bianchi may not create anything in tidewater
        wb.import_bundle(tmp_path / "bundle", actor="marco.bianchi")
    assert wb.stats() == counts and wb.store.get("tw-shared-runbook") is None

    report = wb.import_bundle(tmp_path / "bundle", actor="lena.fischer")
    assert report.added == ["tw-shared-runbook"]
    assert [v.author for v in wb.store.versions("tw-shared-runbook")] == ["lena.fischer", "lena.fischer"]
    assert wb.store.get("tw-shared-runbook").owner == "raj.patel"


# -- counterexamples found while writing this file: the table says otherwise (see the report) -----

# Decided: a new fragment's file (or bundle record) brings its recorded dates (created, updated, verified) with
# it, bounded to the past; what only the owner may do is move an EXISTING fragment's verification clock.
def test_a_new_file_keeps_its_recorded_verified_date_but_a_non_owner_cannot_move_an_existing_one(wb, tmp_path):
    from conftest import write_fragment

    path = write_fragment(tmp_path / "in", "nw-fresh-claim", owner="priya.raman", extra="verified: 2026-01-15\n")
    assert wb.ingest([path], actor="marco.bianchi").added == ["nw-fresh-claim"]
    assert wb.store.get("nw-fresh-claim").verified_at.date().isoformat() == "2026-01-15"
    write_fragment(tmp_path / "in", "nw-fresh-claim", owner="priya.raman", extra="verified: 2026-03-01\n")
    report = wb.ingest([path], actor="marco.bianchi")
    assert any("only the owner" in w["message"] for w in report.warnings)
    assert wb.store.get("nw-fresh-claim").verified_at.date().isoformat() == "2026-01-15"
    report = wb.ingest([path], actor="priya.raman")
    assert wb.store.get("nw-fresh-claim").verified_at.date().isoformat() == "2026-03-01"


def test_a_bundle_extension_by_a_non_owner_does_not_move_verification(wb, tmp_path):
    first = bundle_record("nw-imported-claim", [C("note", "Claim", "text", Where("northwind", "payments-api"),
                                                  "priya.raman")], ["2025-01-01T00:00:00Z"])
    write_bundle(tmp_path / "one", [first])
    assert wb.import_bundle(tmp_path / "one", actor="marco.bianchi").added == ["nw-imported-claim"]
    second = bundle_record("nw-imported-claim", [C("note", "Claim", "text", Where("northwind", "payments-api"),
                                                   "priya.raman"),
                                                 C("note", "Claim", "text v2", Where("northwind", "payments-api"),
                                                   "priya.raman")], ["2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"])
    second["verified_at"] = "2026-01-15T00:00:00Z"
    write_bundle(tmp_path / "two", [second])
    assert wb.import_bundle(tmp_path / "two", actor="marco.bianchi").updated == ["nw-imported-claim"]
    assert wb.store.get("nw-imported-claim").verified_at is None


def test_an_export_acts_as_the_named_or_default_principal(wb, tmp_path, monkeypatch):
    """The issue's rule: an explicit principal, which is --as, $WORKBENCH_PRINCIPAL or the config default."""
    from conftest import write_fragment

    monkeypatch.delenv("WORKBENCH_PRINCIPAL", raising=False)
    wb.ingest([write_fragment(tmp_path / "in", "nw-any", owner="marco.bianchi")], actor="marco.bianchi")
    wb.ingest([write_fragment(tmp_path / "tw", "tw-any", org="tidewater", repo="dispatch", owner="raj.patel")],
              actor="raj.patel")
    written = wb.export_files(tmp_path / "out")  # the config's default principal: priya.raman, northwind only
    assert [p.name for p in written] == ["nw-any.md"]
    monkeypatch.setenv("WORKBENCH_PRINCIPAL", "raj.patel")
    assert [p.name for p in wb.export_files(tmp_path / "out2")] == ["tw-any.md"]
