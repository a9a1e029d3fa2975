"""The command line over the team server: forwarding a command to the server that holds the
workspace (the client side), and running a forwarded command inside that server (the server side).

Client. When ``workbench server`` holds the workspace (its advert, ``server.json`` in the workspace
folder, names a live process) or ``WORKBENCH_URL`` is set, a command that acts on the workspace is
not run here: click parses it first (so a usage error reads the same), then its argv goes to
``POST /api/v1/cli`` with the caller's working folder, terminal width and, for ``edit --file``,
the file's text (read here: the file is the caller's, not the server's). The answer's stdout,
stderr and exit code become this process's, so a command prints the same either way.

Server. ``run_forwarded`` runs the same command in the server process against its open
Workbench. Who acts is the token's principal: ``--as`` is honoured only for an admin token (a
non-admin's is replaced, with a warning on stderr). Options that name files on the server's disk
(ingest paths, export folders, golden files of eval, check and calibrate, check's baseline, a
reranker folder) need an admin token, and a relative path is the caller's folder's. Output goes
to the request's own buffers: ``sys.stdout`` and ``sys.stderr`` are routed by a context variable
while a server runs. This module decides no visibility: the core does, for the principal it is given.
"""

from __future__ import annotations

import contextvars
import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..inert import inert
from ..userpath import expand_user

# Commands that never go to a server: they make their own workspace, start a server, or print
# something about this machine.
LOCAL = {"server", "bench", "completion", "init", "restore-backup",
         "model build-int8"}  # builds a model folder on this machine's disk: no workspace, nothing to serve
# Faces that hold a session of their own: run here (as clients of the server when one runs).
FACES = {"tui", "serve", "mcp"}
# Parameters that name files or folders on the disk of the process that runs the command.
SERVER_PATHS = {"ingest": ("paths", "git"), "model add": ("path",), "export-files": ("dir",),
                "search": ("rerank", "repo"), "context": ("rerank", "repo"),
                "eval": ("golden", "beir", "compare", "cache"), "export": ("out",),
                "import-bundle": ("dir",), "check": ("golden", "baseline", "update_baseline"),
                "edit": ("golden",), "backup": ("out",), "calibrate": ("golden",)}
# Git ranges read in a repository on that disk (--diff RANGE; '-', a diff on stdin, travels with the command).
SERVER_RANGES = {"search": ("diff",), "context": ("diff",)}
TIMEOUT_S = float(os.environ.get("WORKBENCH_CLIENT_TIMEOUT", "600"))
# Commands whose --file the caller reads and sends (the file is on the caller's machine).
FILE_COMMANDS = {"edit", "propose", "accept"}


@dataclass(frozen=True)
class Served:
    """A command running inside the server on behalf of a request."""

    wb: Any                     # the server's open Workbench (never closed by a command)
    principal: str | None       # the token's principal; None: the server's owner (acts as the local CLI)
    admin: bool                 # --as honoured, server paths allowed
    cwd: str | None             # the caller's working folder, for relative paths
    files: dict | None = None   # input files read by the caller ('edit --file F'; '-' is its stdin)
    columns: int | None = None  # the caller's terminal width, when it is a terminal


SERVED: contextvars.ContextVar[Served | None] = contextvars.ContextVar("workbench_served", default=None)
_OUT: contextvars.ContextVar[io.StringIO | None] = contextvars.ContextVar("workbench_out", default=None)
_ERR: contextvars.ContextVar[io.StringIO | None] = contextvars.ContextVar("workbench_err", default=None)


# -- the server side --------------------------------------------------------------------------------


class _Routed(io.TextIOBase):
    """A stand-in for sys.stdout / sys.stderr that writes to the current request's buffer when
    there is one, else to the real stream."""

    def __init__(self, real, var: contextvars.ContextVar):
        self.real, self.var = real, var

    @property
    def encoding(self) -> str:  # click checks it before writing
        return "utf-8"

    @property
    def errors(self) -> str:
        return "strict"

    @property
    def columns(self) -> int | None:
        served = SERVED.get()
        return served.columns if served is not None and self.var.get() is not None else None

    def write(self, text: str) -> int:
        target = self.var.get()
        if target is None:
            return self.real.write(text)
        if not isinstance(text, str):
            raise TypeError("write() argument must be str")
        target.write(inert(text))  # a request's output is inert before it leaves (render.py)
        return len(text)

    def flush(self) -> None:
        if self.var.get() is None:
            self.real.flush()

    def isatty(self) -> bool:
        if self.var.get() is None:
            return self.real.isatty()
        return self.columns is not None

    def fileno(self) -> int:
        if self.var.get() is None:
            return self.real.fileno()
        raise io.UnsupportedOperation("a request's output has no file descriptor")

    def writable(self) -> bool:
        return True


def route_output() -> None:
    """Route sys.stdout and sys.stderr by request (once, when a server starts)."""
    if not isinstance(sys.stdout, _Routed):
        sys.stdout = _Routed(sys.stdout, _OUT)
    if not isinstance(sys.stderr, _Routed):
        sys.stderr = _Routed(sys.stderr, _ERR)


