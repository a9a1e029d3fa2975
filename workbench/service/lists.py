"""Lists typed as text: an anti-pattern's evidence and a fragment's tags, as a person enters them.

A form's field (``INC-3001, INC-3002``), a command line's values (``--evidence INC-3001, INC-3002``)
and a list sent by an API caller all mean the same list: split on commas and whitespace, each item
trimmed, empty items dropped, repeats removed (first kept). So ``INC-3001,`` is ``["INC-3001"]``,
never an item with its comma. Items are then checked against the rule the fragment schema has for
them (a tag's form, an item's length) with a message naming the item.

This module only shapes and checks values: it stores nothing and decides no right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import UserError

_SEPARATORS = re.compile(r"[,\s]+")
TAG = re.compile(r"^[a-z0-9][a-z0-9._/-]*$")   # schemas/fragment.schema.json: tags.items.pattern
MAX_TAG, MAX_EVIDENCE = 64, 500                 # ... tags.items.maxLength, evidence.items.maxLength
MAX_ITEMS = {"tags": 100, "evidence": 200}       # ... maxItems


def split_list(value: str | Iterable[str] | None) -> list[str]:
    """``value`` (text, or items each of which may hold several) as a list: split on commas and
    whitespace, trimmed, empty items dropped, repeats removed (the first kept, in order)."""
    if value is None:
        return []
    texts = [value] if isinstance(value, str) else list(value)
    items: list[str] = []
    for text in texts:
        if not isinstance(text, str):
            raise UserError(f"a list item must be text, not {type(text).__name__}")
        items += [item for item in _SEPARATORS.split(text) if item]
    return list(dict.fromkeys(items))


def shown_list(items: Iterable[str]) -> str:
    """A list as a form shows it back: items joined by ', '."""
    return ", ".join(items)


def evidence_list(value: str | Iterable[str] | None) -> list[str]:
    """An anti-pattern's evidence (incident refs, fragment ids, URLs), checked: at most 200 items of
    at most 500 characters."""
    items = split_list(value)
    _check_count("evidence", items)
    for item in items:
        if len(item) > MAX_EVIDENCE:
            raise UserError(f"evidence item {item[:40]!r}… is too long ({len(item)} characters, at most "
                            f"{MAX_EVIDENCE})", param="evidence")
    return items


def tag_list(value: str | Iterable[str] | None) -> list[str]:
    """Tags, checked against the schema's rule: lower-case letters, digits, '.', '_', '/' and '-',
    starting with a letter or digit, at most 64 characters (at most 100 tags)."""
    items = split_list(value)
    _check_count("tags", items)
    for item in items:
        if len(item) > MAX_TAG:
            raise UserError(f"tag {item[:40]!r}… is too long ({len(item)} characters, at most {MAX_TAG})",
                            param="tags")
        if not TAG.match(item):
            hint = f" (did you mean {item.lower()!r}?)" if TAG.match(item.lower()) else ""
            raise UserError(f"tag {item!r} is not a tag: lower-case letters, digits, '.', '_', '/' and '-', "
                            f"starting with a letter or digit{hint}", param="tags")
    return items


def _check_count(name: str, items: list[str]) -> None:
    if len(items) > MAX_ITEMS[name]:
        raise UserError(f"too many {name} ({len(items)}, at most {MAX_ITEMS[name]})", param=name)


def glob_list(value: str | Iterable[str] | None) -> list[str]:
    """A fragment's ``applies_to`` path globs, checked by the matching rule (rank/paths.py): at most
    100, each a repo-relative glob (``services/payments/**``)."""
    from ..rank.paths import check_globs

    return list(check_globs(split_list(value), where="applies_to"))
