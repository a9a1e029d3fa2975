"""Every write operation, tried by every kind of principal, on every face.

The kinds' table (README, "What agents may do"), written here independently of policy.py:

| operation | person | agent | agent with a write grant | service (grants) |
|---|---|---|---|---|
| edit, revert, archive, restore, verify, snooze, merge, anti-pattern add, add, ingest, import, set create, set add | yes | no | within its grant | within its grants |
| pin, unpin, nudge | yes | no | no | within its grants |
| publish, unpublish, subscribe, subscription move, unsubscribe | yes | no | no | within its grants |
| review (accept, reject) | yes | no | no | no |
| propose | yes | yes | yes | yes |
| token create (its own) | yes | no | no | yes |

The principals (the sample's, with a test-only agent holding a grant): marco.bianchi (person, lead
of payments-api), agent.nw-coder (agent, no grant), agent.pay (agent, ``writes:
org=northwind,repo=payments-api``), kb.sync (service, grants for both orgs; here also a lead of
payments-api, so that its pins are decided by its kind and grants). Every operation works in
payments-api, on fragments made for each (face, principal) by a person (priya.raman), so each
principal is the owner of its own targets.

Faces: the core (``Workbench``), the CLI in-process, and one real team server
(tests/server_support.py) reached as /api/v1/COMMAND, /api/v1/cli, /api/v1/rpc/METHOD and MCP
(whose only write tool is ``propose``); the TUI is in test_kinds_tui.py. An allowed operation must
succeed and store something; a refused one must be refused as its face refuses (PermissionDenied,
exit 2, HTTP 403, an RPC error; NotFound / 404 for a target the actor may not see) and leave the
counts of fragments, versions and events exactly as they were. Then the red-team cases of issue 26.
"""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from conftest import run_cli, write_fragment
from policy_oracle import Where
from policy_workspace import C, bundle_record, write_bundle
from server_support import server

from workbench import Workbench

pytestmark = pytest.mark.process

PAY = "org=northwind,repo=payments-api"
WHO = {"person": "marco.bianchi", "agent": "agent.nw-coder", "granted agent": "agent.pay", "service": "kb.sync"}
GRANTED = frozenset({"person", "granted agent", "service"})
ALLOWED = {**dict.fromkeys(("edit", "revert", "archive", "restore", "verify", "snooze", "merge", "antipattern",
                            "add", "ingest", "import", "set create", "set add"), GRANTED),
           **dict.fromkeys(("pin", "unpin", "nudge", "publish", "unpublish", "subscribe", "subscription move",
                            "unsubscribe"), frozenset({"person", "service"})),
           **dict.fromkeys(("accept", "reject"), frozenset({"person"})),
           "propose": frozenset(WHO), "token create": frozenset({"person", "service"})}
ADMIN = "priya.raman"     # sets up each principal's targets (a person, lead of northwind)
PROPOSER = "grace.kim"    # proposes what the review operations review
ADR = "nw-adr-0007-idempotency-keys"
CONTEXT = "northwind/platform"   # the sample's published context (sample_corpus/contexts.txt)
RUNBOOK = "nw-rb-psp-failover"


def prepare(root: Path) -> None:
    """The test's workbench.yaml: the sample's, with agent.pay, kb.sync leading payments-api, and
    room for the proposals the review operations need."""
    path = root / "workbench.yaml"
    config = yaml.safe_load(path.read_text())
    config["principals"].append({"name": "agent.pay", "kind": "agent", "orgs": ["northwind"],
                                 "repos": ["northwind/payments-api"], "personas": ["northwind/backend"],
                                 "writes": [PAY]})
    sync = next(p for p in config["principals"] if p["name"] == "kb.sync")
    sync["lead_of"] = [PAY]
    config["proposals"] = {"per_hour": 1000}
    path.write_text(yaml.safe_dump(config, sort_keys=False))


# -- the operations -----------------------------------------------------------------------------

