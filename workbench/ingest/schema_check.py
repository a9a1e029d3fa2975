"""A fast first look at front matter against a JSON Schema: "certainly valid", or ask jsonschema.

Why: ``jsonschema`` takes ~0.4 ms to validate one fragment's front matter (``$ref`` lookups and
a validator object per keyword), which at 100k files is 40 s of an ingest. Nearly every file is
valid, so this module compiles the schema once into plain Python checks and answers "valid"
when it is sure; anything else (invalid, or a case it does not decide) goes to
``workbench.schemas.validate``, which gives the verdict and the error message as before. So
the answer for a file never depends on this module: it only skips work for files that are
certainly valid.

Each compiled check answers True (valid), False (invalid) or None (not decided here), and
combinators keep that honest (``not`` of None is None; ``if`` that is None is None), so a True
at the top is jsonschema's verdict too. tests/test_ingest_scale.py compares the two on generated
front matter. A keyword this module does not know disables the fast look for that schema
(``accepts`` then always returns None), so a schema change can make it slower, never wrong.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, Callable

Check = Callable[[Any], "bool | None"]

_ANNOTATIONS = {"title", "description", "$comment", "$schema", "examples", "default", "$defs", "deprecated",
                "readOnly", "writeOnly"}


class _Unsupported(Exception):
    """The schema uses something this module does not decide."""


def accepts(name: str, data: Any) -> bool | None:
    """True when ``data`` is certainly valid against schema ``name`` (``schemas/NAME.schema.json``);
    False or None mean "ask ``workbench.schemas.validate``"."""
    check = _compiled(name)
    return check(data) if check is not None else None


@cache
def _compiled(name: str) -> Check | None:
    from ..schemas import schema_dir

    schema = json.loads((schema_dir() / f"{name}.schema.json").read_text(encoding="utf-8"))
    try:
        return compile_schema(schema)
    except _Unsupported:
        return None


def compile_schema(schema: Any) -> Check:
    """A tri-state check for ``schema`` (raises ``_Unsupported`` for what it does not decide)."""
    defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
    refs: dict[str, Check] = {}

    def ref(target: str) -> Check:
        if not target.startswith("#/$defs/") or "/" in target[len("#/$defs/"):]:
            raise _Unsupported(target)
        key = target[len("#/$defs/"):]
        if key not in defs:
            raise _Unsupported(target)
        if key not in refs:
            refs[key] = lambda x: None          # a cycle resolves to "not decided"
            refs[key] = node(defs[key])
        return lambda x: refs[key](x)

    def node(s: Any, root: bool = False) -> Check:
        if s is True:
            return lambda x: True
        if s is False:
            return lambda x: False
        if not isinstance(s, dict):
            raise _Unsupported(repr(s))
        checks: list[Check] = []
        for key, value in s.items():
            if key in _ANNOTATIONS or (key == "$id" and root):
                continue
            if key in ("then", "else", "additionalProperties"):
                continue                         # read with "if" and "properties"
            maker = _KEYWORDS.get(key)
            if maker is None:
                raise _Unsupported(key)
            checks.append(maker(value, s, node, ref))
        if "additionalProperties" in s and "properties" not in s:
            checks.append(_properties({}, s, node, ref))
        return _all(checks) if checks else (lambda x: True)

    return node(schema, root=True)


# -- combinators -------------------------------------------------------------------------------

def _all(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]

    def check(x: Any) -> bool | None:
        unsure = False
        for c in checks:
            r = c(x)
            if r is False:
                return False
            if r is None:
                unsure = True
        return None if unsure else True
    return check


def _any(checks: list[Check]) -> Check:
    def check(x: Any) -> bool | None:
        unsure = False
        for c in checks:
            r = c(x)
            if r is True:
                return True
            if r is None:
                unsure = True
        return None if unsure else False
    return check


# -- keywords ----------------------------------------------------------------------------------
# Each maker takes (the keyword's value, the whole schema node, node(), ref()) and returns a check.

_NoneType = type(None)
_NOT_NUMBER = (str, list, dict, bool, _NoneType)


def _is_type(name: str) -> Check:
    if name == "string":
        return lambda x: isinstance(x, str)
    if name == "object":
        return lambda x: isinstance(x, dict)
    if name == "array":
        return lambda x: isinstance(x, list)
    if name == "null":
        return lambda x: x is None
    if name == "boolean":
        return lambda x: isinstance(x, bool)
    if name == "integer":
        return lambda x: False if isinstance(x, _NOT_NUMBER) else (True if isinstance(x, int) else None)
    if name == "number":
        return lambda x: False if isinstance(x, _NOT_NUMBER) else (True if isinstance(x, (int, float)) else None)
    raise _Unsupported(f"type {name}")


def _type(value, s, node, ref) -> Check:
    names = value if isinstance(value, list) else [value]
    return _any([_is_type(n) for n in names])


def _same(x: Any, e: Any) -> bool | None:
    """jsonschema's equality, where it is decided here: strings, None and booleans by type and
    value, integers as numbers (True is not 1); anything else is not decided."""
    if isinstance(x, (str, bool, _NoneType)):
        return type(x) is type(e) and x == e
    if isinstance(x, int):
        if isinstance(e, bool) or not isinstance(e, (int, float)):
            return False
        return x == e
    return None


def _enum(value, s, node, ref) -> Check:
    members = list(value)

    def check(x: Any) -> bool | None:
        unsure = False
        for e in members:
            r = _same(x, e)
            if r:
                return True
            if r is None:
                unsure = True
        return None if unsure else False
    return check


def _const(value, s, node, ref) -> Check:
    return lambda x: _same(x, value)


def _min_length(value, s, node, ref) -> Check:
    return lambda x: len(x) >= value if isinstance(x, str) else True


def _max_length(value, s, node, ref) -> Check:
    return lambda x: len(x) <= value if isinstance(x, str) else True


def _pattern(value, s, node, ref) -> Check:
    search = re.compile(value).search
    return lambda x: search(x) is not None if isinstance(x, str) else True


def _minimum(value, s, node, ref) -> Check:
    def check(x: Any) -> bool | None:
        if isinstance(x, _NOT_NUMBER):
            return True
        return x >= value if isinstance(x, int) else None
    return check


def _maximum(value, s, node, ref) -> Check:
    def check(x: Any) -> bool | None:
        if isinstance(x, _NOT_NUMBER):
            return True
        return x <= value if isinstance(x, int) else None
    return check


def _min_items(value, s, node, ref) -> Check:
    return lambda x: len(x) >= value if isinstance(x, list) else True


def _max_items(value, s, node, ref) -> Check:
    return lambda x: len(x) <= value if isinstance(x, list) else True


def _unique_items(value, s, node, ref) -> Check:
    if not value:
        return lambda x: True

    def check(x: Any) -> bool | None:
        if not isinstance(x, list):
            return True
        if all(type(v) is str for v in x):
            return len(set(x)) == len(x)
        return None
    return check


def _items(value, s, node, ref) -> Check:
    item = node(value)

    def check(x: Any) -> bool | None:
        if not isinstance(x, list):
            return True
        return _all_of_values(item, x)
    return check


def _all_of_values(item: Check, values) -> bool | None:
    unsure = False
    for v in values:
        r = item(v)
        if r is False:
            return False
        if r is None:
            unsure = True
    return None if unsure else True


def _properties(value, s, node, ref) -> Check:
    props = {k: node(v) for k, v in value.items()}
    extra = s.get("additionalProperties", True)
    if "patternProperties" in s:
        raise _Unsupported("patternProperties")
    other = node(extra)
    closed = extra is False

    def check(x: Any) -> bool | None:
        if not isinstance(x, dict):
            return True
        unsure = False
        for k, v in x.items():
            c = props.get(k)
            if c is None:
                if closed:
                    return False
                c = other
            r = c(v)
            if r is False:
                return False
            if r is None:
                unsure = True
        return None if unsure else True
    return check


def _required(value, s, node, ref) -> Check:
    names = list(value)
    return lambda x: all(n in x for n in names) if isinstance(x, dict) else True


def _all_of(value, s, node, ref) -> Check:
    return _all([node(v) for v in value])


def _any_of(value, s, node, ref) -> Check:
    return _any([node(v) for v in value])


def _one_of(value, s, node, ref) -> Check:
    checks = [node(v) for v in value]

    def check(x: Any) -> bool | None:
        results = [c(x) for c in checks]
        if None in results:
            return None
        return results.count(True) == 1
    return check


def _not(value, s, node, ref) -> Check:
    inner = node(value)

    def check(x: Any) -> bool | None:
        r = inner(x)
        return None if r is None else not r
    return check


def _if(value, s, node, ref) -> Check:
    cond = node(value)
    then = node(s.get("then", True))
    other = node(s.get("else", True))

    def check(x: Any) -> bool | None:
        r = cond(x)
        if r is None:
            return None
        return then(x) if r else other(x)
    return check


def _ref(value, s, node, ref) -> Check:
    return ref(value)


_KEYWORDS: dict[str, Callable[..., Check]] = {
    "type": _type, "enum": _enum, "const": _const, "minLength": _min_length, "maxLength": _max_length,
    "pattern": _pattern, "minimum": _minimum, "maximum": _maximum, "minItems": _min_items,
    "maxItems": _max_items, "uniqueItems": _unique_items, "items": _items, "properties": _properties,
    "required": _required, "allOf": _all_of, "anyOf": _any_of, "oneOf": _one_of, "not": _not, "if": _if,
    "$ref": _ref,
}
