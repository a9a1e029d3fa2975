"""The team server's edge: the checks every request meets before anything else, and what every
401 says about how to authenticate.

- **Host, then Origin, against allow-lists** (the MCP transport rules against DNS rebinding: a page
  on another site whose name is made to resolve to 127.0.0.1 reaches a loopback server with its
  own name in ``Host``). Allowed by default: the loopback names (127.0.0.1, localhost, [::1]) at the
  port the request came in on, and the address the server was bound to when it is a specific one;
  behind a reverse proxy, the names it forwards (``--allow-host``, ``server.allowed_hosts``). A
  request with another Host is refused with 421 (as the MCP SDK's own check answers), one whose
  Origin is another site with 403; a request without Origin (any client that is not a browser)
  passes, and so does a same-origin one (its Origin names the allowed Host it was sent to). It
  applies to every route but ``/healthz`` (which tells nothing, and which health checkers ask by
  address): DNS rebinding reaches any route, and the protected-resource metadata is built from Host.
- **Every 401 names the protected-resource metadata** (RFC 9728): ``WWW-Authenticate: Bearer
  realm="workbench", resource_metadata="<base>/.well-known/oauth-protected-resource[/mcp]"``. The
  metadata (``metadata``) names the resource and the bearer method and no authorization server:
  this server issues its own tokens (``workbench token create``); a client sends one in the
  ``Authorization`` header, and one that has none is told so instead of starting an OAuth flow.

Nothing here authenticates or decides what a caller may do (``app.Front`` and the core do).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = {"", "0.0.0.0", "::", "[::]"}
UNCHECKED = {"/healthz"}
PRM_PATH = "/.well-known/oauth-protected-resource"
REALM = "workbench"
UNAUTHORIZED = -32001  # the JSON-RPC error code of a refused MCP request (implementation-defined range)


@dataclass(frozen=True)
class AllowList:
    """Allowed ``Host`` and ``Origin`` values besides the loopback defaults. An entry is matched
    without regard to case: ``name`` (no port: the scheme's default, as a proxy on 443 forwards it),
    ``name:PORT``, ``name:*`` (any port or none), or ``*`` (any: the check is off). Origins are
    ``scheme://name[:PORT]``, with the same ``:*`` and ``*``."""

    hosts: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    bound: str | None = None  # the address the server listens on (--host)

    def host_allowed(self, host: str, port: int | None) -> bool:
        host = host.strip().lower()
        if not host:
            return False
        defaults = [*LOOPBACK]
        if self.bound and self.bound.lower() not in WILDCARDS:
            bound = self.bound.lower()
            defaults.append(f"[{bound}]" if ":" in bound and not bound.startswith("[") else bound)
        name, has_port, given_port = _split_host(host)
        if name in defaults and (port is None or (has_port and given_port == str(port))):
            return True
        return _matches(host, self.hosts, split=_split_host)

    def origin_allowed(self, origin: str, host: str, port: int | None) -> bool:
        origin = origin.strip().lower().rstrip("/")
        scheme, sep, rest = origin.partition("://")
        if not sep or scheme not in ("http", "https"):
            return "*" in self.origins or origin in (o.lower() for o in self.origins)  # "null", a file: page
        if rest == host.strip().lower():
            return True  # same-origin: a page the (allowed) Host serves
        if scheme == "http" and rest in ((f"{name}:{port}" if port else name) for name in LOOPBACK):
            return True
        return _matches(origin, self.origins, split=_split_origin)


def _split_host(value: str) -> tuple[str, bool, str]:
    """(name, whether a port is written, the port) of ``name[:port]`` (an IPv6 name is bracketed)."""
    if value.startswith("["):
        name, _, rest = value.partition("]")
        name += "]"
        return name, rest.startswith(":"), rest[1:]
    name, sep, port = value.rpartition(":")
    return (name, True, port) if sep else (value, False, "")


def _split_origin(value: str) -> tuple[str, bool, str]:
    scheme, _, rest = value.partition("://")
    name, has_port, port = _split_host(rest)
    return f"{scheme}://{name}", has_port, port


def _matches(value: str, allowed: tuple[str, ...], *, split) -> bool:
    name = split(value)[0]
    for entry in allowed:
        entry = entry.strip().lower().rstrip("/")
        if entry == "*" or entry == value:
            return True
        if entry.endswith(":*") and entry[:-2] == name:
            return True
    return False


def metadata(base: str, path: str) -> dict[str, Any] | None:
    """The protected-resource metadata (RFC 9728) served at ``/.well-known/oauth-protected-resource``
    + ``path`` ("" or "/mcp"), for the server reached at ``base`` (``scheme://host``); None for a
    path that is no resource of this server."""
    if path not in ("", "/mcp"):
        return None
    return {
        "resource": base + path,
        "bearer_methods_supported": ["header"],
        "resource_name": "workbench team server",
        "resource_documentation_note": "Send `Authorization: Bearer TOKEN` with a token from `workbench token "
                                       "create --for PRINCIPAL` (made by the workspace's admins). This server "
                                       "issues its own tokens: there is no OAuth authorization server.",
    }


def base_url(scope) -> str:
    """``scheme://host`` as the client reached the server (the Host it sent, checked by ``Edge``)."""
    host = _header(scope, b"host") or "localhost"
    return f"{scope.get('scheme', 'http')}://{host}"


def challenge(scope) -> bytes:
    """The ``WWW-Authenticate`` value of a 401 for ``scope``'s path."""
    suffix = "/mcp" if _is_mcp(scope) else ""
    url = f"{base_url(scope)}{PRM_PATH}{suffix}"
    return f'Bearer realm="{REALM}", resource_metadata="{url}"'.encode("latin-1", "replace")


def _is_mcp(scope) -> bool:
    path = scope.get("path", "")
    return path == "/mcp" or path.startswith("/mcp/")


def _jsonrpc_refusal(body: bytes) -> bytes:
    """A 401's ``{"error": message}`` as a JSON-RPC error, which MCP clients show as it is (to them
    any other body is "Server returned an error response"), with what to do about it."""
    try:
        message = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        message = "authentication required"
    message = (f"{message}. Send the header `Authorization: Bearer TOKEN` with a token from `workbench token "
               "create --for PRINCIPAL`; this server has no OAuth authorization server.")
    return json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": UNAUTHORIZED, "message": message}}).encode()


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class Edge:
    """The outermost ASGI layer: Host and Origin checks, and the protected-resource challenge on
    every 401 whoever answered it."""

    def __init__(self, app, allow: AllowList, log=None):
        self.app, self.allow, self.log = app, allow, log

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("path", "") not in UNCHECKED:
            refusal = self._refusal(scope)
            if refusal is not None:
                status, message = refusal
                if self.log is not None:
                    client = (scope.get("client") or ("?", 0))[0]
                    self.log.warn("refused_edge", status=status, reason=message, client=client,
                                  path=scope.get("path"), host=_header(scope, b"host"),
                                  origin=_header(scope, b"origin"))
                await _answer(send, status, {"error": message})
                return

        held: list = []  # a 401's start, held for its body when it is answered to an MCP client

        async def sending(message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"www-authenticate"]
                message = {**message, "headers": [*headers, (b"www-authenticate", challenge(scope))]}
                if _is_mcp(scope):
                    held.append(message)
                    return
            if held and message["type"] == "http.response.body":
                start, body = held.pop(), _jsonrpc_refusal(message.get("body", b""))
                headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                message = {**message, "body": body, "more_body": False}
            await send(message)

        await self.app(scope, receive, sending)

    def _refusal(self, scope) -> tuple[int, str] | None:
        host = _header(scope, b"host") or ""
        port = (scope.get("server") or (None, None))[1]
        if not self.allow.host_allowed(host, port):
            shown = host[:100] or "(none)"
            return 421, (f"Host {shown!r} is not served here (DNS-rebinding protection): behind a reverse proxy, "
                         f"allow it with `workbench server --allow-host {host[:100] or 'NAME'}` or "
                         "server.allowed_hosts in workbench.yaml")
        origin = _header(scope, b"origin")
        if origin is not None and not self.allow.origin_allowed(origin, host, port):
            return 403, (f"Origin {origin[:100]!r} may not call this server (a page of another site): allow it "
                         "with `workbench server --allow-origin ORIGIN` or server.allowed_origins in workbench.yaml")
        return None


async def _answer(send, status: int, body: dict) -> None:
    """A refusal, closing the connection: a body may follow that no one will read (its sender is
    not told to stop otherwise, and would keep the connection busy sending it)."""
    raw = json.dumps(body).encode("utf-8")
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": raw})