_FAILURE: contextvars.ContextVar[list | None] = contextvars.ContextVar("workbench_failure", default=None)


@dataclass(frozen=True)
class Ran:
    """What a forwarded command did: its exit code, its output, and the core error it failed
    with, by class name (``NotFound``, ``Conflict``, ...), for the HTTP status."""

    exit: int
    stdout: str
    stderr: str
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"exit": self.exit, "stdout": self.stdout, "stderr": self.stderr}


def run_forwarded(root, argv: list[str], served: Served) -> Ran:
    """Run ``workbench ARGV`` (``root``: the ``workbench`` command group) in this process for a request."""
    out, err, failure = io.StringIO(), io.StringIO(), []
    tokens = [SERVED.set(served), _OUT.set(out), _ERR.set(err), _FAILURE.set(failure)]
    try:
        code = root.main(args=list(argv), prog_name="workbench", standalone_mode=False,
                         obj={"tui_when_alone": False, "argv": list(argv)})
    finally:
        for var, token in zip((SERVED, _OUT, _ERR, _FAILURE), tokens):
            var.reset(token)
    return Ran(int(code or 0), out.getvalue(), err.getvalue(), failure[0] if failure else None)


def note_failure(error: BaseException) -> None:
    """Called where the CLI turns a core error into an exit code: remember its kind for the server."""
    failure = _FAILURE.get()
    if failure is not None:
        failure.append(type(error).__name__)


class CommandApi:
    """The command line as the server's API: what the server calls to run a request's command
    (the server package does not import the CLI; the ``server`` command hands it this, with the
    ``workbench`` group it belongs to)."""

    def __init__(self, root) -> None:
        self.root = root

    def run(self, argv: list[str], *, principal: str | None, admin: bool, wb: Any, cwd: str | None = None,
            files: dict | None = None, columns: int | None = None) -> Ran:
        if any("\x00" in arg for arg in argv):  # no shell can pass one, and paths fail on it
            return Ran(2, "", "workbench: error: an argument contains a NUL character\n", "UserError")
        return run_forwarded(self.root, argv, Served(wb, principal, admin, cwd, files, columns))

    def argv_for(self, path: str, params: dict[str, Any], *, principal: str | None = None) -> list[str]:
        """``workbench PATH --json`` with ``params`` (named as the command's parameters, e.g.
        ``{"query": "...", "k": 5, "kind": ["runbook"]}``, checked as ``api_params`` says).
        ``principal`` (the caller's) stands in for ``as`` when it is not given: over the API, a
        write needs no ``as``, the token says who acts."""
        from ..errors import UserError
        from . import api_params

        command = _commands(self.root).get(path)
        if command is None:
            raise UserError(f"unknown command {path[:200]!r} (GET /api/v1 lists them)")
        return api_params.argv_for(path, command, params, principal=principal)

    def describe(self) -> list[dict[str, Any]]:
        """Every command the API serves, with its parameters and their JSON Schemas (GET /api/v1,
        and the OpenAPI document)."""
        from . import api_params

        return [{"command": path, "path": f"/api/v1/{path}", "help": command.help.split("\n")[0],
                 "json": any(p.name == "as_json" for p in command.params),
                 "params": [api_params.describe(p) for p in api_params.exposed(command)]}
                for path, command in _commands(self.root).items()]


def _commands(root) -> dict:
    import click

    def walk(group, prefix):
        for name, command in group.commands.items():
            path = f"{prefix}{name}"
            if isinstance(command, click.Group):
                yield from walk(command, path + "/")
            elif path.split("/")[0] not in LOCAL | FACES and path.replace("/", " ") not in LOCAL:
                yield path, command

    return dict(walk(root, ""))


def prepare_served(ctx, path: str, served: Served) -> None:
    """Inside the server, before a forwarded command runs: refuse what must run on the caller's
    machine, apply the token's principal, and check and resolve paths on the server's disk."""
    from ..errors import UserError

    name = path.split(" ", 1)[1] if " " in path else path
    top = name.split(" ", 1)[0]
    if top in LOCAL or top in FACES or name in LOCAL:
        raise UserError(f"`workbench {name}` runs on your machine, not on the server")
    params = ctx.params
    if "principal" in params:
        given = params["principal"]
        if served.principal is None:  # the server's owner: as the local command line
            pass
        elif served.admin:
            params["principal"] = given or served.principal
        else:
            if given and given != served.principal:
                print(f"workbench: --as {given} ignored: this token acts as {served.principal}", file=sys.stderr)
            params["principal"] = served.principal
    for param in SERVER_PATHS.get(name, ()):
        value = params.get(param)
        if value in (None, (), [], "", "-") or value is False:  # False: a flag not given (check --update-baseline)
            continue                                            # '-': the caller's standard input, sent along
        if isinstance(value, (tuple, list)) and all(v == "-" for v in value):
            continue
        if not served.admin:
            raise UserError(f"`workbench {name}` with a path reads or writes files on the server: it needs an "
                            "admin token (or run it where the server runs)", param=param)
        params[param] = _absolute(value, served.cwd)
    for param in SERVER_RANGES.get(name, ()):
        if params.get(param) in (None, "", "-"):
            continue
        if not served.admin:
            raise UserError(f"`workbench {name} --{param} RANGE` reads a git repository on the server: it needs an "
                            "admin token (or pipe the diff: --diff -)", param=param)
        if not params.get("repo") and served.cwd:
            params["repo"] = served.cwd   # the caller's folder, as on the command line


