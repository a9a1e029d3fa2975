"""MCP over stdio that finishes what it started: when stdin closes, the calls still running are
answered before the process exits.

A client may write its last request and close its end at once (a script piping one call, a host
shutting an agent down): the MCP SDK's server stops at the end of its input and cancels the
handlers in flight, so their answers were never written. Here the server reads from a stream
that this module feeds from the SDK's stdio transport: it counts each request in and each answer
out, and passes the end of input on only once every request read has been answered (or cancelled
by the client, or after ``GRACE_S``). Nothing else changes: the SDK still parses, dispatches and
writes every message. This module decides nothing about what a call may do.
"""

from __future__ import annotations

from typing import Any

GRACE_S = 600.0  # the longest a call still running at the end of input may take to answer


async def serve(server: Any, *, grace_s: float = GRACE_S) -> None:
    """Serve ``server`` (an ``MCPServer``) on this process's stdin and stdout until stdin closes and
    every request read has been answered."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on these streams instead
    pending: set = set()
    ended: list = []  # the event the end of input waits on, once it came

    def answered(request_id) -> None:
        pending.discard(request_id)
        if not pending and ended:
            ended[0].set()

    async with stdio_server() as (read_stream, write_stream):
        into_send, into_receive = anyio.create_memory_object_stream(0)
        out_send, out_receive = anyio.create_memory_object_stream(0)

        async def feed() -> None:
            async with into_send:
                try:
                    async for item in read_stream:
                        message = getattr(item, "message", None)
                        if isinstance(message, JSONRPCRequest):
                            pending.add(message.id)
                        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
                            answered((message.params or {}).get("requestId"))
                        await into_send.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return  # the server stopped reading: nothing to wait for
                ended.append(anyio.Event())
                if pending:  # the end of input waits for the answers in flight
                    with anyio.move_on_after(grace_s):
                        await ended[0].wait()

        async def drain() -> None:
            async with write_stream:
                async for item in out_receive:
                    await write_stream.send(item)
                    message = getattr(item, "message", None)
                    if isinstance(message, JSONRPCResponse | JSONRPCError):
                        answered(message.id)

        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            tg.start_soon(drain)
            await lowlevel.run(into_receive, out_send, lowlevel.create_initialization_options())
