"""The team server's ASGI application (Starlette, as the MCP SDK brings it).

Routes:
    GET  /healthz              liveness: {"status": "ok"} (no token needed, nothing else told)
    GET  /metrics              Prometheus text: requests and latency per endpoint, index generation,
                               fragments, traces (the whole workspace's: admin and owner tokens only, 403)
    GET  /api/v1               the commands served, with their parameters
    POST /api/v1/cli           {"argv": [...], "cwd", "files", "columns"}: a command line, run here as
                               the token's principal: {"exit", "stdout", "stderr"} (the CLI's client)
    POST /api/v1/rpc/METHOD    {"args", "kwargs"}: one method of the core, for the remote facade (the
                               TUI's client; rules in rpc.py): {"result"} or {"error": {"type", ...}}
    GET|POST /api/v1/CMD[/SUB] a command's --json contract: parameters by name (query string or JSON
                               body, e.g. {"query": "...", "k": 5}; "stdin": the text a "-" file
                               argument reads, as in {"id": ..., "file": "-", "stdin": "..."} for edit);
                               the command's JSON (exit 1 with JSON, as check's regressions: 200 and
                               X-Workbench-Exit: 1), or {"error", "exit"} with 400 / 401 / 403 (the
                               policy refused: e.g. an agent's token writing) / 404 / 409 / 429 / 500
    /mcp                       MCP (streamable HTTP): the stdio server's tools, resources and prompt
    GET  /api/v1/openapi.json  the OpenAPI 3.1 description of these routes (discovery.py, openapi.py)
    GET  /.well-known/oauth-protected-resource[/mcp]   RFC 9728 metadata: send a bearer token (edge.py)

Every route but /healthz and discovery's needs ``Authorization: Bearer TOKEN``. Before anything,
``edge`` checks Host and Origin against the allow-lists, and names the metadata in every 401. Commands run on worker threads
(reads side by side; the store lets one writer at a time in); an answer is logged as one JSON line
on stderr and counted in /metrics. Nothing here decides visibility or write rules: the command
runs through the core as the token's principal.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import time
from typing import Any, Callable
from urllib.parse import parse_qsl

from . import discovery, edge
from .auth import Caller, Gate, Refused
from .edge import AllowList
from .limits import REQUEST_TIMEOUT_S, Body, parse_json
from .logs import Log
from .metrics import Metrics

CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("workbench_caller", default=None)
# Who MCP requests act as when the owner or an admin names someone (the stdio relay's `--as P`).
ACTING: contextvars.ContextVar[str | None] = contextvars.ContextVar("workbench_acting", default=None)
AS_HEADER = b"x-workbench-as"
OPEN = {"/healthz"}  # and discovery's routes (``is_open``)
# Threads answering requests. Python runs one thread at a time: more threads than cores only
# time-slice the same work (every answer later) and starve the event loop. Reads (the MCP tools
# and the read commands) get READ_THREADS; everything else (writes, exports, ingests, the TUI's
# calls) its own OTHER_THREADS, so a slow export never holds a search's thread.
READ_THREADS = 3
OTHER_THREADS = 4
READS = {"search", "context", "show", "history", "diff", "trace", "pins", "principals", "info"}  # quick reads
STATUS = {"NotFound": 404, "Conflict": 409, "Unauthenticated": 401, "WorkspaceBusy": 503, "ReadOnly": 409,
          "RateLimited": 429, "PermissionDenied": 403, "StoreUnavailable": 503}
RETRY = {"Retry-After": "1"}  # with every 503: the workspace is busy or its database is away for a moment


class Front:
    """The outermost ASGI layer: the request's bounds (``limits``), authentication, the caller's
    context, metrics and the access log."""

    def __init__(self, app, gate: Gate, metrics: Metrics, log: Log, *, request_timeout: float = REQUEST_TIMEOUT_S):
        self.app, self.gate, self.metrics, self.log = app, gate, metrics, log
        self.request_timeout = request_timeout
        self._auth_limiter = None  # made in the event loop, on first use

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        path = scope.get("path", "")
        client = (scope.get("client") or ("?", 0))[0]
        status = {"code": 500}

        async def sending(message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        body = Body(scope, receive, sending, timeout=self.request_timeout)
        caller, acting = None, None
        try:
            if body.too_large():  # announced: refused before a byte of it is read
                await body.refuse(413, f"request body over {body.limit} bytes")
                return
            if not is_open(path):
                headers = dict(scope.get("headers") or [])
                auth = headers.get(b"authorization")
                try:
                    caller = await self._check(auth.decode("latin-1") if auth else None, client)
                except Refused as e:
                    self.metrics.auth_failed(e.reason)
                    self.log.warn("auth_failed", reason=e.reason, client=client, path=path, status=e.status)
                    await _refuse(sending, e, close=not body.done)
                    return
                scope.setdefault("state", {})["caller"] = caller
                acting = self._acting(caller, headers.get(AS_HEADER), client, path)
            token, as_token = CALLER.set(caller), ACTING.set(acting)
            try:
                await self.app(scope, body.receive, body.send)
            except Exception:
                if not body.refused:
                    raise  # (an application that failed reading a body cut off here: answered already)
            finally:
                ACTING.reset(as_token)
                CALLER.reset(token)
        finally:
            body.release()
            seconds = time.perf_counter() - started
            endpoint = scope.get("workbench.endpoint") or _endpoint(path)
            self.metrics.observe(endpoint, status["code"], seconds)
            self.log.info("request", method=scope.get("method"), path=path, endpoint=endpoint,
                          status=status["code"], ms=round(seconds * 1000, 2), client=client,
                          principal=None if caller is None else (caller.principal or "(owner)"), acting=acting)

    async def _check(self, header: str | None, client: str) -> Caller:
        """The caller, checked in memory on the event loop (no store read: a flood of wrong tokens
        costs no thread and no query). Recording a good token's use, once a minute, is a write:
        it runs on a worker thread, so it never holds up the event loop, which every request needs."""
        import anyio

        checked = self.gate.check(header, client)
        if checked.record is not None:
            if self._auth_limiter is None:
                self._auth_limiter = anyio.CapacityLimiter(2)
            await anyio.to_thread.run_sync(checked.record, limiter=self._auth_limiter)
        return checked.caller

    def _acting(self, caller: Caller, header: bytes | None, client: str, path: str) -> str | None:
        """The principal an ``X-Workbench-As`` header names, honoured for the owner and admin tokens
        only (MCP then acts as that principal); anyone else's is ignored, with a warning."""
        name = header.decode("latin-1").strip() if header else ""
        if not name or name == caller.principal:
            return None
        if caller.principal is None or caller.admin:
            return name
        self.log.warn("as_ignored", principal=caller.principal, requested=name, client=client, path=path)
        return None


