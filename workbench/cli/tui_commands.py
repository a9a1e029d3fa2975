"""Commands for the TUI: `tui` (and `workbench` alone, on a terminal) and `serve`."""

from __future__ import annotations

import click

from .options import INT, PRINCIPAL_DEFAULT, as_option, command, workspace


@command("tui", "Open the terminal UI on the workspace (also what `workbench` alone does on a terminal).",
         "workbench tui --as marco.bianchi")
@as_option(f"act as this principal {PRINCIPAL_DEFAULT}", metavar="USER")
def tui(principal):
    from ..tui.app import end_process, run
    from .tui_client import ignored_as, remote_workbench

    remote = remote_workbench(workspace())  # a team server holds the workspace: the TUI is its client
    if remote is not None:
        warning = ignored_as(remote, principal)
        if warning:
            click.echo(warning, err=True)
    run(workspace(), principal, workbench=remote)
    end_process(0)  # the screen is restored and the workspace closed: do not wait for daemon jobs


@command("serve", "Serve the same terminal UI in a browser through textual-serve, bound to 127.0.0.1.",
         "workbench serve --port 8000 --as marco.bianchi")
@click.option("--port", type=INT, default=8000, help="port on 127.0.0.1 (default 8000)")
@as_option("the principal the served UI acts as", metavar="USER")
def serve(port, principal):
    from ..config import CONFIG_NAME, WorkspaceConfig, resolve_workspace
    from ..errors import UserError, WorkspaceMissing
    from ..tui.serve import serve as serve_ui
    from .tui_client import TAB_MODULE, ignored_as, remote_workbench

    if not 0 < port < 65536:
        raise UserError(f"--port {port} is not a port number")
    root = resolve_workspace(workspace())
    remote = remote_workbench(workspace())
    if remote is not None:  # a team server holds the workspace: every tab's app is its client
        warning = ignored_as(remote, principal)  # an unreachable server or a bad token fails here
        if warning:
            click.echo(warning, err=True)
        serve_ui(root, principal, port=port, module=TAB_MODULE)
        return
    if not (root / CONFIG_NAME).is_file():
        raise WorkspaceMissing(f"no workspace at {root} (run `workbench init` first)")
    WorkspaceConfig.load(root / CONFIG_NAME).principal(principal)  # an unknown --as fails here, not in the page
    serve_ui(root, principal, port=port)


COMMANDS = [tui, serve]
