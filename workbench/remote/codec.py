"""JSON for the Python values that cross between the team server and its remote facade
(``rpc`` on the server, ``client.RemoteWorkbench`` in the TUI's process): the core's typed results
and the arguments of its methods.

Plain JSON stays plain (str, int, float, bool, None, lists, dicts with string keys). Anything else
is a one-key object whose key starts with ``$``: ``$tuple``, ``$set``, ``$frozenset``, ``$map``
(a dict with a key that is not a string, or a string key starting with ``$``), ``$datetime``,
``$date``, ``$timedelta``, ``$path``, ``$float`` (nan and the infinities), ``$ndarray``, and
``$class`` (a dataclass, or a subclass of list or dict, with its fields or items). numpy scalars
travel as the Python number they hold.

Decoding never imports what a peer names outside this package: a ``$class`` is rebuilt only when
its name is ``workbench.<module>:<Class>`` and that class is a dataclass (or a list or dict
subclass) defined in that module of the workbench package; anything else is a ``CodecError``.
``decode(..., classes=[...])`` narrows that to the classes given and imports nothing (the server
reads its arguments so). Pure: no I/O, no network, no logging.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import math
import re
from datetime import date, datetime, timedelta
from pathlib import Path, PurePath
from typing import Any, Iterable

from ..errors import UserError

PACKAGE = "workbench"
_NAME = re.compile(r"^(workbench(?:\.[a-z][a-z0-9_]*)*):([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)$")
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class CodecError(UserError):
    """A value that cannot be sent, or a message that does not decode (the server answers 400)."""


# -- encoding -----------------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data (``json.dumps`` takes it with ``allow_nan=False``)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)  # an int subclass travels as the number
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if type(value).__module__ == "numpy":
        return _numpy(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"$class": class_name(type(value)),
                "fields": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, list):
        items = [encode(v) for v in value]
        return {"$class": class_name(type(value)), "items": items} if _ours(type(value), list) else items
    if isinstance(value, tuple):
        return {"$tuple": [encode(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        kind = "$frozenset" if isinstance(value, frozenset) else "$set"
        return {kind: [encode(v) for v in value]}
    if isinstance(value, dict):
        items = _dict(value)
        return {"$class": class_name(type(value)), "items": items} if _ours(type(value), dict) else items
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, timedelta):
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, PurePath):
        return {"$path": str(value)}
    raise CodecError(f"cannot send a value of type {type(value).__qualname__}")


def _ours(cls: type, base: type) -> bool:
    """A subclass of ``base`` defined in the workbench package (sent with its class; another
    library's subclass travels as a plain list or dict)."""
    return cls is not base and bool(_NAME.match(f"{cls.__module__}:{cls.__qualname__}"))


def _dict(value: dict) -> Any:
    if all(isinstance(k, str) and not k.startswith("$") for k in value):
        return {k: encode(v) for k, v in value.items()}
    return {"$map": [[encode(k), encode(v)] for k, v in value.items()]}


def _numpy(value: Any) -> Any:
    import numpy as np

    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise CodecError(f"cannot send a numpy array of {value.dtype}")
        return {"$ndarray": {"dtype": value.dtype.str, "shape": list(value.shape),
                             "data": [encode(v) for v in value.ravel().tolist()]}}
    if isinstance(value, np.generic):
        return encode(value.item())
    raise CodecError(f"cannot send a value of type numpy.{type(value).__qualname__}")


def class_name(cls: type) -> str:
    """``module:QualName`` of a class that may be sent (defined in the workbench package)."""
    name = f"{cls.__module__}:{cls.__qualname__}"
    if not _NAME.match(name):
        raise CodecError(f"cannot send a value of type {cls.__qualname__} (not a workbench type)")
    return name


# -- decoding -----------------------------------------------------------------------------------


def decode(data: Any, *, classes: Iterable[type] | None = None) -> Any:
    """The value ``encode`` made of it. ``classes``: rebuild only these (and import nothing)."""
    only = None if classes is None else {f"{c.__module__}:{c.__qualname__}": c for c in classes}
    return _decode(data, only)


def _decode(data: Any, only: dict[str, type] | None) -> Any:
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [_decode(v, only) for v in data]
    if not isinstance(data, dict):
        raise CodecError(f"not JSON data: {type(data).__qualname__}")
    tag = next((k for k in data if k.startswith("$")), None)
    if tag is None:
        return {k: _decode(v, only) for k, v in data.items()}
    if tag == "$class":
        return _instance(data, only)
    if len(data) != 1:
        raise CodecError(f"a {tag} value has other keys beside it")
    body = data[tag]
    try:
        if tag in ("$tuple", "$set", "$frozenset"):
            items = [_decode(v, only) for v in _list(body, tag)]
            return tuple(items) if tag == "$tuple" else set(items) if tag == "$set" else frozenset(items)
        if tag == "$map":
            return {_hashable(_decode(k, only)): _decode(v, only) for k, v in (_pair(p) for p in _list(body, tag))}
        if tag == "$datetime":
            return datetime.fromisoformat(_text(body, tag))
        if tag == "$date":
            return date.fromisoformat(_text(body, tag))
        if tag == "$timedelta":
            days, seconds, micro = _list(body, tag)
            return timedelta(days=days, seconds=seconds, microseconds=micro)
        if tag == "$path":
            return Path(_text(body, tag))
        if tag == "$float":
            return _FLOATS[_text(body, tag)]
        if tag == "$ndarray":
            return _array(body)
    except CodecError:
        raise
    except (TypeError, ValueError, KeyError, OverflowError) as e:
        raise CodecError(f"a bad {tag} value: {e}") from e
    raise CodecError(f"unknown tag {tag!r}")


def _instance(data: dict, only: dict[str, type] | None) -> Any:
    name = data.get("$class")
    if not isinstance(name, str):
        raise CodecError("a $class value needs a class name")
    cls = _allowed(name, only)
    if dataclasses.is_dataclass(cls):
        given = data.get("fields")
        if set(data) != {"$class", "fields"} or not isinstance(given, dict):
            raise CodecError(f"a {name} value needs its fields (and nothing else)")
        return _dataclass(cls, {k: _decode(v, only) for k, v in given.items()})
    if set(data) != {"$class", "items"}:
        raise CodecError(f"a {name} value needs its items (and nothing else)")
    items = _decode(data["items"], only)
    if not isinstance(items, list if issubclass(cls, list) else dict):
        raise CodecError(f"a {name} value needs a {'list' if issubclass(cls, list) else 'mapping'} of items")
    return cls(items)


def _allowed(name: str, only: dict[str, type] | None) -> type:
    if only is not None:
        if name not in only:
            raise CodecError(f"a value of type {name} is not accepted here")
        return only[name]
    return _resolve(name)


@functools.lru_cache(maxsize=256)
def _resolve(name: str) -> type:
    """The class a tag names, when it is a dataclass (or a list or dict subclass) defined in the
    workbench package; else CodecError. Nothing outside the package is ever imported."""
    match = _NAME.match(name)
    if match is None:
        raise CodecError(f"refused to rebuild {name!r}: only workbench types are accepted")
    module_name, qualname = match.groups()
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise CodecError(f"refused to rebuild {name!r}: no such workbench module") from e
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if (not isinstance(found, type) or found.__module__ != module_name or found.__qualname__ != qualname
            or not (dataclasses.is_dataclass(found) or issubclass(found, (list, dict)))):
        raise CodecError(f"refused to rebuild {name!r}: not a workbench data type")
    return found


def _dataclass(cls: type, given: dict[str, Any]) -> Any:
    """An instance of ``cls`` with exactly these field values (built as it was sent: neither
    ``__init__`` nor ``__post_init__`` runs)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise CodecError(f"{cls.__qualname__} has no field {unknown[0]!r}")
    obj = object.__new__(cls)
    for name, f in fields.items():
        if name in given:
            value = given[name]
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            raise CodecError(f"a {cls.__qualname__} value needs its field {name!r}")
        object.__setattr__(obj, name, value)
    return obj


def _array(body: Any) -> Any:
    import numpy as np

    if not isinstance(body, dict) or set(body) != {"dtype", "shape", "data"}:
        raise CodecError("a $ndarray value needs dtype, shape and data")
    dtype = np.dtype(_text(body["dtype"], "$ndarray"))
    if dtype.kind not in "biuf":
        raise CodecError(f"a numpy array of {dtype} is not accepted")
    values = [_decode(v, None) for v in _list(body["data"], "$ndarray")]
    return np.asarray(values, dtype=dtype).reshape([int(n) for n in _list(body["shape"], "$ndarray")])


def _list(body: Any, tag: str) -> list:
    if not isinstance(body, list):
        raise CodecError(f"a {tag} value needs a list")
    return body


def _text(body: Any, tag: str) -> str:
    if not isinstance(body, str):
        raise CodecError(f"a {tag} value needs a string")
    return body


def _pair(item: Any) -> tuple[Any, Any]:
    if not isinstance(item, list) or len(item) != 2:
        raise CodecError("a $map value needs [key, value] pairs")
    return item[0], item[1]


def _hashable(key: Any) -> Any:
    try:
        hash(key)
    except TypeError as e:
        raise CodecError(f"a $map key cannot be a {type(key).__qualname__}") from e
    return key
