"""Principal kinds in workbench.yaml (person, agent, service; write grants) and three small leaks
of issue 26 closed in the core: ``pin`` refuses a session nobody declared, a nudge's cooldown has a
minimum, and ``set create`` of a name that exists only where the actor cannot see answers exactly
like a free name (sets are named within their scope, migration 009). The faces are in
test_kinds_faces.py and test_kinds_tui.py; the property test in test_write_policy.py."""

from __future__ import annotations

import shutil

import duckdb
import pytest
import yaml
from conftest import CONFIG, write_at_old_schema, write_fragment

from workbench import Workbench
from workbench.config import WorkspaceConfig
from workbench.errors import NotFound, PermissionDenied, UserError, ValidationError

PAY = "org=northwind,repo=payments-api"


def sample_config() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def principal(config: dict, name: str) -> dict:
    return next(p for p in config["principals"] if p["name"] == name)


# -- kinds and grants in workbench.yaml ---------------------------------------------------------

@pytest.mark.parametrize("change, field, words", [
    (lambda c: principal(c, "agent.nw-coder").update(kind="robot"), "kind",
     "'robot' is not one of person, agent, service"),
    (lambda c: principal(c, "agent.nw-coder").update(writes=["org=tidewater"]), "writes",
     "outside agent.nw-coder's own memberships"),
    (lambda c: principal(c, "agent.nw-coder").update(writes=["org=northwind,repo=ledger"]), "writes",
     "outside agent.nw-coder's own memberships"),
    (lambda c: principal(c, "agent.nw-coder").update(writes=["org=northwind,repo=nowhere"]), "writes",
     "unknown repo 'nowhere'"),
    (lambda c: principal(c, "marco.bianchi").update(writes=[PAY]), "writes", "marco.bianchi is a person"),
    (lambda c: principal(c, "agent.nw-coder").update(lead_of=[PAY]), "lead_of", "is an agent: it cannot have lead_of"),
    (lambda c: principal(c, "agent.nw-coder").update(admin=True), "admin", "is an agent: it cannot have admin"),
])
def test_a_bad_kind_or_grant_is_a_clear_config_error(change, field, words):
    config = sample_config()
    change(config)
    with pytest.raises(ValidationError) as refused:
        WorkspaceConfig.from_data(config)
    assert refused.value.field.endswith(field) and words in str(refused.value), str(refused.value)


def test_an_unknown_kind_stops_the_cli_with_exit_2_and_no_traceback(tmp_path, cli):
    config = sample_config()
    principal(config, "agent.nw-coder")["kind"] = "bot"
    path = tmp_path / "workbench.yaml"
    path.write_text(yaml.safe_dump(config))
    r = cli("init", "--config", str(path), workspace=tmp_path / "ws")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "principals" in r.stderr and "kind" in r.stderr and "'bot' is not one of person, agent, service" in r.stderr


def test_the_kinds_table_has_a_row_for_every_action_of_the_policy():
    from workbench import policy

    assert set(policy.KIND_RULES) == set(policy.ACTIONS)   # a new action must say what each kind may do
    assert all(len(row) == 3 and set(row) <= {policy.YES, policy.GRANTED, policy.NEVER}
               for row in policy.KIND_RULES.values())


@pytest.fixture
def wb(tmp_path):
    """The sample config, with an agent granted payments-api and a service without grants."""
    config = sample_config()
    config["principals"] += [
        {"name": "agent.pay", "kind": "agent", "orgs": ["northwind"], "repos": ["northwind/payments-api",
                                                                                "northwind/ledger"],
         "writes": [PAY]},
        {"name": "svc.bare", "kind": "service", "orgs": ["northwind"], "repos": ["northwind/*"]}]
    path = tmp_path / "workbench.yaml"
    path.write_text(yaml.safe_dump(config))
    with Workbench.init(tmp_path / "ws", config=path) as bench:
        for fid, repo in (("nw-pay-note", "payments-api"), ("nw-ledger-note", "ledger")):
            assert not bench.ingest([write_fragment(tmp_path / "in", fid, repo=repo)], actor="kb.sync").errors
        yield bench


