"""MCP over streamable HTTP, for the team server: the same tools, resources and prompt as the
stdio server (``server.build_server``), each request acting as the caller the team server
authenticated (its bearer token's principal), with no lock between calls (the store serialises
writes, reads run side by side).

A workspace that several server processes may serve (``wb.serves_replicas``: replicas behind
one port or a load balancer) answers MCP statelessly: a session made on one replica would be
unknown to the next request's (404), so each request stands alone there. One process keeps
sessions, as clients expect by default.

The SDK's own DNS-rebinding check is off here because the team server's edge (server/edge.py)
makes it for every route, /mcp included, before authentication, against the allow-lists the
server was started with (loopback by default; a reverse proxy's names when configured).
"""

from __future__ import annotations

from typing import Any, Callable


def http_app(wb, caller: Callable[[], str]) -> tuple[Any, Callable[[], Any]]:
    """(the ASGI app serving ``/mcp``, its lifespan: an async context manager factory)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from .server import build_server

    server = build_server(wb, caller=caller)
    app = server.streamable_http_app(
        streamable_http_path="/mcp", json_response=True, stateless_http=wb.serves_replicas,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return app, server.session_manager.run
