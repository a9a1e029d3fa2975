"""The MCP server on the wire, without the SDK: JSON-RPC 2.0, one JSON message per line, over
the pipes of a real `workbench mcp --as PRINCIPAL` subprocess. What any client (in any
language) sees: the handshake, the tool/resource/prompt surface, the shapes of results,
errors, and a connection that survives bad calls."""

from __future__ import annotations

import json
import queue
import re
import shutil
import subprocess
import threading

import pytest

from conftest import WORKBENCH_BIN, write_fragment

PRINCIPAL = "dan.kowalski"  # northwind: payments-api and platform-infra; no tidewater
HIDDEN = "tw-rb-oncall-paging-escalation"  # exists, in tidewater: out of dan's scope
PINNED = "nw-pol-incident-severity"
LEAKY = "nw-leaky-runbook"  # stored with a secret-guard override: never served to agents
SECRET = "AKIA" + "ZXCVBNMLKJHGFDSA"  # split so no scanner flags this file
CITATION = re.compile(r"\b([a-z0-9][a-z0-9._-]*)@v(\d+)\b")


class Wire:
    """A bare JSON-RPC client over a subprocess's stdin/stdout."""

    def __init__(self, workspace, principal: str, log_path):
        self.log = open(log_path, "w")  # noqa: SIM115 - stderr goes to a file: a pipe could fill up and block
        self.proc = subprocess.Popen([str(WORKBENCH_BIN), "--workspace", str(workspace), "mcp", "--as", principal],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True,
                                     encoding="utf-8")
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

    def notify(self, method: str, params: dict | None = None) -> None:
        self.send_raw(json.dumps({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})}))

    def call(self, method: str, params: dict | None = None, timeout: float = 180) -> dict:
        """The whole response message (with "result" or "error")."""
        self.next_id += 1
        rid = self.next_id
        self.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                                  **({"params": params} if params is not None else {})}))
        while True:
            message = self.inbox.get(timeout=timeout)
            assert message is not None, "the server closed stdout"
            assert message.get("jsonrpc") == "2.0", message
            if message.get("id") == rid:
                return message

    def result(self, method: str, params: dict | None = None) -> dict:
        message = self.call(method, params)
        assert "error" not in message, message
        return message["result"]

    def tool(self, name: str, **arguments) -> dict:
        return self.result("tools/call", {"name": name, "arguments": arguments})

    def initialize(self, version: str) -> dict:
        result = self.result("initialize", {"protocolVersion": version, "capabilities": {},
                                            "clientInfo": {"name": "wire-test", "version": "0"}})
        self.notify("notifications/initialized")
        return result

    def close(self) -> int:
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.log.close()


@pytest.fixture(scope="module")
def served(sample_workspace_template, tmp_path_factory):
    """One server for the module, on a copy of the sample workspace with one pin for northwind
    and one fragment stored with a secret-guard override (visible to the principal, withheld)."""
    from workbench import Workbench

    root = tmp_path_factory.mktemp("wire") / "ws"
    shutil.copytree(sample_workspace_template, root)
    write_fragment(root.parent / "in", LEAKY, kind="runbook", title="Rotate the zebra quartz gateway credentials",
                   body=f"Rotate the zebra quartz gateway: export AWS_ACCESS_KEY_ID={SECRET}\n")
    with Workbench.open(root) as wb:
        assert wb.ingest([root.parent / "in"], actor="marco.bianchi", allow_secret=True).added == [LEAKY]
        wb.pin(PINNED, scope="org=northwind", actor="priya.raman", reason="every responder reads this")
        visible = {f.id for f in wb.list(principal=PRINCIPAL)} - {LEAKY}
        assert wb.get(LEAKY, principal=PRINCIPAL).id == LEAKY  # the principal may see it; agents get nothing
        assert wb.get(HIDDEN, principal="lena.fischer").id == HIDDEN  # it exists, for someone else
    wire = Wire(root, PRINCIPAL, root.parent / "server.log")
    hello = wire.initialize("2025-06-18")
    yield {"wire": wire, "hello": hello, "visible": visible, "root": root}
    assert wire.close() == 0


