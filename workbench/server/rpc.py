"""The remote facade's server side: ``POST /api/v1/rpc/METHOD`` runs one method of the server's
open ``Workbench`` for the request's caller, so a face in another process (the TUI, through
``client.RemoteWorkbench``) calls the core as if it held the workspace.

The body is ``{"args": [...], "kwargs": {...}, "cwd": "/caller/folder"}`` (values in ``codec``'s
JSON; ``cwd`` optional); the answer ``{"result": ...}``, or for a core error ``{"error": {"type",
"message", "param", "exit_code"}}``, which the app answers with that error's HTTP status.

Who may call what is decided here, never by the client:

- Only the methods in ``METHODS``: what the TUI reads and writes, and the methods that work on
  files of the server's disk. Never ``close``, ``share``, ``release``, ``init``, ``open``, the
  token methods (``workbench token`` goes through /api/v1/cli, whose rules it has), ``warm`` or
  ``search_index`` (the server keeps its own index warm) or anything else.
- Who acts: every ``principal=`` / ``actor=`` argument (and ``principal(name)``'s name) is the
  caller's principal for a non-admin token, whatever was sent; an admin token's choice is kept
  (default: its own principal); the server's owner (the token it wrote at start) acts as given,
  as the local command line does. A principal crosses as its name only: a sent ``Principal``
  object is never trusted.
- Files on the server's disk (``DISK``: ingest, exports, bundle import, golden sets, and a
  reranker folder) need an admin token; a relative path is the caller's ``cwd``'s.
- ``now=`` is the server's clock for a non-admin caller, except for reads that record nothing
  (``NOW_KEPT``): a write or a trace is dated by the server.
- A non-admin's call is recorded like any other: a parameter that would leave it out of the
  record (``UNRECORDED``: ``search(trace=False)``) is dropped, so it is traced and counts in gaps
  and usage. An admin (and the server's owner) may still search untraced.
- ``progress=`` callbacks do not cross the wire: dropped.
- Other principals' e-mail addresses and session memberships are not shown to a non-admin.

This module decides; the core still applies every visibility and write rule for the principal
it is given. It does no HTTP (``app`` does) and imports the core only when called.
"""

from __future__ import annotations

import dataclasses
import inspect
from datetime import date, datetime
from pathlib import Path, PurePath
from typing import Any

from ..errors import NotFound, PermissionDenied, UserError, ValidationError, WorkbenchError
from ..remote import codec
from ..remote.methods import CONFIG, DISK, DISK_PARAMS, METHODS, READ, WRITE  # noqa: E402,F401
from ..userpath import expand_user

WHO = ("principal", "actor")
NOW_KEPT = frozenset({"browse", "stale", "gaps", "usage", "fragment_usage", "edit_impact"})
UNRECORDED = {"search": ("trace",)}  # parameters that keep a call out of traces (and gaps and usage)
BODY_KEYS = {"args", "kwargs", "cwd"}


def endpoint(method: str) -> str:
    """The metrics and log label of a call (bounded: anyone can send any method name)."""
    return f"rpc {method}" if method in METHODS else "rpc ?"


def run(wb: Any, caller: Any, method: str, body: dict[str, Any]) -> dict[str, Any]:
    """Run ``method`` for ``caller`` (``auth.Caller``): ``{"result": ...}`` or ``{"error": ...}``."""
    try:
        args, kwargs, cwd = _read(body)
        fn, args, kwargs = prepare(wb, caller, method, args, kwargs, cwd=cwd)
        result = shown(wb, caller, method, fn(*args, **kwargs))
    except WorkbenchError as e:
        return {"error": error_dict(e)}
    except Exception as e:  # noqa: BLE001 - a bug answers 500 with its kind, never a traceback
        return {"error": error_dict(WorkbenchError(f"internal error on the server: {type(e).__name__}: {e}"))}
    try:
        return {"result": codec.encode(result)}
    except codec.CodecError as e:
        return {"error": error_dict(WorkbenchError(f"internal error on the server: {e.message}"))}


def error_dict(e: WorkbenchError) -> dict[str, Any]:
    out = {"type": type(e).__name__, "message": e.message, "param": e.param, "exit_code": e.exit_code}
    if isinstance(e, ValidationError):
        out.update({"file": e.file, "field": e.field, "problem": e.problem})
    return out


def _read(body: dict[str, Any]) -> tuple[list, dict, str | None]:
    from ..models import Scope

    unknown = sorted(set(body) - BODY_KEYS)
    if unknown:
        raise UserError(f"unknown key {unknown[0]!r} in the call (expected args, kwargs, cwd)")
    args, kwargs, cwd = body.get("args", []), body.get("kwargs", {}), body.get("cwd")
    if not isinstance(args, list) or not isinstance(kwargs, dict) or not (cwd is None or isinstance(cwd, str)):
        raise UserError("expected {\"args\": [...], \"kwargs\": {...}, \"cwd\": string}")
    # arguments are plain values and scopes: no other type is rebuilt from what a client sends
    return codec.decode(args, classes=[Scope]), codec.decode(kwargs, classes=[Scope]), cwd