@dataclass
class Op:
    """One write: as a CLI command (``path`` and its parameters, ``stdin`` for a '-' file) and as a
    core method (``method``, ``args``, ``kwargs``; ``who`` names the keyword that says who acts)."""

    name: str
    path: str | None
    params: dict
    method: str | None
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    who: str = "actor"
    stdin: str | None = None
    disk: bool = False        # reads files on the machine that runs it (not over the server's API)
    stores: bool = True       # an allowed call records something (a nudge may have no one to tell)


@dataclass
class Targets:
    """What a principal's operations work on, made for it by a person before it acts."""

    own: str          # an active fragment it owns
    other: str        # another, which a merge drops into ``own``
    gone: str         # an archived one, for restore
    set: str          # a set of its own (made by marco for those who may not make one)
    proposals: tuple  # two proposals by grace.kim (to accept, to reject)
    files: Path | None = None  # a folder with a new fragment file, and a bundle, for ingest and import


def operations(t: Targets, kind: str, n: str) -> list[Op]:
    who = WHO[kind]
    text = f"Body rewritten by {who} ({n})."
    mine = f"kinds-{n}" if kind in ALLOWED["set create"] else t.set  # its own set, once it may make one
    new_id = f"nw-ap-kinds-{n}"
    files = t.files or Path("/nonexistent")
    return [
        Op("edit", "edit", {"id": t.own, "file": "-", "reason": "kinds"}, "edit", [t.own, text], {"reason": "kinds"},
           stdin=text),
        Op("revert", "revert", {"id": t.own, "to": 1}, "revert", [t.own], {"to": 1}),
        Op("verify", "verify", {"id": t.own}, "verify", [t.own]),
        Op("snooze", "snooze", {"id": t.own, "days": 30}, "snooze", [t.own], {"days": 30}),
        Op("pin", "pin", {"id": t.own, "scope": PAY, "reason": "kinds"}, "pin", [t.own], {"scope": PAY}),
        Op("unpin", "unpin", {"id": t.own, "scope": PAY}, "unpin", [t.own], {"scope": PAY}),
        Op("merge", "merge", {"keep": t.own, "drop": t.other}, "merge", [t.own, t.other]),
        Op("archive", "archive", {"id": t.own, "reason": "kinds"}, "archive", [t.own], {"reason": "kinds"}),
        Op("restore", "restore", {"id": t.gone, "reason": "kinds"}, "restore", [t.gone], {"reason": "kinds"}),
        Op("antipattern", "antipattern/add", {"title": f"Kinds {n}", "dont": "d", "why": "w", "instead": "i",
                                              "scope": PAY, "fragment_id": new_id},
           "add_antipattern", [], {"title": f"Kinds {n}", "dont": "d", "why": "w", "instead": "i", "scope": PAY,
                                   "fragment_id": new_id}),
        Op("add", None, {}, "add_fragment", [], {"title": f"Kinds note {n}", "body": "A note.", "scope": PAY,
                                                 "fragment_id": f"nw-note-kinds-{n}"}),
        Op("set create", "set/create", {"name": f"kinds-{n}", "scope": PAY}, "set_create", [f"kinds-{n}"],
           {"scope": PAY}),
        Op("set add", "set/add", {"name": mine, "id": t.own}, "set_change", [mine, t.own], {"include": True}),
        Op("publish", "publish", {"set_name": t.set}, "publish", [t.set]),     # marco's set, in PAY (issue 30)
        Op("subscribe", "subscribe", {"name": CONTEXT, "scope": PAY}, "subscribe", [CONTEXT], {"scope": PAY}),
        Op("subscription move", "subscription/move", {"name": CONTEXT, "scope": PAY}, "move_subscription",
           [CONTEXT], {"scope": PAY}),
        Op("unsubscribe", "unsubscribe", {"name": CONTEXT, "scope": PAY}, "unsubscribe", [CONTEXT], {"scope": PAY}),
        Op("unpublish", "unpublish", {"name": f"northwind/{t.set}"}, "unpublish", [f"northwind/{t.set}"]),
        Op("accept", "review/accept", {"id": t.proposals[0]}, "accept", [t.proposals[0]], who="principal"),
        Op("reject", "review/reject", {"id": t.proposals[1], "reason": "no"}, "reject", [t.proposals[1]],
           {"reason": "no"}, who="principal"),
        Op("nudge", "nudge", {}, "nudge", [], who="principal", stores=False),
        Op("propose", "propose", {"title": f"Kinds proposal {n}", "body": "Learned.", "scope": PAY}, "propose",
           [f"Kinds proposal {n}", "Learned."], {"scope": PAY}, who="principal"),
        Op("token create", "token/create", {"for_principal": who}, "token_create", [who]),   # for itself
        Op("ingest", "ingest", {"paths": str(files / "in")}, "ingest", [[files / "in"]], disk=True),
        Op("import", "import-bundle", {"dir": str(files / "bundle")}, "import_bundle", [files / "bundle"], disk=True),
    ]