def _text(result: dict) -> str:
    assert [c["type"] for c in result["content"]] == ["text"]
    return result["content"][0]["text"]


def _prop(schema: dict) -> dict:
    """A property's schema with the optional (null) branch folded away."""
    branches = [b for b in schema.get("anyOf", []) if b.get("type") != "null"]
    return {**schema, **(branches[0] if branches else {})}


# -- the handshake -------------------------------------------------------------------------------

def test_initialize_negotiates_the_version_and_advertises_only_what_it_serves(served, tmp_path):
    from workbench import __version__

    hello, wire = served["hello"], served["wire"]
    assert hello["protocolVersion"] == "2025-06-18"  # a version the server speaks is echoed
    assert hello["serverInfo"]["name"] == "workbench" and hello["serverInfo"]["version"] == __version__ != ""
    assert set(hello["capabilities"]) == {"tools", "resources", "prompts"}
    # every advertised capability serves something
    assert wire.result("tools/list")["tools"]
    assert wire.result("resources/list")["resources"]
    assert wire.result("resources/templates/list")["resourceTemplates"]
    assert wire.result("prompts/list")["prompts"]

    other = Wire(served["root"], PRINCIPAL, tmp_path / "other.log")
    try:
        offered = other.initialize("1999-01-01")  # unknown: the server answers with one it speaks
        assert offered["protocolVersion"] in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
        assert other.result("ping") == {}
    finally:
        assert other.close() == 0


def test_unknown_principal_never_serves(served, cli):
    r = cli("mcp", "--as", "mallory", workspace=served["root"], input="")
    assert r.returncode == 2 and "unknown principal 'mallory'" in r.stderr and r.stdout == ""


# -- tools/list ------------------------------------------------------------------------------------

def test_every_tool_has_a_title_annotations_bounded_described_parameters_and_an_output_schema(served):
    from workbench.models import KINDS

    tools = {t["name"]: t for t in served["wire"].result("tools/list")["tools"]}
    assert set(tools) == {"search", "get", "context", "propose"}
    for name, tool in tools.items():
        assert tool["title"] and tool["annotations"]["title"] == tool["title"]
        writes = name == "propose"  # the one tool that stores something: a proposal, for review
        assert tool["annotations"]["readOnlyHint"] is not writes and tool["annotations"]["openWorldHint"] is False
        assert tool["annotations"]["idempotentHint"] is not writes and tool["annotations"]["destructiveHint"] is False
        if writes:
            assert "review" in tool["description"]
        else:
            assert "trace" in tool["description"]  # read-only for knowledge, but calls are traced: said so
        out = tool["outputSchema"]
        assert out["type"] == "object" and out["properties"]
        for pname, raw in tool["inputSchema"]["properties"].items():
            prop = _prop(raw)
            assert prop.get("description"), (name, pname)
            if prop["type"] in ("integer", "number"):
                assert "minimum" in prop and "maximum" in prop, (name, pname, prop)
            elif prop["type"] == "array":   # a list of bounded strings (context's paths), itself bounded
                item = prop["items"]
                assert "maxItems" in prop and item["type"] == "string" and "maxLength" in item, (name, pname, prop)
            elif prop["type"] == "boolean":   # a flag (search's archived): nothing to bound
                assert isinstance(prop.get("default"), bool), (name, pname, prop)
            else:
                assert prop["type"] == "string" and ("maxLength" in prop or "enum" in prop or "format" in prop), \
                    (name, pname, prop)

    search, context, get = (tools[n]["inputSchema"]["properties"] for n in ("search", "context", "get"))
    # search and context take a query, paths or a diff (any one of them): none is required by the schema itself
    for name, props in (("search", search), ("context", context)):
        assert "query" not in tools[name]["inputSchema"].get("required", [])
        assert {"query", "paths", "diff"} <= set(props)
    assert (_prop(search["query"])["minLength"], _prop(search["query"])["maxLength"]) == (1, 4000)
    assert (search["k"]["minimum"], search["k"]["maximum"], search["k"]["default"]) == (1, 100, 10)
    assert (context["budget"]["minimum"], context["budget"]["maximum"]) == (1, 200_000)
    for props in (search, context):
        assert set(props) >= {"kind", "tag", "owner", "updated_since", "dense_weight", "min_confidence"}
        assert _prop(props["kind"])["enum"] == list(KINDS)
        assert _prop(props["updated_since"])["format"] == "date"
        for weight in ("dense_weight", "min_confidence"):
            assert (_prop(props[weight])["minimum"], _prop(props[weight])["maximum"]) == (0, 1)
    assert (get["id"]["minLength"], get["id"]["maxLength"]) == (1, 128)
    assert set(tools["search"]["outputSchema"]["required"]) >= {"trace_id", "hits", "avoid"}
    assert set(tools["context"]["outputSchema"]["required"]) >= {"trace_id", "budget_tokens", "used_tokens",
                                                                 "fragments", "avoid", "omitted"}
    assert set(tools["get"]["outputSchema"]["required"]) >= {"id", "version", "citation", "body"}


