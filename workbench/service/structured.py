"""A fragment edited as the form it was written in: an anti-pattern's don't / why / instead and
evidence (and any fragment's title and tags) changed field by field, the rest kept as it is.

``Fragments.edit(..., fields=...)`` (and its preview, the edit impact) use it, so a structured edit
takes the one edit path: the base version rule, the reason, the secret guard, the right to write.
It builds the content the edit would save and checks it as a fragment file is checked (the schema,
the workspace's semantics); it writes nothing and decides no right.
"""

from __future__ import annotations

from typing import Any

from ..errors import UserError
from ..models import ANTIPATTERN_FIELDS, Content, Fragment
from .lists import evidence_list, glob_list, tag_list

EDIT_FIELDS = ("title", "dont", "why", "instead", "evidence", "tags", "applies_to")
LABELS = {"title": "the title", "dont": "Don't", "why": "Why", "instead": "Instead", "evidence": "Evidence",
          "tags": "Tags", "applies_to": "Applies to"}


def edited_fields(current: Fragment, text: str | None, fields: dict[str, Any], *, file: str, config) -> Content:
    """``current``'s content with ``fields`` changed (text fields trimmed, lists as ``lists`` takes
    them) and, when ``text`` is given, its body replaced by that markdown body."""
    from ..ingest.files import ParsedFragment, content_from_data, front_matter_data
    from ..ingest.importer import check_semantics
    from ..schemas import validate

    if not isinstance(fields, dict) or not fields:
        raise UserError(f"name the fields to change ({', '.join(EDIT_FIELDS)})", param="fields")
    unknown = sorted(str(k) for k in fields if k not in EDIT_FIELDS)
    if unknown:
        raise UserError(f"{unknown[0]!r} is not a field an edit changes (fields: {', '.join(EDIT_FIELDS)})",
                        param="fields")
    if current.kind != "anti-pattern" and any(k in fields for k in ANTIPATTERN_FIELDS):
        raise UserError(f"{current.id} is a {current.kind}: don't / why / instead / evidence belong to "
                        "anti-patterns only", param="fields")
    if isinstance(text, str) and text.lstrip("\ufeff").startswith("---"):
        raise UserError("give either a whole fragment file or the fields to change, not both", param="text")
    data = front_matter_data(current.id, current.content)
    for key in ("title", "dont", "why", "instead"):
        if key in fields:
            value = fields[key]
            if not isinstance(value, str) or not value.strip():
                raise UserError(f"{LABELS[key]} cannot be empty", param=key)
            data[key] = value.strip()
    for key, as_list in (("evidence", evidence_list), ("tags", tag_list), ("applies_to", glob_list)):
        if key in fields:
            items = as_list(fields[key])
            if items:
                data[key] = items
            else:
                data.pop(key, None)
    validate("fragment", data, file=file)
    body = current.body if text is None else text
    content = content_from_data(data, body, file=file)
    check_semantics(ParsedFragment(current.id, content, None, None, None, file), config)
    return content
