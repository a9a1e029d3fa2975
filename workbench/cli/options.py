"""Pieces every CLI command module shares, so no option is declared twice and no module
imports ``main``: the shared option decorators (``--as``, ``--json``, ``--scope``,
``--workspace``), the variadic option class, argparse-worded number types, the command
classes (help text and an example are required) and the one place errors become exit codes.

It must stay cheap to import (only click and the standard library at module level): it runs
on ``workbench --help`` and on every shell completion.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

import click

WORKSPACE_KEY = "workbench.workspace"
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# -- values --------------------------------------------------------------------------------------


class _Number(click.ParamType):
    """int or float, failing with argparse's wording ("invalid float value: 'x'")."""

    def __init__(self, kind: type) -> None:
        self.kind, self.name = kind, kind.__name__

    def convert(self, value: Any, param, ctx) -> Any:
        if isinstance(value, self.kind) and not isinstance(value, bool):
            return value
        try:
            return self.kind(value)
        except (TypeError, ValueError):
            self.fail(f"invalid {self.name} value: {value!r}", param, ctx)


INT, FLOAT = _Number(int), _Number(float)


class MultiValueOption(click.Option):
    """An option taking one or more values, space-separated and/or repeated:
    ``--pipeline bm25 dense --pipeline hybrid`` gives ``("bm25", "dense", "hybrid")``.

    After the value click consumes, the values that follow are taken too, up to the next
    argument that looks like an option (as argparse's ``nargs='+'``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["multiple"] = True
        super().__init__(*args, **kwargs)

    def add_to_parser(self, parser, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        prefixes = parser._opt_prefixes
        for name in self.opts:
            opt = parser._long_opt.get(name) or parser._short_opt.get(name)
            if opt is None:
                continue
            single = opt.process

            def process(value: Any, state, single=single) -> None:
                single(value, state)
                while state.rargs and not (state.rargs[0][:1] in prefixes and len(state.rargs[0]) > 1):
                    single(state.rargs.pop(0), state)

            opt.process = process


def values(given: tuple | list | None) -> list | None:
    """A multi-value option's values as a list, or None when it was not given (the core's default)."""
    return list(given) if given else None


# -- shared options ------------------------------------------------------------------------------

PRINCIPAL_DEFAULT = "(default: $WORKBENCH_PRINCIPAL, else default_principal in workbench.yaml)"


def _complete_principal(ctx: click.Context, param, incomplete: str) -> list[str]:
    """Principal names from the workspace's workbench.yaml (nothing when there is none)."""
    try:
        from ..config import CONFIG_NAME, WorkspaceConfig, resolve_workspace

        config = WorkspaceConfig.load(resolve_workspace(ctx.meta.get(WORKSPACE_KEY)) / CONFIG_NAME)
    except Exception:  # completion must never fail loudly
        return []
    return sorted(name for name in config.principals if name.startswith(incomplete))


def _ask_workspace(ctx: click.Context, question: str, incomplete: str, **kwargs: Any) -> list[str]:
    """Ask the workspace (read-only, briefly: completion must never hang) one completion question, as
    the caller: ``--as`` when already given, else the default principal. Nothing on any failure."""
    try:
        from ..config import resolve_workspace
        from ..service import Workbench

        principal = ctx.params.get("principal") or next(
            (c.params.get("principal") for c in _contexts(ctx) if c.params.get("principal")), None)
        with Workbench.open(resolve_workspace(ctx.meta.get(WORKSPACE_KEY)), lock_timeout=0.5, read_only=True) as wb:
            return getattr(wb, question)(incomplete, principal=principal, **kwargs)
    except Exception:  # noqa: BLE001 - completion must never fail loudly (no workspace, no principal, busy)
        return []


def _contexts(ctx: click.Context):
    while ctx is not None:
        yield ctx
        ctx = ctx.parent


def complete_fragment_id(ctx: click.Context, param, incomplete: str) -> list[str]:
    """Ids of the fragments the caller may see."""
    return _ask_workspace(ctx, "complete_ids", incomplete)


def complete_proposal_id(ctx: click.Context, param, incomplete: str) -> list[str]:
    """Ids of the proposals the caller may see (its own, those it reviews)."""
    return _ask_workspace(ctx, "complete_ids", incomplete, proposals=True)


def _complete_scope(ctx: click.Context, param, incomplete: str) -> list[str]:
    return _ask_workspace(ctx, "complete_scopes", incomplete)


