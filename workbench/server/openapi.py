"""The OpenAPI 3.1 description of the team server's HTTP API, served at ``/api/v1/openapi.json``.

Generated, never written by hand: the commands and their parameters come from the same
descriptions the server routes and checks requests with (``CommandApi.describe``, whose schemas
``argv_for`` enforces), the remote facade's methods from ``rpc.METHODS``, the answers' shapes from
``contracts`` (the documented ``--json`` contracts that have a schema; any JSON value otherwise),
and the fixed routes (health, metrics, the protected-resource metadata, the CLI relay) from this
module, next to the statuses ``app`` and ``edge`` answer them with.

The document is open (no token), like ``/healthz``: it describes this software, which is public,
and nothing of the workspace (no principal, org, fragment or count); tools that generate clients
or test the API read it before they hold a token. MCP (``/mcp``) is not in it: MCP describes
itself (``tools/list``). This module builds a dict; it serves nothing and decides nothing.
"""

from __future__ import annotations

from typing import Any

from . import contracts
from .edge import PRM_PATH

JSON = "application/json"
ERROR = {"$ref": "#/components/schemas/Error"}
ANY: dict[str, Any] = {}  # any JSON value
# Statuses every token-checked route may answer, besides its own.
COMMON = {"401": "#/components/responses/Unauthorized", "403": "#/components/responses/Forbidden",
          "421": "#/components/responses/MisdirectedHost", "429": "#/components/responses/TooMany"}
# A command's statuses (app.STATUS: the core error's kind; 400 for a user error, 500 for a bug).
COMMAND_ERRORS = {"400": "bad parameters or input (exit 2): the message says which",
                  "404": "unknown command, or an id that does not exist or that the caller may not see "
                         "(answered alike)",
                  "409": "a conflict (the fragment moved on since `base`), or the workspace is read-only",
                  "413": "the request body is too large",
                  "500": "an internal error (exit 1)",
                  "503": "the workspace is busy: retry"}


