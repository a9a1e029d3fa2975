"""The team server as its clients meet it: a real `workbench server` process on a copy of the
sample workspace, spoken to over HTTP with urllib, over MCP with hand-written JSON-RPC (not our
SDK), and through the CLI (which finds the server by its advert, or by WORKBENCH_URL)."""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import signal
from datetime import timedelta

import pytest

from conftest import SAMPLE, run_cli, run_cli_process
from server_support import server, start_server, stop_server

pytestmark = pytest.mark.process
EDITABLE = "nw-rb-deploy-rollback"


@pytest.fixture(scope="module")
def team(sample_workspace_template, tmp_path_factory):
    """A running server and tokens: an agent (non-admin), marco (non-admin), priya (admin), one
    revoked, one expired."""
    from workbench import Workbench
    from workbench.models import utcnow
    from workbench.service.tokens import token_hash

    root = tmp_path_factory.mktemp("team") / "ws"
    shutil.copytree(sample_workspace_template, root)
    tokens = {}
    with Workbench.open(root) as wb:
        tokens["agent"] = wb.token_create("agent.nw-coder").token
        tokens["marco"] = wb.token_create("marco.bianchi").token
        tokens["admin"] = wb.token_create("priya.raman").token
        revoked = wb.token_create("marco.bianchi")
        wb.token_revoke(revoked.id)
        tokens["revoked"] = revoked.token
        raw = "wbt_0123456789ab_" + "x" * 43
        wb.store.put_token("0123456789ab", "marco.bianchi", token_hash(raw), utcnow() - timedelta(days=3),
                           utcnow() - timedelta(days=1), None)
        tokens["expired"] = raw
    with server(root) as running:
        yield running, tokens