def _absolute(value, cwd: str | None):
    if isinstance(value, (tuple, list)):
        return type(value)(_absolute(v, cwd) for v in value)
    if not isinstance(value, str) or not cwd or "://" in value or value.startswith("git@") or value == "-":
        return value
    return str(Path(cwd, expand_user(value)))


def read_input(name: str) -> str:
    """The text of an input file named on the command line ('-': stdin): the caller's copy when
    the command runs in the server, else read here."""
    served = SERVED.get()
    if served is not None:
        if name in (served.files or {}):
            return served.files[name]
        raise FileNotFoundError(f"the client did not send {name}")
    return sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")


# -- the client side --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    url: str
    token: str | None
    source: str  # "WORKBENCH_URL" or the advert's path


def endpoint_for(workspace: str | None) -> Endpoint | None:
    """The server this command should go to, if any: WORKBENCH_URL, else a live server's advert
    in the workspace folder."""
    url = os.environ.get("WORKBENCH_URL")
    if url:
        return Endpoint(url.rstrip("/"), os.environ.get("WORKBENCH_TOKEN"), "WORKBENCH_URL")
    from ..config import resolve_workspace
    from ..server.advert import read_advert

    advert = read_advert(resolve_workspace(workspace))
    if advert is None:
        return None
    if advert.foreign is not None:  # a copied folder's inherited advert: never relay to another workspace's server
        from ..server.advert import drop_foreign

        gone = "removed it and the owner token copied with it" if drop_foreign(advert) else "ignored it"
        print(f"workbench: note: {advert.path} names a server at {advert.url} (pid {advert.pid}) but "
              f"{advert.foreign}; {gone}, and this command runs on {advert.path.parent} itself", file=sys.stderr)
        return None
    return Endpoint(advert.url, os.environ.get("WORKBENCH_TOKEN") or advert.token, str(advert.path))


def forward(ctx, endpoint: Endpoint) -> int:
    """Send this command to the server; print what it printed; return its exit code."""
    from ..errors import UserError

    argv = _without_workspace(list((ctx.find_root().obj or {}).get("argv") or []))
    body = {"argv": argv, "cwd": os.getcwd(), "files": _input_files(ctx), "columns": _columns()}
    answer = request(endpoint, "POST", "/api/v1/cli", body)
    sys.stdout.write(answer.get("stdout", ""))
    sys.stderr.write(answer.get("stderr", ""))
    code = answer.get("exit")
    if not isinstance(code, int):
        raise UserError(f"the server at {endpoint.url} answered without an exit code")
    return code


def request(endpoint: Endpoint, method: str, path: str, body: Any = None) -> dict:
    """One JSON request to the server; server-side failures and network failures become
    one-line errors (exit 2), never tracebacks."""
    import urllib.error
    import urllib.request

    from ..errors import UserError

    data = None if body is None else json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if endpoint.token:
        headers["Authorization"] = f"Bearer {endpoint.token}"
    req = urllib.request.Request(endpoint.url + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as e:
        try:
            detail = json.loads(e.read().decode("utf-8"))
        except ValueError:
            detail = {}
        if isinstance(detail, dict) and "exit" in detail and "stderr" in detail:
            return detail  # the command's own failure, as it printed it
        message = detail.get("error") if isinstance(detail, dict) else None
        hint = " (set WORKBENCH_TOKEN to a token from `workbench token create`)" if e.code == 401 else ""
        raise UserError(f"server at {endpoint.url}: {message or e.reason} (HTTP {e.code}){hint}") from e
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise UserError(f"cannot reach the workbench server at {endpoint.url} ({reason}; named by "
                        f"{endpoint.source})") from e


def _without_workspace(argv: list[str]) -> list[str]:
    """argv without --workspace: the server has its own."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg == "--workspace":
            skip = True
            continue
        if arg.startswith("--workspace="):
            continue
        out.append(arg)
    return out


def _input_files(ctx) -> dict[str, str]:
    """The input files the command names (``edit --file F``, ``propose`` and ``review accept``), read
    here: they are the caller's."""
    from ..errors import UserError

    name = ctx.params.get("file") if ctx.command.name in FILE_COMMANDS else None
    stdin = any(v == "-" or (isinstance(v, (tuple, list)) and "-" in v)
                for v in (ctx.params.get(p) for p in SERVER_PATHS.get(ctx.command.name, ())))
    if not name and not stdin:
        return {}
    try:
        files = {name: sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")} if name else {}
        if stdin and "-" not in files:   # a path option given as '-' (ingest -, eval/check --golden -)
            files["-"] = sys.stdin.read()
        return files
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {name or 'standard input'}: {e}") from e


def _columns() -> int | None:
    try:
        if sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        pass
    return None