def id_argument(name: str = "id", *, proposals: bool = False) -> Callable:
    """A fragment id argument, completed with the ids the caller may see."""
    return click.argument(name, shell_complete=complete_proposal_id if proposals else complete_fragment_id)


def as_option(help: str | None = None, *, required: bool = False, metavar: str = "PRINCIPAL") -> Callable:
    """``--as PRINCIPAL``: who acts (the author of a change, whose visibility applies)."""
    text = help or ("the principal making the change" if required else f"act as this principal {PRINCIPAL_DEFAULT}")
    return click.option("--as", "principal", metavar=metavar, required=required, help=text,
                        shell_complete=_complete_principal)


def json_option() -> Callable:
    """``--json``: print the documented JSON contract instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="print the documented JSON instead of text")


def scope_option(help: str | None = None, *, required: bool = False) -> Callable:
    """``--scope org=ORG[,repo=R][,persona=P][,session=S]``."""
    return click.option("--scope", metavar="SCOPE", required=required, shell_complete=_complete_scope,
                        help=help or "org=ORG[,repo=R][,persona=P][,session=S]")


def _remember_workspace(ctx: click.Context, param, value: str | None) -> str | None:
    if value is not None:  # given after the subcommand, it wins over one given before it
        ctx.meta[WORKSPACE_KEY] = value
    return value


def workspace_param() -> click.Option:
    """``--workspace DIR``, accepted before the subcommand and after it."""
    return click.Option(["--workspace"], metavar="DIR", expose_value=False, callback=_remember_workspace,
                        type=click.Path(file_okay=False), help="workspace folder (default: $WORKBENCH_HOME, "
                        "else ./.workbench/), before or after the command")


def workspace() -> str | None:
    """The --workspace given to this invocation, if any (resolution happens in the core)."""
    return click.get_current_context().meta.get(WORKSPACE_KEY)


def open_workbench():
    """The workspace a command acts on (--workspace, else WORKBENCH_HOME, else ./.workbench/); inside
    the team server, the server's own open workspace (lent, never closed by the command)."""
    from .remote import SERVED

    served = SERVED.get()
    if served is not None:
        return _Lent(served.wb)
    from ..service import Workbench

    return Workbench.open(workspace())


class _Lent:
    """``with open_workbench() as wb`` over a workspace someone else closes."""

    def __init__(self, wb: Any) -> None:
        self.wb = wb

    def __enter__(self) -> Any:
        return self.wb

    def __exit__(self, *exc: Any) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wb, name)


# -- commands ------------------------------------------------------------------------------------


class _Documented:
    """Help text and an example are required; ``--workspace`` is added to every command."""

    def _document(self, example: str | None) -> None:
        if not self.help or not example:
            raise TypeError(f"command {self.name!r} needs help text and an example")
        self.example = example
        self.params.append(workspace_param())

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Example"):
            for line in self.example.splitlines():
                formatter.write(" " * formatter.current_indent + line + "\n")
        super().format_epilog(ctx, formatter)


