"""`workbench` command line (click).

This module defines the root group and gathers the commands of the ``*_commands`` modules;
they import shared pieces from ``options`` and never this module, so there is no import cycle.
Each command parses its arguments, makes one call into ``workbench.service`` and renders the
result (text, or the documented JSON with ``--json``). Heavy modules are imported inside the
commands so ``workbench --help`` stays fast. Exit codes: 0 ok, 2 user error, 1 internal error.

Shell completion: ``workbench completion bash|zsh|fish`` prints the script.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from . import (bench_command, calibrate_command, check_commands, commands, completion, curate_commands, export_commands,
               gaps_commands, model_commands, proposal_commands, publish_commands, retrieval_commands, server_command,
               token_commands, trace_commands, tui_commands, tune_command, upkeep_commands)
from .options import RootGroup

DESCRIPTION = ("A local-first knowledge workbench for curating what AI agents know: versioned, scoped, owned "
               "fragments; pins; hybrid retrieval; exports.")


def _version() -> str:
    from .. import __version__

    return __version__


@click.group("workbench", cls=RootGroup, help=DESCRIPTION, example="workbench --workspace ./kb search "
             "\"roll back a bad deploy\" --as dan.kowalski", invoke_without_command=True)
@click.version_option(version=_version(), prog_name="workbench", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> int | None:
    if ctx.invoked_subcommand is not None:
        return None
    if (ctx.obj or {}).get("tui_when_alone") and sys.stdin.isatty() and sys.stdout.isatty():
        return ctx.invoke(tui_commands.tui, principal=None)  # `workbench` alone on a terminal opens the TUI
    click.echo(ctx.get_help())
    return 0


for _module in (commands, retrieval_commands, check_commands, calibrate_command, tune_command, curate_commands, gaps_commands,
                proposal_commands, publish_commands,
                bench_command,
                tui_commands,
                export_commands, token_commands, trace_commands, upkeep_commands, server_command, model_commands, completion):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main(argv: list[str] | None = None) -> int:
    """Run ``workbench`` with ``argv`` (default: ``sys.argv[1:]``) and return its exit code. Whatever
    it prints is made inert on the way out (render.inert_output)."""
    from .render import inert_output

    obj: dict[str, Any] = {"tui_when_alone": argv is None, "argv": list(sys.argv[1:] if argv is None else argv)}
    with inert_output():
        return cli.main(args=argv, prog_name="workbench", standalone_mode=False, obj=obj)


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
