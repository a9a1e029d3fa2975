"""`workbench` command line.

Each command parses its arguments, makes one call into ``workbench.service``
and renders the result (text, or the documented JSON with ``--json``). Heavy
modules are imported inside the handlers so ``workbench --help`` stays fast.
Exit codes: 0 ok, 2 user error, 1 internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

Handler = Callable[[argparse.Namespace], int | None]
_COMMANDS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        _COMMANDS[name] = fn
        return fn
    return register


def open_workbench(args: argparse.Namespace):
    """The workspace a command acts on (--workspace, else WORKBENCH_HOME, else ./.workbench/)."""
    from ..service import Workbench

    return Workbench.open(args.workspace)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 already; keep its one-line style
        self.print_usage(sys.stderr)
        self.exit(2, f"workbench: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from .commands import add_commands
    from .curate_commands import add_curate_commands, add_more_curate_commands
    from .retrieval_commands import add_bench_command, add_retrieval_commands
    from .tui_commands import add_tui_commands
    from .export_commands import add_export_commands

    parser = _Parser(prog="workbench", description="A local-first knowledge workbench for curating what "
                     "AI agents know: versioned, scoped, owned fragments; pins; hybrid retrieval; exports.")
    parser.add_argument("--workspace", metavar="DIR",
                        help="workspace folder (default: $WORKBENCH_HOME, else ./.workbench/)")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    add_commands(sub)
    add_retrieval_commands(sub)
    add_curate_commands(sub)
    add_more_curate_commands(sub)
    add_bench_command(sub)
    add_tui_commands(sub)
    add_export_commands(sub)
    return parser


def _version() -> str:
    from .. import __version__

    return f"workbench {__version__}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        if argv is None and sys.stdin.isatty() and sys.stdout.isatty():
            args.command, args.principal = "tui", None  # `workbench` alone on a terminal opens the TUI
        else:
            parser.print_help()
            return 0
    from . import commands, curate_commands, export_commands, retrieval_commands, tui_commands  # noqa: F401
    from ..errors import WorkbenchError

    try:
        code = _COMMANDS[args.command](args)
        return int(code or 0)
    except WorkbenchError as e:
        print(f"workbench: {e.message}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("workbench: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # a bug: say so in one line, keep the traceback for WORKBENCH_DEBUG
        if os.environ.get("WORKBENCH_DEBUG"):
            raise
        print(f"workbench: internal error: {type(e).__name__}: {e} (set WORKBENCH_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":  # run through the package module so handlers register in one place
    from workbench.cli.main import run as _run

    _run()
