"""MCP over streamable HTTP, for the team server: the same tools, resources and prompt as the
stdio server (``server.build_server``), each request acting as the caller the team server
authenticated (its bearer token's principal), with no lock between calls (the store serialises
writes, reads run side by side).

DNS-rebinding protection (a Host/Origin allow-list) is off: it guards servers that trust any
caller on loopback, and this one answers nothing without a bearer token, which a page in a
browser cannot attach; behind a TLS reverse proxy the Host header is the proxy's name.
"""

from __future__ import annotations

from typing import Any, Callable


def http_app(wb, caller: Callable[[], str]) -> tuple[Any, Callable[[], Any]]:
    """(the ASGI app serving ``/mcp``, its lifespan: an async context manager factory)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from .server import build_server

    server = build_server(wb, caller=caller)
    app = server.streamable_http_app(
        streamable_http_path="/mcp", json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    return app, server.session_manager.run