# -- tools/call: text for the model, JSON as structured content ------------------------------------

def test_search_text_is_one_line_per_hit_and_structured_content_is_the_json(served):
    found = served["wire"].tool("search", query="client retry tokens ADR-0003", k=5, kind="decision")
    assert found.get("isError") is not True
    text, data = _text(found), found["structuredContent"]
    assert data["trace_id"].startswith("tr_") and data["trace_id"] in text.splitlines()[0]
    items = data["hits"] + data["avoid"]
    assert 0 < len(data["hits"]) <= 5 and {i["kind"] for i in data["hits"]} == {"decision"}  # the filter holds
    lines = [line for line in text.splitlines() if re.match(r"\d+\. ", line)]
    assert len(lines) == len(items)
    for line, item in zip(lines, items):
        assert item["citation"] == f"{item['id']}@v{item['version']}"
        assert item["citation"] in line and item["title"] in line
        assert 0 <= item["confidence"] <= 1 and f"confidence {item['confidence']:.2f}" in line
        assert len(line) < 400 and item["id"] in served["visible"]
    assert '"hits"' not in text and not text.lstrip().startswith("{")  # not a JSON dump
    old = next(i for i in data["hits"] if i["id"] == "nw-adr-0003-client-retry-tokens")
    assert old["superseded_by"] == "nw-adr-0007-idempotency-keys@v1"
    assert "superseded by nw-adr-0007-idempotency-keys@v1" in lines[items.index(old)]


@pytest.mark.parametrize("budget", [1500, 300])
def test_context_text_is_the_composed_context_within_the_budget(served, budget):
    from workbench.retrieval.embedder import count_tokens

    # min_confidence 0: no floor, so the budget is what limits (the hardest case for the text)
    got = served["wire"].tool("context", query="how do I roll back a bad deploy", budget=budget, min_confidence=0)
    assert got.get("isError") is not True
    text, data = _text(got), got["structuredContent"]
    assert count_tokens(text) <= budget, (count_tokens(text), budget)
    assert data["budget_tokens"] == budget and 0 < data["used_tokens"] <= budget
    assert data["fragments"] and '"used_tokens"' not in text  # the context itself, not its JSON
    for item in data["fragments"] + data["avoid"]:
        assert item["text"] in text and f"(source: {item['id']}@v{item['version']})" in text
    if budget == 1500:
        assert count_tokens(text) > 1000  # the budget was used, not dodged
        assert data["fragments"][0]["id"] == PINNED and data["fragments"][0]["scores"]["pinned"] is True


def test_context_says_plainly_when_nothing_relevant_is_in_scope(served):
    got = served["wire"].tool("context", query="sourdough starter hydration for rye bread", budget=800)
    data = got["structuredContent"]
    assert data["abstained"] is True and "no relevant knowledge in scope" in _text(got).lower()
    assert [i["id"] for i in data["fragments"]] == [PINNED]  # pins still come