def test_a_grant_covers_the_scopes_inside_it_and_nothing_else(wb):
    assert wb.edit("nw-pay-note", "Checked by the agent.", reason="checked", actor="agent.pay").version == 2
    with pytest.raises(PermissionDenied, match="its write grants .* do not cover org=northwind,repo=ledger"):
        wb.edit("nw-ledger-note", "Not mine to change.", reason="x", actor="agent.pay")
    mine = wb.add_fragment(title="Mine", body="Made by the agent.", scope=PAY, actor="agent.pay")
    assert mine.owner == "agent.pay"
    with pytest.raises(PermissionDenied, match="do not cover org=northwind,repo=ledger"):  # a move out of it
        wb.edit(mine.id, f"---\nid: {mine.id}\nkind: note\ntitle: Mine\nscope: {{org: northwind, repo: ledger}}\n"
                "owner: agent.pay\n---\n\nMoved.\n", reason="move", actor="agent.pay")
    with pytest.raises(PermissionDenied, match="may not merge"):  # a merge touches both fragments' scopes
        wb.merge("nw-pay-note", "nw-ledger-note", actor="agent.pay")
    with pytest.raises(PermissionDenied):  # pins are a lead's act, and an agent leads nothing
        wb.pin("nw-pay-note", scope=PAY, actor="agent.pay")
    proposal = wb.propose("A note", "Learned.", scope=PAY, principal="agent.nw-coder")
    with pytest.raises(NotFound):  # and reviews are a person's: an agent is no reviewer
        wb.accept(proposal.id, principal="agent.pay")
    assert [v.author for v in wb.history("nw-ledger-note", principal="agent.pay")] == ["kb.sync"]


def test_a_service_without_grants_writes_nothing_and_says_why(wb):
    counts = wb.stats()
    with pytest.raises(PermissionDenied, match="svc.bare is a service: it may not edit here: workbench.yaml grants "
                                               "it no write scope"):
        wb.edit("nw-pay-note", "Synced.", reason="sync", actor="svc.bare")
    with pytest.raises(PermissionDenied, match="svc.bare is a service"):
        wb.add_antipattern(title="T", dont="d", why="w", instead="i", scope=PAY, actor="svc.bare")
    assert wb.stats() == counts


def test_an_agents_refusal_of_an_invisible_fragment_is_unknown_as_for_anyone(wb):
    hidden = pytest.raises(NotFound, wb.archive, "nw-pay-note", actor="agent.tw-ops", reason="x")
    missing = pytest.raises(NotFound, wb.archive, "tw-no-such", actor="agent.tw-ops", reason="x")
    assert str(hidden.value).replace("nw-pay-note", "X") == str(missing.value).replace("tw-no-such", "X")


# -- pin refuses a session nobody declared -----------------------------------------------------

def test_pin_refuses_a_session_nobody_declared(sample_workspace, cli):
    fid = "nw-adr-0007-idempotency-keys"
    with Workbench.open(sample_workspace) as wb:
        for scope in ("org=northwind,session=sess-nobody", "org=northwind,repo=nowhere"):
            with pytest.raises(UserError) as refused:
                wb.pin(fid, scope=scope, actor="priya.raman")
            assert "unknown" in str(refused.value) and refused.value.param == "scope"
        # a session in a principal's sessions: list is declared
        assert wb.pin(fid, scope="org=northwind,session=sess-2026-08-19-pgb", actor="priya.raman")
        counts = wb.stats()
    r = cli("pin", fid, "--scope", "org=northwind,session=sess-nobody", "--as", "priya.raman",
            workspace=sample_workspace)
    assert r.returncode == 2 and "unknown session 'sess-nobody'" in r.stderr and "Traceback" not in r.stderr
    with Workbench.open(sample_workspace) as wb:
        assert wb.stats() == counts


def test_a_session_declared_only_by_a_fragment_counts_for_those_who_see_it(tmp_path):
    config = sample_config()
    principal(config, "kb.sync")["sessions"].remove("sess-2026-03-18-idem-ttl")  # now no principal is in it
    path = tmp_path / "workbench.yaml"
    path.write_text(yaml.safe_dump(config))
    session = "sess-2026-03-18-idem-ttl"
    with Workbench.init(tmp_path / "ws", config=path) as wb:
        note = write_fragment(tmp_path / "in", "nw-sess-note", owner="marco.bianchi")
        note.write_text(note.read_text().replace("repo: payments-api}", f"repo: payments-api, session: {session}}}"))
        write_fragment(tmp_path / "in", "nw-plain", owner="marco.bianchi")
        assert not wb.ingest([tmp_path / "in"], actor="marco.bianchi").errors
        # marco owns the session's fragment, so he sees it: the session is declared for him
        assert wb.pin("nw-plain", scope=f"{PAY},session={session}", actor="marco.bianchi")
        # priya leads northwind but cannot see that fragment: to her it is a session nobody declared
        unseen = pytest.raises(UserError, wb.pin, "nw-plain", scope=f"{PAY},session={session}", actor="priya.raman")
        nobody = pytest.raises(UserError, wb.pin, "nw-plain", scope=f"{PAY},session=sess-x", actor="priya.raman")
        assert str(unseen.value).replace(session, "S") == str(nobody.value).replace("sess-x", "S")


# -- nudges have a minimum cooldown ------------------------------------------------------------

