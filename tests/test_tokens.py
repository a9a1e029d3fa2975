"""API tokens: create, list and revoke through the real CLI; only a hash is stored; authentication
accepts a good token and refuses every bad one with one message; who may manage whose tokens
(policy.may_manage_token); admin principals in workbench.yaml; migration 008 on an older workspace.
Empty workspaces with the sample workbench.yaml (priya.raman is its admin), real DuckDB files."""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
from datetime import datetime, timedelta

import duckdb
import pg_support
import pytest

from conftest import CONFIG, write_fragment
from workbench import Workbench
from workbench.errors import NotFound, PermissionDenied, Unauthenticated, UserError, ValidationError

TOKEN_KEYS = {"id", "principal", "created", "expires", "revoked", "last_used", "note", "status"}


def assert_exit_2(r, text):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert text in r.stderr and "Traceback" not in r.stderr


def rows(workspace, sql):
    """What the workspace's database holds (DuckDB or PostgreSQL)."""
    return pg_support.workspace_rows(workspace, sql)


# -- the CLI round trip ------------------------------------------------------------------------


def test_create_list_revoke_round_trip(workspace, cli):
    r = cli("token", "create", "--for", "agent.nw-coder", "--expires", "30", "--note", "CI agent", workspace=workspace)
    assert r.returncode == 0, r.stderr
    raw = r.stdout.strip()
    assert r.stdout == raw + "\n"  # the token alone on stdout, for $(...)
    token_id = raw.split("_")[1]
    assert raw.startswith(f"wbt_{token_id}_") and len(token_id) == 12 and int(token_id, 16) >= 0
    assert len(raw) == len("wbt_") + 12 + 1 + 43
    assert token_id in r.stderr and "only time it is shown" in r.stderr and "hash" in r.stderr
    assert "expires 20" in r.stderr and raw not in r.stderr

    made = json.loads(cli("token", "create", "--for", "marco.bianchi", "--json", workspace=workspace).stdout)
    assert set(made) == {"token", "id", "principal", "created", "expires", "note"}
    assert made["principal"] == "marco.bianchi" and made["expires"] is None and made["created"].endswith("Z")

    listed = json.loads(cli("token", "list", "--json", workspace=workspace).stdout)
    assert [(t["id"], t["principal"], t["status"], t["note"]) for t in listed] == [
        (token_id, "agent.nw-coder", "active", "CI agent"), (made["id"], "marco.bianchi", "active", None)]
    assert all(set(t) == TOKEN_KEYS for t in listed)
    first = listed[0]
    created = datetime.fromisoformat(first["created"].rstrip("Z"))
    assert datetime.fromisoformat(first["expires"].rstrip("Z")) - created == timedelta(days=30)
    text = cli("token", "list", workspace=workspace).stdout
    assert token_id in text and "CI agent" in text and raw not in text and made["token"] not in text
    assert made["token"] not in json.dumps(listed) and hashlib.sha256(raw.encode()).hexdigest() not in text

    revoked = json.loads(cli("token", "revoke", token_id, "--json", workspace=workspace).stdout)
    assert revoked["status"] == "revoked" and revoked["already_revoked"] is False and revoked["revoked"]
    again = cli("token", "revoke", token_id, workspace=workspace)  # idempotent, and says so
    assert again.returncode == 0 and "already revoked" in again.stdout, again.stderr
    assert json.loads(cli("token", "revoke", token_id, "--json", workspace=workspace).stdout)["already_revoked"]
    statuses = {t["id"]: t["status"] for t in json.loads(cli("token", "list", "--json", workspace=workspace).stdout)}
    assert statuses == {token_id: "revoked", made["id"]: "active"}
    assert_exit_2(cli("token", "revoke", "0123456789ab", workspace=workspace), "unknown token id '0123456789ab'")
    assert_exit_2(cli("token", "revoke", "not-an-id", workspace=workspace), "unknown token id")

    with Workbench.open(workspace) as wb:
        events = [(e["action"], e["actor"], e["detail"]["token_id"]) for e in wb.store.events()
                  if e["action"].startswith("token.")]
        assert wb.authenticate(made["token"]).name == "marco.bianchi"
        with pytest.raises(Unauthenticated) as err:
            wb.authenticate(raw)
        assert err.value.reason == "revoked"
    assert events == [("token.create", None, token_id), ("token.create", None, made["id"]),
                      ("token.revoke", None, token_id)]  # the local administrator; a repeat records nothing