def is_open(path: str) -> bool:
    """Routes answered without a token: they tell nothing about the workspace."""
    return path in OPEN or discovery.is_open(path)


async def _refuse(send, e: Refused, *, close: bool = False) -> None:
    body = json.dumps({"error": e.message}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if close:  # a body may follow that no one will read: do not wait for it
        headers.append((b"connection", b"close"))
    if e.status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="workbench"'))
    if e.retry_after:
        headers.append((b"retry-after", str(e.retry_after).encode()))
    await send({"type": "http.response.start", "status": e.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _endpoint(path: str) -> str:
    """A bounded label (never the raw path: anyone can send any path)."""
    if path == "/mcp" or path.startswith("/mcp/"):
        return "mcp"
    return path if path in ("/healthz", "/metrics", "/api/v1") else "other"


def build_app(wb, *, api, owner_token: str, log: Log | None = None, metrics: Metrics | None = None,
              allow: AllowList | None = None, request_timeout: float = REQUEST_TIMEOUT_S):
    """The application over the open workspace ``wb``. ``api`` runs command lines (the CLI's
    ``CommandApi``: this package does not import the command line); ``owner_token`` is the token
    written for the user who started the server; ``allow``: the Host and Origin values answered
    besides loopback (``edge``); ``request_timeout`` the longest pause while a request's body arrives."""
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response
    from starlette.routing import Mount, Route

    from ..errors import PermissionDenied, UserError
    from ..mcp.http import http_app

    log = log or Log()
    metrics = metrics or Metrics()
    wb.load_tokens()  # held in memory from here on, kept current by the core: no request reads them
    gate = Gate(wb.identify, wb.record_token_use, owner_token)
    limiters: dict[str, Any] = {}  # made in the event loop (lifespan)

    def limiter_for(argv: list[str]) -> Any:
        return limiters["read" if _command_name(argv) in READS else "other"]

    def caller_name() -> str:
        caller = CALLER.get()
        if caller is None:
            raise UserError("no caller for this request")
        return ACTING.get() or caller.principal or wb.config.default_principal

    mcp_app, mcp_lifespan = http_app(wb, caller_name)
    known = frozenset(d["command"] for d in api.describe())  # the labels a command's metrics may carry

    async def run_command(request: Request, argv: list[str], *, cwd=None, files=None, columns=None):
        caller: Caller = request.scope["state"]["caller"]
        request.scope["workbench.endpoint"] = f"{request.scope['workbench.kind']} {_command_name(argv, known)}"
        def run_and_refresh():
            ran = api.run(argv, principal=caller.principal, admin=caller.admin, wb=wb, cwd=cwd, files=files,
                          columns=columns)
            wb.refresh_index()  # after a write: built here, before the answer; otherwise nothing to do
            return ran

        return await anyio.to_thread.run_sync(run_and_refresh, limiter=limiter_for(argv))

    async def healthz(request: Request):
        return JSONResponse({"status": "ok"})

    async def metrics_text(request: Request):
        caller: Caller = request.scope["state"]["caller"]

        def render() -> str:
            figures = dict(wb.health(principal=caller.principal))  # refused unless admin: workspace-wide
            return metrics.render(lambda: figures)

        try:
            text = await anyio.to_thread.run_sync(render, limiter=limiters["other"])
        except PermissionDenied as e:
            return JSONResponse({"error": e.message}, status_code=403)
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    async def commands(request: Request):
        return JSONResponse({"commands": api.describe()})

    async def cli(request: Request):
        request.scope["workbench.kind"] = "cli"
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        argv, cwd, files, columns = body.get("argv"), body.get("cwd"), body.get("files") or {}, body.get("columns")
        if (not isinstance(argv, list) or not all(isinstance(a, str) for a in argv)
                or not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values())
                or not (cwd is None or isinstance(cwd, str)) or not (columns is None or isinstance(columns, int))):
            return JSONResponse({"error": "expected {\"argv\": [strings], \"cwd\": string, \"files\": {name: text}, "
                                          "\"columns\": int}"}, status_code=400)
        ran = await run_command(request, argv, cwd=cwd, files=files, columns=columns)
        return JSONResponse(ran.to_dict())

    async def command(request: Request):
        request.scope["workbench.kind"] = "api"
        path = request.path_params["path"].strip("/")
        if request.method == "GET":
            params: dict[str, Any] = {}
            for key, value in parse_qsl(request.url.query, keep_blank_values=True):
                params[key] = [*params[key], value] if isinstance(params.get(key), list) else (
                    [params[key], value] if key in params else value)
            params = {k: (True if v == "" else v) for k, v in params.items()}
        else:
            params = await _json_body(request)
            if isinstance(params, JSONResponse):
                return params
        stdin = params.pop("stdin", None) if isinstance(params, dict) else None
        if stdin is not None and not isinstance(stdin, str):
            return JSONResponse({"error": "stdin must be a string (the text a '-' file argument reads)"},
                                status_code=400)
        quick = _quick_read(wb, path, params, request.scope["state"]["caller"].principal) if stdin is None else None
        if quick is not None:
            request.scope["workbench.endpoint"] = f"api {path}"
            text = await anyio.to_thread.run_sync(quick, limiter=limiters["read"])
            if text is not None:
                return Response(text, media_type="application/json", headers={"X-Workbench-Answer": "quick"})
        try:
            argv = api.argv_for(path, params, principal=request.scope["state"]["caller"].principal)
        except UserError as e:
            return JSONResponse({"error": e.message, "exit": e.exit_code}, status_code=404 if "unknown command"
                                in e.message else 400)
        ran = await run_command(request, argv, files={"-": stdin} if stdin is not None else None)
        verdict = _verdict(ran)
        if verdict is not None:  # a command's "no" is its answer (check: regressions): 200, the exit in a header
            return JSONResponse(verdict, headers={"X-Workbench-Exit": str(ran.exit)})
        if ran.exit != 0:
            message = ran.stderr.strip().splitlines()[-1] if ran.stderr.strip() else "failed"
            message = message.removeprefix("workbench: ").removeprefix("error: ")
            status = STATUS.get(ran.error or "", 400 if ran.exit == 2 else 500)
            return JSONResponse({"error": message, "exit": ran.exit}, status_code=status,
                                headers=RETRY if status == 503 else None)
        try:
            return JSONResponse(json.loads(ran.stdout) if ran.stdout.strip() else None)
        except ValueError:
            return JSONResponse({"text": ran.stdout})

    async def rpc_call(request: Request):
        from . import rpc

        method = request.path_params["method"]
        request.scope["workbench.endpoint"] = rpc.endpoint(method)
        body = await _json_body(request)
        if isinstance(body, JSONResponse):
            return body
        caller: Caller = request.scope["state"]["caller"]
        answer = await anyio.to_thread.run_sync(lambda: rpc.run(wb, caller, method, body), limiter=limiters["other"])
        error = answer.get("error")
        if error is None:
            return JSONResponse(answer)
        status = STATUS.get(error["type"], 400 if error["exit_code"] == 2 else 500)
        if status == 500:
            log.error("rpc_failed", method=method, message=error["message"])
        return JSONResponse(answer, status_code=status, headers=RETRY if status == 503 else None)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        reads = anyio.to_thread.current_default_thread_limiter()  # the MCP SDK runs its tools on this one
        reads.total_tokens = READ_THREADS
        limiters.update(read=reads, other=anyio.CapacityLimiter(OTHER_THREADS))
        async with mcp_lifespan():
            yield

    routes = [Route("/healthz", healthz), Route("/metrics", metrics_text), Route("/api/v1", commands),
              *discovery.routes(api),
              Route("/api/v1/cli", cli, methods=["POST"]),
              Route("/api/v1/rpc/{method}", rpc_call, methods=["POST"]),
              Route("/api/v1/{path:path}", command, methods=["GET", "POST"]),
              Mount("/", app=mcp_app)]
    app = Starlette(routes=routes, lifespan=lifespan)
    return edge.Edge(Front(app, gate, metrics, log, request_timeout=request_timeout), allow or edge.AllowList(), log), gate


def _verdict(ran) -> Any:
    """The JSON of a command that answered with exit 1 and no error (``check`` finding regressions), or None."""
    if ran.exit != 1 or ran.error is not None or not ran.stdout.lstrip().startswith("{"):
        return None
    try:
        return json.loads(ran.stdout)
    except ValueError:
        return None


# The two reads agents make most, answered without the command layer when the request is the
# plain form (a query and the one number): parsing a command line, rendering JSON text and reading
# it back cost about as much interpreter time as the retrieval itself (issue 14's load profile).
# The answer is the command's --json output, byte for byte after parsing (a test compares them);
# anything else, and any error, goes through the command layer, which words it as the CLI does.
QUICK_READS = {"search": ("k", "search"), "context": ("budget", "context")}


def _quick_read(wb, path: str, params: Any, principal: str | None) -> Callable[[], str | None] | None:
    from ..errors import WorkbenchError

    spec = QUICK_READS.get(path)
    if spec is None or principal is None or not isinstance(params, dict):
        return None
    number, method = spec
    query, value = params.get("query"), params.get(number)
    if set(params) - {"query", number} or not isinstance(query, str):
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        return None
    kwargs = {} if value is None else {number: value}

    def run() -> str | None:
        try:
            found = getattr(wb, method)(query, principal=principal, **kwargs)
            return json.dumps(found.to_dict(), ensure_ascii=False, allow_nan=False, default=str,
                              separators=(",", ":"))
        except (WorkbenchError, ValueError):
            return None

    return run


async def _json_body(request) -> Any:
    """The request's JSON object, or a 400 answer saying what is wrong with it (the size of the
    body is bounded as it is read: ``limits.Body``)."""
    from starlette.responses import JSONResponse

    body, problem = parse_json(await request.body() or b"{}")
    if problem is not None:
        return JSONResponse({"error": problem}, status_code=400)
    if not isinstance(body, dict):
        return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
    return body


def _command_name(argv: list[str], known: frozenset[str] = frozenset()) -> str:
    """The command an argv names, as a bounded label: ``?`` for anything not a command the API
    serves (anyone can send any argv; each label is a metrics series kept for the server's life)."""
    words = [a for a in argv[:2] if not a.startswith("-")]
    name = " ".join(words[:2]) if words[:1] in (["set"], ["token"], ["antipattern"]) else (words[0] if words else "")
    return name if not known or name in known else "?"
