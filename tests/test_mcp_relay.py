"""`workbench mcp` (stdio) when a team server holds the workspace: a real `workbench mcp --as P`
subprocess spoken to over its pipes with hand-written JSON-RPC, relaying to a real `workbench
server`; what it does is checked through the server's API (traces, the log), what it costs through
/proc. Without a server, the same command is the stdio server of its own."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import WORKBENCH_BIN, run_cli_process, write_fragment
from server_support import server, start_server, stop_server

pytestmark = pytest.mark.process
AGENT = "agent.nw-coder"
HIDDEN = "tw-adr-0009-transactional-outbox"  # tidewater: out of the agent's scope
HEAVY = ("torch", "onnxruntime", "duckdb")
EXTRA = [f"nw-note-relay-{i}" for i in range(4)]  # so the agent sees more than one page (50) of resources


class Stdio:
    """A bare JSON-RPC client over the pipes of a real `workbench mcp --as PRINCIPAL` process."""

    def __init__(self, workspace: Path, principal: str, log_path: Path, env: dict | None = None):
        clean = {k: v for k, v in os.environ.items() if k not in ("WORKBENCH_URL", "WORKBENCH_TOKEN")}
        self.log_path = log_path
        self.log = open(log_path, "w")  # noqa: SIM115 - a file, not a pipe that could fill up and block
        self.proc = subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(workspace), "mcp", "--as", principal],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     encoding="utf-8", env={**clean, **(env or {})})
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))
        self.inbox.put(None)

    def send_raw(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict | None = None, timeout: float = 180, jsonrpc: str = "2.0") -> dict:
        self.next_id += 1
        rid = self.next_id
        self.send_raw(json.dumps({"jsonrpc": jsonrpc, "id": rid, "method": method,
                                  **({"params": params} if params is not None else {})}))
        while True:
            message = self.inbox.get(timeout=timeout)
            assert message is not None, f"stdout closed: {self.log_path.read_text()}"
            assert message.get("jsonrpc") == "2.0", message
            if message.get("id") == rid:
                return message

    def result(self, method: str, params: dict | None = None) -> dict:
        message = self.call(method, params)
        assert "error" not in message, message
        return message["result"]

    def tool(self, name: str, **arguments) -> dict:
        return self.result("tools/call", {"name": name, "arguments": arguments})

    def initialize(self) -> dict:
        hello = self.result("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                           "clientInfo": {"name": "relay-test", "version": "0"}})
        self.send_raw(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return hello

    def stderr(self) -> str:
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text()

    def close(self) -> int:
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.log.close()


def _proc(pid: int, name: str) -> str:
    return Path(f"/proc/{pid}/{name}").read_text()


def peak_mb(pid: int) -> float:
    """The process's peak resident memory (VmHWM), in MB."""
    line = next(line for line in _proc(pid, "status").splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def heavy_libraries(pid: int) -> set[str]:
    """Which of torch, onnxruntime, duckdb have native libraries mapped in the process."""
    maps = _proc(pid, "maps").lower()
    return {name for name in HEAVY if f"/{name}" in maps or f"lib{name}" in maps}


def trace_principal(running, token: str, result: dict) -> str:
    trace_id = result["structuredContent"]["trace_id"]
    status, trace, _ = running.call("GET", f"/api/v1/trace?id={trace_id}", token=token)
    assert status == 200, trace
    return trace["principal"]


def server_log(running) -> list[dict]:
    return [json.loads(line) for line in running.log.read_text().splitlines() if line.startswith("{")]


def deleted(running) -> list[dict]:
    """The MCP sessions ended by their client (DELETE /mcp) so far."""
    return [e for e in server_log(running) if e.get("method") == "DELETE" and e.get("path") == "/mcp"
            and e.get("status") == 200]


@pytest.fixture(scope="module")
def team(sample_workspace_template, tmp_path_factory):
    """A running server on a copy of the sample workspace (with a few more notes the agent sees, so
    its resources take two pages) and tokens: the agent's and marco's (not admin), priya's (admin)."""
    from workbench import Workbench

    root = tmp_path_factory.mktemp("relay") / "ws"
    shutil.copytree(sample_workspace_template, root)
    for fid in EXTRA:
        write_fragment(root.parent / "in", fid, title=f"Relay note {fid}", org="northwind", repo=None)
    with Workbench.open(root) as wb:
        assert sorted(wb.ingest([root.parent / "in"], actor="marco.bianchi").added) == EXTRA
        tokens = {name: wb.token_create(principal).token for name, principal in
                  (("agent", AGENT), ("marco", "marco.bianchi"), ("admin", "priya.raman"))}
    with server(root) as running:
        yield running, tokens


def test_the_relay_speaks_mcp_through_the_server_as_the_principal(team, tmp_path):
    running, tokens = team
    wire = Stdio(running.root, AGENT, tmp_path / "relay.log")  # the server's advert: its owner token
    try:
        hello = wire.initialize()
        assert hello["protocolVersion"] == "2025-06-18" and hello["serverInfo"]["name"] == "workbench"
        assert "relayed to the server at " + running.url in wire.stderr()
        assert {t["name"] for t in wire.result("tools/list")["tools"]} == {"search", "get", "context", "propose"}

        found = wire.tool("search", query="customer charged twice when the client retries", k=3)
        assert found.get("isError") is not True and found["structuredContent"]["hits"], found
        assert trace_principal(running, tokens["agent"], found) == AGENT  # --as, through the owner's token

        hidden, missing = wire.tool("get", id=HIDDEN), wire.tool("get", id="tw-rb-no-such-thing")
        assert hidden["isError"] is True and missing["isError"] is True
        assert hidden["content"][0]["text"].replace(HIDDEN, "X") == \
            missing["content"][0]["text"].replace("tw-rb-no-such-thing", "X")

        seen, pages, cursor = [], 0, None
        while True:
            page = wire.result("resources/list", {"cursor": cursor} if cursor else {})
            seen += [r["name"] for r in page["resources"]]
            pages += 1
            cursor = page.get("nextCursor")
            if not cursor:
                break
        visible = {f["id"] for f in running.call("GET", "/api/v1/list", token=tokens["agent"])[1]}
        assert pages == 2 and len(seen) == len(set(seen)) and set(seen) == visible and set(EXTRA) <= visible

        # a line that is not JSON, a message the server refuses (HTTP 400): errors, and the relay goes on
        wire.send_raw("{not json")
        refused = wire.call("ping", jsonrpc="1.0")
        assert refused["error"]["code"] < 0 and "HTTP 400" in refused["error"]["message"], refused
        assert wire.tool("search", query="pgbouncer", k=1)["structuredContent"]["hits"]
        ended = len(deleted(running))
    finally:
        assert wire.close() == 0, wire.stderr()
    assert "Traceback" not in wire.stderr()
    deadline = time.monotonic() + 10  # the session is ended when stdin closes
    while len(deleted(running)) == ended:
        assert time.monotonic() < deadline, "the relay did not end its session"
        time.sleep(0.1)


@pytest.mark.duckdb_only("tells a process that opened the database by DuckDB's library in its memory")
def test_the_relay_loads_no_model_no_index_and_no_database(team, tmp_path):
    running, _ = team
    wire = Stdio(running.root, AGENT, tmp_path / "relay.log")
    try:
        wire.initialize()
        assert wire.tool("search", query="idempotency keys for payment retries", k=5)["structuredContent"]["hits"]
        assert wire.tool("context", query="idempotency keys for payment retries", budget=1500,
                         min_confidence=0)["structuredContent"]["fragments"]
        assert heavy_libraries(wire.proc.pid) == set()
        assert peak_mb(wire.proc.pid) < 150
        assert {"duckdb", "onnxruntime"} <= heavy_libraries(running.process.pid)  # the check sees them where they are
    finally:
        assert wire.close() == 0, wire.stderr()


def test_as_is_honoured_for_an_admin_token_and_ignored_for_anyone_else(team, tmp_path):
    running, tokens = team
    for token, acting, viewer in ((tokens["marco"], "marco.bianchi", tokens["marco"]),
                                  (tokens["admin"], AGENT, tokens["agent"])):  # a trace is its principal's to read
        wire = Stdio(running.root, AGENT, tmp_path / f"{acting}.log", env={"WORKBENCH_TOKEN": token})
        try:
            wire.initialize()
            found = wire.tool("search", query="deploy", k=1)
            assert trace_principal(running, viewer, found) == acting
        finally:
            assert wire.close() == 0, wire.stderr()
    assert any(e["event"] == "as_ignored" and e["principal"] == "marco.bianchi" and e["requested"] == AGENT
               for e in server_log(running))


def test_a_relay_that_cannot_start_says_why_in_one_line(team, tmp_path):
    running, tokens = team
    for env, args, told in (({}, ("--as", "mallory"), "unknown principal 'mallory'"),
                            ({"WORKBENCH_TOKEN": "wbt_ffffffffffff_" + "y" * 43}, ("--as", AGENT), "HTTP 401"),
                            ({"WORKBENCH_URL": "http://127.0.0.1:9", "WORKBENCH_TOKEN": tokens["agent"]},
                             ("--as", AGENT), "cannot reach the workbench server at http://127.0.0.1:9")):
        r = run_cli_process("mcp", *args, workspace=running.root, env=env, input="", timeout=60)
        assert r.returncode == 2 and told in r.stderr and r.stdout == "", (env, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_the_relay_outlives_a_server_restart(sample_workspace, tmp_path):
    """Down: each request is answered with an error, the relay reads on. Back (same address, new owner
    token): the session it had is gone (404) or its token is refused (401): it opens a new one."""
    from workbench import Workbench

    with Workbench.open(sample_workspace) as wb:
        agent = wb.token_create(AGENT).token
    running = start_server(sample_workspace)
    port = int(running.url.rsplit(":", 1)[1])
    owner = Stdio(sample_workspace, AGENT, tmp_path / "owner.log")  # found by the advert: its owner token
    fixed = Stdio(sample_workspace, AGENT, tmp_path / "fixed.log",
                  env={"WORKBENCH_URL": running.url, "WORKBENCH_TOKEN": agent})
    try:
        for wire in (owner, fixed):
            wire.initialize()
            assert wire.tool("search", query="deploy", k=1)["structuredContent"]["hits"]
        assert stop_server(running) == 0
        for wire in (owner, fixed):
            down = wire.call("tools/call", {"name": "search", "arguments": {"query": "deploy", "k": 1}}, timeout=60)
            assert "cannot reach the workbench server" in down["error"]["message"], down
        running = start_server(sample_workspace, port=port)
        for wire in (owner, fixed):
            found = wire.tool("search", query="deploy", k=1)
            assert found.get("isError") is not True and trace_principal(running, agent, found) == AGENT
            assert wire.result("ping") == {}
        statuses = [e["status"] for e in server_log(running) if e.get("path") == "/mcp"]
        assert 401 in statuses and 404 in statuses  # each way back was taken
    finally:
        codes = [owner.close(), fixed.close()]
        if running.process.poll() is None:
            stop_server(running)
    assert codes == [0, 0], owner.stderr() + fixed.stderr()
    assert "Traceback" not in owner.stderr() + fixed.stderr()


@pytest.mark.duckdb_only("tells a process that opened the database by DuckDB's library in its memory")
def test_without_a_running_server_mcp_is_the_stdio_server(sample_workspace, tmp_path):
    stop_server(start_server(sample_workspace), signal.SIGKILL)
    assert (sample_workspace / "server.json").exists()  # an advert whose process is gone
    wire = Stdio(sample_workspace, AGENT, tmp_path / "stdio.log")
    try:
        wire.initialize()
        assert "MCP server on stdio as agent.nw-coder" in wire.stderr()
        assert wire.tool("search", query="roll back a bad deploy", k=3)["structuredContent"]["hits"]
        assert "duckdb" in heavy_libraries(wire.proc.pid)  # it opened the workspace itself ...
        assert peak_mb(wire.proc.pid) > 150  # ... and the model: what the relay's bound spares each agent
    finally:
        assert wire.close() == 0, wire.stderr()