def test_a_nudge_cooldown_under_a_day_is_for_an_admin_or_the_local_administrator(sample_workspace, cli,
                                                                                   monkeypatch):
    with Workbench.open(sample_workspace) as wb:
        counts = wb.stats()
        with pytest.raises(PermissionDenied, match="cooldown must be at least 1 day"):
            wb.nudge(cooldown_days=0, principal="marco.bianchi")
        assert wb.stats() == counts and not (sample_workspace / "outbox").exists()
        wb.nudge(cooldown_days=1, principal="marco.bianchi")
        wb.nudge(cooldown_days=0, principal="priya.raman")   # an admin
        monkeypatch.setenv("WORKBENCH_PRINCIPAL", "marco.bianchi")
        wb.nudge(cooldown_days=0)   # the local administrator (no principal named), seeing as marco
    r = cli("nudge", "--cooldown", "0", "--as", "marco.bianchi", workspace=sample_workspace)
    assert r.returncode == 2 and "cooldown must be at least 1 day" in r.stderr and "Traceback" not in r.stderr
    assert cli("nudge", "--cooldown", "0", workspace=sample_workspace).returncode == 0


# -- an invisible set name answers like a free one ---------------------------------------------

def test_set_create_of_a_name_taken_only_where_the_actor_cannot_see_answers_like_a_free_name(sample_workspace, cli):
    with Workbench.open(sample_workspace) as wb:
        wb.set_create("ledger-core", scope="org=northwind,repo=ledger", actor="sofia.okafor")
        wb.set_create("tw-core", scope="org=tidewater", actor="lena.fischer")
    answers = {}
    for name in ("ledger-core", "tw-core", "a-free-name"):   # hannah.lee sees neither ledger nor tidewater
        r = cli("set", "create", name, "--scope", "org=northwind,repo=checkout-web", "--as", "hannah.lee", "--json",
                workspace=sample_workspace)
        assert r.returncode == 0, r.stderr
        answers[name] = (r.returncode, r.stdout.replace(name, "NAME"), r.stderr.replace(name, "NAME"))
    assert answers["ledger-core"] == answers["tw-core"] == answers["a-free-name"]
    # a name taken by a set she reads is refused, as before
    taken = cli("set", "create", "a-free-name", "--scope", "org=northwind", "--as", "hannah.lee",
                workspace=sample_workspace)
    assert taken.returncode == 2 and "a set named 'a-free-name' already exists" in taken.stderr
    with Workbench.open(sample_workspace) as wb:
        assert wb.set_show("ledger-core", principal="hannah.lee")["owner"] == "hannah.lee"
        assert wb.set_show("ledger-core", principal="sofia.okafor")["owner"] == "sofia.okafor"
        # who reads both is asked which, and NAME@SCOPE names one
        with pytest.raises(UserError, match="more than one set named 'ledger-core'.*ledger-core@org=northwind,"):
            wb.set_show("ledger-core", principal="priya.raman")
        both = {wb.set_show(f"ledger-core@{s}", principal="priya.raman")["owner"]
                for s in ("org=northwind,repo=ledger", "org=northwind,repo=checkout-web")}
        assert both == {"sofia.okafor", "hannah.lee"}
        with pytest.raises(NotFound):
            wb.set_show("ledger-core@org=northwind,repo=ledger", principal="hannah.lee")


@pytest.mark.duckdb_only("DuckDB's migration files, applied to a DuckDB file")
def test_migration_009_keeps_the_sets_made_before_it(tmp_path, monkeypatch):
    from workbench.store import migrations

    before = tmp_path / "migrations-008"
    before.mkdir()
    for path in migrations.MIGRATIONS_DIR.glob("*.sql"):
        if path.name[:3] < "009":
            shutil.copy2(path, before / path.name)
    root = tmp_path / "ws"
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS_DIR", before)
        with Workbench.init(root, config=CONFIG) as wb:
            write_at_old_schema(wb, tmp_path / "in", "nw-old")
    con = duckdb.connect(str(root / "workbench.duckdb"))   # a set as 005 kept it: named workspace-wide
    try:
        con.execute("INSERT INTO sets VALUES ('old-set', 'marco.bianchi', ?, NULL, now())", [PAY])
        con.execute("INSERT INTO set_members VALUES ('old-set', 'nw-old', 'include')")
    finally:
        con.close()
    with Workbench.open(root) as wb:   # migrated on open
        assert 9 in wb.store.schema_versions()
        shown = wb.set_show("old-set", principal="marco.bianchi")
        assert (shown["owner"], shown["include"]) == ("marco.bianchi", ["nw-old"])
    con = duckdb.connect(str(root / "workbench.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT set_name, set_scope, fragment_id FROM set_members").fetchall() == [
            ("old-set", PAY, "nw-old")]
    finally:
        con.close()