def mcp(running, token, method, params=None, *, session=None, id=1):
    """One JSON-RPC message to /mcp; (status, the JSON-RPC answer or None, the session id)."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    if session:
        headers["Mcp-Session-Id"] = session
    message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
    if id is not None:
        message["id"] = id
    status, body, got = running.call("POST", "/mcp", message, token=token, headers=headers)
    if isinstance(body, str):  # an SSE stream: the data line of its one message
        datas = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
        body = json.loads(datas[-1]) if datas else None
    return status, body, {k.lower(): v for k, v in got.items()}.get("mcp-session-id", session)


def mcp_session(running, token):
    status, body, session = mcp(running, token, "initialize", {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "plain-json-rpc", "version": "1"}})
    assert status == 200, body
    assert mcp(running, token, "notifications/initialized", session=session, id=None)[0] == 202
    return session


def show(running, token, fid):
    status, body, _ = running.call("GET", f"/api/v1/show?id={fid}", token=token)
    assert status == 200, body
    return body


# -- identity --------------------------------------------------------------------------------------


def test_healthz_is_open_and_everything_else_needs_a_token(team):
    running, _ = team
    assert running.call("GET", "/healthz")[:2] == (200, {"status": "ok"})
    for method, path in (("GET", "/metrics"), ("GET", "/api/v1"), ("GET", "/api/v1/search?query=deploy"),
                         ("POST", "/api/v1/cli"), ("POST", "/mcp"), ("GET", "/nowhere")):
        status, body, headers = running.call(method, path, {} if method == "POST" else None)
        assert status == 401, (path, body)
        assert headers.get("www-authenticate", headers.get("WWW-Authenticate", "")).startswith("Bearer")


def test_a_bad_token_gets_401_and_changes_nothing(team):
    running, tokens = team
    before = show(running, tokens["admin"], EDITABLE)
    told = {}
    for kind, token in {"missing": None, "garbage": "not a token", "unknown": "wbt_ffffffffffff_" + "y" * 43,
                        "revoked": tokens["revoked"], "expired": tokens["expired"]}.items():
        status, body, _ = running.call("POST", "/api/v1/archive", {"id": EDITABLE, "reason": "gone"}, token=token)
        assert status == 401, (kind, body)
        told[kind] = body["error"]
        status, _, _ = mcp(running, token, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                                           "clientInfo": {"name": "x", "version": "1"}})
        assert status == 401, kind
        r = run_cli_process("archive", EDITABLE, "--reason", "gone", "--as", "marco.bianchi",
                            env={"WORKBENCH_URL": running.url, **({"WORKBENCH_TOKEN": token} if token else {})})
        assert r.returncode == 2 and "HTTP 401" in r.stderr and "Traceback" not in r.stderr, (kind, r.stderr)
    # every bad token is told the same thing: no oracle for which token ids exist or were revoked
    assert len({told[k] for k in ("garbage", "unknown", "revoked", "expired")}) == 1, told
    assert told["missing"] != told["unknown"]
    assert show(running, tokens["admin"], EDITABLE) == before


def test_as_is_honoured_only_for_an_admin_token(team):
    running, tokens = team

    status, body, _ = running.call("POST", "/api/v1/search", {"query": "deploy", "k": 1, "as": "marco.bianchi"},
                                   token=tokens["agent"])
    trace = running.call("GET", f"/api/v1/trace?id={body['trace_id']}", token=tokens["agent"])[1]
    assert trace["principal"] == "agent.nw-coder"  # --as ignored: the token's principal acted
    status, body, _ = running.call("POST", "/api/v1/search", {"query": "deploy", "k": 1, "as": "marco.bianchi"},
                                   token=tokens["admin"])
    trace = running.call("GET", f"/api/v1/trace?id={body['trace_id']}", token=tokens["marco"])[1]
    assert trace["principal"] == "marco.bianchi"  # an admin's --as is honoured
    r = run_cli_process("search", "deploy", "-k", "1", "--as", "priya.raman",
                        env={"WORKBENCH_URL": running.url, "WORKBENCH_TOKEN": tokens["agent"]})
    assert r.returncode == 0 and "--as priya.raman ignored: this token acts as agent.nw-coder" in r.stderr


def test_an_out_of_scope_id_answers_like_an_unknown_one_over_http_and_mcp(team):
    running, tokens = team
    hidden = running.call("GET", "/api/v1/show?id=tw-adr-0009-transactional-outbox", token=tokens["marco"])
    missing = running.call("GET", "/api/v1/show?id=tw-rb-no-such-thing", token=tokens["marco"])
    assert hidden[0] == missing[0] == 404
    assert hidden[1]["error"].replace("tw-adr-0009-transactional-outbox", "X") == missing[1]["error"].replace(
        "tw-rb-no-such-thing", "X")
    session = mcp_session(running, tokens["agent"])
    answers = []
    for fid in ("tw-adr-0009-transactional-outbox", "tw-rb-no-such-thing"):
        status, body, _ = mcp(running, tokens["agent"], "tools/call", {"name": "get", "arguments": {"id": fid}},
                              session=session, id=7)
        assert status == 200 and body["result"]["isError"] is True
        answers.append(body["result"]["content"][0]["text"].replace(fid, "X"))
    assert answers[0] == answers[1]


def test_mcp_over_http_acts_as_the_token_principal(team):
    running, tokens = team
    session = mcp_session(running, tokens["agent"])
    status, body, _ = mcp(running, tokens["agent"], "tools/list", {}, session=session, id=2)
    assert {t["name"] for t in body["result"]["tools"]} >= {"search", "get", "context"}
    status, body, _ = mcp(running, tokens["agent"], "tools/call",
                          {"name": "search", "arguments": {"query": "customer charged twice", "k": 3}},
                          session=session, id=3)
    assert status == 200 and not body["result"].get("isError"), body
    trace_id = body["result"]["structuredContent"]["trace_id"]
    trace = running.call("GET", f"/api/v1/trace?id={trace_id}", token=tokens["agent"])[1]
    assert trace["principal"] == "agent.nw-coder"
    # another principal's session on the same server is its own
    other = mcp_session(running, tokens["marco"])
    body = mcp(running, tokens["marco"], "tools/call", {"name": "search", "arguments": {"query": "deploy", "k": 1}},
               session=other, id=4)[1]
    trace = running.call("GET", f"/api/v1/trace?id={body['result']['structuredContent']['trace_id']}",
                         token=tokens["marco"])[1]
    assert trace["principal"] == "marco.bianchi"


async def test_the_official_sdk_client_speaks_streamable_http_to_the_server(team):
    """The MCP SDK's own streamable-HTTP client (its transport, its session, its handshake) against
    the server, with a bearer token: each answer is one JSON body (``json_response``), which the
    client must take as readily as an SSE stream, and the caller is the token's principal."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    running, tokens = team
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['agent']}"}, timeout=120) as http:
        async with Client(streamable_http_client(running.url + "/mcp", http_client=http),
                          read_timeout_seconds=120) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"search", "get", "context", "propose"} <= tools
            found = await client.call_tool("search", {"query": "customer charged twice", "k": 3})
            assert not found.is_error and found.structured_content["hits"]
            hidden = await client.call_tool("get", {"id": "tw-rb-oncall-paging-escalation"})  # another org's
            missing = await client.call_tool("get", {"id": "no-such-fragment"})
            assert hidden.is_error and missing.is_error
            assert hidden.content[0].text.replace("tw-rb-oncall-paging-escalation", "X") == \
                missing.content[0].text.replace("no-such-fragment", "X")
            ctx = await client.call_tool("context", {"query": "customer charged twice on retry", "budget": 800})
            assert not ctx.is_error and "(source: " in ctx.content[0].text
    trace_id = found.structured_content["trace_id"]
    assert running.call("GET", f"/api/v1/trace?id={trace_id}", token=tokens["agent"])[1]["principal"] == "agent.nw-coder"
    status, body, got = running.call("POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}},
        token=tokens["agent"], headers={"Accept": "application/json, text/event-stream",
                                        "MCP-Protocol-Version": "2025-06-18"})
    content_type = {k.lower(): v for k, v in got.items()}["content-type"]
    assert status == 200 and content_type.startswith("application/json") and isinstance(body, dict), \
        "an answer is one JSON body, not an event stream"