def prepare(wb: Any, caller: Any, method: str, args: list, kwargs: dict, *, cwd: str | None = None):
    """(the bound method, args, kwargs) to run for ``caller``, with the rules above applied."""
    if method not in METHODS:
        raise NotFound(f"unknown method {method!r} (the remote facade serves: {', '.join(sorted(METHODS))})")
    if method == CONFIG:
        if args or kwargs:
            raise UserError("config takes no arguments")
        return (lambda: wb.config), [], {}
    if method in DISK and not caller.admin:
        raise PermissionDenied(f"{method} reads or writes files on the server: it needs an admin token "
                               "(or run it where the server runs)")
    signature = inspect.signature(getattr(type(wb), method))
    try:
        bound = signature.bind(None, *args, **kwargs)
    except TypeError as e:
        raise UserError(f"bad arguments for {method}: {e}") from e
    values = bound.arguments
    _check_types(method, signature, values)
    for name in (("name",) if method == "principal" else WHO):
        if name in signature.parameters:
            values[name] = acting(caller, values.get(name))
    if "progress" in values:
        values["progress"] = None
    if "now" in values and not caller.admin and method not in NOW_KEPT:
        del values["now"]
    for name in UNRECORDED.get(method, ()):
        if name in values and not caller.admin:
            del values[name]  # the default: recorded
    for name in DISK_PARAMS.get(method, ()):
        if values.get(name) is not None and not caller.admin:
            raise PermissionDenied(f"{method} with a {name} reads files on the server: it needs an admin token",
                                   param=name)
    for name in DISK.get(method, ()):
        if name in values:
            values[name] = _absolute(values[name], cwd)
    return getattr(wb, method), list(bound.args[1:]), dict(bound.kwargs)


# What a value sent for a parameter must be, by the name in its annotation (the core's methods are
# annotated as strings). A name not here is not checked; the core checks values (ranges, ids).
_ATOMS = {
    "str": lambda v: isinstance(v, str), "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, int | float) and not isinstance(v, bool), "bool": lambda v: isinstance(v, bool),
    "None": lambda v: v is None, "Path": lambda v: isinstance(v, str | PurePath),
    "date": lambda v: isinstance(v, date), "datetime": lambda v: isinstance(v, datetime),
    "Scope": lambda v: type(v).__name__ == "Scope", "Principal": lambda v: False,  # sent by name only
}


def _check_types(method: str, signature: inspect.Signature, values: dict[str, Any]) -> None:
    """Refuse (400) an argument whose type its parameter's annotation rules out, before the core
    runs with it (a list where an id goes failed deep inside as a TypeError: a 500)."""
    for name, value in values.items():
        parameter = signature.parameters.get(name)
        annotation = parameter.annotation if parameter is not None else inspect.Parameter.empty
        if isinstance(annotation, str) and not _fits(value, annotation):
            raise UserError(f"bad arguments for {method}: {name} must be {annotation}, not {type(value).__name__}",
                            param=name)


def _fits(value: Any, annotation: str) -> bool:
    for option in _options(annotation):
        head, _, inner = option.partition("[")
        inner = inner.removesuffix("]")
        if head in ("list", "Iterable", "Sequence", "set", "frozenset") and inner:
            if isinstance(value, list | tuple | set | frozenset) and all(_fits(v, inner) for v in value):
                return True
        elif head == "tuple" and inner:
            kinds = _options(inner, sep=",")
            if isinstance(value, list | tuple) and len(value) == len(kinds) and \
                    all(_fits(v, k) for v, k in zip(value, kinds)):
                return True
        elif option not in _ATOMS or _ATOMS[option](value):
            return True  # a type this check does not know passes: the core decides
    return False


def _options(annotation: str, sep: str = "|") -> list[str]:
    """The parts of ``annotation`` split on ``sep`` outside brackets: ``"list[str | Path] | None"``
    gives ``["list[str | Path]", "None"]``."""
    parts, depth, current = [], 0, ""
    for ch in annotation:
        depth += (ch == "[") - (ch == "]")
        if ch == sep and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return [*parts, current.strip()]


def acting(caller: Any, given: Any) -> str | None:
    """Who acts for ``caller`` when the call names ``given`` (a name, or None)."""
    if given is not None and not isinstance(given, str):
        raise UserError(f"a principal is sent by name, not as {type(given).__name__}")
    if caller.principal is None:      # the server's owner: as the local command line
        return given
    if caller.admin:
        return given or caller.principal
    return caller.principal


def shown(wb: Any, caller: Any, method: str, result: Any) -> Any:
    """What a caller is shown of a result: to a non-admin, other principals without their e-mail
    addresses and session memberships (the configuration, ``principal`` and ``principals``)."""
    if caller.admin or method not in (CONFIG, "principal", "principals"):
        return result

    def trim(p):
        return p if p.name == caller.principal else dataclasses.replace(p, email=None, sessions=())
    if method == "principal":
        return trim(result)
    if method == "principals":
        return [trim(p) for p in result]
    return dataclasses.replace(result, principals={n: trim(p) for n, p in result.principals.items()},
                               reranker=None)


def _absolute(value: Any, cwd: str | None) -> Any:
    """A path argument with a relative path made the caller's folder's (URLs left alone)."""
    if isinstance(value, (list, tuple)):
        return type(value)(_absolute(v, cwd) for v in value)
    if not isinstance(value, (str, Path)) or not cwd:
        return value
    text = str(value)
    if "://" in text or text.startswith("git@"):
        return value
    return str(Path(cwd, expand_user(text)))
