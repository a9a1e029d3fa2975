"""The MCP face: a stdio server (official `mcp` SDK, MCPServer) acting as one principal.

What a client sees:
- tools ``search``, ``get``, ``context``: each with a title, read-only annotations, bounded and
  described parameters, an ``outputSchema``; the text content is what a model should read
  (hit lines, the fragment as markdown, the composed context within the budget), the
  structured content is the JSON (``shapes``).
- tool ``propose`` (not read-only): the agent hands a note, a session summary or an anti-pattern
  to the leads of a scope; it is stored as a proposal awaiting review (``Workbench.propose``:
  policy, secret guard and rate limit apply), served to nobody else until accepted, and read
  back, with the review's decision and reason, through ``get``.
- resources: the fragments the principal may see, ``workbench://fragment/{id}`` (text/markdown),
  listed a page at a time (an opaque cursor).
- one prompt, ``task-context``: pins, relevant fragments and anti-patterns for a task.

Every read goes through the core (``Workbench.search/context/fetch/list``): scope-checked (an id
outside the principal's scope answers exactly like an unknown id), withheld when stored with a
secret-guard override, and traced. Bad arguments come back as errors; the server keeps running.
The workspace lock is released between calls, so people can keep editing with the CLI or the
TUI while an agent is connected. This module decides nothing about visibility.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from datetime import date
from typing import Annotated, Any, Literal

from mcp_types import CallToolResult
from pydantic import Field

from .. import __version__
from ..models import KINDS, PROPOSAL_KINDS
from . import shapes

PAGE_SIZE = 50
MAX_K, MAX_BUDGET, MAX_QUERY = 100, 200_000, 4000
MAX_PROPOSAL = 50_000     # characters of a proposal's body (the core's limit too)
URI_PREFIX = "workbench://fragment/"
TRACED = ("Each call is recorded as a trace in the workspace (an audit log of what was served, replayable "
          "with `workbench trace`); no knowledge is changed.")

Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY,
                             description="What you are looking for, in words (a task, a question, identifiers).")]
Kind = Annotated[Literal[KINDS] | None, Field(description="Only fragments of this kind.")]  # type: ignore[valid-type]
Tag = Annotated[str | None, Field(min_length=1, max_length=64, description="Only fragments carrying this tag.")]
Owner = Annotated[str | None, Field(min_length=1, max_length=64,
                                    description="Only fragments owned by this principal (a user name).")]
Since = Annotated[date | None, Field(description="Only fragments updated on or after this date (YYYY-MM-DD).")]
DenseWeight = Annotated[float | None, Field(ge=0, le=1, description="Weight of semantic (dense) similarity "
                                            "against keywords (BM25), 0-1; default: the workspace setting.")]
WorkPaths = Annotated[list[Annotated[str, Field(min_length=1, max_length=1024)]] | None, Field(
    max_length=2000, description="Repository paths the work touches (repo-relative, e.g. "
    "services/payments/stripe_client.py): adds the fragments that apply to, cite or were ingested from them, "
    "each with its reason; the query becomes optional.")]
Diff = Annotated[str | None, Field(min_length=1, max_length=8 * 1024 * 1024, description="A unified diff "
                                   "(git diff output): the files it touches count as `paths`.")]
MinConfidence = Annotated[float | None, Field(ge=0, le=1, description="Leave out hits whose confidence "
                                              "(0-1, comparable across queries) is below this.")]
Persona = Annotated[str | None, Field(min_length=1, max_length=128, description="Act in this persona (one of "
                                      "yours, e.g. sre): its ranking weights, its fragments preferred. Changes "
                                      "ranking only; default: your persona when you have exactly one.")]


def build_server(wb, principal: str | None = None, *, caller=None):
    """The MCP server over ``wb``: acting as ``principal`` (stdio: one principal per process), or,
    with ``caller``, as whoever ``caller()`` names for the request being answered (the team
    server: the bearer token's principal; calls are not serialised, the store is shared)."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS, TextContent, ToolAnnotations

    from ..errors import NotFound, WorkbenchError

    fixed = wb.principal(principal) if caller is None else None  # an unknown principal fails before it starts

    def me():
        return fixed if caller is None else wb.principal(caller())

    lock = threading.Lock() if caller is None else None
    server = MCPServer(
        name="workbench", title="workbench knowledge", version=__version__,
        instructions=f"Curated, cited engineering knowledge visible to {fixed.name if fixed else 'you'}. "
                     "Use `context` for a "
                     "ready-to-use, budgeted context for a task (pins first, anti-patterns to avoid), `search` "
                     "to find fragments, `get` (or the resource workbench://fragment/ID) for one fragment's full "
                     "text. Cite fragments as id@vN. Prefer a fragment's superseder when one is named. "
                     "When you learn something worth keeping, `propose` it: the leads of its scope review it.")

    def guarded(fn, *args, **kwargs):
        if lock is None:  # the team server holds the workspace and serves many callers at once
            return fn(*args, **kwargs)
        with lock:
            try:
                return fn(*args, **kwargs)
            finally:
                wb.release()  # between calls the workspace is free for the CLI and the TUI

    def tool_call(fn, *args, **kwargs):
        try:
            return guarded(fn, *args, **kwargs)
        except WorkbenchError as e:
            raise ToolError(e.message + (f" (argument `{e.param}`)" if e.param else "")) from e

    def result(text: str, data: dict[str, Any]) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    def annotations(title: str) -> ToolAnnotations:
        return ToolAnnotations(title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                               open_world_hint=False)

    @server.tool(title="Search knowledge", annotations=annotations("Search knowledge"),
                 description="Hybrid (keyword + semantic) search over the fragments you may see. Give `paths` "
                             "(or a `diff`) of the files you are changing to also find what governs them, each hit "
                             "with its reason; the query is then optional. Text: one line "
                             "per hit (id@vN, title, kind, confidence, preview), then anti-patterns that match "
                             "under 'Avoid'. Structured: the same as JSON. Use `get` for a full fragment. " + TRACED)
    def search(query: Query | None = None,
               k: Annotated[int, Field(ge=1, le=MAX_K, description="How many hits, 1-100.")] = 10,
               kind: Kind = None, tag: Tag = None, owner: Owner = None, updated_since: Since = None,
               dense_weight: DenseWeight = None, min_confidence: MinConfidence = None, persona: Persona = None,
               archived: Annotated[bool, Field(description="Also search archived fragments (older observations "
                                               "and session summaries compressed into a summary); each such hit "
                                               "is marked archived.")] = False,
               paths: WorkPaths = None, diff: Diff = None,
               ) -> Annotated[CallToolResult, shapes.SearchOut]:
        if query is None and paths is None and diff is None:
            raise ToolError("give a query, paths or a diff (or several)")
        options = {k: v for k, v in (("paths", paths), ("diff", diff), ("persona", persona)) if v is not None}
        found = tool_call(wb.search, query, principal=me(), k=k, kind=kind, tag=tag, owner=owner,
                          updated_since=updated_since, dense_weight=dense_weight, min_confidence=min_confidence,
                          include_archived=archived, **options)
        data = shapes.search_data(found)
        return result(shapes.search_text(data, query), data)

    @server.tool(title="Get a fragment", annotations=annotations("Get a fragment"),
                 description="One fragment by id. Text: the fragment as markdown with its citation id@vN (and "
                             "'superseded by ID@vN' when replaced). Structured: its JSON (metadata and body). Ids "
                             "outside your scope answer 'unknown fragment', like ids that do not exist. " + TRACED)
    def get(id: Annotated[str, Field(min_length=1, max_length=128,
                                     description="A fragment id, as search and context cite it (without @vN).")],
            ) -> Annotated[CallToolResult, shapes.FragmentOut]:
        data = tool_call(_fetch, wb, id.split("@v")[0], me())
        return result(shapes.fragment_markdown(data), data)

    @server.tool(title="Context for a task", annotations=annotations("Context for a task"),
                 description="Budgeted context for a task, ready to read: pinned fragments first, then ranked "
                             "fragments until the token budget is spent, then anti-patterns to avoid; each item "
                             "cites its source (id vN). Superseded and low-confidence fragments are left out; when "
                             "nothing relevant is in scope the text says so ('no relevant knowledge in scope'). "
                             "Give `paths` (or a `diff`) of the files you are changing to also receive what governs "
                             "them (runbooks, decisions, rules that apply to those paths), each with its reason. "
                             "Text: the composed context, within the budget. Structured: "
                             "the JSON of `workbench context --json` (items, tokens, what was omitted). " + TRACED)
    def context(query: Query | None = None,
                budget: Annotated[int, Field(ge=1, le=MAX_BUDGET, description="Token budget for the text "
                                             "(the embedding model's tokenizer), 1-200000.")] = 3200,
                kind: Kind = None, tag: Tag = None, owner: Owner = None, updated_since: Since = None,
                dense_weight: DenseWeight = None, min_confidence: MinConfidence = None,
                paths: WorkPaths = None, diff: Diff = None, persona: Persona = None,
                ) -> Annotated[CallToolResult, shapes.ContextOut]:
        if query is None and paths is None and diff is None:
            raise ToolError("give a query, paths or a diff (or several)")
        options = {"kind": kind, "tag": tag, "owner": owner, "updated_since": updated_since,
                   "dense_weight": dense_weight, "min_confidence": min_confidence}
        options.update({k: v for k, v in (("paths", paths), ("diff", diff), ("persona", persona)) if v is not None})
        composed, text = fitted_context(query, budget, options)
        return result(text, shapes.context_data(composed, budget))

    def fitted_context(query: str, budget: int, extra: dict[str, Any]):
        """The context and its text. The core counts every part of the text (items with their
        citations, separators, headings) against the budget; the trim is only a guard."""
        composed = tool_call(wb.context, query, principal=me(), budget=budget, **extra)
        return shapes.trimmed(composed, budget, wb.index.count_tokens)

    @server.tool(title="Propose knowledge",
                 annotations=ToolAnnotations(title="Propose knowledge", read_only_hint=False, destructive_hint=False,
                                             idempotent_hint=False, open_world_hint=False),
                 description="Hand something you learned to the people who keep this knowledge: a note, a session "
                             "summary, or an anti-pattern (write its body with lines \"Don't: ...\", \"Why: ...\" "
                             "and \"Instead: ...\"). It is stored as a proposal awaiting review by the leads of its "
                             "scope and served to nobody else until one accepts it. Text: the proposal's id and what "
                             "happens next. Read it back with `get` (after review it shows the decision and, for a "
                             "rejection, the reason). Limited to a number of proposals per hour; text holding a "
                             "credential is refused.")
    def propose(title: Annotated[str, Field(min_length=1, max_length=200, description="A short title.")],
                body: Annotated[str, Field(min_length=1, max_length=MAX_PROPOSAL,
                                           description="What you learned, in markdown.")],
                kind: Annotated[Literal[PROPOSAL_KINDS], Field(  # type: ignore[valid-type]
                    description="note, session-summary, anti-pattern or observation.")] = "note",
                scope: Annotated[str | None, Field(min_length=1, max_length=300, description=(
                    "Where it applies, org=ORG[,repo=REPO][,persona=P][,session=S], a scope you may see; "
                    "default: your own session scope."))] = None,
                ) -> Annotated[CallToolResult, shapes.ProposalOut]:
        made = tool_call(wb.propose, title, body, kind=kind, scope=scope, principal=me())
        data = shapes.proposal_data(made)
        return result(shapes.proposal_text(data), data)

    # -- resources: the fragments, one page at a time --------------------------------------------

    @server.resource(URI_PREFIX + "{id}", name="fragment", title="Fragment", mime_type="text/markdown",
                     description="One fragment you may see, as markdown with its citation id@vN. Reading it is "
                                 "traced like the `get` tool.")
    def fragment_resource(id: str) -> str:
        uri = URI_PREFIX + id
        try:
            data = guarded(_fetch, wb, id, me())
        except NotFound as e:  # out of scope and missing answer alike: the SDK's own "unknown resource"
            raise ResourceNotFoundError(f"Unknown resource: {uri}") from e
        except WorkbenchError as e:
            raise MCPError(code=INVALID_PARAMS, message=e.message, data={"uri": uri}) from e
        return shapes.fragment_markdown(data)

    async def list_resources(ctx, params):
        import anyio
        from mcp_types import ListResourcesResult

        after = _decode_cursor(params.cursor if params else None, MCPError, INVALID_PARAMS)
        who = me()
        page, more = await anyio.to_thread.run_sync(lambda: guarded(_page, wb, who, after))
        return ListResourcesResult(resources=[_resource(f) for f in page],
                                   next_cursor=_encode_cursor(page[-1].id) if more and page else None)

    # MCPServer lists static resources only and does not paginate: serve resources/list here.
    from mcp_types import GetPromptRequestParams, PaginatedRequestParams

    server._lowlevel_server.add_request_handler("resources/list", PaginatedRequestParams, list_resources)

    # -- the prompt ----------------------------------------------------------------------------------

    @server.prompt(name="task-context", title="Task context",
                   description="Context for a task as messages: the task, pinned fragments, relevant fragments "
                               "and anti-patterns to avoid, each cited as id@vN (from the `context` tool's "
                               "composition; traced).")
    def task_context(task: Annotated[str, Field(description="The task, in words (at most 4000 characters).")],
                     budget: Annotated[str | None, Field(description="Token budget, 1-200000 (default 3200).")]
                     = None) -> list[str]:
        try:
            tokens = 3200 if budget in (None, "") else int(budget)
        except ValueError:
            tokens = -1
        if not 1 <= tokens <= MAX_BUDGET:
            raise MCPError(code=INVALID_PARAMS, message=f"budget must be a whole number from 1 to {MAX_BUDGET}")
        if not task.strip() or len(task) > MAX_QUERY:
            raise MCPError(code=INVALID_PARAMS, message=f"task must be 1 to {MAX_QUERY} characters")
        try:
            who = me()
            composed = guarded(wb.context, task, principal=who, budget=tokens)
        except WorkbenchError as e:
            raise MCPError(code=INVALID_PARAMS, message=e.message) from e
        return shapes.prompt_sections(composed, task, who.name)

    async def get_prompt(ctx, params):
        # MCPServer answers an unknown prompt or a missing argument with error code 0: say -32602.
        if params.name != "task-context":
            raise MCPError(code=INVALID_PARAMS, message=f"unknown prompt {params.name!r} (valid: task-context)")
        if not isinstance((params.arguments or {}).get("task"), str):
            raise MCPError(code=INVALID_PARAMS, message="task-context needs the argument 'task'")
        return await server.get_prompt(params.name, params.arguments)

    server._lowlevel_server.add_request_handler("prompts/get", GetPromptRequestParams, get_prompt)
    return server


def _fetch(wb, fragment_id: str, who) -> dict[str, Any]:
    """One fragment through the core (scope-checked, withheld if secret-flagged, traced), with
    the superseder the principal sees."""
    fragment, trace_id = wb.fetch(fragment_id, principal=who)
    return shapes.fragment_data(fragment, trace_id, shapes.label(wb.superseded_by(fragment.id, principal=who)),
                                wb.received_via(fragment.id, principal=who))


def _page(wb, who, after: str | None) -> tuple[list, bool]:
    """The next page of fragments the principal may see and an agent may be served, by id."""
    # Fragments stored with a secret-guard override are not served to agents, so they are not
    # listed either (not even their titles).
    rest = wb.list(principal=who, servable=True, after=after, limit=PAGE_SIZE + 1)
    return rest[:PAGE_SIZE], len(rest) > PAGE_SIZE


def _resource(fragment):
    from mcp_types import Annotations, Resource

    return Resource(uri=URI_PREFIX + fragment.id, name=fragment.id, title=fragment.title,
                    description=shapes.resource_description(fragment), mime_type="text/markdown",
                    annotations=Annotations(last_modified=fragment.to_dict()["updated_at"]))


def _encode_cursor(last_id: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": last_id}).encode()).decode()


def _decode_cursor(cursor: str | None, error, code: int) -> str | None:
    if cursor is None:
        return None
    try:
        after = json.loads(base64.urlsafe_b64decode(cursor.encode()))["after"]
        if isinstance(after, str):
            return after
    except (ValueError, KeyError, TypeError, binascii.Error):
        pass
    raise error(code=code, message="invalid cursor (pass back the nextCursor of the previous page)")


def run(workspace: str | None, principal: str) -> None:
    import anyio

    from ..service import Workbench
    from .stdio import serve

    with Workbench.open(workspace) as wb:
        server = build_server(wb, principal)
        anyio.run(serve, server)  # stdio, answering the calls in flight when stdin closes