def test_paths_on_the_server_need_an_admin_token(team, tmp_path):
    running, tokens = team
    status, body, _ = running.call("POST", "/api/v1/export-files", {"dir": str(tmp_path / "out")},
                                   token=tokens["marco"])
    assert status == 400 and "admin token" in body["error"], body
    assert not (tmp_path / "out").exists()
    status, body, _ = running.call("POST", "/api/v1/ingest", {"paths": ["/etc"]}, token=tokens["agent"])
    assert status == 400 and "admin token" in body["error"]
    status, body, _ = running.call("POST", "/api/v1/export-files", {"dir": str(tmp_path / "out"), "as": "priya.raman"},
                                   token=tokens["admin"])
    assert status == 200 and body["files"] > 0, body
    assert any((tmp_path / "out").rglob("*.md"))
    for command in ("search", "context"):   # a git range is read on the server's disk; paths are only names
        status, body, _ = running.call("POST", f"/api/v1/{command}", {"diff": "HEAD~1..HEAD"}, token=tokens["agent"])
        assert status == 400 and "admin token" in body["error"], body
        status, body, _ = running.call("POST", f"/api/v1/{command}", {"paths": ["nwpay/api/idempotency.py"]},
                                       token=tokens["agent"])
        assert status == 200 and body["paths"] == ["nwpay/api/idempotency.py"], body