def test_get_text_is_markdown_with_its_citation_and_supersession(served):
    got = served["wire"].tool("get", id="nw-adr-0003-client-retry-tokens")
    text, data = _text(got), got["structuredContent"]
    assert text.startswith("# ADR-0003") and "`nw-adr-0003-client-retry-tokens@v1`" in text
    assert "superseded by nw-adr-0007-idempotency-keys@v1" in text.lower()
    assert data["citation"] == "nw-adr-0003-client-retry-tokens@v1" and data["trace_id"].startswith("tr_")
    assert data["superseded_by"] == "nw-adr-0007-idempotency-keys@v1" and data["body"].strip() in text
    current = served["wire"].tool("get", id="nw-adr-0007-idempotency-keys@v1")  # a citation works as an id
    assert current["structuredContent"]["superseded_by"] is None and "uperseded by" not in _text(current)


# -- resources ---------------------------------------------------------------------------------------

def test_resources_list_pages_through_exactly_the_visible_fragments(served):
    wire, seen, pages, cursor = served["wire"], [], 0, None
    while True:
        page = wire.result("resources/list", {"cursor": cursor} if cursor else {})
        pages += 1
        assert 0 < len(page["resources"]) <= 50
        for r in page["resources"]:
            assert r["uri"] == f"workbench://fragment/{r['name']}" and r["mimeType"] == "text/markdown"
            assert r["title"] and r["description"]
        seen += [r["name"] for r in page["resources"]]
        assert SECRET not in json.dumps(page) and "zebra quartz" not in json.dumps(page)
        cursor = page.get("nextCursor")
        if not cursor:
            break
    assert pages >= 2 and len(seen) == len(set(seen))
    assert set(seen) == served["visible"] and HIDDEN not in seen

    bad = wire.call("resources/list", {"cursor": "not-a-cursor"})
    assert bad["error"]["code"] == -32602
    assert wire.result("resources/list")["resources"]  # and the connection goes on


def test_resources_read_is_scope_checked_and_out_of_scope_answers_like_missing(served):
    wire = served["wire"]
    [template] = wire.result("resources/templates/list")["resourceTemplates"]
    assert template["uriTemplate"] == "workbench://fragment/{id}" and template["mimeType"] == "text/markdown"
    assert template["name"] and template["title"] and template["description"]

    uri = "workbench://fragment/nw-adr-0007-idempotency-keys"
    [content] = wire.result("resources/read", {"uri": uri})["contents"]
    assert content["uri"] == uri and content["mimeType"] == "text/markdown"
    assert content["text"].startswith("# ADR-0007") and "nw-adr-0007-idempotency-keys@v1" in content["text"]

    hidden = wire.call("resources/read", {"uri": f"workbench://fragment/{HIDDEN}"})["error"]
    missing = wire.call("resources/read", {"uri": "workbench://fragment/nw-no-such-fragment"})["error"]
    assert hidden["code"] == missing["code"] == -32602
    assert json.dumps(hidden).replace(HIDDEN, "X") == json.dumps(missing).replace("nw-no-such-fragment", "X")
    assert "tidewater" not in json.dumps(hidden).lower()

    withheld = wire.call("resources/read", {"uri": f"workbench://fragment/{LEAKY}"})
    assert withheld["error"]["code"] == -32602 and SECRET not in json.dumps(withheld)
    got = wire.tool("get", id=LEAKY)
    assert got["isError"] is True and SECRET not in json.dumps(got)
    found = wire.tool("search", query="rotate the zebra quartz gateway credentials", k=20)
    assert LEAKY not in json.dumps(found) and SECRET not in json.dumps(found)

    from workbench import Workbench

    with Workbench.open(served["root"]) as wb:  # the server released the workspace between calls
        traced = wb.store._q("SELECT count(*) FROM traces WHERE principal = ? AND kind = 'get' AND query = ?",
                             [PRINCIPAL, "nw-adr-0007-idempotency-keys"])[0][0]
    assert traced >= 1  # a resource read is traced like `get`


# -- prompts --------------------------------------------------------------------------------------------