def make_files(folder: Path, who: str, n: str) -> Path:
    """A fragment file and a bundle, each a new fragment in payments-api owned by ``who``."""
    write_fragment(folder / "in", f"nw-note-ingested-{n}", owner=who, title=f"Ingested {n}")
    write_bundle(folder / "bundle", [bundle_record(f"nw-note-imported-{n}", [C(
        "note", f"Imported {n}", "Imported text.", Where("northwind", "payments-api"), who)],
        ["2025-01-01T00:00:00Z"])])
    return folder


def setup_targets(admin, who: str, n: str, files: Path | None = None) -> Targets:
    """``admin``: (method, *args, **kwargs) -> result, run as the privileged principals."""
    def add(title):
        return admin("add_fragment", title=f"{title} {n}", body=f"{title} of {who}.", scope=PAY, owner=who,
                     fragment_id=f"nw-note-{title.lower()}-{n}", actor=ADMIN)["id"]
    own, other, gone = add("Own"), add("Other"), add("Gone")
    admin("archive", gone, reason="set up", actor=ADMIN)
    admin("set_create", f"marco-{n}", scope=PAY, actor="marco.bianchi")
    proposals = tuple(admin("propose", f"Proposal {i} {n}", "Something learned.", scope=PAY,
                            principal=PROPOSER)["id"] for i in (1, 2))
    return Targets(own, other, gone, f"marco-{n}", proposals, files)


# -- the faces ----------------------------------------------------------------------------------

@dataclass
class Outcome:
    ok: bool
    error: str | None = None   # PermissionDenied, NotFound, ... (the core's class, or what the face says)
    message: str = ""


def command_api():
    """The command line's parameters by name, as the server maps /api/v1/COMMAND onto a command line."""
    from workbench.cli.main import cli
    from workbench.cli.remote import CommandApi

    return CommandApi(cli)


class CoreFace:
    name = "core"

    def __init__(self, wb):
        self.wb = wb

    def admin(self, method, *args, **kwargs):
        result = getattr(self.wb, method)(*args, **kwargs)
        return result.to_dict() if hasattr(result, "to_dict") else result

    def counts(self):
        return self.wb.stats()

    def run(self, op: Op, who: str) -> Outcome:
        from workbench.errors import WorkbenchError

        try:
            result = getattr(self.wb, op.method)(*op.args, **op.kwargs, **{op.who: who})
        except WorkbenchError as e:
            return Outcome(False, type(e).__name__, e.message)
        if op.method == "ingest" and result.errors:  # a file refused is the report's error, not an exception
            return Outcome(False, "PermissionDenied", result.errors[0]["message"])
        return Outcome(True)


class CliFace:
    name = "cli"

    def __init__(self, root: Path):
        self.root, self.api, self.wb = root, command_api(), None

    def admin(self, method, *args, **kwargs):
        if self.wb is None:  # kept open through a principal's set-up, closed before a command runs
            self.wb = Workbench.open(self.root)
        return CoreFace(self.wb).admin(method, *args, **kwargs)

    def counts(self):
        import pg_support

        self.close()
        (row,) = pg_support.workspace_rows(self.root, "SELECT (SELECT count(*) FROM fragments), (SELECT count(*) "
                                                      "FROM fragment_versions), (SELECT count(*) FROM events)")
        return dict(zip(("fragments", "versions", "events"), row))

    def close(self):
        if self.wb is not None:
            self.wb.close()
            self.wb = None

    def run(self, op: Op, who: str) -> Outcome:
        self.close()
        argv = self.api.argv_for(op.path, op.params, principal=who)
        r = run_cli(*argv, workspace=self.root, input=op.stdin)
        assert r.returncode in (0, 2) and "Traceback" not in r.stderr, (argv, r.stdout, r.stderr)
        if r.returncode == 0:
            return Outcome(True)
        return Outcome(False, "exit 2", r.stderr)