def test_calibrate_goes_through_the_server_for_an_admin(team, tmp_path, monkeypatch):
    """``calibrate`` is relayed like the other admin commands: its --golden names a file on the
    server's disk (an admin token's only; a relative path is the caller's folder's), only an admin
    stores a fit, and the server answers with it at once, on the CLI and the remote facade (the
    TUI's header); --reset puts the prior back."""
    import yaml

    from workbench.remote import codec

    running, tokens = team
    golden = yaml.safe_load((SAMPLE / "golden.yaml").read_text(encoding="utf-8"))["queries"]
    small = [q for q in golden if q["relevant"]][:8] + [q for q in golden if not q["relevant"]][:3]
    (tmp_path / "small.yaml").write_text(yaml.safe_dump({"queries": small}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    def relayed(who, *argv):
        return run_cli(*argv, env={"WORKBENCH_URL": running.url, "WORKBENCH_TOKEN": tokens[who]})

    def source(who):
        info = json.loads(relayed(who, "info", "--json").stdout)["calibration"]
        status, body, _ = running.call("POST", "/api/v1/rpc/calibration_info", {}, token=tokens[who])
        assert status == 200 and codec.decode(body["result"]) == info, body
        return info["source"]

    r = relayed("marco", "calibrate", "--golden", "small.yaml", "--dry-run")
    assert r.returncode == 2 and "admin token" in r.stderr and "Traceback" not in r.stderr, r.stderr
    r = relayed("marco", "calibrate")
    assert r.returncode != 0 and "only an admin may calibrate" in r.stderr, r.stderr
    assert source("marco") == "prior"
    r = relayed("admin", "calibrate", "--golden", "small.yaml", "--json")
    assert r.returncode == 0, r.stderr
    fitted = json.loads(r.stdout)
    assert fitted["stored"] and fitted["calibration"]["fitted_from"] == str(tmp_path / "small.yaml")
    assert fitted["calibration"]["counts"]["queries"] == 11
    assert source("marco") == "golden"
    assert relayed("admin", "calibrate", "--reset").returncode == 0
    assert source("marco") == "prior"


def test_a_flood_of_bad_tokens_brakes_only_the_failures(sample_workspace):
    """The lock-out of issue 26: twenty wrong tokens from 127.0.0.1 used to answer 429 to every token
    not used in the last 5 s, agents', curators' and the owner's own included."""
    from workbench import Workbench

    with Workbench.open(sample_workspace) as wb:
        good = {name: wb.token_create(name).token for name in ("agent.nw-coder", "marco.bianchi", "priya.raman")}
    with server(sample_workspace) as running:  # its own server: the brake lasts a minute for 127.0.0.1
        statuses = [running.call("GET", "/api/v1", token=f"wbt_{i:012x}_guess")[0] for i in range(25)]
        assert statuses[:20] == [401] * 20 and set(statuses[20:]) == {429}, statuses
        assert [running.call("GET", "/api/v1")[0] for _ in range(3)] == [401] * 3  # no token: 401, not braked
        for token in [*good.values(), running.owner]:  # none of them used before the flood
            assert running.call("GET", "/api/v1/pins", token=token)[0] == 200
        r = run_cli_process("pins", "--json", workspace=sample_workspace)  # the owner's CLI, through the advert
        assert r.returncode == 0, r.stderr
        metrics = running.call("GET", "/metrics", token=good["priya.raman"])[1]
        assert 'workbench_auth_failures_total{reason="braked"} 5' in metrics


def test_a_revocation_takes_effect_at_the_next_request_on_every_path(team):
    """The gate learns from the core, whichever face revoked (it used to forget its cache only when
    a command line's first word was ``token``)."""
    running, tokens = team
    made = [running.call("POST", "/api/v1/token/create", {"for_principal": "marco.bianchi"}, token=tokens["marco"])[1]
            for _ in range(4)]
    paths = [
        lambda t: running.call("POST", "/api/v1/token/revoke", {"token_id": t["id"]}, token=tokens["marco"]),
        lambda t: running.call("POST", "/api/v1/cli", {"argv": ["token", "revoke", t["id"], "--json"]},
                               token=tokens["marco"]),
        lambda t: running.call("POST", "/api/v1/cli", {"argv": ["--workspace", str(running.root), "token",
                                                                "revoke", t["id"]]}, token=tokens["admin"]),
        lambda t: run_cli_process("token", "revoke", t["id"], "--as", "priya.raman", "--json",
                                  env={"WORKBENCH_URL": running.url, "WORKBENCH_TOKEN": tokens["admin"]}),
    ]
    for issued, revoke in zip(made, paths):
        assert running.call("GET", "/api/v1/pins", token=issued["token"])[0] == 200  # known good just now
        done = revoke(issued)
        assert (done.returncode if hasattr(done, "returncode") else done[0]) in (0, 200), done
        assert running.call("GET", "/api/v1/pins", token=issued["token"])[0] == 401, revoke
        status, _, _ = mcp(running, issued["token"], "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}})
        assert status == 401


# -- the API and the CLI through it ------------------------------------------------------------------


def test_the_api_lists_its_commands_and_answers_bad_requests_plainly(team):
    running, tokens = team
    listing = running.call("GET", "/api/v1", token=tokens["marco"])[1]["commands"]
    paths = {c["command"] for c in listing}
    assert {"search", "context", "show", "edit", "pin", "set/create", "token/create"} <= paths
    assert not {"server", "tui", "mcp", "init", "bench"} & paths
    assert running.call("GET", "/api/v1/nope", token=tokens["marco"])[0] == 404
    status, body, _ = running.call("POST", "/api/v1/search", {"query": "x", "bogus": 1}, token=tokens["marco"])
    assert status == 400 and "bogus" in body["error"]
    status, body, _ = running.call("POST", "/api/v1/search", raw=b"{not json", token=tokens["marco"])
    assert status == 400
    status, body, _ = running.call("POST", "/api/v1/cli", {"argv": "search x"}, token=tokens["marco"])
    assert status == 400


def _steady(answer: dict) -> dict:
    """An answer without what differs call to call (its trace id, its stage timings)."""
    return {k: v for k, v in answer.items() if k not in ("trace_id", "stages_ms")}


@pytest.mark.parametrize("path, params, argv", [
    ("search", {"query": "deploy rollback", "k": 4}, ["search", "deploy rollback", "-k", "4", "--json"]),
    ("search", {"query": "deploy rollback", "k": "4"}, ["search", "deploy rollback", "-k", "4", "--json"]),
    ("search", {"query": "charged twice"}, ["search", "charged twice", "--json"]),
    ("context", {"query": "roll back a bad deploy", "budget": 900},
     ["context", "roll back a bad deploy", "--budget", "900", "--json"]),
    ("context", {"query": "roll back a bad deploy"}, ["context", "roll back a bad deploy", "--json"]),
])
def test_quick_reads_answer_exactly_what_the_command_prints(team, path, params, argv):
    running, tokens = team
    status, quick, headers = running.call("POST", f"/api/v1/{path}", params, token=tokens["marco"])
    assert status == 200, quick
    assert {k.lower(): v for k, v in headers.items()}.get("x-workbench-answer") == "quick"  # not the command layer
    status, ran, _ = running.call("POST", "/api/v1/cli", {"argv": argv}, token=tokens["marco"])
    assert status == 200 and ran["exit"] == 0, ran
    printed = json.loads(ran["stdout"])
    assert _steady(quick) == _steady(printed)
    assert quick["trace_id"] != printed["trace_id"]  # each call traced, as its own
    got = running.call("GET", f"/api/v1/trace?id={quick['trace_id']}", token=tokens["marco"])
    assert got[0] == 200 and got[1]["principal"] == "marco.bianchi", got


def test_quick_reads_refuse_what_the_command_refuses(team):
    running, tokens = team
    for params, words in (({"query": "   "}, "empty"), ({"query": "x", "k": 0}, "k"),
                          ({"query": "x", "k": "ten"}, "ten"), ({"query": "x", "k": 1.5}, "1.5")):
        status, body, headers = running.call("POST", "/api/v1/search", params, token=tokens["marco"])
        assert "x-workbench-answer" not in {k.lower() for k in headers}  # worded by the command layer
        status_cli, ran, _ = running.call("POST", "/api/v1/cli", {"argv": ["search", params["query"], *(
            ["-k", str(params["k"])] if "k" in params else []), "--json"]}, token=tokens["marco"])
        assert status == 400 and words in body["error"], (params, body)
        assert ran["exit"] == body["exit"] == 2 and body["error"] in ran["stderr"], (params, body, ran)


def test_the_json_api_answers_what_the_cli_prints(team):
    running, tokens = team
    env = {"WORKBENCH_URL": running.url, "WORKBENCH_TOKEN": tokens["marco"]}
    for args in (["show", "nw-adr-0007-idempotency-keys"], ["history", "nw-adr-0007-idempotency-keys"],
                 ["list"], ["pins"], ["stale"]):
        r = run_cli(*args, "--json", env=env)
        assert r.returncode == 0, r.stderr
        query = "&".join(f"id={a}" for a in args[1:])
        status, api, _ = running.call("GET", f"/api/v1/{args[0]}?{query}", token=tokens["marco"])
        assert status == 200 and json.loads(r.stdout) == api, args


def test_parallel_edits_all_land_and_a_stale_base_is_a_conflict(team, tmp_path):
    running, tokens = team
    env = {"WORKBENCH_URL": running.url, "WORKBENCH_TOKEN": tokens["admin"]}
    ids = ["nw-rb-duplicate-charge", "nw-rb-refund-stuck-pending", "nw-adr-0007-idempotency-keys",
           "nw-note-postmortem-inc-2291"]
    bases = {fid: show(running, tokens["admin"], fid)["version"] for fid in ids}

    def edit(fid, n):
        body = tmp_path / f"{fid}-{n}.md"
        body.write_text(f"Edited in parallel ({n}).\n")
        return run_cli_process("edit", fid, "--file", str(body), "--reason", f"parallel {n}", "--as", "priya.raman",
                               "--base", str(bases[fid]), "--json", env=env)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda a: edit(*a), [(fid, 0) for fid in ids]))
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results]
    for fid in ids:
        assert show(running, tokens["admin"], fid)["version"] == bases[fid] + 1
    target = ids[0]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:  # three editors who all read the same version
        bases[target] += 1
        results = list(pool.map(lambda n: edit(target, n), [1, 2, 3]))
    assert sorted(r.returncode for r in results) == [0, 2, 2], [r.stderr for r in results]
    assert all("changed since" in r.stderr for r in results if r.returncode == 2), [r.stderr for r in results]
    assert show(running, tokens["admin"], target)["version"] == bases[target] + 1  # no update lost or doubled