def test_the_task_context_prompt_returns_pins_knowledge_and_anti_patterns_with_citations(served):
    wire = served["wire"]
    [prompt] = wire.result("prompts/list")["prompts"]
    assert (prompt["name"], prompt["title"]) == ("task-context", "Task context")
    args = {a["name"]: a for a in prompt["arguments"]}
    assert args["task"]["required"] is True and args["budget"]["required"] is False
    assert args["task"]["description"] and args["budget"]["description"]

    got = wire.result("prompts/get", {"name": "task-context",
                                      "arguments": {"task": "roll back a bad deploy", "budget": "2000"}})
    messages = got["messages"]
    assert all(m["role"] == "user" and m["content"]["type"] == "text" for m in messages)
    texts = [m["content"]["text"] for m in messages]
    assert "roll back a bad deploy" in texts[0]
    heads = [t.split("\n", 1)[0] for t in texts[1:]]
    assert heads == ["# Pinned (always applies)", "# Relevant knowledge", "# Anti-patterns to avoid"]
    assert f"{PINNED}@v1" in texts[1] and "nw-rb-deploy-rollback@v1" in texts[2]
    cited = {m.group(1) for t in texts[1:] for m in CITATION.finditer(t)}
    assert cited and cited <= served["visible"]
    assert any(fid.startswith("nw-ap-") for fid, _ in CITATION.findall(texts[3]))


# -- bad calls, then good ones, on the same connection ---------------------------------------------

def test_bad_calls_are_errors_and_the_connection_goes_on(served):
    wire = served["wire"]
    unknown = wire.call("tools/call", {"name": "delete_everything", "arguments": {}})
    assert unknown.get("error") or unknown["result"]["isError"] is True
    for arguments in ({"query": "x", "k": 0}, {"query": "x", "k": 101}, {"query": ""}, {"query": "x" * 4001},
                      {"k": 3}, {"query": "x", "kind": "poem"}, {"query": "x", "updated_since": "last week"},
                      {"query": "x", "dense_weight": 2}, {"query": "x", "min_confidence": -0.1}):
        bad = wire.tool("search", **arguments)
        assert bad["isError"] is True and "structuredContent" not in bad, arguments
    assert wire.tool("context", query="x", budget=0)["isError"] is True
    assert wire.tool("get", id="")["isError"] is True
    hidden, missing = wire.tool("get", id=HIDDEN), wire.tool("get", id="nw-no-such-fragment")
    assert hidden["isError"] is True and _text(hidden).replace(HIDDEN, "X") == \
        _text(missing).replace("nw-no-such-fragment", "X")
    assert wire.call("no/such/method")["error"]["code"] == -32601
    assert wire.call("prompts/get", {"name": "task-context", "arguments": {"task": "x", "budget": "0"}}
                     )["error"]["code"] == -32602
    assert wire.call("prompts/get", {"name": "nope"})["error"]["code"] == -32602
    wire.send_raw("{this is not json")

    good = wire.tool("search", query="pgbouncer", k=3)
    assert good.get("isError") is not True and good["structuredContent"]["hits"]


def test_calls_in_flight_when_stdin_closes_are_answered_before_the_process_exits(sample_workspace, tmp_path):
    """A client that writes its last calls and closes stdin at once (a script, a host shutting an
    agent down) still gets every answer: the server reads the end of input while the calls run."""
    wire = Wire(sample_workspace, PRINCIPAL, tmp_path / "mcp.log")
    try:
        wire.initialize("2025-06-18")
        calls = {10: ("context", {"query": "customer charged twice when the client retries", "budget": 4000}),
                 11: ("search", {"query": "deploy rollback", "k": 5}),
                 12: ("get", {"id": PINNED})}
        for rid, (tool, arguments) in calls.items():  # the first call also loads the model: still running at EOF
            wire.send_raw(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                      "params": {"name": tool, "arguments": arguments}}))
        wire.proc.stdin.close()
        answers = {}
        while (message := wire.inbox.get(timeout=180)) is not None:
            answers[message.get("id")] = message
        assert wire.proc.wait(timeout=60) == 0
    finally:
        if wire.proc.poll() is None:
            wire.proc.kill()
        wire.log.close()
    assert set(answers) == set(calls), answers.keys()
    assert not any(a["result"].get("isError") for a in answers.values()), answers
    assert answers[10]["result"]["structuredContent"]["fragments"]