class ServerFace:
    """The team server, through one of its routes, as the token of each principal."""

    STATUS: ClassVar[dict[int, str]] = {403: "PermissionDenied", 404: "NotFound"}

    def __init__(self, running, tokens, route: str):
        self.running, self.tokens, self.route, self.name = running, tokens, route, route

    def _rpc(self, token, method, *args, **kwargs):
        from workbench.remote import codec

        status, body, _ = self.running.call("POST", f"/api/v1/rpc/{method}", {
            "args": codec.encode(list(args)), "kwargs": codec.encode(kwargs)}, token=token)
        return status, body

    def admin(self, method, *args, **kwargs):
        from workbench.remote import codec

        status, body = self._rpc(self.running.owner, method, *args, **kwargs) if method != "archive" and \
            method != "set_create" else self._cli_admin(method, *args, **kwargs)
        assert status == 200, body
        result = codec.decode(body["result"]) if isinstance(body, dict) and "result" in body else body
        return result.to_dict() if hasattr(result, "to_dict") else result

    def _cli_admin(self, method, *args, actor, **kwargs):
        argv = {"archive": ["archive", args[0], "--reason", kwargs.get("reason", "x")],
                "set_create": ["set", "create", args[0], "--scope", kwargs.get("scope", PAY)]}[method]
        status, body, _ = self.running.call("POST", "/api/v1/cli", {"argv": [*argv, "--as", actor]},
                                            token=self.running.owner)
        assert body["exit"] == 0, body
        return status, body

    def counts(self):
        status, body = self._rpc(self.running.owner, "stats")
        assert status == 200, body
        return body["result"]

    def run(self, op: Op, who: str) -> Outcome:
        token = self.tokens[who]
        if self.route == "rpc":
            status, body = self._rpc(token, op.method, *op.args, **op.kwargs)
            error = (body.get("error") or {}) if isinstance(body, dict) else {}
            if status == 200:
                return Outcome(True)
            assert status in self.STATUS and error.get("type") == self.STATUS[status], (op.name, status, body)
            return Outcome(False, error["type"], error["message"])
        if self.route == "cli":
            argv = command_api().argv_for(op.path, op.params, principal=who)  # --as as a client sends it
            status, body, _ = self.running.call("POST", "/api/v1/cli", {
                "argv": argv, **({"files": {"-": op.stdin}} if op.stdin is not None else {})}, token=token)
            assert status == 200 and body["exit"] in (0, 2) and "Traceback" not in body["stderr"], (op.name, body)
            return Outcome(body["exit"] == 0, None if body["exit"] == 0 else "exit 2", body["stderr"])
        status, body, _ = self.running.call("POST", f"/api/v1/{op.path}", {
            **op.params, **({"stdin": op.stdin} if op.stdin is not None else {})}, token=token)
        if status == 200:
            return Outcome(True)
        assert status in self.STATUS and body.get("exit") == 2, (op.name, status, body)
        return Outcome(False, self.STATUS[status], body["error"])


# -- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def roots(sample_workspace_template, tmp_path_factory):
    base = tmp_path_factory.mktemp("kinds")
    out = {}
    for name in ("core", "cli", "server"):
        root = base / name / "ws"
        shutil.copytree(sample_workspace_template, root)
        prepare(root)
        out[name] = root
    return out


@pytest.fixture(scope="module")
def team(roots):
    tokens = {}
    with Workbench.open(roots["server"]) as wb:
        for who in WHO.values():
            tokens[who] = wb.token_create(who).token
    with server(roots["server"]) as running:
        yield running, tokens


# -- the matrix ---------------------------------------------------------------------------------

def rpc_writes():
    from workbench.server.rpc import WRITE

    return WRITE


RPC_WRITES = rpc_writes()