class WorkbenchCommand(_Documented, click.Command):
    def __init__(self, *args: Any, example: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", CONTEXT_SETTINGS)
        super().__init__(*args, **kwargs)
        self._document(example)

    def invoke(self, ctx: click.Context) -> Any:
        from ..errors import WorkbenchError

        try:
            _over_the_server(ctx)
            return super().invoke(ctx)
        except WorkbenchError as e:  # the core names the parameter; the CLI adds its option
            if e.param and not hasattr(e, "cli_hint"):
                e.cli_hint = option_hint(self, e.param, e.message)
            raise


def _over_the_server(ctx: click.Context) -> None:
    """Inside the team server: apply the request's principal and path rules. Outside it, when a
    server holds the workspace (or WORKBENCH_URL names one): run the command there instead, and
    exit with its exit code (cli/remote.py)."""
    from . import remote

    served = remote.SERVED.get()
    if served is not None:
        remote.prepare_served(ctx, ctx.command_path, served)
        return
    name = ctx.command_path.split(" ", 1)[1] if " " in ctx.command_path else ""
    top = name.split(" ", 1)[0]
    if top in remote.LOCAL or top in remote.FACES or name in remote.LOCAL:
        return
    endpoint = remote.endpoint_for(workspace())
    if endpoint is not None:
        raise click.exceptions.Exit(remote.forward(ctx, endpoint))


# The core's parameter names where this CLI's options are named otherwise.
API_TO_OPTION = {"cooldown_days": "cooldown", "max_distance": "distance", "reranker": "rerank",
                 "pipelines": "pipeline", "actor": "principal"}


def option_hint(command: click.Command, param: str, message: str = "") -> str:
    """`` (--reason TEXT)``: the option of ``command`` that sets the core parameter ``param``."""
    name = API_TO_OPTION.get(param, param)
    for option in command.params:
        if isinstance(option, click.Option) and option.name == name and option.expose_value:
            flag = max(option.opts, key=len)
            if flag in message:
                return ""
            return f" ({flag})" if option.is_flag else f" ({flag} {option.metavar or option.type.name.upper()})"
    return ""


class WorkbenchGroup(_Documented, click.Group):
    """A command with subcommands (``set``, ``antipattern``), listed in the order they were added."""

    command_class = WorkbenchCommand

    def __init__(self, *args: Any, example: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", CONTEXT_SETTINGS)
        kwargs.setdefault("no_args_is_help", False)  # no subcommand is a usage error (exit 2), as before
        super().__init__(*args, **kwargs)
        self._document(example)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


def command(name: str, help: str, example: str, **kwargs: Any) -> Callable:
    """``@command("list", "List ...", "workbench list --as P")``: a documented command."""
    return click.command(name, cls=WorkbenchCommand, help=help, example=example, short_help=_short(help),
                         **kwargs)


def group(name: str, help: str, example: str, **kwargs: Any) -> Callable:
    return click.group(name, cls=WorkbenchGroup, help=help, example=example, short_help=_short(help), **kwargs)


def _short(help: str) -> str:
    """The first sentence, whole (click would cut it at 45 characters)."""
    return help.split(". ")[0].rstrip(".")


# -- errors and exit codes -----------------------------------------------------------------------


def _usage_line(e: click.UsageError) -> str:
    if isinstance(e, click.BadParameter) and not isinstance(e, click.MissingParameter) and e.param is not None:
        hint = e.param_hint or e.param.get_error_hint(e.ctx)
        hint = " / ".join(hint) if isinstance(hint, (list, tuple)) else hint
        message = f"argument {hint}: {e.message}"
    else:
        message = e.format_message().rstrip(".")
        message = message[:1].lower() + message[1:]
    message = " ".join(message.split())  # one line, whatever click put in it
    if e.ctx is not None:
        message += f" (see '{e.ctx.command_path} --help')"
    return f"workbench: error: {message}"


class RootGroup(WorkbenchGroup):
    """The ``workbench`` group: turns every failure into a one-line message and an exit code
    (0 ok, 2 user error or bad usage, 1 internal error, 130 interrupted)."""

    def invoke(self, ctx: click.Context) -> Any:
        from ..errors import WorkbenchError

        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except WorkbenchError as e:
            from .remote import note_failure

            note_failure(e)
            click.echo(f"workbench: {e.message}{getattr(e, 'cli_hint', '')}", err=True)
            raise click.exceptions.Exit(e.exit_code) from e
        except KeyboardInterrupt as e:
            click.echo("workbench: interrupted", err=True)
            raise click.exceptions.Exit(130) from e
        except BrokenPipeError as e:  # `workbench list | head`: the reader left, nothing is wrong
            _silence_stdout()
            raise click.exceptions.Exit(0) from e
        except Exception as e:  # a bug: say so in one line, keep the traceback for WORKBENCH_DEBUG
            if os.environ.get("WORKBENCH_DEBUG"):
                raise
            click.echo(f"workbench: internal error: {type(e).__name__}: {e} (set WORKBENCH_DEBUG=1 for details)",
                       err=True)
            raise click.exceptions.Exit(1) from e

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        """A command with ``subcommands`` (``archive compress``) hands its first argument, when it
        names one, to that subcommand; any other first argument is the command's own."""
        name, cmd, rest = super().resolve_command(ctx, args)
        sub = getattr(cmd, "subcommands", {}).get(rest[0]) if rest else None
        if sub is not None:
            return f"{name} {rest[0]}", sub, rest[1:]
        return name, cmd, rest

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            rv = super().main(args, prog_name=prog_name or "workbench", complete_var=complete_var,
                              standalone_mode=False, **extra)
            code = rv if isinstance(rv, int) else 0
        except click.UsageError as e:
            click.echo(_usage_line(e), err=True)
            code = 2
        except click.ClickException as e:
            click.echo(f"workbench: {e.format_message()}", err=True)
            code = e.exit_code
        except click.Abort:
            click.echo("workbench: interrupted", err=True)
            code = 130
        try:
            sys.stdout.flush()  # piped output is buffered: a reader that left shows up here
        except BrokenPipeError:
            _silence_stdout()
        if standalone_mode:
            sys.exit(code)
        return code


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass
