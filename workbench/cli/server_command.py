"""`workbench server`: one process holds the workspace and serves the team (cli/remote.py is how
other commands become its clients; workbench/server/ is the server)."""

from __future__ import annotations

import click

from ..server.limits import REQUEST_TIMEOUT_S
from ..server.protocol import MAX_CONNECTIONS
from .options import FLOAT, INT, command, workspace


@command("server", "Hold the workspace and serve it to a team: the JSON API (/api/v1), MCP over streamable "
         "HTTP (/mcp), /healthz and /metrics; every request needs a bearer token (`workbench token create`). "
         "While it runs, the CLI on this machine sends its commands to it.",
         "workbench server --port 8765")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="address to bind (loopback by default: put a TLS reverse proxy in front for a team)")
@click.option("--port", type=INT, default=8765, show_default=True, help="port (0: any free port)")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="HOST",
              help="also answer requests with this Host header (repeatable; NAME, NAME:PORT, NAME:* or *): the "
                   "names a reverse proxy forwards; loopback at the server's port is always allowed "
                   "(with server.allowed_hosts in workbench.yaml)")
@click.option("--allow-origin", "allow_origins", multiple=True, metavar="ORIGIN",
              help="also answer browser requests from this Origin (repeatable; SCHEME://NAME[:PORT], "
                   "SCHEME://NAME:* or *); requests without Origin or from the same origin need none "
                   "(with server.allowed_origins in workbench.yaml)")
@click.option("--quiet", is_flag=True, help="log warnings and errors only (not every request)")
@click.option("--request-timeout", type=FLOAT, default=REQUEST_TIMEOUT_S, show_default=True, metavar="SECONDS",
              help="a request's line and headers must arrive within this many seconds of its first byte, and "
                   "its body may pause no longer (slow or stalled clients are disconnected)")
@click.option("--max-connections", type=INT, default=MAX_CONNECTIONS, show_default=True, metavar="N",
              help="open connections at most; past it a new one is answered 503 and closed")
@click.option("--workers", type=INT, default=1, show_default=True, metavar="N",
              help="serve with N processes sharing the port (a workspace on PostgreSQL only: each is a replica "
                   "with its own index, following the others' writes); a dead one is restarted")
@click.option("--worker-fd", type=INT, hidden=True,
              help="(set by --workers) serve the listening socket inherited as this file descriptor")
@click.option("--ready-fd", type=INT, hidden=True,
              help="(set by --workers) write one byte here once listening")
def server(host, port, allow_hosts, allow_origins, quiet, request_timeout, max_connections, workers, worker_fd,
           ready_fd):
    from ..errors import UserError
    from ..server.run import serve
    from .remote import CommandApi, route_output

    if not 0 <= port < 65536:
        raise UserError(f"--port {port} is not a port number")
    if not 0 < request_timeout <= 3600:
        raise UserError(f"--request-timeout must be more than 0 and at most 3600 seconds, not {request_timeout:g}")
    if not 1 <= max_connections <= 1_000_000:
        raise UserError(f"--max-connections must be from 1 to 1000000, not {max_connections}")
    if not 1 <= workers <= 64:
        raise UserError(f"--workers must be from 1 to 64, not {workers}")
    if workers > 1:
        from ..config import resolve_workspace
        from ..server.workers import supervise

        argv = [*(f"--allow-host={h}" for h in allow_hosts), *(f"--allow-origin={o}" for o in allow_origins),
                *(["--quiet"] if quiet else []), f"--request-timeout={request_timeout}",
                f"--max-connections={max_connections}"]
        supervise(resolve_workspace(workspace()), workers=workers, host=host, port=port, argv=argv, quiet=quiet)
        return
    root = click.get_current_context().find_root().command
    serve(workspace(), host=host, port=port, api=CommandApi(root), route_output=route_output, quiet=quiet,
          allow_hosts=allow_hosts, allow_origins=allow_origins, request_timeout=request_timeout,
          max_connections=max_connections, worker_fd=worker_fd, ready_fd=ready_fd)


COMMANDS = [server]