def check_face(face, n0: str, files_for=None) -> list[str]:
    """Every operation, as every kind, on ``face``: the problems found (none expected)."""
    problems = []
    for kind, who in WHO.items():
        n = f"{n0}-{kind.replace(' ', '')}"
        files = files_for(who, n) if files_for else None
        targets = setup_targets(face.admin, who, n, files)
        for op in operations(targets, kind, n):
            if op.path is None and face.name in ("cli", "api", "cli-route"):
                continue  # no such command (add is a core, RPC and TUI method)
            if op.disk and face.name not in ("core", "cli"):
                continue  # reads the caller's disk: not over the server's API (an admin's, and its own rule)
            if face.name == "rpc" and op.method not in RPC_WRITES:
                continue  # not a method of the remote facade (which serves the TUI's writes)
            if op.name == "unpin" and kind not in ALLOWED["pin"]:
                face.admin("pin", targets.own, scope=PAY, reason="for the unpin", actor="marco.bianchi")
            allowed = kind in ALLOWED[op.name]
            counted = not allowed or face.name != "cli"  # (the CLI's counts cost a connection: refusals only)
            before = face.counts() if counted else None
            got = face.run(op, who)
            after = face.counts() if counted else None
            where = f"{face.name}: {op.name} by {who} ({kind})"
            if got.ok != allowed:
                problems.append(f"{where}: {'allowed' if got.ok else 'refused'} ({got.error}: {got.message}), "
                                f"expected {'allowed' if allowed else 'refused'}")
            elif not allowed and after != before:
                problems.append(f"{where}: refused, but the store changed: {before} -> {after}")
            elif allowed and op.stores and counted and after == before:
                problems.append(f"{where}: allowed, but nothing was stored")
            elif not allowed and face.name == "core" and got.error not in (
                    "PermissionDenied", "NotFound", *(("Conflict",) if op.name == "import" else ())):
                problems.append(f"{where}: refused with {got.error}: {got.message}")
    return problems


def test_every_write_by_every_kind_in_the_core(roots, tmp_path):
    with Workbench.open(roots["core"]) as wb:
        problems = check_face(CoreFace(wb), "core", lambda who, n: make_files(tmp_path / "core" / n, who, n))
    assert not problems, "\n".join(problems)


@pytest.mark.deep   # make test runs the same commands through the server's CLI route (below)
def test_every_write_by_every_kind_in_the_local_cli(roots, tmp_path):
    problems = check_face(CliFace(roots["cli"]), "cli", lambda who, n: make_files(tmp_path / "cli" / n, who, n))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("route", ["api", "cli", "rpc"])
def test_every_write_by_every_kind_on_the_team_server(team, route):
    running, tokens = team
    face = ServerFace(running, tokens, route)
    face.name = {"api": "api", "cli": "cli-route", "rpc": "rpc"}[route]
    problems = check_face(face, route)
    assert not problems, "\n".join(problems)


def test_the_matrix_tries_every_write_method_of_the_remote_facade():
    methods = {op.method for op in operations(Targets("a", "b", "c", "s", ("p", "q")), "person", "n")}
    assert RPC_WRITES <= methods, RPC_WRITES - methods   # a new write method must join the matrix


def test_disk_methods_over_rpc_need_an_admin_token_whatever_the_kind(team, tmp_path):
    from workbench.server.rpc import DISK

    running, tokens = team
    face = ServerFace(running, tokens, "rpc")
    before = face.counts()
    for who, method in itertools.product(WHO.values(), sorted(DISK)):
        status, body = face._rpc(tokens[who], method, str(tmp_path / "x"))
        assert status == 403 and body["error"]["type"] == "PermissionDenied", (who, method, body)
        assert "admin token" in body["error"]["message"]
    assert face.counts() == before and not (tmp_path / "x").exists()