def test_unknown_principal_or_bad_expiry_exit_2(workspace, cli):
    assert_exit_2(cli("token", "create", "--for", "zed", workspace=workspace),
                  "cannot create a token for unknown principal 'zed'")
    for days in ("0", "3651"):
        assert_exit_2(cli("token", "create", "--for", "marco.bianchi", "--expires", days, workspace=workspace),
                      "1 to 3650 days")
    assert_exit_2(cli("token", "create", "--for", "marco.bianchi", "--expires", "x", workspace=workspace),
                  "invalid int value")
    assert_exit_2(cli("token", "create", "--for", "marco.bianchi", "--as", "zed", workspace=workspace),
                  "unknown principal 'zed'")
    assert rows(workspace, "SELECT count(*) FROM tokens") == [(0,)]


def test_expiry_and_note_are_checked_in_the_core(wb):
    for days in (0, -1, 3651, True, "5", 2.5):
        with pytest.raises(UserError, match="1 to 3650 days"):
            wb.token_create("marco.bianchi", expires_days=days)
    with pytest.raises(UserError, match="one line"):
        wb.token_create("marco.bianchi", note="two\nlines")
    issued = wb.token_create("marco.bianchi", expires_days=3650, note="  laptop  ")
    assert issued.note == "laptop" and (issued.expires - issued.created).days == 3650
    assert issued.token not in repr(issued) and issued.id in repr(issued)
    assert [t.id for t in wb.token_list()] == [issued.id]


# -- only the hash is stored -------------------------------------------------------------------


def test_the_raw_token_is_never_stored(workspace, cli):
    made = [json.loads(cli("token", "create", "--for", name, "--note", "n", "--json", workspace=workspace).stdout)
            for name in ("marco.bianchi", "agent.nw-coder")]
    cli("token", "revoke", made[0]["id"], workspace=workspace)
    stored = rows(workspace, "SELECT id, token_hash FROM tokens ORDER BY created_at, id")
    assert stored == [(m["id"], hashlib.sha256(m["token"].encode()).hexdigest()) for m in made]
    # no column of any table holds a token or its secret part
    tables = [t for (t,) in rows(workspace, pg_support.TABLES)]
    assert "tokens" in tables and "events" in tables
    for table in tables:
        for row in rows(workspace, f'SELECT * FROM "{table}"'):
            cells = " ".join(str(c) for c in row)
            for m in made:
                secret = m["token"].split("_", 2)[2]
                assert m["token"] not in cells and secret not in cells, table


# -- authentication ----------------------------------------------------------------------------


def refused(wb, raw, **kw) -> Unauthenticated:
    with pytest.raises(Unauthenticated) as err:
        wb.authenticate(raw, **kw)
    assert err.value.exit_code == 2 and str(err.value).startswith("authentication required: ")
    return err.value