def test_metrics_count_requests_and_report_the_index(team):
    running, tokens = team
    running.call("GET", "/api/v1/search?query=deploy&k=1", token=tokens["marco"])
    text = running.call("GET", "/metrics", token=tokens["admin"])[1]
    assert 'workbench_requests_total{endpoint="api search",status="200"}' in text
    assert 'workbench_request_seconds_bucket{endpoint="api search",le="+Inf"}' in text
    assert re.search(r"^workbench_fragments [12]\d\d$", text, re.M), text
    assert re.search(r"^workbench_index_generation \d+$", text, re.M) and re.search(r"^workbench_traces \d+$", text, re.M)
    log = [json.loads(line) for line in running.log.read_text().splitlines() if line.startswith("{")]
    assert any(e["event"] == "request" and e.get("endpoint") == "api search" and e["principal"] == "marco.bianchi"
               for e in log)


def test_promtool_accepts_the_metrics(team):
    """Prometheus's own checker (Debian's prometheus package; `make test` installs it) on a real scrape."""
    import subprocess

    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus; `make test` installs it as root)")
    running, tokens = team
    running.call("GET", "/api/v1/search?query=deploy&k=1", token=tokens["marco"])
    running.call("GET", "/api/v1", token="wbt_0123456789ab_wrong")  # an auth failure counted too
    status, text, _ = running.call("GET", "/metrics", token=tokens["admin"])
    assert status == 200 and "workbench_auth_failures_total" in text
    checked = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60,
                             check=False)
    assert checked.returncode == 0 and not checked.stdout.strip() and not checked.stderr.strip(), \
        (checked.stdout, checked.stderr)
    for name in re.findall(r"^workbench_(\w+?)(?:_bucket|_sum|_count)?[{ ]", text, re.MULTILINE):
        assert f"# HELP workbench_{name} " in text or re.search(rf"# HELP workbench_{name}\b", text), name