def document(api, *, version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document for the commands ``api`` serves (a ``CommandApi``)."""
    from .rpc import METHODS

    paths: dict[str, Any] = {
        "/healthz": {"get": _fixed("healthz", "Liveness (no token; tells nothing else)", {
            "type": "object", "required": ["status"], "properties": {"status": {"const": "ok"}}}, open=True)},
        "/metrics": {"get": {**_fixed("metrics", "Prometheus metrics: requests and latency per endpoint, the "
                                      "index generation, fragments, traces", None),
                             "responses": {"200": {"description": "the Prometheus text format",
                                                   "content": {"text/plain": {"schema": {"type": "string"}}}},
                                           **_common()}}},
        PRM_PATH: {"get": _fixed("protected_resource", "OAuth 2.0 protected-resource metadata (RFC 9728) of the "
                                 "whole server: send a bearer token (`workbench token create`) in the "
                                 "Authorization header; there is no authorization server", contracts.PRM, open=True)},
        PRM_PATH + "/mcp": {"get": _fixed("protected_resource_mcp", "The protected-resource metadata of /mcp "
                                          "(the path-suffixed form MCP clients ask first)", contracts.PRM, open=True)},
        "/api/v1/openapi.json": {"get": _fixed("openapi", "This document (no token)", {"type": "object"}, open=True)},
        "/api/v1": {"get": _fixed("commands", "The commands served, with their parameters and JSON Schemas",
                                  contracts.COMMANDS)},
        "/api/v1/cli": {"post": _cli()},
        "/api/v1/rpc/{method}": {"post": _rpc(sorted(METHODS))},
    }
    for command in api.describe():
        path = command["path"]
        if path in paths:
            continue
        paths[path] = {"get": _command(command, "get"), "post": _command(command, "post")}
    return {
        "openapi": "3.1.0",
        "info": {"title": "workbench team server", "version": version,
                 "description": "The JSON API of `workbench server`: every CLI command that acts on the workspace, "
                                "at /api/v1/COMMAND, answering its `--json` contract, as the bearer token's principal. "
                                "Parameters by name, in the query string or a JSON body. MCP is served at /mcp "
                                "(streamable HTTP) and describes itself."},
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {
                "type": "http", "scheme": "bearer",
                "description": "A token from `workbench token create --for PRINCIPAL` (or the owner's, in "
                               "server.token beside the workspace)."}},
            "schemas": {"Error": contracts.ERROR, "RpcError": contracts.RPC_ERROR},
            "responses": _shared_responses(),
        },
    }


def _op_id(method: str, path: str) -> str:
    return f"{method}_{path.replace('/', '_').replace('-', '_')}"


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def _common() -> dict[str, Any]:
    return {status: {"$ref": ref} for status, ref in COMMON.items()}


def _fixed(name: str, summary: str, schema: dict[str, Any] | None, *, open: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": f"get_{name}", "summary": summary,
                          "responses": {"200": _json(schema if schema is not None else ANY, "ok")}}
    if open:
        op["security"] = []
        op["responses"]["421"] = {"$ref": COMMON["421"]}
        op["responses"]["403"] = {"$ref": COMMON["403"]}
        if name.startswith("protected_resource"):
            op["responses"]["404"] = _json(ERROR, "no such resource")
    else:
        op["responses"].update(_common())
    return op


def _command(command: dict[str, Any], method: str) -> dict[str, Any]:
    params = command["params"]
    op: dict[str, Any] = {
        "operationId": _op_id(method, command["command"]),
        "summary": command["help"],
        "tags": [command["command"].split("/")[0]],
        "responses": {
            "200": {**_json(contracts.answer(command), "the command's `--json` output" if command["json"]
                            else "the command's output as text ({\"text\"}), or null when it printed nothing"),
                    "headers": {"X-Workbench-Exit": {
                        "description": "present when the command answered with exit 1 and its JSON (check: "
                                       "regressions found)", "schema": {"type": "string"}}}},
            **{status: _json(ERROR, text) for status, text in COMMAND_ERRORS.items()},
            **_common(),
        },
    }
    links = {f"{target.replace('/', '_')}_{name}": {
        "operationId": _op_id("get", target), "parameters": {name: f"$response.body#{pointer}"}}
        for target, name, pointer in contracts.LINKS.get(command["command"], ())}
    if links:
        op["responses"]["200"]["links"] = links
    if method == "get":
        op["parameters"] = [_query(p) for p in params]
        return op
    properties = {p["name"]: p["schema"] for p in params}
    if any(p["name"] == "file" for p in params):
        properties["stdin"] = {"type": "string", "description": "the text a '-' file argument reads"}
    body = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [p["name"] for p in params if p["required"]]
    if required:
        body["required"] = required
    op["requestBody"] = {"required": bool(required), "content": {JSON: {"schema": body}}}
    return op


def _query(param: dict[str, Any]) -> dict[str, Any]:
    out = {"name": param["name"], "in": "query", "required": param["required"], "schema": param["schema"]}
    if param.get("help"):
        out["description"] = param["help"]
    if param["schema"].get("type") == "array":
        out.update(style="form", explode=True)
    return out


def _cli() -> dict[str, Any]:
    body = {"type": "object", "required": ["argv"], "additionalProperties": True, "properties": {
        "argv": {"type": "array", "items": {"type": "string"}, "description": "the words after `workbench`"},
        "cwd": {"type": ["string", "null"], "description": "the caller's working folder (relative paths)"},
        "files": {"type": "object", "additionalProperties": {"type": "string"},
                  "description": "input files the command reads, by the name given ('-': stdin)"},
        "columns": {"type": ["integer", "null"], "description": "the caller's terminal width"}}}
    answer = {"type": "object", "required": ["exit", "stdout", "stderr"], "properties": {
        "exit": {"type": "integer"}, "stdout": {"type": "string"}, "stderr": {"type": "string"}}}
    return {"operationId": "post_cli", "summary": "Run a command line as the token's principal (the CLI's client)",
            "requestBody": {"required": True, "content": {JSON: {"schema": body}}},
            "responses": {"200": _json(answer, "what the command printed and its exit code"),
                          "400": _json(ERROR, "the body is not {argv, cwd, files, columns}"),
                          "413": _json(ERROR, "the request body is too large"), **_common()}}


def _rpc(methods: list[str]) -> dict[str, Any]:
    body = {"type": "object", "additionalProperties": False, "properties": {
        "args": {"type": "array", "description": "positional arguments (codec JSON)"},
        "kwargs": {"type": "object", "description": "keyword arguments (codec JSON)"},
        "cwd": {"type": "string", "description": "the caller's folder, for relative paths"}}}
    error = {"anyOf": [{"$ref": "#/components/schemas/RpcError"}, ERROR]}  # the core's error, or the body's
    return {"operationId": "post_rpc", "summary": "Call one method of the core as the token's principal (the "
                                                   "remote facade the TUI uses; rules in server/rpc.py)",
            "parameters": [{"name": "method", "in": "path", "required": True,
                            "schema": {"type": "string", "enum": methods}}],
            "requestBody": {"required": False, "content": {JSON: {"schema": body}}},
            "responses": {"200": _json({"type": "object", "required": ["result"], "properties": {"result": ANY}},
                                       "the method's result (codec JSON)"),
                          **{s: _json(error, d) for s, d in (("400", "bad arguments"), ("403", "not allowed"),
                                                             ("404", "unknown method or id"),
                                                             ("409", "a conflict"), ("500", "an internal error"),
                                                             ("503", "the workspace is busy"))},
                          "413": _json(ERROR, "the request body is too large"),
                          **{k: v for k, v in _common().items() if k != "403"}}}


def _shared_responses() -> dict[str, Any]:
    challenge = {"WWW-Authenticate": {
        "description": 'Bearer realm="workbench", resource_metadata="<the protected-resource metadata URL>"',
        "schema": {"type": "string"}}}
    return {
        "Unauthorized": {**_json(ERROR, "no token, or a token that is unknown, revoked or expired"),
                         "headers": challenge},
        "Forbidden": _json(ERROR, "a browser page of another site (Origin not allowed), or not allowed"),
        "MisdirectedHost": _json(ERROR, "a Host this server does not answer (DNS-rebinding protection)"),
        "TooMany": {**_json(ERROR, "too many failed authentications from this address, or too many requests"),
                    "headers": {"Retry-After": {"schema": {"type": "string"}}}},
    }