def test_authenticate_accepts_a_good_token_and_refuses_the_rest_alike(wb):
    good = wb.token_create("agent.nw-coder", expires_days=7)
    who = wb.authenticate(good.token)
    assert who.name == "agent.nw-coder" and who == wb.principal("agent.nw-coder")
    assert wb.authenticate(f"  {good.token}\n").name == "agent.nw-coder"

    for raw in (None, "", "   "):
        assert refused(wb, raw).reason == "missing"
    missing_message = str(refused(wb, None))

    secret = good.token.split("_", 2)[2]
    other = "a" if secret[0] != "a" else "b"
    gone = wb.token_create("marco.bianchi")
    wb.token_revoke(gone.id)
    cases = {
        "malformed": ["nope", "Bearer " + good.token, f"wbt_{good.id}", good.token + "x", good.token.upper(),
                      f"wbt_{good.id}_{secret}" + "A" * 300, good.token.replace("wbt_", "wbx_")],
        "unknown": [f"wbt_0123456789ab_{secret}", f"wbt_{good.id}_{other}{secret[1:]}"],
        "revoked": [gone.token],
    }
    messages = set()
    for reason, raws in cases.items():
        for raw in raws:
            err = refused(wb, raw)
            assert err.reason == reason, raw
            messages.add(str(err))
    expired = refused(wb, good.token, now=good.created + timedelta(days=7))
    assert expired.reason == "expired" and expired.token_id == good.id
    messages.add(str(expired))
    assert wb.authenticate(good.token, now=good.created + timedelta(days=7) - timedelta(seconds=1))
    assert len(messages) == 1 and messages != {missing_message}  # one answer for every bad token
    assert good.id not in messages.pop()


def test_a_token_whose_principal_left_the_config_is_refused(workspace):
    with Workbench.open(workspace) as wb:
        issued = wb.token_create("agent.nw-coder")
    config = workspace / "workbench.yaml"
    text = config.read_text()
    start = text.index("  - name: agent.nw-coder")
    end = text.index("  # Tidewater", start)
    config.write_text(text[:start] + text[end:])
    with Workbench.open(workspace) as wb:
        assert "agent.nw-coder" not in wb.config.principals
        err = refused(wb, issued.token)
        assert err.reason == "unknown-principal"
        assert str(err) == str(refused(wb, "wbt_0123456789ab_" + "x" * 43))


def test_last_used_is_recorded_at_most_once_a_minute_and_never_fails_authentication(wb, monkeypatch):
    issued = wb.token_create("marco.bianchi")
    t0 = datetime(2030, 1, 1, 9, 0)

    def last_used():
        return wb.store.token_row(issued.id).last_used_at

    assert last_used() is None
    wb.authenticate(issued.token, now=t0)
    assert last_used() == t0
    wb.authenticate(issued.token, now=t0 + timedelta(seconds=59))
    assert last_used() == t0
    wb.authenticate(issued.token, now=t0 + timedelta(seconds=61))
    assert last_used() == t0 + timedelta(seconds=61)
    assert wb.token_list()[0].last_used == t0 + timedelta(seconds=61)

    def broken(*a, **kw):
        raise duckdb.IOException("disk on fire")

    monkeypatch.setattr(wb.store, "touch_token", broken)
    assert wb.authenticate(issued.token, now=t0 + timedelta(minutes=5)).name == "marco.bianchi"
    monkeypatch.undo()
    assert last_used() == t0 + timedelta(seconds=61)


# -- who may manage whose tokens ---------------------------------------------------------------


def test_policy_may_manage_token():
    from workbench.models import Principal
    from workbench.policy import may_manage_token

    admin = Principal("ada", orgs=("o",), admin=True)
    marco = Principal("marco", orgs=("o",))
    assert may_manage_token(None, "anyone") is True          # the local administrator
    assert may_manage_token(admin, "marco") is True          # an admin: anyone's
    assert may_manage_token(admin, "ada") is True
    assert may_manage_token(marco, "marco") is True          # oneself
    assert may_manage_token(marco, "ada") is False           # not another's
    assert may_manage_token(Principal("marco2", orgs=("o",)), "marco") is False