def test_workspace_wide_figures_are_for_admin_tokens(team):
    """/metrics answers 403 to a non-admin (the server's figures are everyone's: there is no
    "visible" version of a request rate); info counts what a non-admin sees, on every path."""
    from workbench.remote import codec

    running, tokens = team
    for who in ("marco", "agent"):
        status, body, _ = running.call("GET", "/metrics", token=tokens[who])
        assert status == 403 and "admin" in body["error"], body
    for who in ("admin", None):
        assert running.call("GET", "/metrics", token=tokens[who] if who else running.owner)[0] == 200
    whole = running.call("GET", "/api/v1/info", token=running.owner)[1]
    assert running.call("GET", "/api/v1/info", token=tokens["admin"])[1] == whole and "counted_for" not in whole
    mine = running.call("GET", "/api/v1/info", token=tokens["marco"])[1]
    assert mine["counted_for"] == "marco.bianchi"
    assert 0 < mine["fragments"] < whole["fragments"] and mine["versions"] < whole["versions"]
    assert running.call("GET", "/api/v1/info?as=priya.raman", token=tokens["marco"])[1] == mine  # --as ignored
    ran = running.call("POST", "/api/v1/cli", {"argv": ["info", "--json"]}, token=tokens["marco"])[1]
    assert json.loads(ran["stdout"]) == mine
    status, body, _ = running.call("POST", "/api/v1/rpc/stats", {}, token=tokens["marco"])
    assert status == 200 and codec.decode(body["result"]) == {k: v for k, v in mine.items()
                                                               if k in ("fragments", "versions", "events",
                                                                        "counted_for")}
    status, body, _ = running.call("POST", "/api/v1/rpc/health", {}, token=tokens["marco"])
    assert status != 200 and body["error"]["type"] == "PermissionDenied"


