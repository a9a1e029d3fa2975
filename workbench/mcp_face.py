"""The MCP face: a stdio server (official `mcp` SDK, MCPServer) acting as one principal.

Three tools: search, get and context. Every call is scope-checked by the core (an id
outside the principal's scope answers "not found", exactly like an unknown id) and
traced like a CLI retrieval. Bad arguments come back as tool errors; the server keeps
running. The workspace lock is released between calls, so people can keep editing with
the CLI or the TUI while an agent is connected.
"""

from __future__ import annotations

import threading
from typing import Any

PREVIEW_CHARS = 200


def build_server(wb, principal: str):
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from .errors import WorkbenchError

    who = wb.principal(principal)  # an unknown principal fails before the server starts
    lock = threading.Lock()
    server = MCPServer(name="workbench", title="workbench knowledge",
                       instructions=f"Curated, cited engineering knowledge visible to {who.name}. Use `search` "
                                    "to find fragments, `get` for one fragment's full text, and `context` for a "
                                    "ready-to-use, budgeted context with pins first and anti-patterns to avoid.")

    def guarded(fn, *args, **kwargs):
        try:
            with lock:
                try:
                    return fn(*args, **kwargs)
                finally:
                    wb.release()  # between calls the workspace is free for the CLI and the TUI
        except WorkbenchError as e:
            raise ToolError(e.message) from e

    @server.tool(description="Hybrid search over the fragments you may see. Returns ids, titles, 200-character "
                             "previews and scores; anti-patterns that match are listed under 'avoid'.")
    def search(query: str, k: int = 10) -> dict[str, Any]:
        if not 1 <= k <= 100:
            raise ToolError("k must be between 1 and 100")
        result = guarded(wb.search, query, principal=who, k=k)

        def item(h) -> dict[str, Any]:
            body = h.fragment.body
            return {"id": h.id, "version": h.fragment.version, "title": h.fragment.title, "kind": h.fragment.kind,
                    "score": round(h.score, 4), "preview": body[:PREVIEW_CHARS] + ("…" if len(body) > PREVIEW_CHARS
                                                                                  else "")}
        return {"trace_id": result.trace_id, "hits": [item(h) for h in result.hits],
                "avoid": [item(h) for h in result.avoid]}

    @server.tool(description="One fragment by id: full text and metadata. Ids outside your scope are 'not found'.")
    def get(id: str) -> dict[str, Any]:  # noqa: A002 - the tool's public argument name
        fragment, trace_id = guarded(wb.fetch, id, principal=who)
        data = fragment.to_dict()
        return {"trace_id": trace_id, **{k: data[k] for k in ("id", "version", "title", "kind", "status", "scope",
                                                              "owner", "tags", "links", "sources", "details",
                                                              "updated_at", "verified_at", "body")}}

    @server.tool(description="Budgeted context for a task: pinned fragments first, then ranked fragments until the "
                             "token budget is spent, then anti-patterns to avoid. Each item cites id and version.")
    def context(query: str, budget: int = 3200) -> dict[str, Any]:
        if not 1 <= budget <= 200_000:
            raise ToolError("budget must be between 1 and 200000 tokens")
        result = guarded(wb.context, query, principal=who, budget=budget)
        return {**result.to_dict(), "text": result.text()}

    return server


def run(workspace: str | None, principal: str) -> None:
    from .service import Workbench

    with Workbench.open(workspace) as wb:
        server = build_server(wb, principal)
        server.run()  # stdio
