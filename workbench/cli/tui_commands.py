"""Command definitions for the TUI: `tui` (and `workbench` alone, on a terminal) and `serve`."""

from __future__ import annotations

import argparse

from .main import command


def add_tui_commands(sub: argparse._SubParsersAction) -> None:
    help = "Open the terminal UI on the workspace (also what `workbench` alone does on a terminal)."
    p = sub.add_parser("tui", help=help, description=help)
    p.add_argument("--as", dest="principal", metavar="USER",
                   help="act as this principal (default: $WORKBENCH_PRINCIPAL, else default_principal)")
    help = "Serve the same terminal UI in a browser through textual-serve, bound to 127.0.0.1."
    p = sub.add_parser("serve", help=help, description=help)
    p.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000)")
    p.add_argument("--as", dest="principal", metavar="USER", help="the principal the served UI acts as")


@command("tui")
def _tui(args):
    from ..tui.app import end_process, run

    run(args.workspace, args.principal)
    end_process(0)  # the screen is restored and the workspace closed: do not wait for daemon jobs


@command("serve")
def _serve(args):
    from ..config import CONFIG_NAME, WorkspaceConfig, resolve_workspace
    from ..errors import UserError, WorkspaceMissing
    from ..tui.serve import serve

    if not 0 < args.port < 65536:
        raise UserError(f"--port {args.port} is not a port number")
    root = resolve_workspace(args.workspace)
    if not (root / CONFIG_NAME).is_file():
        raise WorkspaceMissing(f"no workspace at {root} (run `workbench init` first)")
    WorkspaceConfig.load(root / CONFIG_NAME).principal(args.principal)  # an unknown --as fails here, not in the page
    serve(root, args.principal, port=args.port)
