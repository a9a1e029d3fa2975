"""A command's parameters as the team server's JSON API takes them: one description per parameter
(name, kind, JSON Schema) and the one function that turns a request's values into the command
line that runs. ``GET /api/v1`` lists the descriptions, the OpenAPI document (server/openapi.py)
is generated from them, and ``argv_for`` checks every value with the same rules, so what the
document promises and what the server accepts cannot drift apart.

Values: a query string gives text (``k=5``, ``explain=true``, a repeated key for several values),
a JSON body typed values (``{"k": 5, "explain": true, "kind": ["runbook"]}``). A flag takes true or
false (``true``/``false``/``1``/``0``, or the bare key in a query string); a parameter that takes
several values takes a list or one value; any other takes one text or number. Anything else is a
``UserError`` naming the parameter (HTTP 400). Whether a value is a good number, choice or scope
is click's to say, exactly as on the command line (exit 2: 400). This module decides nothing
about who may run what.
"""

from __future__ import annotations

from typing import Any

TRUE, FALSE = {"", "true", "1", "yes", "on"}, {"false", "0", "no", "off"}  # a flag's words in a query string
HIDDEN = {"as_json"}  # every API answer is the --json one


def api_name(param) -> str:
    return "as" if param.name == "principal" else param.name


def exposed(command) -> list:
    """The parameters a request may give (``--json`` is always on, ``--help`` is no parameter)."""
    return [p for p in command.params if p.expose_value and p.name not in HIDDEN]


def many(param) -> bool:
    return bool(getattr(param, "multiple", False) or param.nargs == -1)


def is_flag(param) -> bool:
    return bool(getattr(param, "is_flag", False))


def _scalar_schema(param) -> dict[str, Any]:
    import click

    kind = getattr(param.type, "kind", None)  # options.INT / options.FLOAT
    if kind is int or isinstance(param.type, click.types.IntParamType):
        return {"type": "integer"}
    if kind is float or isinstance(param.type, click.types.FloatParamType):
        return {"type": "number"}
    if isinstance(param.type, click.Choice):
        return {"type": "string", "enum": [str(c) for c in param.type.choices]}
    return {"type": "string"}


def schema(param) -> dict[str, Any]:
    """The JSON Schema of one parameter's value in a JSON body."""
    help_text = getattr(param, "help", None)
    if is_flag(param):
        out: dict[str, Any] = {"type": "boolean"}
    elif many(param):
        out = {"type": "array", "items": _scalar_schema(param)}
        if param.required:
            out["minItems"] = 1
    elif param.nargs > 1:
        out = {"type": "array", "items": _scalar_schema(param), "minItems": param.nargs, "maxItems": param.nargs}
    else:
        out = _scalar_schema(param)
    if help_text:
        out["description"] = help_text
    return out


def describe(param) -> dict[str, Any]:
    return {"name": api_name(param), "kind": param.param_type_name, "required": bool(param.required),
            "many": many(param), "flag": is_flag(param), "help": getattr(param, "help", None),
            "schema": schema(param)}


def argv_for(path: str, command, params: dict[str, Any], *, principal: str | None = None) -> list[str]:
    """``workbench PATH --json`` with ``params`` (see the module's docstring); ``principal`` (the
    caller's) stands in for ``as`` when it is not given: over the API, the token says who acts."""
    from ..errors import UserError

    by_name = {api_name(p): p for p in exposed(command)}
    unknown = sorted(set(params) - set(by_name))
    if unknown:
        raise UserError(f"unknown parameter {unknown[0][:80]!r} for {path} (valid: {', '.join(sorted(by_name))})")
    values = {name: value for name, value in params.items() if value is not None}
    if values.get("as") in (None, "") and principal and "as" in by_name:
        values["as"] = principal
    argv, positional = path.split("/"), []
    for name, param in by_name.items():
        if name not in values:
            continue
        items = _values(name, param, values[name])
        if param.param_type_name == "argument":
            positional += items
        elif is_flag(param):
            if items == ["on"]:
                argv.append(max(param.opts, key=len))
        elif param.nargs > 1:
            argv += [max(param.opts, key=len), *items]
        else:
            for value in items:
                argv += _option_words(param, value)
    if any(p.name == "as_json" for p in command.params):
        argv.append("--json")
    return argv + (["--"] + positional if positional else [])


def _option_words(param, value: str) -> list[str]:
    """``--name=VALUE``, or ``-kVALUE`` for an option with only a short name: one word, so a value
    that starts with a dash is never read as an option."""
    name = max(param.opts, key=len)
    if name.startswith("--"):
        return [f"{name}={value}"]
    return [f"{name}{value}"] if value else [name, value]


def _values(name: str, param, value: Any) -> list[str]:
    """A request's value for ``param`` as command-line words (a flag: ``["on"]`` or ``[]``)."""
    from ..errors import UserError

    if is_flag(param):
        word = value.strip().lower() if isinstance(value, str) else None
        if value is True or word in TRUE:
            return ["on"]
        if value is False or word in FALSE:
            return []
        raise UserError(f"parameter {name!r} is a flag: true or false", param=name)
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not (many(param) or param.nargs > 1):
        raise UserError(f"parameter {name!r} takes one value, not a list", param=name)
    if param.nargs > 1 and len(items) != param.nargs:
        raise UserError(f"parameter {name!r} takes {param.nargs} values", param=name)
    words = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise UserError(f"parameter {name!r} takes text or a number, not {_json_kind(item)}", param=name)
        if isinstance(item, str) and "\x00" in item:  # no command line can hold one; paths fail on it
            raise UserError(f"parameter {name!r} contains a NUL character", param=name)
        words.append(str(item))
    return words


def _json_kind(value: Any) -> str:
    return {bool: "true/false", dict: "an object", list: "a list", type(None): "null"}.get(type(value), "that")