def test_a_non_admin_manages_only_its_own_tokens(workspace, cli):
    assert_exit_2(cli("token", "create", "--for", "agent.nw-coder", "--as", "marco.bianchi", workspace=workspace),
                  "only an admin may create tokens for another principal")
    assert rows(workspace, "SELECT count(*) FROM tokens") == [(0,)]
    assert rows(workspace, "SELECT count(*) FROM events WHERE action LIKE 'token.%'") == [(0,)]

    own = json.loads(cli("token", "create", "--for", "marco.bianchi", "--as", "marco.bianchi", "--json",
                         workspace=workspace).stdout)
    by_admin = json.loads(cli("token", "create", "--for", "agent.nw-coder", "--as", "priya.raman", "--json",
                              workspace=workspace).stdout)
    local = json.loads(cli("token", "create", "--for", "priya.raman", "--json", workspace=workspace).stdout)

    def listed(*who):
        return [t["id"] for t in json.loads(cli("token", "list", "--json", *who, workspace=workspace).stdout)]

    assert listed("--as", "marco.bianchi") == [own["id"]]
    assert listed("--as", "sofia.okafor") == []
    assert listed("--as", "priya.raman") == listed() == [own["id"], by_admin["id"], local["id"]]

    # another's token answers as an unknown id, and stays active
    assert_exit_2(cli("token", "revoke", by_admin["id"], "--as", "marco.bianchi", workspace=workspace),
                  f"unknown token id '{by_admin['id']}'")
    assert rows(workspace, f"SELECT revoked_at FROM tokens WHERE id = '{by_admin['id']}'") == [(None,)]
    assert cli("token", "revoke", own["id"], "--as", "marco.bianchi", workspace=workspace).returncode == 0
    assert cli("token", "revoke", by_admin["id"], "--as", "priya.raman", workspace=workspace).returncode == 0
    actors = rows(workspace, "SELECT action, actor FROM events WHERE action LIKE 'token.%' ORDER BY id")
    assert actors == [("token.create", "marco.bianchi"), ("token.create", "priya.raman"), ("token.create", None),
                      ("token.revoke", "marco.bianchi"), ("token.revoke", "priya.raman")]


def test_policy_may_create_token_never_for_an_agent():
    from workbench.models import Principal
    from workbench.policy import may_create_token

    agent = Principal("bot", orgs=("o",), kind="agent")
    assert not may_create_token(agent, "bot") and "is an agent" in may_create_token(agent, "bot").message
    assert not may_create_token(Principal("bot", orgs=("o",), kind="agent", admin=True), "bot")  # not even so
    assert may_create_token(Principal("sync", orgs=("o",), kind="service"), "sync")   # a service: its own
    assert not may_create_token(Principal("sync", orgs=("o",), kind="service"), "marco")
    assert may_create_token(Principal("marco", orgs=("o",)), "marco") and may_create_token(None, "bot")


def test_an_agent_never_mints_a_token_not_even_for_itself(workspace, cli):
    """The red team (issue 26): agent.nw-coder made 200 never-expiring tokens for itself with its own."""
    agent = "agent.nw-coder"
    assert_exit_2(cli("token", "create", "--for", agent, "--as", agent, workspace=workspace), "is an agent")
    assert_exit_2(cli("token", "create", "--for", "marco.bianchi", "--as", agent, workspace=workspace),
                  "is an agent")
    assert rows(workspace, "SELECT count(*) FROM tokens") == [(0,)]
    with Workbench.open(workspace) as wb:
        with pytest.raises(PermissionDenied, match="not even for itself"):
            wb.token_create(agent, actor=agent, expires_days=30)
        given = wb.token_create(agent)   # the local administrator gives it one; the agent manages that one
        assert [t.id for t in wb.token_list(actor=agent)] == [given.id]
        assert wb.token_revoke(given.id, actor=agent).status == "revoked"
        assert wb.token_create("kb.sync", actor="kb.sync").principal == "kb.sync"          # a service: its own
        assert wb.token_create("marco.bianchi", actor="marco.bianchi").principal == "marco.bianchi"  # a person
    assert rows(workspace, "SELECT count(*) FROM tokens") == [(3,)]


def test_revoke_never_repeats_a_tokens_secret(workspace, cli):
    with Workbench.open(workspace) as wb:
        issued = wb.token_create("marco.bianchi")
    secret = issued.token.split("_", 2)[2]
    for given in (issued.token, issued.token[:40], f"x{issued.token}", secret, f"  {issued.token}  "):
        r = cli("token", "revoke", given, workspace=workspace)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert not any(secret[i:i + 8] in r.stderr + r.stdout for i in range(len(secret) - 7)), (given, r.stderr)
    said = cli("token", "revoke", issued.token, workspace=workspace).stderr
    assert f"revoke it by its id, {issued.id}" in said and "nothing was revoked" in said
    assert [t["status"] for t in json.loads(cli("token", "list", "--json", workspace=workspace).stdout)] == ["active"]


