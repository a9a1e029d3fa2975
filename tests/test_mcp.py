"""The MCP server as an agent meets it: the official SDK client against a real stdio subprocess."""

from __future__ import annotations

import pytest

from conftest import WORKBENCH_BIN
from workbench import Workbench
from workbench.retrieval.embedder import count_tokens


def params(workspace, principal="marco.bianchi"):
    from mcp.client.stdio import StdioServerParameters

    return StdioServerParameters(command=str(WORKBENCH_BIN),
                                 args=["--workspace", str(workspace), "mcp", "--as", principal])


def text_of(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_tools_search_get_context_with_scope_and_errors(sample_workspace):
    from mcp import Client

    async with Client(params(sample_workspace), read_timeout_seconds=120) as client:
        tools = await client.list_tools()
        names = sorted(t.name for t in tools.tools)
        assert names == ["context", "get", "propose", "search"]
        search = next(t for t in tools.tools if t.name == "search")
        assert set(search.input_schema["properties"]) == {"query", "k", "kind", "tag", "owner", "updated_since",
                                                          "dense_weight", "min_confidence", "persona", "archived",
                                                          "paths", "diff"}
        for tool in tools.tools:  # propose stores a proposal for review: the one tool that is not read-only
            assert tool.title and tool.annotations.read_only_hint is (tool.name != "propose")
            assert tool.output_schema["properties"]

        found = await client.call_tool("search", {"query": "customer charged twice on retry", "k": 5})
        assert not found.is_error
        data = found.structured_content
        assert data["trace_id"].startswith("tr_") and 0 < len(data["hits"]) <= 5
        for hit in data["hits"] + data["avoid"]:
            assert set(hit) >= {"id", "title", "preview", "score", "confidence", "citation"}
            assert len(hit["preview"]) <= 201 and hit["id"].startswith("nw-")
            assert hit["citation"] in text_of(found)  # the text: one line per hit

        got = await client.call_tool("get", {"id": "nw-adr-0007-idempotency-keys"})
        assert not got.is_error and got.structured_content["body"].startswith("## Context")
        assert text_of(got).startswith("# ADR-0007") and "nw-adr-0007-idempotency-keys@v1" in text_of(got)

        hidden = await client.call_tool("get", {"id": "tw-rb-oncall-paging-escalation"})
        missing = await client.call_tool("get", {"id": "no-such-fragment"})
        assert hidden.is_error and missing.is_error
        assert "unknown fragment 'tw-rb-oncall-paging-escalation'" in text_of(hidden)
        assert text_of(hidden).replace("tw-rb-oncall-paging-escalation", "X") == \
            text_of(missing).replace("no-such-fragment", "X")  # out of scope answers exactly like unknown

        ctx = await client.call_tool("context", {"query": "roll back a bad deploy", "budget": 1200,
                                                 "min_confidence": 0})
        assert not ctx.is_error
        composed = ctx.structured_content
        assert composed["trace_id"] and composed["used_tokens"] <= 1200 and "text" not in composed
        assert composed["fragments"] and 0 < count_tokens(text_of(ctx)) <= 1200  # the text: the context itself
        assert all(f"(source: {i['id']}@v{i['version']})" in text_of(ctx) for i in composed["fragments"])

        for bad in ({"query": ""}, {"query": "x", "k": "many"}, {"k": 3}, {"query": "x", "k": 0}):
            result = await client.call_tool("search", bad)
            assert result.is_error, bad
        still = await client.call_tool("search", {"query": "pgbouncer", "k": 3})
        assert not still.is_error  # the server kept running

        first = await client.list_resources()
        second = await client.list_resources(cursor=first.next_cursor)
        names = [r.name for r in first.resources + second.resources]
        assert len(first.resources) == 50 and names == sorted(set(names)) and all(n.startswith("nw-") for n in names)
        read = await client.read_resource("workbench://fragment/nw-adr-0007-idempotency-keys")
        assert read.contents[0].mime_type == "text/markdown" and read.contents[0].text.startswith("# ADR-0007")
        prompt = await client.get_prompt("task-context", {"task": "roll back a bad deploy"})
        assert "roll back a bad deploy" in prompt.messages[0].content.text
        assert any("@v" in m.content.text for m in prompt.messages[1:])

    with Workbench.open(sample_workspace) as wb:
        kinds = sorted({t["kind"] for t in [wb.trace(tid, principal="marco.bianchi")
                                            for tid in _trace_ids(wb)]})
        assert kinds == ["context", "get", "search"]


async def test_the_workspace_stays_usable_while_an_agent_is_connected(sample_workspace, tmp_path, cli):
    from mcp import Client

    body = tmp_path / "body.md"
    body.write_text("## Failover\nSwitch with `nwctl psp failover --to halyard`.\n")
    async with Client(params(sample_workspace), read_timeout_seconds=120) as client:
        first = await client.call_tool("get", {"id": "nw-rb-psp-failover"})
        assert first.structured_content["version"] == 1
        r = cli("edit", "nw-rb-psp-failover", "--file", str(body), "--reason", "new CLI", "--as", "marco.bianchi",
                real=True, workspace=sample_workspace, env={"WORKBENCH_LOCK_TIMEOUT": "10"})
        assert r.returncode == 0, r.stderr  # the CLI writes while the MCP session stays open
        again = await client.call_tool("get", {"id": "nw-rb-psp-failover"})
        assert again.structured_content["version"] == 2 and "halyard" in again.structured_content["body"]
        found = await client.call_tool("search", {"query": "nwctl psp failover halyard", "k": 3})
        assert found.structured_content["hits"][0]["id"] == "nw-rb-psp-failover"


def _trace_ids(wb) -> list[str]:
    return [r[0] for r in wb.store._q("SELECT id FROM traces WHERE principal = 'marco.bianchi'")]


def test_a_context_is_trimmed_to_fit_its_budget_as_a_last_resort(sample_wb):
    from workbench.mcp.shapes import trimmed

    ctx = sample_wb.context("how do I roll back a bad deploy", principal="dan.kowalski", budget=1500,
                            min_confidence=0)
    assert len(ctx.fragments) >= 2 and count_tokens(ctx.text()) > 1000
    fitted, text = trimmed(ctx, 1000, count_tokens)
    assert text == fitted.text() and count_tokens(text) <= 1000
    kept = {i.hit.id for i in fitted.fragments}
    dropped = [o["id"] for o in fitted.omitted if o["reason"] == "over budget (citations)"]
    assert dropped and kept | set(dropped) == {i.hit.id for i in ctx.fragments} and not kept & set(dropped)
    assert fitted.used_tokens == sum(i.tokens for i in fitted.fragments + fitted.avoid)
    assert [i.hit.id for i in fitted.avoid] == [i.hit.id for i in ctx.avoid]  # anti-patterns are never dropped


def test_mcp_refuses_an_unknown_principal(sample_workspace, cli):
    r = cli("mcp", "--as", "mallory", workspace=sample_workspace, input="")
    assert r.returncode == 2 and "unknown principal 'mallory'" in r.stderr


@pytest.mark.slow
def test_the_example_notebook_runs(tmp_path):
    import nbformat
    from nbclient import NotebookClient

    from conftest import ROOT

    nb = nbformat.read(ROOT / "examples" / "workbench.ipynb", as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    html = [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if "data" in o and "text/html" in o["data"]]
    assert len(html) >= 4 and all("<table>" in h for h in html)
