"""JSON Schema validation for fragment front matter, workbench.yaml and bundles (manifest, records).

The schemas live in the repository's top-level ``schemas/`` folder (the published
contract, one copy); pyproject.toml maps that folder into the package as
``workbench.schema_files``, so a wheel ships them and importlib.resources finds them
in a wheel or an editable install alike. This module finds them, validates, and turns
jsonschema's errors into one ``ValidationError`` naming the file, the field and the problem.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from functools import lru_cache
from importlib.resources import files as package_files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from .errors import ValidationError

_PACKAGE = "workbench.schema_files"  # the top-level schemas/ folder, as pyproject.toml's package-dir maps it
_CHECKOUT = Path(__file__).resolve().parent.parent / "schemas"  # a source checkout run without installing


def schema_dir() -> Traversable:
    """The folder of ``*.schema.json`` files: the installed package data (wheel or editable
    install), else the checkout's ``schemas/`` (code run from a checkout without an install,
    or an editable install made before the mapping existed)."""
    try:
        packaged = package_files(_PACKAGE)
    except ModuleNotFoundError:
        packaged = None
    for candidate in (packaged, _CHECKOUT):
        if candidate is not None and (candidate / "fragment.schema.json").is_file():
            return candidate
    raise FileNotFoundError("workbench schemas not found; reinstall the package")


@lru_cache(maxsize=None)
def _registry():
    """Every schema of ``schemas/`` by its ``$id``, so one may ``$ref`` another (the bundle schemas
    reuse the fragment schema's id, scope and field definitions); nothing is fetched."""
    from referencing import Registry, Resource

    resources = []
    for path in sorted((p for p in schema_dir().iterdir() if p.name.endswith(".schema.json")), key=str):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resources.append((contents.get("$id", path.name), Resource.from_contents(contents)))
    return Registry().with_resources(resources)


@lru_cache(maxsize=None)
def _validator(name: str):
    import jsonschema

    schema = json.loads((schema_dir() / f"{name}.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema, registry=_registry())


def plain_yaml(value: Any) -> Any:
    """YAML gives dates and datetimes; the schemas speak ISO strings."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): plain_yaml(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_yaml(v) for v in value]
    return value


def validate(name: str, data: Any, *, file: str | None = None) -> None:
    """Raise ValidationError for the first (most relevant) problem in ``data``."""
    validator = _validator(name)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    err = errors[0]
    if err.validator in ("anyOf", "oneOf") and err.context:
        from jsonschema.exceptions import best_match

        err = best_match(err.context) or err
    field = ".".join(str(p) for p in err.absolute_path) or None
    message = err.message
    if err.validator == "additionalProperties":
        allowed = set(err.schema.get("properties", {}))
        extra = sorted(str(k) for k in err.instance if k not in allowed) if isinstance(err.instance, dict) else []
        more = f" (and {len(extra) - 5} more)" if len(extra) > 5 else ""
        message = f"unknown field {', '.join(map(shown, extra[:5]))}{more}" if extra else "unknown field"
    elif err.validator == "required":
        missing = message.split("'")[1] if "'" in message else message
        field = ".".join(filter(None, [field, missing]))
        message = "required field is missing"
    elif err.validator == "enum":
        message = f"{shown(err.instance)} is not one of {', '.join(map(str, err.validator_value))}"
    elif err.validator == "not" and list(err.absolute_path)[-1:] == ["title"]:
        message = (f"{shown(err.instance)} has a line break: a title is one line (no newline, carriage return, "
                   "vertical tab, form feed, U+001C-U+001E, U+0085, U+2028 or U+2029)")
    elif err.validator == "not" and name == "fragment":
        message = "dont/why/instead/evidence are only allowed on anti-pattern fragments"
    elif err.validator == "type":
        expected = err.validator_value if isinstance(err.validator_value, str) else " or ".join(err.validator_value)
        hint = " (quote it in YAML)" if expected == "string" and not isinstance(err.instance, (dict, list)) else ""
        message = f"expected {expected}, got {type(err.instance).__name__} {shown(err.instance)}{hint}"
    elif err.validator == "pattern":
        message = f"{shown(err.instance)} has the wrong form (expected {err.validator_value})"
    elif err.validator == "maxLength":
        message = f"{shown(err.instance)} is too long ({len(err.instance)} characters, at most {err.validator_value})"
    elif err.validator == "maxItems":
        message = f"has too many items ({len(err.instance)}, at most {err.validator_value})"
    elif err.validator == "uniqueItems":
        message = "has repeated items"
    elif isinstance(err.instance, (str, list, dict)) and len(message) > 300:
        message = f"{shown(err.instance)} is not valid ({err.validator})"
    raise ValidationError(message, file=file, field=field)


def shown(value: Any, limit: int = 60) -> str:
    """A short repr for messages: hostile input can be huge, a message is one line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…"
