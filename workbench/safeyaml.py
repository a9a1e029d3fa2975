"""The one YAML loader for untrusted text (fragment front matter, workbench.yaml).

``yaml.safe_load`` is safe against code execution but not against resource
exhaustion or surprises: an alias bomb ("billion laughs") expands in memory,
an impossible date escapes as a ``ValueError`` from the timestamp constructor,
and a duplicate key silently wins. This module refuses all of that up front:

- the text is size-capped before it is parsed;
- the event stream is scanned first (linear time, libyaml when present) and
  anchors/aliases, non-core tags and deep nesting are refused before anything
  is composed, so nothing is ever expanded;
- duplicate mapping keys and merge keys (``<<``) are refused, naming key and line;
- timestamps are never constructed: dates stay strings and the caller parses
  them with its own, clear errors;
- every YAML (or conversion) error becomes a ``ValidationError`` naming the file
  and the line.

It must stay free of workbench specifics (no schema knowledge) and of I/O.
"""

from __future__ import annotations

from typing import Any, ClassVar

import yaml
from yaml.nodes import MappingNode, ScalarNode

from .errors import ValidationError

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 20_000  # constructing is the slow part (~12 µs a node); a cap keeps any input well under 1 s

_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CORE = "tag:yaml.org,2002:"
_ALLOWED_TAGS = {None, "!", *(_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map"))}
_MERGE = _CORE + "merge"


class _Refused(Exception):
    """A refusal found while scanning or constructing: (problem, 0-based line)."""

    def __init__(self, problem: str, line: int | None, first: int | None = None):
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.first = first  # for duplicates: the line the key was first seen on


class _Loader(_BASE):  # type: ignore[misc, valid-type]
    """Safe loader without timestamps, merge keys or duplicate keys."""

    yaml_constructors: ClassVar[dict] = dict(_BASE.yaml_constructors)

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, MappingNode):
            return super().construct_mapping(node, deep=deep)
        seen: dict[str, int] = {}
        for key_node, _ in node.value:
            line = key_node.start_mark.line
            if key_node.tag == _MERGE:
                raise _Refused("merge keys (<<) are not allowed", line)
            if not isinstance(key_node, ScalarNode):
                raise _Refused("a mapping key must be a plain value, not a list or mapping", line)
            key = str(self.construct_object(key_node))
            if key in seen:
                raise _Refused(f"duplicate key {_short(key)}", line, first=seen[key])
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_constructors[_CORE + "timestamp"] = _Loader.construct_yaml_str


def _short(key: str) -> str:
    return repr(key) if len(key) <= 60 else f"{key[:60]!r}…"


def _scan(text: str, *, max_depth: int, max_nodes: int) -> None:
    """Walk the event stream once; refuse aliases, anchors, odd tags, deep nesting and too many nodes."""
    depth = nodes = 0
    for event in yaml.parse(text, Loader=_BASE):
        line = event.start_mark.line if event.start_mark is not None else None
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(f"YAML anchors and aliases are not allowed (found *{event.anchor[:40]})", line)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise _Refused(f"YAML anchors and aliases are not allowed (found &{anchor[:40]})", line)
        if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            nodes += 1
            if nodes > max_nodes:
                raise _Refused(f"too many values (more than {max_nodes})", line)
            tag = event.tag
            if tag not in _ALLOWED_TAGS:
                shown = "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag
                raise _Refused(f"YAML tag {shown[:80]} is not allowed", line)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > max_depth:
                raise _Refused(f"nested too deeply (nesting depth over {max_depth})", line)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load(text: str, *, file: str, first_line: int = 1, max_bytes: int = MAX_BYTES,
         max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """Parse untrusted YAML ``text`` (from ``file``, starting at line ``first_line``) into plain
    Python values: dict, list, str, int, float, bool, None. Dates stay strings.

    Raises ``ValidationError`` (naming the file and line) for malformed YAML, text over
    ``max_bytes``, nesting over ``max_depth``, more than ``max_nodes`` values, anchors and
    aliases, tags other than the core ones, merge keys and duplicate keys.
    """
    size = len(text) if len(text) > max_bytes else len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise ValidationError(f"YAML is too large ({size} bytes, at most {max_bytes})", file=file)

    def where(line: int | None) -> str:
        return f"line {line + first_line}: " if line is not None else ""

    try:
        _scan(text, max_depth=max_depth, max_nodes=max_nodes)
        return yaml.load(text, Loader=_Loader)  # a safe loader; aliases were refused above
    except _Refused as e:
        problem = e.problem if e.first is None else f"{e.problem} (first on line {e.first + first_line})"
        raise ValidationError(f"{where(e.line)}{problem}", file=file) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = str(e.problem or e.context or "parse error").replace("\n", " ")
        raise ValidationError(f"malformed YAML ({where(mark.line if mark else None)}{problem})",
                              file=file) from e
    except yaml.YAMLError as e:
        raise ValidationError(f"malformed YAML ({str(e).splitlines()[0] if str(e) else 'parse error'})",
                              file=file) from e
    except (ValueError, OverflowError, RecursionError, MemoryError) as e:
        # e.g. an integer with more digits than Python converts (ValueError)
        detail = str(e).split(";")[0][:200] or type(e).__name__
        raise ValidationError(f"malformed YAML (a value cannot be converted: {detail})", file=file) from e


__all__ = ["load", "MAX_BYTES", "MAX_DEPTH", "MAX_NODES"]