def test_the_core_refuses_with_a_user_error(wb):
    with pytest.raises(PermissionDenied, match="only an admin may create tokens for another principal"):
        wb.token_create("priya.raman", actor="marco.bianchi")
    theirs = wb.token_create("priya.raman", actor="priya.raman")
    with pytest.raises(NotFound, match="unknown token id"):
        wb.token_revoke(theirs.id, actor="marco.bianchi")
    assert wb.token_list(actor="marco.bianchi") == []
    assert [t.status for t in wb.token_list(actor=wb.principal("priya.raman"))] == ["active"]


# -- configuration: admin principals -----------------------------------------------------------


def test_admin_principals_in_the_config(tmp_path):
    from workbench.config import DEFAULT_CONFIG, WorkspaceConfig
    from workbench.safeyaml import load

    sample = WorkspaceConfig.load(CONFIG)
    assert [p.name for p in sample.principals.values() if p.admin] == ["priya.raman"]
    default = WorkspaceConfig.from_data(load(DEFAULT_CONFIG, file="default"))
    assert default.principals[default.default_principal].admin is True
    with Workbench.init(tmp_path / "fresh") as wb:  # `workbench init` without --config
        assert wb.principal().admin is True
    bad = load(DEFAULT_CONFIG, file="default")
    bad["principals"][0]["admin"] = "yes"
    with pytest.raises(ValidationError, match="admin"):
        WorkspaceConfig.from_data(bad)


# -- migration 008 -----------------------------------------------------------------------------


@pytest.mark.duckdb_only("DuckDB's migration files and a read-only database file")
def test_migration_applies_to_a_workspace_made_before_it(tmp_path, monkeypatch):
    from workbench.store import migrations

    before = tmp_path / "migrations-007"
    before.mkdir()
    for path in migrations.MIGRATIONS_DIR.glob("*.sql"):
        if not path.name.startswith("008_"):  # the later ones too: this is about 008 alone
            shutil.copy2(path, before / path.name)
    src = tmp_path / "src"
    write_fragment(src, "nw-old", title="Made before tokens")
    root = tmp_path / "ws"
    with monkeypatch.context() as m:
        m.setattr(migrations, "MIGRATIONS_DIR", before)
        with Workbench.init(root, config=CONFIG) as wb:
            assert not wb.ingest([src], actor="marco.bianchi").errors
            assert 8 not in wb.store.schema_versions() and 7 in wb.store.schema_versions()
    tables = {t for (t,) in rows(root, "SELECT table_name FROM duckdb_tables()")}
    assert "tokens" not in tables

    # read-only, the older workspace still opens (008 is read-compatible) and holds no tokens
    db = root / "workbench.duckdb"
    mode = stat.S_IMODE(db.stat().st_mode)
    db.chmod(0o444)
    try:
        with Workbench.open(root) as wb:
            assert wb.store.read_only and (8, "tokens") in wb.store.schema_pending
            assert wb.get("nw-old", principal="marco.bianchi").title == "Made before tokens"
            assert wb.token_list() == []
            assert refused(wb, "wbt_0123456789ab_" + "x" * 43).reason == "unknown"
            with pytest.raises(UserError, match="read-only.*cannot create a token"):
                wb.token_create("marco.bianchi")
    finally:
        db.chmod(mode)

    with Workbench.open(root) as wb:  # writable: migrated on open, the old data kept
        assert 8 in wb.store.schema_versions()
        assert wb.get("nw-old", principal="marco.bianchi").title == "Made before tokens"
        issued = wb.token_create("marco.bianchi")
        assert wb.authenticate(issued.token).name == "marco.bianchi"