def test_a_non_admin_cannot_search_untraced(team):
    """``trace=False`` (the TUI's own searches) is honoured for an admin only: anyone else's call is
    traced, so it counts in gaps and usage like any other."""
    from workbench.remote import codec

    running, tokens = team
    for who, traced in (("marco", True), ("agent", True), ("admin", False)):
        status, body, _ = running.call("POST", "/api/v1/rpc/search", {
            "args": ["customer charged twice"], "kwargs": {"k": 2, "trace": False}}, token=tokens[who])
        assert status == 200, body
        trace_id = codec.decode(body["result"]).trace_id
        assert (trace_id is not None) is traced, who
        if traced:
            assert running.call("GET", f"/api/v1/trace?id={trace_id}", token=tokens[who])[0] == 200


# -- the advert ----------------------------------------------------------------------------------------


def test_the_advert_goes_with_the_server_and_a_stale_one_is_ignored(sample_workspace):
    running = start_server(sample_workspace)
    assert json.loads((sample_workspace / "server.json").read_text())["pid"] == running.process.pid
    assert oct((sample_workspace / "server.token").stat().st_mode & 0o777) == "0o600"
    assert oct((sample_workspace / "server.json").stat().st_mode & 0o777) == "0o600"
    r = run_cli("list", "--json", "--as", "marco.bianchi", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr  # through the server (the file is locked by it)
    stop_server(running, signal.SIGKILL)
    assert (sample_workspace / "server.json").exists()  # kill -9 leaves it behind ...
    r = run_cli("list", "--json", "--as", "marco.bianchi", workspace=sample_workspace)
    assert r.returncode == 0, r.stderr  # ... and the CLI sees its process is gone and works alone
    with server(sample_workspace) as again:  # a new server replaces the stale record, removes it on SIGTERM
        assert json.loads((sample_workspace / "server.json").read_text())["pid"] == again.process.pid
        r = run_cli_process("server", "--port", "0", workspace=sample_workspace)
        assert r.returncode == 2 and "already holds" in r.stderr
    assert not (sample_workspace / "server.json").exists()
    assert os.environ.get("WORKBENCH_URL") is None


def test_a_slow_export_does_not_hold_up_searches(team, tmp_path):
    """An export reads the whole workspace and writes hundreds of files; searches asked meanwhile
    are answered meanwhile (reads do not queue behind each other)."""
    import threading
    import time

    running, tokens = team
    done = {}

    def export():
        done["status"] = running.call("POST", "/api/v1/export-files", {"dir": str(tmp_path / "out"),
                                                                       "as": "priya.raman"},
                                      token=tokens["admin"])[0]
        done["at"] = time.monotonic()

    worker = threading.Thread(target=export)
    worker.start()
    answered = []
    while worker.is_alive() and len(answered) < 50:
        status = running.call("GET", "/api/v1/search?query=charged+twice&k=3", token=tokens["marco"])[0]
        assert status == 200
        answered.append(time.monotonic())
    worker.join(120)
    assert done["status"] == 200
    during = [t for t in answered if t < done["at"]]
    assert len(during) >= 2, f"only {len(during)} searches answered while the export ran"


def test_an_idle_connection_outlives_the_clients_own_expiry(team):
    """httpx and most pools drop an idle connection after 5 s; the server must not close it first
    (uvicorn's default is also 5 s: a client reusing it at that moment got a read error)."""
    import http.client
    import time
    from urllib.parse import urlsplit

    running, tokens = team
    where = urlsplit(running.url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        for pause in (0, 6.5):
            time.sleep(pause)
            conn.request("GET", "/api/v1/pins", headers={"Authorization": f"Bearer {tokens['marco']}"})
            response = conn.getresponse()
            assert response.status == 200
            response.read()
    finally:
        conn.close()