def test_mcp_offers_no_write_but_propose_and_every_kind_may_propose(team):
    from test_server import mcp, mcp_session

    running, tokens = team
    face = ServerFace(running, tokens, "rpc")
    for i, who in enumerate(WHO.values()):
        session = mcp_session(running, tokens[who])
        status, body, _ = mcp(running, tokens[who], "tools/list", {}, session=session, id=2)
        tools = {t["name"]: t for t in body["result"]["tools"]}
        writes = {name for name, t in tools.items() if not (t.get("annotations") or {}).get("readOnlyHint")}
        assert writes == {"propose"}, tools   # a new write tool must join the matrix above
        before = face.counts()
        status, body, _ = mcp(running, tokens[who], "tools/call", {"name": "propose", "arguments": {
            "title": f"Learned over MCP {i}", "body": "Something.", "scope": PAY}}, session=session, id=3)
        assert status == 200 and not body["result"].get("isError"), body
        assert body["result"]["structuredContent"]["status"] == "proposed"
        assert face.counts()["versions"] == before["versions"] + 1


# -- the red-team cases (issue 26: "An agent's token rewrites knowledge") -----------------------

def test_an_agent_token_cannot_rewrite_archive_or_add_knowledge_but_proposes(team):
    running, tokens = team
    agent, face = tokens["agent.nw-coder"], ServerFace(running, tokens, "rpc")
    before_adr = running.call("GET", f"/api/v1/show?id={ADR}", token=tokens["marco.bianchi"])[1]
    before_rb = running.call("GET", f"/api/v1/show?id={RUNBOOK}", token=tokens["marco.bianchi"])[1]
    counts = face.counts()

    status, body, _ = running.call("POST", "/api/v1/edit", {"id": ADR, "file": "-", "reason": "simpler",
                                                            "stdin": "Agents may retry POSTs freely."}, token=agent)
    assert status == 403 and "agent.nw-coder is an agent" in body["error"] and "workbench propose" in body["error"]
    status, body, _ = running.call("POST", "/api/v1/archive", {"id": RUNBOOK, "reason": "obsolete"}, token=agent)
    assert status == 403 and "is an agent" in body["error"], body
    status, body, _ = running.call("POST", "/api/v1/antipattern/add", {
        "title": "Idempotency keys", "dont": "send them", "why": "slow", "instead": "retry freely", "scope": PAY},
        token=agent)
    assert status == 403 and "is an agent" in body["error"], body
    assert running.call("GET", f"/api/v1/show?id={ADR}", token=tokens["marco.bianchi"])[1] == before_adr
    assert running.call("GET", f"/api/v1/show?id={RUNBOOK}", token=tokens["marco.bianchi"])[1] == before_rb
    assert face.counts() == counts

    # what an agent may do instead: propose, for a person to review
    status, body, _ = running.call("POST", "/api/v1/propose", {
        "title": "Retrying POSTs", "body": "Agents may retry POSTs freely?", "scope": PAY}, token=agent)
    assert status == 200 and body["status"] == "proposed", body
    assert face.counts()["versions"] == counts["versions"] + 1


def test_a_refusal_for_a_target_the_agent_cannot_see_is_still_unknown(team):
    running, tokens = team
    agent = tokens["agent.nw-coder"]
    hidden = running.call("POST", "/api/v1/archive", {"id": "tw-rb-pgbouncer-pool-exhaustion", "reason": "x"},
                          token=agent)
    missing = running.call("POST", "/api/v1/archive", {"id": "nw-rb-no-such-thing", "reason": "x"}, token=agent)
    assert hidden[0] == missing[0] == 404
    assert hidden[1]["error"].replace("tw-rb-pgbouncer-pool-exhaustion", "X") == \
        missing[1]["error"].replace("nw-rb-no-such-thing", "X")


def test_workbench_actions_says_what_each_kind_may_take(roots):
    with Workbench.open(roots["core"]) as wb:
        offered = {kind: wb.actions(who) for kind, who in WHO.items()}
    assert offered["agent"] == frozenset()
    assert {"edit", "create", "archive"} <= offered["granted agent"] and not {"pin", "review", "nudge"} & \
        offered["granted agent"]
    assert {"pin", "edit", "nudge"} <= offered["service"] and "review" not in offered["service"]
    assert {"review", "pin", "edit"} <= offered["person"]
    assert all(a in json.dumps(sorted(offered["person"])) for a in ("verify", "snooze", "merge"))
    assert list(itertools.chain(*offered.values()))  # something is offered to someone
